// A gRPC server on node:http2, for the member's client and peer ports.
//
// Why not grpc-js's Server: per call it runs a stack of interceptors,
// filters, deadline timers, channelz bookkeeping and metadata objects, and
// profiles of the member showed that stack costing as much main-thread time as
// the store's own work on a put. gRPC over HTTP/2 is small (a POST per call;
// each message a 5-byte prefix — compressed flag, big-endian length — and its
// protobuf; the status in trailers), so this file speaks it directly: one
// HTTP/2 stream per call, unary and bidi-streaming methods, the gRPC status
// codes and messages etcd's own (Go) server sends for oversized, undecodable
// and unknown requests. Clients are unchanged: etcdctl (grpc-go), the npm
// etcd3 client and grpc-js clients (the members' own) all speak to it.
//
// Around the calls it keeps what grpc-go gives every etcd member: deadlines
// from grpc-timeout, keepalive pings and their enforcement (keepalive.ts), a
// limit on concurrent streams per connection, a bound on what a stream whose
// client stopped reading may hold, and GOAWAY with draining on shutdown.
//
// Service definitions still come from proto-loader (paths and codecs), and
// handlers keep grpc-js's shapes (`(call, callback)` for unary methods, an
// event-emitting duplex call for streams), so the services do not care which
// server runs them.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { frameMessage, MessageReader } from '@kubit/wire';
import { parseGrpcTimeout } from './grpc-timeout.js';
import { ConnectionKeepalive, type KeepaliveOptions } from './keepalive.js';

/** gRPC status codes used here (the rest come from the services' errors). */
const Status = {
  OK: 0,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** What a call past its deadline ends with (the words etcd's server sends). */
const DEADLINE_MESSAGE = 'context deadline exceeded';

/** What a handler fails with: a gRPC code and a message (EtcdError and grpc-js's ServiceError both fit). */
export interface CallError {
  code?: number;
  details?: string;
  message?: string;
}

export interface UnaryCall<Req> {
  readonly request: Req;
  /** When the client stops waiting, on performance.now()'s clock (Infinity: no grpc-timeout). */
  readonly deadline: number;
}

/** True once a call's deadline has passed: work not yet begun for it must not begin. */
export function deadlinePassed(deadline: number): boolean {
  return deadline !== Number.POSITIVE_INFINITY && performance.now() >= deadline;
}
export type UnaryCallback<Res> = (err: CallError | null, response?: Res) => void;
export type UnaryHandler<Req, Res> = (call: UnaryCall<Req>, callback: UnaryCallback<Res>) => void;

/**
 * One bidi-streaming call: 'data' for each request, 'end' when the client
 * half-closes, 'close' once when the call is over for any reason (finished,
 * cancelled, connection lost).
 */
export interface DuplexCall<Req, Res> {
  on(event: 'data', listener: (request: Req) => void): this;
  on(event: 'end' | 'close', listener: () => void): this;
  /** Sends a response; false when the stream's buffer is full (the bytes are still queued). */
  write(response: Res): boolean;
  /**
   * Sends one response already encoded and framed by the caller (gRPC's
   * 5-byte header first), in pieces written as they are, uncopied, in one go:
   * a piece may be shared by many calls. False as for write().
   */
  writeFramed(pieces: readonly Buffer[]): boolean;
  /** Finishes the call with status OK. */
  end(): void;
  /** Finishes the call with the error's status (INTERNAL unless it carries a code). */
  destroy(err?: CallError): void;
}
export type DuplexHandler<Req, Res> = (call: DuplexCall<Req, Res>) => void;

// Handlers are typed per method by the services; the server only routes them.
// biome-ignore lint/suspicious/noExplicitAny: each method has its own request type
type AnyHandler = UnaryHandler<any, any> | DuplexHandler<any, any>;
export type ServiceImplementation = Record<string, AnyHandler>;

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  trustedCaFile?: string;
  clientCertAuth: boolean;
}

export interface GrpcServerOptions {
  /** Largest request message accepted (bigger ones get RESOURCE_EXHAUSTED, as grpc-go's MaxRecvMsgSize). */
  maxReceiveMessageLength: number;
  /** SETTINGS_MAX_CONCURRENT_STREAMS: calls one connection may have open at once (default: HTTP/2's unlimited). */
  maxConcurrentStreams?: number;
  /** Server pings and the client ping policy (default: none). */
  keepalive?: KeepaliveOptions;
  /**
   * Response bytes a streaming call may have queued for a client that does
   * not read them; past this the stream is reset with ENHANCE_YOUR_CALM
   * (clients see RESOURCE_EXHAUSTED) and its queue dropped. Trailers with a
   * status could not reach such a client: they would wait behind the queue.
   * A unary response is one message and is always sent whole.
   */
  maxStreamBufferedBytes?: number;
}

/** HTTP/2's largest SETTINGS_MAX_CONCURRENT_STREAMS, etcd's default. */
export const UNLIMITED_STREAMS = 2 ** 32 - 1;

/** A method whose responses may also be serialized straight into a gRPC frame (see framedSerializer). */
export type ServerMethodDefinition = MethodDefinition<unknown, unknown> & {
  responseSerializeFramed?: (response: unknown) => Buffer;
};

interface Route {
  method: ServerMethodDefinition;
  handler: AnyHandler | undefined;
}

const RESPONSE_HEADERS = {
  ':status': 200,
  'content-type': 'application/grpc',
  'grpc-accept-encoding': 'identity',
};

/** gRPC's percent-encoding of grpc-message: bytes outside printable ASCII, and '%'. */
export function encodeGrpcMessage(message: string): string {
  // Fast path: etcd's messages are plain ASCII.
  if (/^[\x20-\x24\x26-\x7e]*$/.test(message)) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The server side of one call: its HTTP/2 stream, response headers and final status. */
class ServerCall extends EventEmitter implements DuplexCall<unknown, unknown> {
  private finished = false;
  private statusCode: number = Status.OK;
  private statusMessage = '';

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly method: ServerMethodDefinition,
    /** Queued response bytes past which the stream is reset (streaming calls). */
    private readonly maxBufferedBytes = Number.POSITIVE_INFINITY,
  ) {
    super();
  }

  /** Resets a stream whose client stopped reading, dropping what it queued (true: it was reset). */
  private overflowed(): boolean {
    if (this.stream.writableLength <= this.maxBufferedBytes) return false;
    this.finished = true;
    this.stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    return true;
  }

  /** A response as one gRPC frame. */
  private frame(response: unknown): Buffer {
    const framed = this.method.responseSerializeFramed;
    return framed ? framed(response) : frameMessage(this.method.responseSerialize(response));
  }

  private respond(): void {
    if (this.stream.headersSent) return;
    this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
    this.stream.once('wantTrailers', () => {
      const trailers: http2.OutgoingHttpHeaders = { 'grpc-status': String(this.statusCode) };
      if (this.statusMessage !== '') trailers['grpc-message'] = encodeGrpcMessage(this.statusMessage);
      this.stream.sendTrailers(trailers);
      this.closeIfClientOpen();
    });
  }

  /**
   * After the status, a stream the client has not half-closed (a call ended
   * by its deadline, a refused stream) is reset with NO_ERROR, as grpc-go
   * does: otherwise it would stay open, and count against the connection's
   * stream limit, until the client ends it. Deferred a turn so the status,
   * already queued, goes out first.
   */
  private closeIfClientOpen(): void {
    if (this.stream.readableEnded) return;
    setImmediate(() => {
      if (!this.stream.closed && !this.stream.readableEnded) {
        this.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      }
    });
  }

  write(response: unknown): boolean {
    if (this.finished || this.stream.destroyed) return false;
    this.respond();
    const ok = this.stream.write(this.frame(response));
    return !this.overflowed() && ok;
  }

  writeFramed(pieces: readonly Buffer[]): boolean {
    if (this.finished || this.stream.destroyed) return false;
    this.respond();
    // Corked, the pieces reach the connection as one writev.
    this.stream.cork();
    let ok = true;
    for (const piece of pieces) ok = this.stream.write(piece) && ok;
    this.stream.uncork();
    return !this.overflowed() && ok;
  }

  /** A unary call's answer: headers, the one message and the trailers in one go. */
  reply(response: unknown): void {
    if (this.finished || this.stream.destroyed) return;
    let frame: Buffer;
    try {
      frame = this.frame(response);
    } catch (err) {
      this.fail({ code: Status.INTERNAL, message: `grpc: error while marshaling: ${errorText(err)}` });
      return;
    }
    this.finished = true;
    this.respond();
    this.stream.end(frame);
  }

  end(): void {
    this.finish(Status.OK, '');
  }

  destroy(err?: CallError): void {
    this.fail(err ?? { code: Status.INTERNAL, message: 'call ended by the server' });
  }

  fail(err: CallError): void {
    const code = typeof err.code === 'number' && err.code > 0 && err.code <= 16 ? err.code : Status.INTERNAL;
    this.finish(code, err.details || err.message || '');
  }

  /** Ends the call with a status: in the trailers, or trailers-only if nothing was sent yet. */
  finish(code: number, message: string): void {
    if (this.finished) return;
    this.finished = true;
    if (this.stream.destroyed || this.stream.closed) return;
    if (!this.stream.headersSent) {
      const headers: http2.OutgoingHttpHeaders = { ...RESPONSE_HEADERS, 'grpc-status': String(code) };
      if (message !== '') headers['grpc-message'] = encodeGrpcMessage(message);
      this.stream.respond(headers, { endStream: true });
      this.closeIfClientOpen();
      return;
    }
    this.statusCode = code;
    this.statusMessage = message;
    this.stream.end();
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class GrpcServer {
  private readonly routes = new Map<string, Route>();
  private readonly services = new Set<string>();
  private readonly servers: (http2.Http2Server | http2.Http2SecureServer)[] = [];
  /** Open connections, each with its keepalive state (undefined without keepalive). */
  private readonly sessions = new Map<http2.ServerHttp2Session, ConnectionKeepalive | undefined>();
  /** Streaming calls in progress: they never end by themselves, so a drain ends them. */
  private readonly streamingCalls = new Set<ServerCall>();
  private draining = false;

  constructor(private readonly opts: GrpcServerOptions) {}

  /** Serves a service's methods; methods without a handler answer UNIMPLEMENTED. */
  addService(service: ServiceDefinition, impl: ServiceImplementation): void {
    for (const [name, method] of Object.entries(service)) {
      this.services.add(method.path.split('/')[1]);
      this.routes.set(method.path, {
        method: method as ServerMethodDefinition,
        handler: impl[name] ?? (method.originalName ? impl[method.originalName] : undefined),
      });
    }
  }

  /** Listens on host:port (port 0: any free port); resolves with the port. */
  listen(host: string, port: number, tls?: TlsFiles): Promise<number> {
    // grpc-js's server also lifts Node's session memory cap: Node degrades badly once it is hit.
    const common: http2.ServerOptions = {
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
      maxSendHeaderBlockLength: 0x7fffffff,
      // Sent in SETTINGS; nghttp2 refuses streams past it with RST_STREAM REFUSED_STREAM.
      settings: { maxConcurrentStreams: this.opts.maxConcurrentStreams ?? UNLIMITED_STREAMS },
    };
    const server = tls
      ? http2.createSecureServer({
          ...common,
          cert: readFileSync(tls.certFile),
          key: readFileSync(tls.keyFile),
          ca: tls.trustedCaFile ? readFileSync(tls.trustedCaFile) : undefined,
          requestCert: tls.clientCertAuth,
          rejectUnauthorized: tls.clientCertAuth,
        })
      : http2.createServer(common);
    // Node leaves Nagle on for HTTP/2 sockets: with many calls on one
    // connection, a small answer written while an earlier one is unacked
    // waits for the peer's delayed ACK (40 ms on Linux).
    server.on('connection', (socket: Socket) => socket.setNoDelay(true));
    server.on('session', (session: http2.ServerHttp2Session) => {
      const keepalive = this.opts.keepalive && new ConnectionKeepalive(session, this.opts.keepalive);
      this.sessions.set(session, keepalive);
      session.on('close', () => this.sessions.delete(session));
      // A broken connection is the client's problem, not the server's.
      session.on('error', () => {});
    });
    if (tls) server.on('secureConnection', (socket) => socket.on('error', () => {}));
    server.on('stream', (stream, headers) => {
      try {
        this.onStream(stream, headers);
      } catch {
        // A request that trips this code ends its own call, never the member.
        stream.destroy();
      }
    });
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host.replace(/^\[|\]$/g, ''), () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops listening and drops every connection (calls in flight end with them). */
  close(): void {
    for (const s of this.servers) s.close();
    for (const session of this.sessions.keys()) session.destroy();
    this.sessions.clear();
  }

  /**
   * A graceful stop, as grpc-go's GracefulStop bounded by a timeout (etcd's
   * shutdown): stops listening, sends every connection GOAWAY (clients take
   * new calls elsewhere), ends the streaming calls with `streamStatus` (a
   * watch never ends by itself), lets unary calls in flight finish for up to
   * `graceMs`, then drops whatever is left. Resolves once every connection
   * is closed.
   */
  async drain(graceMs: number, streamStatus: { code: number; message: string }): Promise<void> {
    this.draining = true;
    for (const s of this.servers) s.close();
    for (const call of this.streamingCalls) call.finish(streamStatus.code, streamStatus.message);
    const closed = [...this.sessions.keys()].map(
      (session) =>
        new Promise<void>((resolve) => {
          if (session.closed || session.destroyed) resolve();
          else session.close(resolve);
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all(closed), graceOver]);
    clearTimeout(timer);
    this.close();
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => {});
    const keepalive = this.sessions.get(stream.session as http2.ServerHttp2Session);
    const path = headers[':path'] ?? '';
    const route = this.routes.get(path);
    const streaming = route?.method.requestStream === true;
    const call = new ServerCall(
      stream,
      route?.method ?? UNKNOWN_METHOD,
      streaming ? this.opts.maxStreamBufferedBytes : undefined,
    );
    // One listener for what a call holds until its stream closes.
    const timeoutHeader = headers['grpc-timeout'];
    let deadlineTimer: NodeJS.Timeout | undefined;
    if (keepalive || streaming || timeoutHeader !== undefined) {
      keepalive?.streamStarted();
      if (streaming) this.streamingCalls.add(call);
      stream.once('close', () => {
        keepalive?.streamEnded();
        if (streaming) this.streamingCalls.delete(call);
        clearTimeout(deadlineTimer);
      });
    }
    if (this.draining) {
      call.finish(Status.UNAVAILABLE, 'grpc: the server is shutting down');
      stream.resume();
      return;
    }
    /** Set once the call has its status: nothing more is read from it. */
    let done = false;
    let deadline = Number.POSITIVE_INFINITY;
    if (timeoutHeader !== undefined) {
      const timeoutMs = parseGrpcTimeout(String(timeoutHeader));
      if (timeoutMs === undefined) {
        call.finish(Status.INTERNAL, `transport: malformed grpc-timeout: ${timeoutHeader}`);
        stream.resume();
        return;
      }
      deadline = performance.now() + timeoutMs;
      // The call ends when the client stops waiting; work already begun (a
      // write proposed to raft) may still complete, as in etcd.
      deadlineTimer = setTimeout(() => {
        done = true;
        call.finish(Status.DEADLINE_EXCEEDED, DEADLINE_MESSAGE);
      }, timeoutMs);
    }
    if (!route?.handler) {
      // grpc-go's words, as etcd's server says them.
      const [, service = '', name = ''] = path.split('/');
      const message = route
        ? `method ${name} not implemented`
        : this.services.has(service)
          ? `unknown method ${name} for service ${service}`
          : `unknown service ${service}`;
      call.finish(Status.UNIMPLEMENTED, message);
      stream.resume();
      return;
    }
    const encoding = headers['grpc-encoding'];
    if (encoding !== undefined && encoding !== 'identity') {
      call.finish(
        Status.UNIMPLEMENTED,
        `grpc: Decompressor is not installed for grpc-encoding "${encoding}"`,
      );
      stream.resume();
      return;
    }
    const { method, handler } = route;
    /** Ends the call with a status; nothing more is read from it. */
    const stop = (code: number, message: string) => {
      done = true;
      call.finish(code, message);
    };
    const reader = new MessageReader(this.opts.maxReceiveMessageLength, (body) => {
      if (done) return;
      let request: unknown;
      try {
        request = method.requestDeserialize(body);
      } catch (err) {
        stop(Status.INTERNAL, `grpc: error unmarshalling request: ${errorText(err)}`);
        return;
      }
      if (streaming) {
        call.emit('data', request);
        return;
      }
      // Unary: the one request message (usually with END_STREAM in the same read).
      done = true;
      (handler as UnaryHandler<unknown, unknown>)({ request, deadline }, (err, response) => {
        if (err) call.fail(err);
        else call.reply(response ?? {});
      });
    });
    stream.on('data', (chunk: Buffer) => {
      if (done) return;
      try {
        const err = reader.push(chunk);
        if (err) stop(err.code, err.message);
      } catch (err) {
        // A handler that throws ends its own call, never the member.
        stop(Status.INTERNAL, errorText(err));
      }
    });
    if (streaming) {
      stream.on('end', () => call.emit('end'));
      stream.on('close', () => call.emit('close'));
      (handler as DuplexHandler<unknown, unknown>)(call);
    } else {
      stream.on('end', () => {
        if (!done) stop(Status.INTERNAL, 'grpc: the client sent no request message');
      });
    }
  }
}

/** Stands in for the method of a path nobody serves (only its status is ever sent). */
const UNKNOWN_METHOD: MethodDefinition<unknown, unknown> = {
  path: '',
  requestStream: false,
  responseStream: false,
  requestSerialize: () => Buffer.alloc(0),
  requestDeserialize: () => ({}),
  responseSerialize: () => Buffer.alloc(0),
  responseDeserialize: () => ({}),
};
