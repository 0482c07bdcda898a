// A minimal gRPC client for the two etcd v3 calls on the apiserver's request
// path, KV.Range and KV.Txn, straight over node:http2 with hand-written
// protobuf. Every apiserver write is one Txn: through the general-purpose
// client (grpc-js call layers, a circuit breaker, protobufjs objects, Long
// conversions) a Txn cost more CPU than the rest of the write; here it is one
// HTTP/2 stream and a few buffers. Watches keep using the etcd3 client.
import { type ClientHttp2Session, type ClientHttp2Stream, connect, constants } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { FRAME_HEADER_BYTES, MessageReader, PbReader, PbWriter, writeFrameHeader } from '@kubit/wire';

/** One key-value as etcd returns it (revisions as numbers: they stay far below 2^53). */
export interface RawKv {
  key: Buffer;
  value: Buffer;
  mod_revision: number;
  create_revision: number;
}

export interface RangeResult {
  revision: number;
  kvs: RawKv[];
  more: boolean;
}

export interface TxnResult {
  revision: number;
  succeeded: boolean;
  /** The kvs of the first response when it is a range (what the failure branch read). */
  rangeKvs: RawKv[];
  /** The kvs of every response, in order (empty for puts and deletes). */
  responses: RawKv[][];
}

export interface RangeArgs {
  key: Buffer;
  rangeEnd?: Buffer;
  limit?: number;
  revision?: number;
}

/** A guard on one key: its create_revision or mod_revision equals `value`. */
export interface Guard {
  key: Buffer;
  target: 'create' | 'mod';
  value: number;
}

export type TxnOp =
  | { put: { key: Buffer; value: Buffer } }
  | { delete: { key: Buffer } }
  | { range: RangeArgs };

/** A gRPC status other than OK, or a transport failure. */
export class GrpcError extends Error {
  constructor(
    message: string,
    /** The gRPC status code (14 Unavailable for transport failures). */
    readonly code: number,
  ) {
    super(message);
  }
}

const UNAVAILABLE = 14;
/** HTTP/2 flow-control window of the store connection and of each call. */
const WINDOW_BYTES = 16 * 1024 * 1024;
const DEADLINE_EXCEEDED = 4;
/** The largest response taken (a list of every pod can be tens of MiB; etcd's clients allow 2 GiB). */
const MAX_RESPONSE_BYTES = 2 ** 31 - 1;

// ---------- protobuf ----------
//
// With the shared reader-writer (@kubit/wire): a request is written once,
// nested messages in place, after room for its gRPC frame header, so the
// frame that goes out is the only copy; responses are read as views of the
// received bytes.

/** Reused for every request: finish() copies out what was written. */
const writer = new PbWriter(4096);
const EMPTY = Buffer.alloc(0);

/** mvccpb.KeyValue: key 1, create_revision 2, mod_revision 3, value 5. */
function decodeKv(buf: Buffer, start: number, end: number): RawKv {
  const kv: RawKv = { key: EMPTY, value: EMPTY, mod_revision: 0, create_revision: 0 };
  const r = new PbReader(buf, start, end);
  while (!r.done) {
    const tag = r.tag();
    if (tag === 10) kv.key = r.bytes();
    else if (tag === 16) kv.create_revision = r.varint();
    else if (tag === 24) kv.mod_revision = r.varint();
    else if (tag === 42) kv.value = r.bytes();
    else r.skip(tag);
  }
  return kv;
}

/** The revision (field 3) of a ResponseHeader. */
function headerRevision(buf: Buffer, start: number, end: number): number {
  const r = new PbReader(buf, start, end);
  let rev = 0;
  while (!r.done) {
    const tag = r.tag();
    if (tag === 24) rev = r.varint();
    else r.skip(tag);
  }
  return rev;
}

function readRange(buf: Buffer, start: number, end: number): RangeResult {
  const out: RangeResult = { revision: 0, kvs: [], more: false };
  const r = new PbReader(buf, start, end);
  while (!r.done) {
    const tag = r.tag();
    if (tag === 10) {
      const [s, e] = r.span();
      out.revision = headerRevision(buf, s, e);
    } else if (tag === 18) {
      const [s, e] = r.span();
      out.kvs.push(decodeKv(buf, s, e));
    } else if (tag === 24) out.more = r.bool();
    else r.skip(tag);
  }
  return out;
}

/** etcdserverpb.RangeResponse: header 1, kvs 2, more 3. */
export function decodeRangeResponse(buf: Buffer): RangeResult {
  return readRange(buf, 0, buf.length);
}

/** etcdserverpb.TxnResponse: header 1, succeeded 2, responses 3 (of which the first range is kept). */
export function decodeTxnResponse(buf: Buffer): TxnResult {
  const out: TxnResult = { revision: 0, succeeded: false, rangeKvs: [], responses: [] };
  const r = new PbReader(buf);
  while (!r.done) {
    const tag = r.tag();
    if (tag === 10) {
      const [s, e] = r.span();
      out.revision = headerRevision(buf, s, e);
    } else if (tag === 16) out.succeeded = r.bool();
    else if (tag === 26) {
      const [s, e] = r.span();
      // ResponseOp: response_range 1 (puts and deletes carry no kvs we read).
      let kvs: RawKv[] = [];
      const op = new PbReader(buf, s, e);
      while (!op.done) {
        const t = op.tag();
        if (t === 10) {
          const [rs, re] = op.span();
          kvs = readRange(buf, rs, re).kvs;
        } else op.skip(t);
      }
      if (out.responses.length === 0) out.rangeKvs = kvs;
      out.responses.push(kvs);
    } else r.skip(tag);
  }
  return out;
}

/** etcdserverpb.RangeRequest: key 1, range_end 2, limit 3, revision 4. */
function writeRange(w: PbWriter, a: RangeArgs): void {
  w.bytes(1, a.key);
  w.bytes(2, a.rangeEnd);
  w.int64(3, a.limit);
  w.int64(4, a.revision);
}

/** A RangeRequest after `headroom` free bytes (for the frame header). */
export function encodeRangeRequest(a: RangeArgs, headroom = 0): Buffer {
  const w = writer.reset();
  writeRange(w, a);
  return w.finish(headroom);
}

/** A TxnRequest of one guard and one operation per branch, after `headroom` free bytes. */
export function encodeTxnRequest(guard: Guard, success: TxnOp, failure: TxnOp, headroom = 0): Buffer {
  return encodeMultiTxnRequest([guard], [success], [failure], headroom);
}

/**
 * A TxnRequest of several guards (all must hold) and several operations per branch: an
 * object written together with the keys it claims (a Service's cluster IP, its node ports).
 */
export function encodeMultiTxnRequest(
  guards: Guard[],
  success: TxnOp[],
  failure: TxnOp[],
  headroom = 0,
): Buffer {
  const w = writer.reset();
  // Compare: result Equal (0, left out), target Create (1) or Mod (2), key, then
  // create_revision (5) or mod_revision (6), written even when 0: it is a oneof.
  for (const guard of guards) {
    const compare = w.begin(1);
    w.uint32(2, guard.target === 'create' ? 1 : 2);
    w.bytes(3, guard.key);
    w.int64Always(guard.target === 'create' ? 5 : 6, guard.value);
    w.end(compare);
  }
  for (const op of success) writeOp(w, 2, op);
  for (const op of failure) writeOp(w, 3, op);
  return w.finish(headroom);
}

/** A RequestOp: request_range 1, request_put 2, request_delete_range 3. */
function writeOp(w: PbWriter, field: number, op: TxnOp): void {
  const mark = w.begin(field);
  if ('put' in op) {
    const put = w.begin(2);
    w.bytes(1, op.put.key);
    w.bytes(2, op.put.value);
    w.end(put);
  } else if ('delete' in op) {
    const del = w.begin(3);
    w.bytes(1, op.delete.key);
    w.end(del);
  } else {
    const range = w.begin(1);
    writeRange(w, op.range);
    w.end(range);
  }
  w.end(mark);
}

// ---------- gRPC over HTTP/2 ----------

export interface KvClientOptions {
  /** http(s)://host:port, tried in order; a failed one passes the turn to the next. */
  endpoints: string[];
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  dialTimeoutMs?: number;
  /** Deadline of one call. */
  callTimeoutMs?: number;
}

/** A call in flight: when it started, and how to give up on it. */
interface Pending {
  started: number;
  cancel: () => void;
}

export class KvClient {
  private session: ClientHttp2Session | undefined;
  private connecting: Promise<ClientHttp2Session> | undefined;
  private next = 0;
  private closed = false;
  /**
   * Calls in flight, swept for their deadline by one timer: a timer per call (or a
   * stream timeout, which is one) cost more than the call's own bookkeeping.
   */
  private readonly pending = new Set<Pending>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly opts: KvClientOptions) {
    if (opts.endpoints.length === 0) throw new Error('no store endpoints');
  }

  private track(p: Pending): void {
    this.pending.add(p);
    this.sweeper ??= setInterval(() => this.sweep(), 1000).unref();
  }

  private sweep(): void {
    const limit = Date.now() - (this.opts.callTimeoutMs ?? 60_000);
    for (const p of this.pending) if (p.started < limit) p.cancel();
    if (this.pending.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  async range(a: RangeArgs): Promise<RangeResult> {
    // A read is safe to repeat: a transport failure is retried once on the next member.
    try {
      return decodeRangeResponse(await this.call('Range', encodeRangeRequest(a, FRAME_HEADER_BYTES)));
    } catch (err) {
      if (!(err instanceof GrpcError) || err.code !== UNAVAILABLE || this.closed) throw err;
      return decodeRangeResponse(await this.call('Range', encodeRangeRequest(a, FRAME_HEADER_BYTES)));
    }
  }

  async txn(guard: Guard, success: TxnOp, failure: TxnOp): Promise<TxnResult> {
    return decodeTxnResponse(
      await this.call('Txn', encodeTxnRequest(guard, success, failure, FRAME_HEADER_BYTES)),
    );
  }

  /** One Txn of several guards and operations (see encodeMultiTxnRequest). */
  async multiTxn(guards: Guard[], success: TxnOp[], failure: TxnOp[]): Promise<TxnResult> {
    return decodeTxnResponse(
      await this.call('Txn', encodeMultiTxnRequest(guards, success, failure, FRAME_HEADER_BYTES)),
    );
  }

  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const p of this.pending) p.cancel();
    this.session?.close();
    this.session = undefined;
  }

  private async connected(): Promise<ClientHttp2Session> {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    this.connecting ??= this.dialAny().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /** Dials the endpoints in turn from the last good one; the first that connects wins. */
  private async dialAny(): Promise<ClientHttp2Session> {
    const n = this.opts.endpoints.length;
    const errors: string[] = [];
    for (let k = 0; k < n; k++) {
      if (this.closed) break;
      const url = this.opts.endpoints[this.next % n];
      try {
        const s = await this.dial(url);
        this.session = s;
        return s;
      } catch (err) {
        errors.push(`${url}: ${(err as Error).message}`);
        this.next++;
      }
    }
    throw new GrpcError(`cannot reach the store: ${errors.join('; ') || 'client closed'}`, UNAVAILABLE);
  }

  private dial(endpoint: string): Promise<ClientHttp2Session> {
    // etcd's flags take host:port too: without a scheme, TLS when a CA is configured.
    const url = /^https?:\/\//.test(endpoint) ? endpoint : `${this.opts.ca ? 'https' : 'http'}://${endpoint}`;
    const tls = url.startsWith('https:');
    return new Promise((resolve, reject) => {
      const { hostname, port } = new URL(url);
      const host = hostname.replace(/^\[|\]$/g, '');
      const s = connect(url, {
        // A list of ten thousand objects is one response of tens of MiB: big windows and
        // session memory, so it streams in without waiting on window updates or tripping
        // nghttp2's memory guard.
        settings: { initialWindowSize: WINDOW_BYTES },
        maxSessionMemory: 256,
        // Our own socket, to turn Nagle off: a request is one small write, and waiting
        // for the previous one's ACK would add latency to every write the apiserver makes.
        createConnection: () => {
          const sock = tls
            ? tlsConnect({
                host,
                port: Number(port || 443),
                ca: this.opts.ca,
                cert: this.opts.cert,
                key: this.opts.key,
                ALPNProtocols: ['h2'],
              })
            : netConnect({ host, port: Number(port || 80) });
          sock.setNoDelay(true);
          return sock;
        },
      });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error('connect timeout'));
      }, this.opts.dialTimeoutMs ?? 5000);
      const forget = () => {
        if (this.session === s) {
          this.session = undefined;
          this.next++;
        }
      };
      s.once('connect', () => {
        clearTimeout(timer);
        s.setLocalWindowSize(WINDOW_BYTES);
        resolve(s);
      });
      s.on('error', (err) => {
        clearTimeout(timer);
        forget();
        reject(err);
      });
      s.on('goaway', forget);
      s.on('close', forget);
    });
  }

  /** Stops using a session: its calls in flight finish, new ones go to the next member. */
  private abandon(session: ClientHttp2Session): void {
    if (this.session !== session) return;
    this.session = undefined;
    this.next++;
    session.close();
  }

  /** One unary call; `frame` holds the request after FRAME_HEADER_BYTES of room for its header. */
  private async call(method: 'Range' | 'Txn', frame: Buffer): Promise<Buffer> {
    writeFrameHeader(frame, frame.length - FRAME_HEADER_BYTES);
    const session = await this.connected();
    let stream: ClientHttp2Stream;
    try {
      stream = session.request({
        ':method': 'POST',
        ':path': `/etcdserverpb.KV/${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
    } catch (err) {
      session.destroy();
      throw new GrpcError(`store connection failed: ${(err as Error).message}`, UNAVAILABLE);
    }
    return new Promise<Buffer>((resolve, reject) => {
      let response: Buffer | undefined;
      let frameError = '';
      const reader = new MessageReader(MAX_RESPONSE_BYTES, (body) => {
        response ??= body;
      });
      let status: number | undefined;
      let statusMessage = '';
      let httpStatus = 0;
      const readStatus = (h: Record<string, unknown>) => {
        const s = h['grpc-status'];
        if (s === undefined) return;
        status = Number(s);
        const m = h['grpc-message'];
        if (typeof m === 'string') {
          try {
            statusMessage = decodeURIComponent(m);
          } catch {
            statusMessage = m;
          }
        }
      };
      stream.on('response', (h) => {
        httpStatus = Number(h[':status']);
        readStatus(h);
      });
      stream.on('trailers', readStatus);
      stream.on('data', (c: Buffer) => {
        if (frameError !== '') return;
        const err = reader.push(c);
        if (err) frameError = err.message;
      });
      const pending: Pending = {
        started: Date.now(),
        cancel: () => {
          stream.close(constants.NGHTTP2_CANCEL);
          reject(new GrpcError(`store ${method} timed out`, DEADLINE_EXCEEDED));
        },
      };
      this.track(pending);
      stream.on('error', (err) => reject(new GrpcError(`store ${method}: ${err.message}`, UNAVAILABLE)));
      stream.on('close', () => {
        this.pending.delete(pending);
        if (status === undefined) {
          reject(
            new GrpcError(
              `store ${method}: the stream ended without a status (HTTP ${httpStatus || 'none'}, code ${stream.rstCode})`,
              UNAVAILABLE,
            ),
          );
          return;
        }
        if (status !== 0) {
          // The member cannot serve (no leader, stopping): the next call tries another.
          if (status === UNAVAILABLE) this.abandon(session);
          reject(new GrpcError(statusMessage || `store ${method} failed with gRPC status ${status}`, status));
          return;
        }
        if (frameError !== '') {
          reject(new GrpcError(`store ${method}: malformed response frame: ${frameError}`, UNAVAILABLE));
          return;
        }
        if (!response) {
          reject(new GrpcError(`store ${method}: empty response`, UNAVAILABLE));
          return;
        }
        resolve(response);
      });
      stream.end(frame);
    });
  }
}
