// Sends raft messages to peers over gRPC. Everything but snapshots goes on one
// long-lived bidi stream per peer (RaftPeer.Stream): a batch costs one HTTP/2
// DATA frame instead of a whole unary call. Messages queue while the stream is
// not writable, up to a bound, and the rest are dropped: raft resends what
// matters, and a dead peer costs no more than the bound. A snapshot goes as
// a unary Send, whose answer tells raft whether it arrived.
//
// The stream is written straight onto an HTTP/2 stream in gRPC's framing
// (grpc-js's client call stack cost more CPU per batch than raft's own work
// on it); the rare unary calls (snapshots, lease renewals) use grpc-js.
import * as http2 from 'node:http2';
import type { Socket } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { frameMessage } from '@kubit/wire';
import type { RaftBatch } from '../messages.js';
import { RaftPeerService } from '../proto.js';
import type { Message } from '../raft/types.js';
import { encodeRaftBatch } from '../wire/raft.js';
import { messageToWire } from './wire.js';

const MAX_QUEUED = 4096;
const SEND_TIMEOUT_MS = 5000;
/** Wait before dialing a peer whose stream just failed. */
const REDIAL_MS = 100;
const STREAM_PATH = '/kubitstore.RaftPeer/Stream';

/** What a member presents to its peers over TLS (PEM contents). */
export interface PeerTlsOptions {
  ca?: Buffer;
  cert: Buffer;
  key: Buffer;
}

export interface PeerCallbacks {
  unreachable(id: string): void;
  snapshotDone(id: string, ok: boolean): void;
}

type PeerClient = grpc.Client & {
  Send(req: RaftBatch, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null) => void): void;
  LeaseRemaining(
    req: { ID: string },
    opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, resp?: { TTL: string; ID: string }) => void,
  ): void;
  LeaseRenew(
    req: { ID: string },
    opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, resp?: { TTL: string; ID: string }) => void,
  ): void;
};

class Peer {
  client: PeerClient;
  queue: Message[] = [];
  session: http2.ClientHttp2Session | undefined;
  stream: http2.ClientHttp2Stream | undefined;
  /** The stream said it is full: wait for 'drain' (messages gather in the queue meanwhile). */
  blocked = false;
  /** No dialing before this time (a failed stream backs off). */
  redialAt = 0;
  redialTimer: NodeJS.Timeout | undefined;
  /** When the peer last acknowledged a batch (it acks at most every few tens of ms). */
  lastContact = 0;

  constructor(
    readonly id: string,
    readonly url: string,
    creds: grpc.ChannelCredentials,
  ) {
    const target = url.replace(/^https?:\/\//, '');
    this.client = new RaftPeerService(target, creds, {
      'grpc.max_receive_message_length': 512 * 1024 * 1024,
      'grpc.max_send_message_length': 512 * 1024 * 1024,
    }) as unknown as PeerClient;
  }

  /** Ends the raw stream and its connection (a new pair is dialed on the next send). */
  dropStream(): void {
    const { session } = this;
    this.stream = undefined;
    this.session = undefined;
    session?.destroy();
  }

  close(): void {
    if (this.redialTimer) clearTimeout(this.redialTimer);
    this.dropStream();
    this.client.close();
  }
}

export class Transport {
  private readonly peers = new Map<string, Peer>();

  constructor(
    private readonly clusterId: string,
    private readonly creds: grpc.ChannelCredentials,
    private readonly cb: PeerCallbacks,
    private readonly tls?: PeerTlsOptions,
  ) {}

  setPeer(id: string, url: string): void {
    const cur = this.peers.get(id);
    if (cur && cur.url === url) return;
    cur?.close();
    this.peers.set(id, new Peer(id, url, this.creds));
  }

  removePeer(id: string): void {
    this.peers.get(id)?.close();
    this.peers.delete(id);
  }

  /** Peers heard from within `ms`. */
  activeSince(ms: number): Set<string> {
    const now = Date.now();
    const out = new Set<string>();
    for (const p of this.peers.values()) if (now - p.lastContact < ms) out.add(p.id);
    return out;
  }

  send(messages: Message[]): void {
    const touched = new Set<Peer>();
    for (const m of messages) {
      const p = this.peers.get(m.to);
      if (!p) continue;
      if (m.type === 'MsgSnap') {
        this.sendSnapshot(p, m);
        continue;
      }
      if (p.queue.length >= MAX_QUEUED) continue;
      p.queue.push(m);
      touched.add(p);
    }
    for (const p of touched) this.flush(p);
  }

  /** Writes the queue as one batch on the peer's stream (opening it if needed). */
  private flush(p: Peer): void {
    if (p.blocked || p.queue.length === 0 || this.peers.get(p.id) !== p) return;
    const stream = p.stream ?? this.open(p);
    if (!stream) return;
    const batch = p.queue;
    p.queue = [];
    const ok = stream.write(frameMessage(encodeRaftBatch({ cluster_id: this.clusterId, messages: batch })));
    if (!ok) p.blocked = true;
  }

  private open(p: Peer): http2.ClientHttp2Stream | undefined {
    const wait = p.redialAt - Date.now();
    if (wait > 0) {
      p.redialTimer ??= setTimeout(() => {
        p.redialTimer = undefined;
        this.flush(p);
      }, wait).unref();
      return undefined;
    }
    const session = http2.connect(
      p.url,
      this.tls && p.url.startsWith('https:')
        ? { ca: this.tls.ca, cert: this.tls.cert, key: this.tls.key }
        : {},
    );
    // Nagle off: raft's small messages must not wait for a delayed ACK.
    session.on('connect', (_s: http2.ClientHttp2Session, socket: Socket) => socket.setNoDelay(true));
    const stream = session.request({
      ':method': 'POST',
      ':path': STREAM_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    p.session = session;
    p.stream = stream;
    let failed = false;
    const fail = () => {
      if (failed) return;
      failed = true;
      session.destroy();
      if (p.stream === stream) {
        p.stream = undefined;
        p.session = undefined;
        p.blocked = false;
        p.redialAt = Date.now() + REDIAL_MS;
        // What was queued for the dead stream is probably lost: raft probes again.
        this.cb.unreachable(p.id);
        if (p.queue.length > 0) this.flush(p);
      }
    };
    stream.on('data', () => {
      p.lastContact = Date.now();
    });
    stream.on('drain', () => {
      if (p.stream !== stream) return;
      p.blocked = false;
      this.flush(p);
    });
    stream.on('error', fail);
    stream.on('end', fail);
    stream.on('close', fail);
    session.on('error', fail);
    session.on('close', fail);
    return stream;
  }

  private sendSnapshot(p: Peer, m: Message): void {
    p.client.Send(
      { cluster_id: this.clusterId, messages: [messageToWire(m)] },
      { deadline: Date.now() + SEND_TIMEOUT_MS },
      (err) => {
        if (err) this.cb.unreachable(p.id);
        else p.lastContact = Date.now();
        this.cb.snapshotDone(p.id, !err);
      },
    );
  }

  /** Forwards a lease keep-alive to the leader; resolves with the TTL (0 if unknown). */
  leaseRenew(
    leader: string,
    id: string,
    method: 'LeaseRenew' | 'LeaseRemaining' = 'LeaseRenew',
  ): Promise<number> {
    const p = this.peers.get(leader);
    if (!p) return Promise.reject(new Error('leader unknown'));
    return new Promise((res, rej) => {
      p.client[method]({ ID: id }, { deadline: Date.now() + SEND_TIMEOUT_MS }, (err, resp) => {
        if (err) rej(err);
        else res(Number(resp?.TTL ?? 0));
      });
    });
  }

  close(): void {
    for (const p of this.peers.values()) p.close();
    this.peers.clear();
  }
}
