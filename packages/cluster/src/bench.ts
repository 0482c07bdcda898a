#!/usr/bin/env node
// Measures the one-machine cluster on a built tree:
//   - how long `up` takes until every node is Ready: the first up (PKI, images)
//     and a resume (up after down, the README's everyday case), each run N times;
//   - the idle memory of the control plane (store members, apiserver,
//     scheduler, controller manager) and of the node processes: the sum of each
//     process's VmRSS, and the sum of their PSS (/proc/<pid>/smaps_rollup), which
//     counts pages the processes share (node's own binary, about 34 MiB of each
//     one's RSS) once, as `smem` does: the memory the cluster really takes;
//   - with --compare-unbundled, the resumes once more with KUBIT_NO_BUNDLE=1
//     (daemons loaded from their module graphs instead of scripts/bundle.mjs's bundles).
// Uses its own state dir and free ports, so it never touches .kubit/.
//   node packages/cluster/dist/src/bench.js [--runs N] [--idle-seconds S] [--nodes N] [--compare-unbundled]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const launcher = join(dirname(fileURLToPath(import.meta.url)), 'main.js');

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 0) throw new Error(`${name} needs a whole number`);
  return v;
}

function launch(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ ms: number; out: string }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    // Built daemons: a benchmark measures what a person runs.
    const env = { ...process.env, ...extraEnv };
    delete env.KUBIT_SOURCE;
    const child = spawn(process.execPath, [launcher, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      out += c;
    });
    child.once('exit', (code) =>
      code === 0
        ? resolve({ ms: performance.now() - t0, out })
        : reject(new Error(`launcher ${args[0]} exited ${code}:\n${out}`)),
    );
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

async function freeOffset(nodes: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const offset = 30000 + 100 * Math.floor(Math.random() * 100);
    const ports = [2379, 2380, 2381, 2389, 2390, 2391, 2399, 2400, 2401, 5000, 6443, 10257, 10259];
    for (let i = 0; i < nodes; i++) ports.push(10300 + i);
    if ((await Promise.all(ports.map((p) => portFree(p + offset)))).every(Boolean)) return offset;
  }
  throw new Error('no free port range');
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Proportional set size: private pages plus each shared page divided by the processes sharing it. */
function pssMiB(pid: number): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

function pids(stateDir: string): Map<string, number> {
  const run = join(stateDir, 'run');
  return new Map(
    readdirSync(run).map((f) => [f.replace(/\.pid$/, ''), Number(readFileSync(join(run, f), 'utf8'))]),
  );
}

/** The launcher's own figure: "N node(s) Ready, X s." */
function reportedMs(out: string): number {
  const m = /Ready, ([\d.]+) s\./.exec(out);
  return m ? Number(m[1]) * 1000 : Number.NaN;
}

/** The launcher's phase lines ("  store leader elected   1.02 s") as [name, ms]. */
function phasesOf(out: string): [string, number][] {
  return [...out.matchAll(/^ {2}(\S.*?)\s{2,}([\d.]+) s$/gm)].map((m) => [m[1], Number(m[2]) * 1000]);
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const runs = flag('--runs', 3);
  const idleSeconds = flag('--idle-seconds', 20);
  const nodes = flag('--nodes', 2);
  const compareUnbundled = process.argv.includes('--compare-unbundled');
  const stateDir = await mkdtemp(join(tmpdir(), 'kubit-bench-'));
  const common = ['--state-dir', stateDir];
  try {
    const offset = await freeOffset(nodes);
    const first = await launch([
      'up',
      ...common,
      '--nodes',
      String(nodes),
      '--port-offset',
      String(offset),
      '--cluster-cidr',
      '10.239.0.0/16',
    ]);
    process.stderr.write(`first up: ${fmt(first.ms)}\n`);

    process.stderr.write(`idle for ${idleSeconds} s...\n`);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const procs = [...pids(stateDir)];
    const rss = procs.map(([name, pid]) => [name, rssMiB(pid)] as const);
    const pss = new Map(procs.map(([name, pid]) => [name, pssMiB(pid)] as const));

    const resumeRuns = async (env: NodeJS.ProcessEnv, label: string) => {
      const out: { wall: number; reported: number; phases: [string, number][] }[] = [];
      for (let i = 0; i < runs; i++) {
        await launch(['down', ...common], env);
        const r = await launch(['up', ...common], env);
        out.push({ wall: r.ms, reported: reportedMs(r.out), phases: phasesOf(r.out) });
        process.stderr.write(`${label} ${i + 1}: ${fmt(r.ms)}\n`);
      }
      return out;
    };
    const resumes = await resumeRuns({}, 'resume');
    const unbundled = compareUnbundled ? await resumeRuns({ KUBIT_NO_BUNDLE: '1' }, 'resume, unbundled') : [];
    const again = await launch(['up', ...common]);

    const isControlPlane = (n: string) =>
      /^kubit-(store-\d+|apiserver|scheduler|controller-manager)$/.test(n);
    const controlPlane = rss.filter(([n]) => isControlPlane(n));
    const nodeSide = rss.filter(([n]) => !isControlPlane(n));
    const sum = (xs: (readonly [string, number])[]) => xs.reduce((a, [, v]) => a + v, 0);
    const pssOf = (xs: (readonly [string, number])[]) => xs.reduce((a, [n]) => a + (pss.get(n) ?? 0), 0);
    const phaseNames = resumes[0]?.phases.map(([n]) => n) ?? [];
    const phaseRows = phaseNames.map((name) => {
      const ms = resumes.map((r) => r.phases.find(([n]) => n === name)?.[1] ?? 0);
      return `| resume phase: ${name}, median (runs: ${ms.map(fmt).join(', ')}) | ${fmt(median(ms))} | |`;
    });
    const lines = [
      `Kubit one-machine cluster, ${nodes} nodes, ${new Date().toISOString().slice(0, 10)}, ${process.platform} node ${process.version}, ${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} at the end`,
      '',
      '| measure | value | target |',
      '| --- | --- | --- |',
      `| first up (PKI, images, IPAM) until nodes Ready, wall | ${fmt(first.ms)} | |`,
      `| resume (up after down) until nodes Ready, wall, median of ${runs} | ${fmt(median(resumes.map((r) => r.wall)))} | ≤ 5 s |`,
      `| resume, as the launcher reports it (without node's own start), median | ${fmt(median(resumes.map((r) => r.reported)))} | |`,
      ...phaseRows,
      ...(unbundled.length > 0
        ? [
            `| resume with KUBIT_NO_BUNDLE=1 (module graphs, not bundles), wall, median of ${runs} | ${fmt(median(unbundled.map((r) => r.wall)))} | |`,
          ]
        : []),
      `| up while already running (health check only), wall | ${fmt(again.ms)} | |`,
      `| control plane idle memory, PSS sum (shared pages once) | ${pssOf(controlPlane).toFixed(0)} MiB | ≤ 250 MB |`,
      `| control plane idle memory, VmRSS sum (node's binary counted in each process) | ${sum(controlPlane).toFixed(0)} MiB | |`,
      `| node side idle memory (containerd, kubelets, registry), PSS / VmRSS sum | ${pssOf(nodeSide).toFixed(0)} / ${sum(nodeSide).toFixed(0)} MiB | |`,
      '',
      '| process | idle PSS | idle VmRSS |',
      '| --- | --- | --- |',
      ...rss.map(([n, v]) => `| ${n} | ${(pss.get(n) ?? 0).toFixed(1)} MiB | ${v.toFixed(1)} MiB |`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await launch(['down', '--purge', ...common]).catch((err: Error) =>
      process.stderr.write(`${err.message}\n`),
    );
    await rm(stateDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).message}\n`);
  process.exit(1);
});
