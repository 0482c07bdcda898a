// Forwarding of names outside the cluster zone to the upstream resolvers (the
// node's, from /etc/resolv.conf, or --upstream). UDP queries share one socket:
// each gets an ID of its own so answers find their query, and an answer is only
// taken from the address it was sent to. TCP queries (a client that retried
// after a truncated answer) go upstream over TCP. Each upstream is tried in
// turn until one answers or the time is up; then the caller answers SERVFAIL.
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6, connect as tcpConnect } from 'node:net';

export interface Upstream {
  host: string;
  port: number;
}

/** Parses "ip", "ip:port", "[v6]:port" into an upstream; throws a message naming the problem. */
export function parseUpstream(s: string): Upstream {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  const m = v6 ?? /^([^:]+)(?::(\d+))?$/.exec(s);
  const host = m?.[1];
  const port = m?.[2] === undefined ? 53 : Number(m[2]);
  if (!host || (!isIPv6(host) && !/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) || !(port >= 1 && port <= 65535)) {
    throw new Error(`"${s}" is not an upstream resolver (ip or ip:port, e.g. 10.0.0.2:53)`);
  }
  return { host, port };
}

/** The nameservers of a resolv.conf text, in order. */
export function resolvConfNameservers(text: string): Upstream[] {
  const out: Upstream[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line);
    if (!m) continue;
    try {
      out.push(parseUpstream(m[1].includes(':') && !m[1].startsWith('[') ? `[${m[1]}]` : m[1]));
    } catch {
      // A line we cannot use is skipped, as the C resolver does.
    }
  }
  return out;
}

interface Pending {
  clientId: number;
  upstream: Upstream;
  resolve: (answer: Buffer | undefined) => void;
  timer: NodeJS.Timeout;
}

export interface ForwarderOptions {
  upstreams: Upstream[];
  /** How long one upstream gets to answer before the next is asked. */
  attemptTimeoutMs: number;
  /** The whole budget of one query (below a client's usual 5 s). */
  totalTimeoutMs: number;
}

export class Forwarder {
  private readonly sockets = new Map<string, Socket>();
  private readonly pending = new Map<number, Pending>();
  private nextId = Math.floor(Math.random() * 65536);
  private rotation = 0;

  constructor(private readonly o: ForwarderOptions) {}

  get upstreams(): readonly Upstream[] {
    return this.o.upstreams;
  }

  private socketFor(family: 'udp4' | 'udp6'): Socket {
    let s = this.sockets.get(family);
    if (!s) {
      s = createSocket(family);
      s.on('message', (msg, rinfo) => this.onAnswer(msg, rinfo.address, rinfo.port));
      // An unreachable upstream shows up as a timeout; socket errors must not end the process.
      s.on('error', () => {});
      s.bind(0);
      s.unref();
      this.sockets.set(family, s);
    }
    return s;
  }

  private onAnswer(msg: Buffer, address: string, port: number): void {
    if (msg.length < 12) return;
    const id = msg.readUInt16BE(0);
    const p = this.pending.get(id);
    if (!p || p.upstream.port !== port || normalize(p.upstream.host) !== normalize(address)) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    const out = Buffer.from(msg);
    out.writeUInt16BE(p.clientId, 0);
    p.resolve(out);
  }

  private freeId(): number {
    for (let i = 0; i < 65536; i++) {
      this.nextId = (this.nextId + 1) & 0xffff;
      const id = this.nextId;
      if (!this.pending.has(id)) return id;
    }
    return -1;
  }

  /** The upstream answer (with the client's ID) to a query, or undefined when none answered in time. */
  async forward(query: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    const ups = this.o.upstreams;
    if (ups.length === 0 || query.length < 12) return undefined;
    const deadline = Date.now() + this.o.totalTimeoutMs;
    const start = this.rotation++ % ups.length;
    for (let i = 0; Date.now() < deadline; i++) {
      const up = ups[(start + i) % ups.length];
      const wait = Math.min(this.o.attemptTimeoutMs, deadline - Date.now());
      if (wait <= 0) break;
      const answer = transport === 'udp' ? await this.viaUdp(query, up, wait) : await viaTcp(query, up, wait);
      if (answer) return answer;
    }
    return undefined;
  }

  private viaUdp(query: Buffer, up: Upstream, timeoutMs: number): Promise<Buffer | undefined> {
    const id = this.freeId();
    if (id < 0) return Promise.resolve(undefined);
    const out = Buffer.from(query);
    const clientId = out.readUInt16BE(0);
    out.writeUInt16BE(id, 0);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(undefined);
      }, timeoutMs);
      this.pending.set(id, { clientId, upstream: up, resolve, timer });
      this.socketFor(isIPv6(up.host) ? 'udp6' : 'udp4').send(out, up.port, up.host, (err) => {
        if (!err) return;
        this.pending.delete(id);
        clearTimeout(timer);
        resolve(undefined);
      });
    });
  }

  close(): void {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.resolve(undefined);
    }
    this.pending.clear();
    for (const s of this.sockets.values()) s.close();
    this.sockets.clear();
  }
}

function normalize(host: string): string {
  return host.startsWith('::ffff:') ? host.slice(7) : host;
}

/** One query over a fresh TCP connection (two-byte length prefix, RFC 1035 4.2.2). */
function viaTcp(query: Buffer, up: Upstream, timeoutMs: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (answer: Buffer | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(answer);
    };
    const sock = tcpConnect({ host: up.host, port: up.port }, () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(query.length, 0);
      sock.write(Buffer.concat([len, query]));
    });
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
        finish(buf.subarray(2, 2 + buf.readUInt16BE(0)));
    });
    sock.on('error', () => finish(undefined));
    sock.on('close', () => finish(undefined));
  });
}
