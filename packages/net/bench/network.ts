// pnpm bench:network — pod-to-pod TCP throughput and request latency across
// nodes through kubit-net's overlay, host-gw vs VXLAN, side by side with the
// host's own path into its pod bridge (root-ns → bridge → pod), in one run;
// and the time from a Node appearing to every other agent routing to it.
//
// The lab is the overlay test's (packages/net/test/overlay-lab.ts): node
// namespaces a and c on one underlay segment, b on another behind a router.
// host-gw and VXLAN are measured on the same pair (pod a → pod c), kubit-net
// restarted in the other mode in between, so only the encapsulation differs.
// A real control plane; kubit-net processes run in the node namespaces.
//
//   node packages/net/dist/bench/network.js [--seconds=3] [--requests=3000] [--joins=5]
//
// Build first: pnpm -s build
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { Node } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  daemonCommand,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { POD_MTU_ANNOTATION, ROUTE_PROTO } from '../src/index.js';
import { createOverlayLab, type OverlayLab, writeLabKubeconfig } from '../test/overlay-lab.js';

const flag = (name: string, dflt: number) => {
  const f = process.argv.find((a) => a.startsWith(`--${name}=`));
  return f ? Number(f.split('=')[1]) : dflt;
};
const SECONDS = flag('seconds', 3);
const REQUESTS = flag('requests', 3000);
const JOINS = flag('joins', 5);
const nodeName = (k: string) => `bench-net-${process.pid}-${k}`;

/** :5001 counts what it receives and answers the count at the end; :5002 echoes. */
const SERVER = `
const net = require('node:net');
net.createServer((s) => { let n = 0; s.on('data', (d) => (n += d.length)); s.on('end', () => s.end(String(n))); s.on('error', () => {}); }).listen(5001, '0.0.0.0');
net.createServer((s) => { s.setNoDelay(true); s.on('data', (d) => s.write(d)); s.on('error', () => {}); }).listen(5002, '0.0.0.0');
`;

/** tput HOST SECONDS → {bps}; lat HOST N → {p50, p99} in µs over one connection, 64-byte requests. */
const CLIENT = `
const net = require('node:net');
const [mode, host, arg] = process.argv.slice(1);
if (mode === 'tput') {
  const s = net.connect(5001, host);
  const chunk = Buffer.alloc(128 * 1024, 1);
  let sent = 0, t0 = 0, stop = false, answer = '';
  s.on('connect', () => { t0 = performance.now(); setTimeout(() => { stop = true; }, +arg * 1000); pump(); });
  const pump = () => { while (!stop) { sent += chunk.length; if (!s.write(chunk)) return s.once('drain', pump); } s.end(); };
  s.on('data', (d) => (answer += d));
  s.on('end', () => { const secs = (performance.now() - t0) / 1000; process.stdout.write(JSON.stringify({ bps: (Number(answer) * 8) / secs, received: Number(answer), sent })); });
} else {
  const s = net.connect(5002, host);
  s.setNoDelay(true);
  const req = Buffer.alloc(64, 2);
  const n = +arg, warm = Math.min(200, n / 10);
  const times = [];
  let got = 0, i = 0, t = 0;
  const one = () => { got = 0; t = process.hrtime.bigint(); s.write(req); };
  s.on('connect', one);
  s.on('data', (d) => {
    got += d.length;
    if (got < req.length) return;
    if (i++ >= warm) times.push(Number(process.hrtime.bigint() - t) / 1000);
    if (times.length < n) one();
    else { s.end(); times.sort((a, b) => a - b); const q = (p) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]; process.stdout.write(JSON.stringify({ p50: q(50), p99: q(99) })); }
  });
}
`;

function clientIn(ns: string, ...args: string[]): Record<string, number> {
  const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', CLIENT, ...args], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0 || !r.stdout)
    throw new Error(`client ${args.join(' ')} in ${ns} failed: ${r.stderr || r.error}`);
  return JSON.parse(r.stdout) as Record<string, number>;
}

interface PathResult {
  name: string;
  bps: number;
  p50: number;
  p99: number;
}

async function main() {
  const progress = (m: string) => process.stderr.write(`bench:network: ${m}\n`);
  let cp: ControlPlane | undefined;
  let lab: OverlayLab | undefined;
  const procs: TestProcess[] = [];
  const agents = new Map<string, TestProcess>();
  try {
    cp = await startControlPlane({
      apiserverArgs: ['--bind-address=0.0.0.0'],
      nodes: ['a', 'b', 'c'].map(nodeName),
    });
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    const theLab = createOverlayLab(cp.logDir);
    lab = theLab;
    const control = cp;
    const device = `kob${theLab.tag}`;
    const port = new URL(cp.url).port;
    const kubeconfig = (k: string) =>
      writeLabKubeconfig(join(control.dir, `bench-${k}.kubeconfig`), {
        server: `https://${theLab.hostIP}:${port}`,
        caFile: control.caFile,
        ...control.pki.kubeletClient(nodeName(k)),
        user: k,
      });
    const startAgent = (k: string, mode: string) => {
      const n = theLab.nodes.get(k);
      if (!n) throw new Error(`no lab node ${k}`);
      const cmd = daemonCommand('net', 'main.ts');
      const p = startProcess({
        name: `kubit-net-${k}`,
        command: 'ip',
        args: [
          'netns',
          'exec',
          n.ns,
          cmd.command,
          ...cmd.args,
          `--kubeconfig=${kubeconfig(k)}`,
          `--hostname-override=${nodeName(k)}`,
          `--overlay-mode=${mode}`,
          `--vxlan-device=${device}`,
          '--network-policy=false',
        ],
        env: { KUBIT_LOG_FORMAT: 'json' },
        logFile: join(control.logDir, `kubit-net-${k}.log`),
      });
      agents.set(k, p);
    };
    const createNode = async (k: string) => {
      const n = theLab.nodes.get(k);
      if (!n) throw new Error(`no lab node ${k}`);
      const node = await client.create<Node>(resources.nodes, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: nodeName(k) },
        spec: { podCIDR: n.podCIDR, podCIDRs: [n.podCIDR] },
      });
      await client.updateStatus<Node>(resources.nodes, {
        ...node,
        status: { addresses: [{ type: 'InternalIP', address: n.underlayIP }] },
      });
    };
    const routed = (k: string, dst: string) =>
      theLab
        .ip(theLab.nodes.get(k)?.ns ?? '', 'route', 'show', dst, 'proto', String(ROUTE_PROTO))
        .includes(dst);
    const podMtu = async (k: string) => {
      const n = await client.get<Node>(resources.nodes, nodeName(k));
      return Number(n.metadata?.annotations?.[POD_MTU_ANNOTATION]);
    };

    for (const [k, seg, host, idx] of [
      ['a', 1, 10, 1],
      ['c', 1, 30, 3],
    ] as const) {
      const n = theLab.addNode(k, seg, host, idx);
      procs.push(
        startProcess({
          name: `bench-server-${k}`,
          command: 'ip',
          args: ['netns', 'exec', n.podNs, process.execPath, '-e', SERVER],
        }),
      );
      await createNode(k);
    }
    const a = theLab.nodes.get('a');
    const c = theLab.nodes.get('c');
    if (!a || !c) throw new Error('lab nodes missing');
    // The pod server in a also answers the host path (node a's namespace → its own bridge → pod a).
    await new Promise((r) => setTimeout(r, 500));

    // The machine is shared: each path is measured ROUNDS times, interleaved with the host
    // path, and the medians are compared.
    const ROUNDS = 3;
    const samples = new Map<string, { bps: number[]; p50: number[]; p99: number[] }>();
    const measureOnce = (name: string, fromNs: string, to: string) => {
      const t = clientIn(fromNs, 'tput', to, String(SECONDS));
      const l = clientIn(fromNs, 'lat', to, String(REQUESTS));
      const s = samples.get(name) ?? { bps: [], p50: [], p99: [] };
      s.bps.push(t.bps);
      s.p50.push(l.p50);
      s.p99.push(l.p99);
      samples.set(name, s);
    };
    const HOST = 'host: node ns → own pod (bridge)';
    const measure = (name: string, fromNs: string, to: string) => {
      for (let r = 0; r < ROUNDS; r++) {
        progress(`${name}: round ${r + 1}/${ROUNDS} (and the host path)`);
        measureOnce(HOST, a.ns, a.podIP);
        measureOnce(name, fromNs, to);
      }
    };
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const resultOf = (name: string): PathResult => {
      const s = samples.get(name);
      if (!s) throw new Error(`no samples for ${name}`);
      return { name, bps: median(s.bps), p50: median(s.p50), p99: median(s.p99) };
    };

    const runMode = async (mode: 'host-gw' | 'vxlan') => {
      for (const k of ['a', 'c']) await agents.get(k)?.stop();
      for (const k of ['a', 'c']) startAgent(k, mode);
      await waitFor(
        `${mode} routes a ⇄ c`,
        () => routed('a', c.podCIDR) && routed('c', a.podCIDR),
        60_000,
        50,
      );
      await waitFor(`${mode} pod MTU published`, async () => {
        const want = mode === 'vxlan' ? 1450 : 1500;
        return (await podMtu('a')) === want && (await podMtu('c')) === want;
      });
      const mtu = await podMtu('a');
      for (const k of ['a', 'c']) theLab.setPodMtu(k, mtu);
      const via = theLab.ip(a.ns, 'route', 'show', c.podCIDR, 'proto', String(ROUTE_PROTO)).trim();
      progress(`${mode}: ${via} (pod MTU ${mtu})`);
      measure(`${mode}: pod a → pod c (other node)`, a.podNs, c.podIP);
    };
    await runMode('host-gw');
    await runMode('vxlan');

    // Joins: b on the other segment (VXLAN from a and c); its agent waits for its Node.
    const b = theLab.addNode('b', 2, 20, 2);
    startAgent('b', 'vxlan');
    // Joins are timed from a running agent: b's waits for its Node before the first one.
    const bLog = join(control.logDir, 'kubit-net-b.log');
    await waitFor(
      'b’s agent to wait for its Node',
      () => readFileSync(bLog, 'utf8').includes('waiting: no Node'),
      60_000,
      50,
    );
    const joins: number[] = [];
    for (let i = 0; i < JOINS; i++) {
      const t0 = performance.now();
      await createNode('b');
      await waitFor(
        'a and c to route to b',
        () => routed('a', b.podCIDR) && routed('c', b.podCIDR),
        30_000,
        10,
      );
      joins.push(performance.now() - t0);
      await client.delete(resources.nodes, nodeName('b'));
      await waitFor(
        'a and c to forget b',
        () => !routed('a', b.podCIDR) && !routed('c', b.podCIDR),
        30_000,
        20,
      );
    }

    const results = [HOST, 'host-gw: pod a → pod c (other node)', 'vxlan: pod a → pod c (other node)'].map(
      resultOf,
    );
    const host = results[0];
    const gbit = (bps: number) => (bps / 1e9).toFixed(2);
    const us = (v: number) => `${Math.round(v)} µs`;
    console.log(
      `\nbench:network — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores (${cpus()[0]?.model.trim()})`,
    );
    console.log(
      `one TCP stream for ${SECONDS}s (128 KiB writes); ${REQUESTS} 64-byte request/responses on one connection; medians of ${ROUNDS} rounds (the host path: of ${2 * ROUNDS}); veths in network namespaces\n`,
    );
    const rows = results.map((r) => [
      r.name,
      `${gbit(r.bps)} Gbit/s`,
      (r.bps / host.bps).toFixed(2),
      us(r.p50),
      (r.p50 / host.p50).toFixed(2),
      us(r.p99),
      (r.p99 / host.p99).toFixed(2),
    ]);
    const header = ['path', 'throughput', '× host', 'p50', '× host', 'p99', '× host'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    for (const r of [header, ...rows]) console.log(r.map((x, i) => x.padEnd(widths[i])).join('  '));
    const hg = results[1];
    const vx = results[2];
    console.log(
      `\nVXLAN vs host-gw: throughput ×${(vx.bps / hg.bps).toFixed(2)}, p50 ×${(vx.p50 / hg.p50).toFixed(2)}`,
    );
    joins.sort((x, y) => x - y);
    console.log(
      `Node created → every other agent routes to it (VXLAN, ${JOINS} joins): p50 ${Math.round(joins[Math.floor(joins.length / 2)])} ms, max ${Math.round(joins[joins.length - 1])} ms (${joins.map((j) => Math.round(j)).join(', ')})`,
    );
  } finally {
    for (const p of agents.values()) if (p.running) await p.stop();
    for (const p of procs) if (p.running) p.child.kill('SIGKILL');
    lab?.cleanup();
    await cp?.stop();
    // Nothing of the lab may stay behind.
    const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.startsWith(`kov-${process.pid.toString(36)}-`));
    if (left.length) console.error(`bench:network: namespaces left behind: ${left.join(', ')}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
