// Start-up benchmark: wall time of whole `kubit` invocations (process start
// included) against a small control plane, next to kubectl doing the same.
//
//   node packages/cli/dist/bench/startup.js [--n=20] [--out=/work/bench-results/cli.md]
//
// Runs the built CLI as the `kubit` bin does (packages/cli/dist/src/kubit.js: the
// bundle when fresh), and the same with KUBIT_NO_BUNDLE=1 (the module graph), so
// build first (pnpm build).

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { KubeClient, resources } from '@kubit/client';
import { repoRoot, startControlPlane, tempDir } from '@kubit/testkit';

interface Flags {
  n: number;
  out: string;
}

function parseFlags(argv: string[]): Flags {
  const flags: Flags = { n: 20, out: join('/work', 'bench-results', 'cli.md') };
  for (const arg of argv) {
    const m = /^--(n|out)=(.+)$/.exec(arg);
    if (!m) throw new Error(`startup bench: unknown argument "${arg}" (known: --n=COUNT --out=FILE)`);
    if (m[1] === 'n') {
      const n = Number(m[2]);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`startup bench: --n takes a count ≥ 1, not "${m[2]}"`);
      flags.n = n;
    } else flags.out = m[2];
  }
  return flags;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

interface Stats {
  p50: number;
  p99: number;
  min: number;
  failures: number;
}

/** Runs the command `n` times (after one warm-up run that fills discovery caches); wall ms per run. */
function measure(command: string, args: string[], env: NodeJS.ProcessEnv, n: number): Stats {
  const once = () => {
    const t0 = performance.now();
    const r = spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    const ms = performance.now() - t0;
    return { ms, ok: r.status === 0, err: r.stderr };
  };
  const warm = once();
  if (!warm.ok) process.stderr.write(`warning: ${command} ${args.join(' ')} failed: ${warm.err.trim()}\n`);
  const times: number[] = [];
  let failures = 0;
  for (let i = 0; i < n; i++) {
    const r = once();
    if (!r.ok) failures++;
    times.push(r.ms);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), min: times[0], failures };
}

function hasKubectl(): boolean {
  return spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
}

const fmt = (ms: number) => (Number.isNaN(ms) ? '–' : `${Math.round(ms)} ms`);

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const cli = join(repoRoot, 'packages', 'cli', 'dist', 'src', 'kubit.js');
  if (!existsSync(cli)) throw new Error(`${cli} is missing: build first (pnpm build)`);
  const tmp = await tempDir('kubit-bench-cli-');
  const cp = await startControlPlane();
  try {
    // A small cluster's worth of objects to list.
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    try {
      for (let i = 0; i < 10; i++) {
        await client.create(resources.pods, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `bench-${i}`, namespace: 'default', labels: { app: 'bench' } },
          spec: { containers: [{ name: 'c', image: 'busybox' }] },
        } as Parameters<KubeClient['create']>[1]);
      }
    } finally {
      client.close();
    }
    const manifest = join(tmp.path, 'cm.yaml');
    writeFileSync(manifest, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench\ndata:\n  a: "1"\n');
    const env = { PATH: process.env.PATH, HOME: tmp.path, KUBECONFIG: cp.kubeconfigPath };
    const cases: { name: string; args: string[] }[] = [
      { name: '--help', args: ['--help'] },
      { name: 'version --client', args: ['version', '--client'] },
      { name: 'get pods', args: ['get', 'pods'] },
      { name: 'get pods -o yaml', args: ['get', 'pods', '-o', 'yaml'] },
      { name: 'apply -f cm.yaml', args: ['apply', '-f', manifest] },
    ];
    const kubectl = hasKubectl();
    const rows: string[] = [];
    for (const c of cases) {
      process.stderr.write(`${c.name}...\n`);
      const k = measure(process.execPath, [cli, ...c.args], env, flags.n);
      const graph = measure(process.execPath, [cli, ...c.args], { ...env, KUBIT_NO_BUNDLE: '1' }, flags.n);
      const ref = kubectl ? measure('kubectl', c.args, env, flags.n) : undefined;
      const fail = k.failures > 0 ? ` (${k.failures} failed)` : '';
      rows.push(
        `| ${c.name} | ${fmt(k.p50)} | ${fmt(k.p99)} | ${fmt(k.min)}${fail} | ${fmt(graph.p50)} | ${ref ? fmt(ref.p50) : '–'} | ${ref ? fmt(ref.p99) : '–'} | ${ref ? fmt(ref.min) : '–'} | ${ref ? (k.p50 / ref.p50).toFixed(2) : '–'} |`,
      );
    }
    const [l1, l5, l15] = loadavg().map((x) => x.toFixed(2));
    const text = [
      '## kubit start-up (bench:cli)',
      '',
      `date: ${new Date().toISOString()}`,
      `machine: ${cpus().length} cpus (${cpus()[0]?.model.trim() ?? '?'}), node ${process.version}, load average ${l1} ${l5} ${l15} (after the runs)`,
      `method: wall time of whole processes (start-up included), ${flags.n} runs each after one warm-up run, against kubit-apiserver on etcd on loopback with 10 pods; kubectl ${kubectl ? 'is the installed one' : 'not installed'}, with the same kubeconfig`,
      '',
      '| command | kubit p50 | kubit p99 | kubit min | kubit p50, unbundled | kubectl p50 | kubectl p99 | kubectl min | p50 ratio kubit/kubectl |',
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows,
      '',
    ].join('\n');
    process.stdout.write(text);
    mkdirSync(dirname(flags.out), { recursive: true });
    writeFileSync(flags.out, text);
    process.stderr.write(`written to ${flags.out}\n`);
  } finally {
    await cp.stop();
    await tmp.cleanup();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
