// kubit-dns against Debian's dnsmasq, side by side in one run, on the same
// names: 1,000 Services (kubit-dns learns them from a real apiserver; dnsmasq
// reads them from a hosts file). For each server: the most queries per second
// it answers with 200 in flight (closed loop), then p50/p99 latency at an
// offered 10,000 qps (open loop), and its CPU per 1,000 answers. The load
// generator (loadgen.ts) is Node, over UDP on loopback, on the same 2 cores.
//
//   pnpm -s build && node packages/dns/dist/bench/dns.js [services] [seconds] [offered-qps] [rounds]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Namespace, Service } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  freePort,
  processCpuMs,
  startControlPlane,
  startDaemon,
  startProcess,
  stopAllProcesses,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import dnsPacket from 'dns-packet';
import { type LoadResult, runLoad } from './loadgen.js';

const serviceCount = Number(process.argv[2] ?? 1_000);
const seconds = Number(process.argv[3] ?? 5);
const offered = Number(process.argv[4] ?? 10_000);
const rounds = Number(process.argv[5] ?? 3);
const NS = 'bench';

type Obj = { metadata?: { name?: string; namespace?: string } };

function ipOf(i: number): string {
  // 10.97.0.0 and up: inside the default service range, clear of its first addresses.
  return `10.97.${Math.floor(i / 250)}.${(i % 250) + 1}`;
}

function nameOf(i: number): string {
  return `svc-${i}.${NS}.svc.cluster.local`;
}

async function answers(port: number, name: string): Promise<string | undefined> {
  const { createSocket } = await import('node:dgram');
  return new Promise((resolve) => {
    const s = createSocket('udp4');
    const t = setTimeout(() => {
      s.close();
      resolve(undefined);
    }, 300);
    s.on('message', (m) => {
      clearTimeout(t);
      s.close();
      const a = dnsPacket.decode(m).answers?.[0];
      resolve(a && 'data' in a ? String(a.data) : undefined);
    });
    s.send(dnsPacket.encode({ id: 1, type: 'query', questions: [{ name, type: 'A' }] }), port, '127.0.0.1');
  });
}

async function createServices(client: KubeClient): Promise<void> {
  await client.create<Namespace & Obj>(resources.namespaces, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NS },
  } as Namespace & Obj);
  let next = 0;
  const worker = async () => {
    while (next < serviceCount) {
      const i = next++;
      await client.create<Service & Obj>(resources.services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: `svc-${i}`, namespace: NS },
        spec: { clusterIP: ipOf(i), ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
      } as Service & Obj);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

interface Row {
  server: string;
  max: LoadResult;
  at: LoadResult;
  cpuPer1k: number;
}

async function measure(server: string, proc: TestProcess, port: number, names: string[]): Promise<Row> {
  await runLoad({ port, names, durationMs: 1_000, inFlight: 50 }); // warm-up
  const cpu0 = processCpuMs(proc.pid);
  const max = await runLoad({ port, names, durationMs: seconds * 1000, inFlight: 200 });
  const cpu1 = processCpuMs(proc.pid);
  const at = await runLoad({ port, names, durationMs: seconds * 1000, rate: offered });
  const cpuPer1k =
    cpu0 && cpu1 && max.answered > 0 ? ((cpu1.self - cpu0.self) * 1000) / max.answered : Number.NaN;
  return { server, max, at, cpuPer1k };
}

/** Each figure's median over the rounds (the middle of an odd count). */
function median(rs: Row[]): Row {
  const mid = <T>(xs: T[], by: (x: T) => number): T =>
    [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)];
  return {
    server: rs[0].server,
    max: mid(rs, (r) => r.max.qps).max,
    at: mid(rs, (r) => r.at.p99Ms).at,
    cpuPer1k: mid(rs, (r) => r.cpuPer1k).cpuPer1k,
  };
}

function fmt(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : 'lost';
}

async function main(): Promise<void> {
  const cp = await startControlPlane();
  try {
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    process.stderr.write(`creating ${serviceCount} Services...\n`);
    await createServices(client);
    const names = Array.from({ length: serviceCount }, (_, i) => nameOf(i));

    const dnsPort = await freePort();
    const kubitDns = startDaemon({
      name: 'kubit-dns',
      pkg: 'dns',
      args: [
        `--kubeconfig=${cp.kubeconfigPath}`,
        '--bind-address=127.0.0.1',
        `--port=${dnsPort}`,
        `--health-port=${await freePort()}`,
        `--metrics-port=${await freePort()}`,
        '--upstream=127.0.0.1:9',
        '--register=false',
      ],
      logDir: cp.logDir,
    });
    await waitFor(
      'kubit-dns to answer every name',
      async () => {
        if (!kubitDns.running) throw new Error('kubit-dns exited');
        return (await answers(dnsPort, nameOf(serviceCount - 1))) === ipOf(serviceCount - 1);
      },
      60_000,
    );

    const hosts = join(cp.dir, 'bench-hosts');
    writeFileSync(hosts, names.map((n, i) => `${ipOf(i)} ${n}\n`).join(''));
    const masqPort = await freePort();
    const dnsmasq = startProcess({
      name: 'dnsmasq',
      command: '/usr/sbin/dnsmasq',
      args: [
        '--no-daemon',
        '--no-resolv',
        '--no-hosts',
        `--addn-hosts=${hosts}`,
        `--port=${masqPort}`,
        '--listen-address=127.0.0.1',
        '--bind-interfaces',
        '--pid-file',
        '--local-ttl=30',
      ],
      logFile: join(cp.logDir, 'dnsmasq.log'),
    });
    await waitFor('dnsmasq to answer', async () => (await answers(masqPort, nameOf(0))) === ipOf(0));

    // Both answer the same names the same way before anything is measured.
    for (const i of [0, Math.floor(serviceCount / 2), serviceCount - 1]) {
      const a = await answers(dnsPort, nameOf(i));
      const b = await answers(masqPort, nameOf(i));
      if (a !== ipOf(i) || b !== ipOf(i)) throw new Error(`${nameOf(i)}: kubit-dns ${a}, dnsmasq ${b}`);
    }

    // Rounds alternate between the two, and each figure is the median of its rounds:
    // the machine's other load changes from one second to the next and should hit both alike.
    const peerRounds: Row[] = [];
    const ourRounds: Row[] = [];
    for (let r = 0; r < rounds; r++) {
      peerRounds.push(await measure('dnsmasq', dnsmasq, masqPort, names));
      ourRounds.push(await measure('kubit-dns', kubitDns, dnsPort, names));
    }
    const rows = [median(peerRounds), median(ourRounds)];
    const [peer, ours] = rows;
    const lines = [
      `DNS: ${serviceCount} names, UDP on loopback, ${seconds} s per run, median of ${rounds} alternating rounds, Node load generator, ${new Date().toISOString()}`,
      '',
      `| server | max qps (200 in flight) | CPU ms / 1k answers | p50 ms @ ${offered} qps | p99 ms @ ${offered} qps | answered @ ${offered} qps | wrong |`,
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows.map(
        (r) =>
          `| ${r.server} | ${Math.round(r.max.qps)} | ${fmt(r.cpuPer1k)} | ${fmt(r.at.p50Ms, 3)} | ${fmt(r.at.p99Ms, 3)} | ${((100 * r.at.answered) / Math.max(1, r.at.sent)).toFixed(2)}% | ${r.max.wrong + r.at.wrong} |`,
      ),
      '',
      `kubit-dns / dnsmasq throughput: ${(ours.max.qps / peer.max.qps).toFixed(2)}x (target >= 0.5x); ` +
        `kubit-dns p99 at ${offered} qps: ${fmt(ours.at.p99Ms, 3)} ms (target <= 5 ms)`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await stopAllProcesses();
    await cp.stop();
  }
}

await main();
