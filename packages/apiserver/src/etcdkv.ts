// A minimal gRPC client for the two etcd v3 calls on the apiserver's request
// path, KV.Range and KV.Txn, straight over node:http2 with hand-written
// protobuf. Every apiserver write is one Txn: through the general-purpose
// client (grpc-js call layers, a circuit breaker, protobufjs objects, Long
// conversions) a Txn cost more CPU than the rest of the write; here it is one
// HTTP/2 stream and a few buffers. Watches keep using the etcd3 client.
import { type ClientHttp2Session, type ClientHttp2Stream, connect, constants } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

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

// ---------- protobuf ----------

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

function writeVarint(buf: Buffer, at: number, v: number): number {
  while (v >= 0x80) {
    buf[at++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  buf[at++] = v;
  return at;
}

/** A field: a number is a varint (always written, so a oneof's 0 stays set), a Buffer length-delimited. */
type Field = [number, number | Buffer | undefined];

/** Encodes fields in order; undefined ones are left out. */
export function pbMessage(fields: Field[]): Buffer {
  let size = 0;
  for (const [n, v] of fields) {
    if (v === undefined) continue;
    if (typeof v === 'number') size += varintSize(n * 8) + varintSize(v);
    else size += varintSize(n * 8 + 2) + varintSize(v.length) + v.length;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const [n, v] of fields) {
    if (v === undefined) continue;
    if (typeof v === 'number') {
      if (v < 0 || !Number.isSafeInteger(v)) throw new Error(`protobuf: cannot encode ${v} as a varint`);
      at = writeVarint(out, at, n * 8);
      at = writeVarint(out, at, v);
    } else {
      at = writeVarint(out, at, n * 8 + 2);
      at = writeVarint(out, at, v.length);
      at += v.copy(out, at);
    }
  }
  return out;
}

/** Calls `fn` for each field of a message: varints as numbers, length-delimited fields as views. */
export function pbFields(buf: Buffer, fn: (field: number, value: number | Buffer) => void): void {
  let i = 0;
  const varint = (): number => {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (i >= buf.length) throw new Error('protobuf: truncated varint');
      const b = buf[i++];
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
      if (mul > 2 ** 63) throw new Error('protobuf: varint too long');
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) fn(field, varint());
    else if (wire === 2) {
      const len = varint();
      if (i + len > buf.length) throw new Error('protobuf: truncated field');
      fn(field, buf.subarray(i, i + len));
      i += len;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else throw new Error(`protobuf: unsupported wire type ${wire}`);
  }
}

const EMPTY = Buffer.alloc(0);

function decodeKv(buf: Buffer): RawKv {
  const kv: RawKv = { key: EMPTY, value: EMPTY, mod_revision: 0, create_revision: 0 };
  pbFields(buf, (f, v) => {
    if (f === 1 && typeof v !== 'number') kv.key = v;
    else if (f === 2 && typeof v === 'number') kv.create_revision = v;
    else if (f === 3 && typeof v === 'number') kv.mod_revision = v;
    else if (f === 5 && typeof v !== 'number') kv.value = v;
  });
  return kv;
}

function headerRevision(buf: Buffer): number {
  let rev = 0;
  pbFields(buf, (f, v) => {
    if (f === 3 && typeof v === 'number') rev = v;
  });
  return rev;
}

export function decodeRangeResponse(buf: Buffer): RangeResult {
  const r: RangeResult = { revision: 0, kvs: [], more: false };
  pbFields(buf, (f, v) => {
    if (f === 1 && typeof v !== 'number') r.revision = headerRevision(v);
    else if (f === 2 && typeof v !== 'number') r.kvs.push(decodeKv(v));
    else if (f === 3 && typeof v === 'number') r.more = v !== 0;
  });
  return r;
}

export function decodeTxnResponse(buf: Buffer): TxnResult {
  const r: TxnResult = { revision: 0, succeeded: false, rangeKvs: [] };
  let first = true;
  pbFields(buf, (f, v) => {
    if (f === 1 && typeof v !== 'number') r.revision = headerRevision(v);
    else if (f === 2 && typeof v === 'number') r.succeeded = v !== 0;
    else if (f === 3 && typeof v !== 'number') {
      if (!first) return;
      first = false;
      pbFields(v, (rf, rv) => {
        if (rf === 1 && typeof rv !== 'number') r.rangeKvs = decodeRangeResponse(rv).kvs;
      });
    }
  });
  return r;
}

export function encodeRangeRequest(a: RangeArgs): Buffer {
  return pbMessage([
    [1, a.key],
    [2, a.rangeEnd],
    [3, a.limit ? a.limit : undefined],
    [4, a.revision ? a.revision : undefined],
  ]);
}

export function encodeTxnRequest(guard: Guard, success: TxnOp, failure: TxnOp): Buffer {
  // Compare: result Equal (0), target Create (1) or Mod (2), key, create_revision (5) or mod_revision (6).
  const compare = pbMessage([
    [1, 0],
    [2, guard.target === 'create' ? 1 : 2],
    [3, guard.key],
    [guard.target === 'create' ? 5 : 6, guard.value],
  ]);
  return pbMessage([
    [1, compare],
    [2, encodeOp(success)],
    [3, encodeOp(failure)],
  ]);
}

function encodeOp(op: TxnOp): Buffer {
  if ('put' in op)
    return pbMessage([
      [
        2,
        pbMessage([
          [1, op.put.key],
          [2, op.put.value],
        ]),
      ],
    ]);
  if ('delete' in op) return pbMessage([[3, pbMessage([[1, op.delete.key]])]]);
  return pbMessage([[1, encodeRangeRequest(op.range)]]);
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
      return decodeRangeResponse(await this.call('Range', encodeRangeRequest(a)));
    } catch (err) {
      if (!(err instanceof GrpcError) || err.code !== UNAVAILABLE || this.closed) throw err;
      return decodeRangeResponse(await this.call('Range', encodeRangeRequest(a)));
    }
  }

  async txn(guard: Guard, success: TxnOp, failure: TxnOp): Promise<TxnResult> {
    return decodeTxnResponse(await this.call('Txn', encodeTxnRequest(guard, success, failure)));
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

  private async call(method: 'Range' | 'Txn', message: Buffer): Promise<Buffer> {
    const session = await this.connected();
    const frame = Buffer.allocUnsafe(5 + message.length);
    frame[0] = 0;
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
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
      const chunks: Buffer[] = [];
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
      stream.on('data', (c: Buffer) => chunks.push(c));
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
        const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        if (body.length < 5) {
          reject(new GrpcError(`store ${method}: empty response`, UNAVAILABLE));
          return;
        }
        const len = body.readUInt32BE(1);
        if (body[0] !== 0 || body.length < 5 + len) {
          reject(new GrpcError(`store ${method}: malformed response frame`, UNAVAILABLE));
          return;
        }
        resolve(body.subarray(5, 5 + len));
      });
      stream.end(frame);
    });
  }
}
