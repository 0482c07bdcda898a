// Test helpers: Debian's dig against a server on loopback (what a person would
// type), a quick in-process UDP query (for polling loops, where spawning dig
// would measure dig), and a dnsmasq serving a hosts file as the upstream.
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startProcess, type TestProcess, waitFor } from '@kubit/testkit';
import dnsPacket from 'dns-packet';

const run = promisify(execFile);

export interface DigResult {
  status: string;
  flags: string[];
  /** `+noall +answer`-style lines: [name, ttl, class, type, ...data]. */
  answer: string[][];
  authority: string[][];
  text: string;
}

/** Runs dig with one try and a short timeout; parses status, flags and the sections. */
export async function dig(port: number, ...args: string[]): Promise<DigResult> {
  const { stdout } = await run('dig', [
    '@127.0.0.1',
    '-p',
    String(port),
    '+time=3',
    '+tries=1',
    ...args,
  ]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  const status = /status: (\w+)/.exec(stdout)?.[1] ?? 'NO-ANSWER';
  const flags = (/;; flags: ([^;]*);/.exec(stdout)?.[1] ?? '').trim().split(/\s+/);
  return {
    status,
    flags,
    answer: section(stdout, 'ANSWER'),
    authority: section(stdout, 'AUTHORITY'),
    text: stdout,
  };
}

function section(text: string, name: string): string[][] {
  const start = text.indexOf(`;; ${name} SECTION:`);
  if (start < 0) return [];
  const out: string[][] = [];
  for (const line of text.slice(start).split('\n').slice(1)) {
    if (line.trim() === '') break;
    out.push(line.trim().split(/\s+/));
  }
  return out;
}

/** The data of each answer record of `type`, sorted (e.g. the addresses of A records). */
export function dataOf(r: DigResult, type: string): string[] {
  return r.answer
    .filter((l) => l[3] === type)
    .map((l) => l.slice(4).join(' '))
    .sort();
}

/** The data of a decoded packet's first answer (an address for A), or undefined. */
export function firstData(p: dnsPacket.Packet): unknown {
  const a = p.answers?.[0];
  return a && 'data' in a ? a.data : undefined;
}

/** One UDP query from this process; rejects on timeout. */
export function udpQuery(
  port: number,
  name: string,
  type: dnsPacket.RecordType,
  timeoutMs = 500,
): Promise<dnsPacket.DecodedPacket & { rcode?: string }> {
  return new Promise((resolve, reject) => {
    const sock = createSocket('udp4');
    const id = Math.floor(Math.random() * 65536);
    const timer = setTimeout(() => {
      sock.close();
      reject(new Error(`no answer to ${name} ${type} in ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('message', (msg) => {
      const p = dnsPacket.decode(msg);
      if (p.id !== id) return;
      clearTimeout(timer);
      sock.close();
      resolve(p);
    });
    sock.on('error', (err) => {
      clearTimeout(timer);
      sock.close();
      reject(err);
    });
    sock.send(
      dnsPacket.encode({
        id,
        type: 'query',
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ name, type }],
      }),
      port,
      '127.0.0.1',
    );
  });
}

/** Debian's dnsmasq on 127.0.0.1:port answering only from a hosts file (no resolv.conf, no /etc/hosts). */
export async function startDnsmasq(
  dir: string,
  port: number,
  hosts: Record<string, string>,
): Promise<TestProcess> {
  const file = join(dir, `hosts-${port}`);
  writeFileSync(
    file,
    Object.entries(hosts)
      .map(([name, ip]) => `${ip} ${name}\n`)
      .join(''),
  );
  const p = startProcess({
    name: 'dnsmasq',
    command: '/usr/sbin/dnsmasq',
    args: [
      '--no-daemon',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${file}`,
      `--port=${port}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--cache-size=10000',
      '--dns-forward-max=10000',
      '--pid-file', // none: several run side by side
    ],
    logFile: join(dir, `dnsmasq-${port}.log`),
  });
  const first = Object.keys(hosts)[0];
  await waitFor(`dnsmasq on ${port}`, async () => {
    if (!p.running) throw new Error('dnsmasq exited');
    const r = await udpQuery(port, first, 'A', 300);
    return (r.answers?.length ?? 0) > 0;
  });
  return p;
}
