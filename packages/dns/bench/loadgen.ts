// A UDP DNS load generator: many queries in flight over a few sockets, either
// open loop (a fixed offered rate, whatever the server does: latency then
// includes queueing, as a client population would see it) or closed loop (a
// fixed number outstanding: the server's throughput). Queries are encoded once
// by dns-packet; each send only writes its ID. An unanswered query counts as
// lost and as infinitely slow in the percentiles.
import { createSocket, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';

export interface LoadOptions {
  port: number;
  host?: string;
  names: string[];
  durationMs: number;
  /** Offered queries per second (open loop); undefined: closed loop with `inFlight` outstanding. */
  rate?: number;
  inFlight?: number;
  timeoutMs?: number;
  sockets?: number;
}

export interface LoadResult {
  sent: number;
  answered: number;
  /** Answers that were not NOERROR with at least one record. */
  wrong: number;
  lost: number;
  /** Answers per second over the run. */
  qps: number;
  p50Ms: number;
  p99Ms: number;
}

interface Conn {
  sock: Socket;
  sentAt: Float64Array;
  nextId: number;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const host = o.host ?? '127.0.0.1';
  const timeoutMs = o.timeoutMs ?? 1_000;
  const queries = o.names.map((name) =>
    dnsPacket.encode({
      id: 0,
      type: 'query',
      flags: dnsPacket.RECURSION_DESIRED,
      questions: [{ name, type: 'A' }],
    }),
  );
  const latencies: number[] = [];
  let sent = 0;
  let answered = 0;
  let wrong = 0;
  let running = true;
  let onAnswer: () => void = () => {};
  const conns: Conn[] = [];
  for (let i = 0; i < (o.sockets ?? 4); i++) {
    const sock = createSocket('udp4');
    const c: Conn = { sock, sentAt: new Float64Array(65536), nextId: 0 };
    sock.on('message', (msg) => {
      if (msg.length < 12) return;
      const id = msg.readUInt16BE(0);
      const t0 = c.sentAt[id];
      if (t0 === 0) return; // late (already counted lost) or not ours
      c.sentAt[id] = 0;
      const ms = performance.now() - t0;
      if (ms > timeoutMs) return;
      answered++;
      latencies.push(ms);
      // NOERROR (low 4 bits of byte 3) with at least one answer (ANCOUNT, bytes 6-7).
      if ((msg[3] & 0x0f) !== 0 || msg.readUInt16BE(6) === 0) wrong++;
      if (running) onAnswer();
    });
    await new Promise<void>((res) => sock.bind(0, '127.0.0.1', () => res()));
    sock.setSendBufferSize(4 * 1024 * 1024);
    sock.setRecvBufferSize(4 * 1024 * 1024);
    conns.push(c);
  }
  const send = () => {
    const c = conns[sent % conns.length];
    const q = queries[sent % queries.length];
    const id = c.nextId;
    c.nextId = (c.nextId + 1) & 0xffff;
    q.writeUInt16BE(id, 0);
    c.sentAt[id] = performance.now();
    c.sock.send(q, o.port, host);
    sent++;
  };
  // Queries past their timeout no longer count as outstanding (closed loop replaces them).
  const reaper = setInterval(() => {
    const now = performance.now();
    for (const c of conns) {
      for (let id = 0; id < 65536; id++) {
        const t0 = c.sentAt[id];
        if (t0 !== 0 && now - t0 > timeoutMs) {
          c.sentAt[id] = 0;
          if (running && o.rate === undefined) send();
        }
      }
    }
  }, 250);

  const start = performance.now();
  if (o.rate === undefined) {
    onAnswer = send;
    for (let i = 0; i < (o.inFlight ?? 100); i++) send();
    await new Promise((r) => setTimeout(r, o.durationMs));
  } else {
    const rate = o.rate;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const elapsed = performance.now() - start;
        if (elapsed >= o.durationMs) {
          clearInterval(tick);
          resolve();
          return;
        }
        const due = Math.floor((elapsed * rate) / 1000) - sent;
        for (let i = 0; i < due; i++) send();
      }, 1);
    });
  }
  running = false;
  const elapsedMs = performance.now() - start;
  const answeredInRun = answered;
  // Let the stragglers in (or time out).
  await new Promise((r) => setTimeout(r, Math.min(timeoutMs, 1_000) + 100));
  clearInterval(reaper);
  for (const c of conns) c.sock.close();
  const lost = sent - answered;
  const sorted = latencies.sort((a, b) => a - b);
  const pct = (p: number) => {
    const rank = Math.ceil((p / 100) * sent) - 1;
    return rank < sorted.length ? sorted[Math.max(0, rank)] : Number.POSITIVE_INFINITY;
  };
  return {
    sent,
    answered,
    wrong,
    lost,
    qps: (answeredInRun * 1000) / elapsedMs,
    p50Ms: pct(50),
    p99Ms: pct(99),
  };
}
