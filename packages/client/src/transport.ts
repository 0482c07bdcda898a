// One HTTP(S) exchange with the apiserver over node:https with a keep-alive
// agent. Everything above (REST verbs, watch) goes through a Transport, so unit
// tests can swap in a fake one.

import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP } from 'node:net';
import * as tls from 'node:tls';
import { ConnectionError, describeNetworkError, RequestTimeoutError } from './errors.js';
import type { ClientConfig } from './kubeconfig.js';

export interface TransportRequest {
  method: string;
  /** Path plus query string, e.g. "/api/v1/pods?limit=5". */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Whole-request timeout (ms); 0 for none (watches). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface TransportResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A response whose body is read as it arrives (watch, logs -f). */
export interface StreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  stream: NodeJS.ReadableStream & { destroy(err?: Error): void };
}

export interface Transport {
  request(req: TransportRequest): Promise<TransportResponse>;
  stream(req: TransportRequest): Promise<StreamResponse>;
  close(): void;
  /** host:port, for messages. */
  readonly host: string;
}

/** Reads the token for a request; a tokenFile is re-read at most once a minute (it rotates). */
class TokenSource {
  private cached = '';
  private readAt = 0;
  constructor(
    private readonly token?: string,
    private readonly file?: string,
  ) {}

  get(): string | undefined {
    if (this.token) return this.token;
    if (!this.file) return undefined;
    const now = Date.now();
    if (!this.cached || now - this.readAt > 60_000) {
      this.cached = readFileSync(this.file, 'utf8').trim();
      this.readAt = now;
    }
    return this.cached;
  }
}

export interface HttpTransportOptions {
  userAgent?: string;
  /** Sockets kept per host (keep-alive pool size). */
  maxSockets?: number;
}

/** The real transport: node:http(s) with a keep-alive agent per client. */
export class HttpTransport implements Transport {
  readonly host: string;
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly mod: typeof http | typeof https;
  private readonly tokens: TokenSource;
  private readonly userAgent: string;
  /** The server URL's path without trailing slashes, put before every request path. */
  private readonly basePath: string;

  constructor(config: ClientConfig, opts: HttpTransportOptions = {}) {
    this.url = new URL(config.server);
    const secure = this.url.protocol === 'https:';
    this.host = `${this.url.hostname}:${this.url.port || (secure ? '443' : '80')}`;
    this.mod = secure ? https : http;
    this.basePath = this.url.pathname.replace(/\/+$/, '');
    const agentOpts: https.AgentOptions = {
      keepAlive: true,
      maxSockets: opts.maxSockets ?? 64,
      keepAliveMsecs: 30_000,
    };
    if (secure) {
      // One TLS context for every connection: given as ca/cert/key, Node parses the
      // PEMs again for each new socket (7-10 ms of CPU each) and builds each
      // request's pool key from them.
      agentOpts.secureContext = tls.createSecureContext({
        ca: config.ca,
        cert: config.cert,
        key: config.key,
      });
      if (config.insecureSkipTLSVerify) agentOpts.rejectUnauthorized = false;
      // The SNI name, settled once: left unset, the agent works it out again for every
      // request (parsing the host, testing it against IP patterns). No SNI for an IP address.
      agentOpts.servername =
        config.tlsServerName || (isIP(this.url.hostname.replace(/^\[|\]$/g, '')) ? '' : this.url.hostname);
    }
    this.agent = secure ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    this.tokens = new TokenSource(config.token, config.tokenFile);
    this.userAgent = opts.userAgent ?? `kubit/0.1.0 (node ${process.version})`;
  }

  private open(req: TransportRequest): Promise<IncomingMessage> {
    return new Promise((resolvePromise, reject) => {
      const headers: Record<string, string> = {
        'User-Agent': this.userAgent,
        Accept: 'application/json',
        ...req.headers,
      };
      let token: string | undefined;
      try {
        token = this.tokens.get();
      } catch (e) {
        reject(
          new ConnectionError(this.host, `unable to read token file: ${(e as Error).message}`, 'ETOKEN'),
        );
        return;
      }
      if (token) headers.Authorization = `Bearer ${token}`;
      if (req.body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(req.body));
      const r = this.mod.request({
        protocol: this.url.protocol,
        hostname: this.url.hostname,
        port: this.url.port,
        method: req.method,
        path: this.basePath + req.path,
        headers,
        agent: this.agent,
        signal: req.signal,
      });
      let timer: NodeJS.Timeout | undefined;
      let timedOut = false;
      if (req.timeoutMs && req.timeoutMs > 0) {
        timer = setTimeout(() => {
          timedOut = true;
          r.destroy(new RequestTimeoutError(this.host, req.timeoutMs ?? 0));
        }, req.timeoutMs);
      }
      r.on('response', (res) => {
        // The timer keeps running until the body is read (request()) or is cleared for streams.
        (res as IncomingMessage & { kubitTimer?: NodeJS.Timeout }).kubitTimer = timer;
        resolvePromise(res);
      });
      r.on('error', (err: NodeJS.ErrnoException) => {
        if (timer) clearTimeout(timer);
        if (err instanceof ConnectionError) reject(err);
        else if (err.name === 'AbortError') reject(err);
        else if (timedOut) reject(new RequestTimeoutError(this.host, req.timeoutMs ?? 0));
        else reject(describeNetworkError(err, this.host));
      });
      r.end(req.body);
    });
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    const res = await this.open(req);
    const timer = (res as IncomingMessage & { kubitTimer?: NodeJS.Timeout }).kubitTimer;
    try {
      // Plain 'data'/'end' listeners: an async iterator over the response costs a
      // promise per chunk, and a daemon reads thousands of small bodies a second.
      const body = await new Promise<string>((resolveBody, reject) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolveBody(
            chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'),
          ),
        );
        res.on('error', reject);
        // A socket that closes before the body ends (aborted, server gone) never emits 'end'.
        res.on('close', () => {
          if (!res.complete) reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
        });
      });
      return { statusCode: res.statusCode ?? 0, headers: res.headers, body };
    } catch (e) {
      if (e instanceof ConnectionError || (e as Error).name === 'AbortError') throw e;
      throw describeNetworkError(e as NodeJS.ErrnoException, this.host);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  async stream(req: TransportRequest): Promise<StreamResponse> {
    const res = await this.open({ ...req, timeoutMs: req.timeoutMs });
    const timer = (res as IncomingMessage & { kubitTimer?: NodeJS.Timeout }).kubitTimer;
    if (timer) clearTimeout(timer);
    return { statusCode: res.statusCode ?? 0, headers: res.headers, stream: res };
  }

  close(): void {
    this.agent.destroy();
  }
}
