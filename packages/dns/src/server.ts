// The DNS server: UDP and TCP listeners on one address and port, each query
// answered from the cluster zone or forwarded upstream. The wire format is
// dns-packet's. UDP answers larger than the client's size (512 bytes, or the
// EDNS size it offers) are sent truncated with TC set, so the client retries
// over TCP (RFC 1035 4.2.1, RFC 6891 6.2.5).
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import dnsPacket from 'dns-packet';
import type { Forwarder } from './forwarder.js';
import type { DnsMetrics } from './metrics.js';
import type { ClusterZone, WireRecord } from './zone.js';

type Transport = 'udp' | 'tcp';

/** The UDP size we offer in our own OPT record (the DNS flag day 2020 value). */
const OUR_UDP_SIZE = 1232;
const CLASSIC_UDP_SIZE = 512;
/** Answers remembered by their query bytes (ID aside), for the zone's current generation. */
const ANSWER_CACHE_SIZE = 20_000;
/** A TCP client that sends nothing for this long is disconnected. */
const TCP_IDLE_MS = 10_000;

const RCODES = [
  'NOERROR',
  'FORMERR',
  'SERVFAIL',
  'NXDOMAIN',
  'NOTIMP',
  'REFUSED',
  'YXDOMAIN',
  'YXRRSET',
  'NXRRSET',
  'NOTAUTH',
  'NOTZONE',
];
const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4 } as const;

interface CachedAnswer {
  generation: number;
  bytes: Buffer;
  type: string;
  rcode: string;
}

interface Reply {
  bytes: Buffer;
  type: string;
  rcode: string;
  source: 'cluster' | 'forward' | 'error';
  /** Safe to remember for the zone's current generation. */
  cacheable: boolean;
}

export interface DnsServerOptions {
  zone: ClusterZone;
  forwarder: Forwarder;
  metrics: DnsMetrics;
  onError?: (err: Error) => void;
}

export class DnsServer {
  private udp: Socket | undefined;
  private tcp: Server | undefined;
  private readonly connections = new Set<TcpSocket>();
  private readonly cache = new Map<string, CachedAnswer>();

  constructor(private readonly o: DnsServerOptions) {}

  /** Binds UDP and TCP on host:port (port 0: any, the same for both is not guaranteed then). */
  async listen(host: string, port: number): Promise<{ udpPort: number; tcpPort: number }> {
    const udp = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4' });
    udp.on('message', (msg, rinfo) => {
      // Most queries repeat: answer those from the cache without a promise in between.
      const cached = this.fromCache(msg);
      if (cached) {
        udp.send(cached, rinfo.port, rinfo.address);
        return;
      }
      void this.handle(msg, 'udp').then((reply) => {
        if (reply) udp.send(reply, rinfo.port, rinfo.address);
      });
    });
    udp.on('error', (err) => this.o.onError?.(err));
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    // Room for bursts: a full receive buffer drops queries (the client retries after seconds).
    try {
      udp.setRecvBufferSize(4 * 1024 * 1024);
      udp.setSendBufferSize(4 * 1024 * 1024);
    } catch {
      // Capped by net.core.rmem_max; the default still works.
    }
    this.udp = udp;
    const udpPort = udp.address().port;
    const tcp = createServer((sock) => this.serveTcp(sock));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(port === 0 ? udpPort : port, host, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    tcp.on('error', (err) => this.o.onError?.(err));
    this.tcp = tcp;
    const addr = tcp.address();
    return { udpPort, tcpPort: typeof addr === 'object' && addr ? addr.port : 0 };
  }

  async close(): Promise<void> {
    this.udp?.close();
    for (const c of this.connections) c.destroy();
    await new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve()));
  }

  private serveTcp(sock: TcpSocket): void {
    this.connections.add(sock);
    sock.setTimeout(TCP_IDLE_MS, () => sock.destroy());
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    sock.on('data', (chunk) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        void this.handle(Buffer.from(msg), 'tcp').then((reply) => {
          if (!reply || sock.destroyed) return;
          const head = Buffer.alloc(2);
          head.writeUInt16BE(reply.length, 0);
          sock.write(Buffer.concat([head, reply]));
        });
      }
    });
    sock.on('error', () => sock.destroy());
    sock.on('close', () => this.connections.delete(sock));
  }

  /**
   * A UDP answer from the cache: the same query bytes (ID aside) get the same
   * answer while the zone is unchanged, so the reply is the remembered bytes
   * with the query's ID.
   */
  fromCache(msg: Buffer): Buffer | undefined {
    if (msg.length < 12) return undefined;
    const started = performance.now();
    const hit = this.cache.get(msg.toString('latin1', 2));
    if (!hit || hit.generation !== this.o.zone.generation) return undefined;
    const bytes = Buffer.from(hit.bytes);
    bytes[0] = msg[0];
    bytes[1] = msg[1];
    this.count('udp', hit.type, hit.rcode, 'cluster', started);
    return bytes;
  }

  /** The answer to one query message (undefined: no answer at all, as for garbage or responses). */
  async handle(msg: Buffer, transport: Transport): Promise<Buffer | undefined> {
    const started = performance.now();
    if (msg.length < 12) return undefined;
    let reply: Reply | undefined;
    try {
      reply = await this.answer(msg, transport);
    } catch (err) {
      this.o.onError?.(err as Error);
      reply = errorReply(msg, RCODE.SERVFAIL);
    }
    if (!reply) return undefined;
    if (transport === 'udp' && reply.cacheable) {
      if (this.cache.size >= ANSWER_CACHE_SIZE) this.cache.clear();
      this.cache.set(msg.toString('latin1', 2), {
        generation: this.o.zone.generation,
        bytes: reply.bytes,
        type: reply.type,
        rcode: reply.rcode,
      });
    }
    this.count(transport, reply.type, reply.rcode, reply.source, started);
    return reply.bytes;
  }

  /** Metric children by label values: looking labels up per query costs more than the answer. */
  private readonly children = new Map<
    string,
    { requests: { inc(): void }; responses: { inc(): void }; duration: { observe(v: number): void } }
  >();

  private count(proto: Transport, type: string, rcode: string, source: string, startedMs: number): void {
    const key = `${proto}|${type}|${rcode}|${source}`;
    let c = this.children.get(key);
    if (!c) {
      const m = this.o.metrics;
      c = {
        requests: m.requests.labels({ proto, type }),
        responses: m.responses.labels({ rcode, source }),
        duration: m.duration.labels({ source }),
      };
      this.children.set(key, c);
    }
    c.requests.inc();
    c.responses.inc();
    c.duration.observe((performance.now() - startedMs) / 1000);
  }

  private async answer(msg: Buffer, transport: Transport): Promise<Reply | undefined> {
    let query: dnsPacket.DecodedPacket & { opcode?: string };
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return errorReply(msg, RCODE.FORMERR);
    }
    if (query.type === 'response') return undefined;
    if (query.opcode !== 'QUERY') return errorReply(msg, RCODE.NOTIMP, query);
    const questions = query.questions ?? [];
    if (questions.length !== 1) return errorReply(msg, RCODE.FORMERR, query);
    const q = questions[0];
    const generation = this.o.zone.generation;
    const result = this.o.zone.lookup(q.name, q.type);
    if (result.kind === 'forward') return this.forward(msg, transport, query);
    const answers: WireRecord[] = [...result.answers];
    let cacheable = generation === this.o.zone.generation;
    if (result.chase) {
      answers.push(...(await this.chase(result.chase.name, result.chase.type)));
      cacheable = false;
    }
    const opt = query.additionals?.find((a) => a.type === 'OPT') as dnsPacket.OptAnswer | undefined;
    const limit =
      transport === 'tcp'
        ? 65_535
        : opt
          ? Math.max(CLASSIC_UDP_SIZE, Math.min(opt.udpPayloadSize, 65_535))
          : CLASSIC_UDP_SIZE;
    const ourOpt = opt
      ? [{ type: 'OPT', name: '.', udpPayloadSize: OUR_UDP_SIZE, flags: 0 } as dnsPacket.Answer]
      : [];
    const flags =
      dnsPacket.AUTHORITATIVE_ANSWER |
      ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) |
      dnsPacket.RECURSION_AVAILABLE |
      RCODE[result.rcode];
    const packet: dnsPacket.Packet = {
      id: query.id,
      type: 'response',
      flags,
      questions: [q],
      answers: answers as dnsPacket.Answer[],
      authorities: result.authorities as dnsPacket.Answer[],
      additionals: [...(result.additionals as dnsPacket.Answer[]), ...ourOpt],
    };
    let bytes = dnsPacket.encode(packet);
    if (bytes.length > limit) {
      this.o.metrics.truncated.inc({ proto: transport });
      bytes = dnsPacket.encode({
        ...packet,
        flags: flags | dnsPacket.TRUNCATED_RESPONSE,
        answers: [],
        authorities: [],
        additionals: ourOpt,
      });
    }
    return { bytes, type: q.type, rcode: result.rcode, source: 'cluster', cacheable };
  }

  private async forward(
    msg: Buffer,
    transport: Transport,
    query: dnsPacket.DecodedPacket,
  ): Promise<Reply | undefined> {
    const type = query.questions?.[0]?.type ?? 'unknown';
    this.o.metrics.forwardRequests.inc({ to: transport });
    const answer = await this.o.forwarder.forward(msg, transport);
    if (!answer) {
      this.o.metrics.forwardFailures.inc();
      return errorReply(msg, RCODE.SERVFAIL, query);
    }
    const rcode = RCODES[answer.readUInt16BE(2) & 0xf] ?? 'unknown';
    return { bytes: answer, type, rcode, source: 'forward', cacheable: false };
  }

  /** An ExternalName's target, asked upstream with the client's type (2.5's second answer line). */
  private async chase(name: string, type: string): Promise<WireRecord[]> {
    const q = dnsPacket.encode({
      id: Math.floor(Math.random() * 65536),
      type: 'query',
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name, type: type as dnsPacket.RecordType, class: 'IN' }],
    });
    const answer = await this.o.forwarder.forward(q, 'udp');
    if (!answer) return [];
    try {
      return (dnsPacket.decode(answer).answers ?? []) as unknown as WireRecord[];
    } catch {
      return [];
    }
  }
}

/** A header-and-question answer carrying only an rcode (FORMERR, NOTIMP, SERVFAIL). */
function errorReply(msg: Buffer, rcode: number, query?: dnsPacket.DecodedPacket): Reply {
  const flags = dnsPacket.RECURSION_AVAILABLE | ((query?.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | rcode;
  const bytes = dnsPacket.encode({
    id: msg.readUInt16BE(0),
    type: 'response',
    flags,
    questions: query?.questions?.slice(0, 1) ?? [],
  });
  return {
    bytes,
    type: query?.questions?.[0]?.type ?? 'unknown',
    rcode: RCODES[rcode],
    source: 'error',
    cacheable: false,
  };
}
