// Sends raft messages to peers over gRPC (RaftPeer.Send, unary batches). One
// call in flight per peer; messages queue behind it up to a bound and the
// rest are dropped: raft resends what matters, and a dead peer costs no more
// than the bound.
import type * as grpc from '@grpc/grpc-js';
import { type RaftBatch, RaftPeerService, type WireMessage } from '../proto.js';
import type { Message } from '../raft/types.js';
import { messageToWire } from './wire.js';

const MAX_QUEUED = 4096;
const SEND_TIMEOUT_MS = 5000;

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
  inflight = false;
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
}

export class Transport {
  private readonly peers = new Map<string, Peer>();

  constructor(
    private readonly clusterId: string,
    private readonly creds: grpc.ChannelCredentials,
    private readonly cb: PeerCallbacks,
  ) {}

  setPeer(id: string, url: string): void {
    const cur = this.peers.get(id);
    if (cur && cur.url === url) return;
    cur?.client.close();
    this.peers.set(id, new Peer(id, url, this.creds));
  }

  removePeer(id: string): void {
    this.peers.get(id)?.client.close();
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
    for (const m of messages) {
      const p = this.peers.get(m.to);
      if (!p) continue;
      if (p.queue.length >= MAX_QUEUED) continue;
      p.queue.push(m);
    }
    for (const p of this.peers.values()) this.flush(p);
  }

  private flush(p: Peer): void {
    if (p.inflight || p.queue.length === 0) return;
    const batch = p.queue;
    p.queue = [];
    p.inflight = true;
    const wire: WireMessage[] = batch.map(messageToWire);
    p.client.Send(
      { cluster_id: this.clusterId, messages: wire },
      { deadline: Date.now() + SEND_TIMEOUT_MS },
      (err) => {
        p.inflight = false;
        if (err) this.cb.unreachable(p.id);
        else p.lastContact = Date.now();
        for (const m of batch) if (m.type === 'MsgSnap') this.cb.snapshotDone(p.id, !err);
        if (err) {
          // Back off a little before trying a dead peer again.
          setTimeout(() => this.flush(p), 100).unref();
        } else this.flush(p);
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
    for (const p of this.peers.values()) p.client.close();
    this.peers.clear();
  }
}
