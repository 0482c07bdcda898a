// Tiny TCP/UDP servers and clients for the proxy's integration test, run with
// `ip netns exec NS node -e …` inside namespaces the test made.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startProcess, type TestProcess } from '@kubit/testkit';

const run = promisify(execFile);

/**
 * Answers every TCP connection on :8080 and every UDP datagram on :5353 with its
 * name; on :8081 with its name and the peer address it sees ("pod-1 10.213.7.2"),
 * to tell a client's own address from a masqueraded one.
 */
const SERVER = `
const [name] = process.argv.slice(1);
const net = require('node:net');
net.createServer((s) => { s.on('error', () => {}); s.end(name + '\\n'); }).listen(8080, '0.0.0.0');
net.createServer((s) => { s.on('error', () => {}); s.end(name + ' ' + s.remoteAddress + '\\n'); }).listen(8081, '0.0.0.0');
const u = require('node:dgram').createSocket('udp4');
u.on('message', (m, r) => u.send(name, r.port, r.address));
u.bind(5353, '0.0.0.0');
`;

export function startEndpointServer(ns: string, name: string, logFile: string): TestProcess {
  return startProcess({
    name: `server-${name}`,
    command: 'ip',
    args: ['netns', 'exec', ns, process.execPath, '-e', SERVER, name],
    logFile,
  });
}

/**
 * `count` requests one after the other; each result is the answer ("pod-1") or
 * the error code ("ECONNREFUSED", "ETIMEDOUT"). UDP requests may use a fixed
 * source port, so they belong to one conntrack flow.
 */
const CLIENT = `
const [proto, host, port, count, srcPort, gapMs, timeoutMs] = process.argv.slice(1);
const net = require('node:net'), dgram = require('node:dgram');
const tcp = () => new Promise((res) => {
  const s = net.connect({ host, port: +port });
  let data = '';
  const t = setTimeout(() => { s.destroy(); res('ETIMEDOUT'); }, +timeoutMs || 3000);
  s.on('data', (d) => (data += d));
  s.on('end', () => { clearTimeout(t); res(data.trim()); });
  s.on('error', (e) => { clearTimeout(t); res(e.code || 'ERROR'); });
});
const udp = () => new Promise((res) => {
  const u = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  const t = setTimeout(() => { u.close(); res('ETIMEDOUT'); }, +timeoutMs || 1500);
  u.on('message', (m) => { clearTimeout(t); u.close(); res(m.toString()); });
  u.on('error', (e) => { clearTimeout(t); try { u.close(); } catch {} res(e.code || 'ERROR'); });
  u.bind(+srcPort || 0, () => u.send('q', +port, host));
});
(async () => {
  const out = [];
  for (let i = 0; i < +count; i++) {
    out.push(await (proto === 'udp' ? udp() : tcp()));
    if (+gapMs) await new Promise((r) => setTimeout(r, +gapMs));
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

export interface RequestOptions {
  proto?: 'tcp' | 'udp';
  count?: number;
  srcPort?: number;
  gapMs?: number;
  /** How long one request may wait for its answer before it counts as ETIMEDOUT (TCP 3 s, UDP 1.5 s). */
  timeoutMs?: number;
}

/** Runs the client in `ns` (or in the test's own namespace when ns is undefined). */
export async function requests(ns: string | undefined, host: string, port: number, o: RequestOptions = {}) {
  const args = [
    '-e',
    CLIENT,
    o.proto ?? 'tcp',
    host,
    String(port),
    String(o.count ?? 1),
    String(o.srcPort ?? 0),
    String(o.gapMs ?? 0),
    String(o.timeoutMs ?? 0),
  ];
  const [cmd, argv] = ns
    ? ['ip', ['netns', 'exec', ns, process.execPath, ...args]]
    : [process.execPath, args];
  const { stdout } = await run(cmd, argv, { timeout: 120_000, maxBuffer: 16 << 20 });
  return JSON.parse(stdout) as string[];
}

export function tally(results: string[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const r of results) t[r] = (t[r] ?? 0) + 1;
  return t;
}
