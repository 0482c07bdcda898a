// Where a pod's start costs CPU and time on this machine, below the kubelet:
// containerd, its shims, runc and the CNI plugins. A private containerd (the
// same config a Kubit node gets, deploy/containerd) runs in a cpuacct cgroup of
// its own, so the CPU of everything it starts (shims, runc, CNI plugins,
// iptables) is counted, whatever else the machine is doing. Pods are the
// benchmark's shape (a sandbox and one busybox `sleep`), started one at a time
// and then as a batch; then stopped and removed (counted apart).
//
//   node --conditions=kubit-source --import tsx packages/kubelet/bench/sandbox-cost.ts \
//     [--pods=10] [--batch=20] [--concurrency=20] [--wrap] [--chain=default|no-portmap]
//
// --wrap runs every CNI plugin and runc through a small bash wrapper that logs
// each call's wall time and CPU (the wrapper adds a little of its own), to say
// which exec costs what. --chain=no-portmap drops the portmap plugin from the
// conflist, to price it. --concurrency: at most that many of the batch's pods
// starting at once (each next one when one is Running). Needs root.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PodSandboxConfig } from '@kubit/cri';
import { CriRuntime } from '@kubit/cri';
import {
  BUSYBOX_IMAGE,
  processCpuMs,
  pushTestImages,
  sleeperContainerConfig,
  startContainerd,
  startRegistry,
  tempDir,
} from '@kubit/testkit';

function flag(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`) || a === `--${name}`);
  if (!hit) return fallback;
  return hit.includes('=') ? hit.slice(name.length + 3) : 'true';
}

const PODS = Number(flag('pods', '10'));
const BATCH = Number(flag('batch', '20'));
const WRAP = flag('wrap', 'false') === 'true';
const CHAIN = flag('chain', 'default');
const CONCURRENCY = Number(flag('concurrency', String(BATCH)));
if (!['default', 'no-portmap'].includes(CHAIN))
  throw new Error(`--chain: default or no-portmap, not ${CHAIN}`);
if (process.getuid?.() !== 0) throw new Error('sandbox-cost needs root (containerd, CNI, cgroups)');

const CPUACCT = '/sys/fs/cgroup/cpuacct';
const TICK_MS = 10; // USER_HZ 100

/** A cpuacct cgroup holding containerd and (by inheritance) all it starts. */
class CpuGroup {
  readonly path = join(CPUACCT, `kubit-sandbox-cost-${randomBytes(3).toString('hex')}`);
  constructor() {
    mkdirSync(this.path);
  }
  add(pid: number): void {
    writeFileSync(join(this.path, 'cgroup.procs'), String(pid));
  }
  /** user and system CPU ms so far. */
  read(): { user: number; sys: number } {
    const stat = readFileSync(join(this.path, 'cpuacct.stat'), 'utf8');
    const get = (k: string) => Number(new RegExp(`${k} (\\d+)`).exec(stat)?.[1] ?? 0) * TICK_MS;
    return { user: get('user'), sys: get('system') };
  }
  remove(): void {
    try {
      rmdirSync(this.path);
    } catch (err) {
      process.stderr.write(`could not remove ${this.path}: ${(err as Error).message}\n`);
    }
  }
}

/** Bash wrappers for the CNI plugins and runc that log "<what> <wall µs> <child user ticks> <child sys ticks>". */
function writeWrappers(dir: string, log: string): { cniBin: string; runc: string } {
  const cniBin = join(dir, 'cni-bin');
  mkdirSync(cniBin, { recursive: true });
  // CPU from bash's own /proc stat (cutime, cstime: its reaped children), in ticks.
  const body = (label: string, target: string) => `#!/bin/bash
what="${label}"
s=$(date +%s%N)
${target} "$@"
rc=$?
e=$(date +%s%N)
read -r -a st < /proc/$$/stat
echo "$what $(( (e - s) / 1000 )) \${st[15]} \${st[16]}" >> ${log}
exit $rc
`;
  for (const p of readdirSync('/usr/lib/cni')) {
    const file = join(cniBin, p);
    writeFileSync(file, body(`cni:${p}:$CNI_COMMAND`, `/usr/lib/cni/${p}`), { mode: 0o755 });
  }
  const runc = join(dir, 'runc-wrap');
  // runc's command is its first argument that is neither a global flag nor a flag's value.
  writeFileSync(
    runc,
    body(
      'runc:$(skip=; for a in "$@"; do if [ -n "$skip" ]; then skip=; continue; fi; case $a in --root|--log|--log-format|--criu) skip=1;; -*) ;; *) echo "$a"; break;; esac; done)',
      execFileSync('which', ['runc'], { encoding: 'utf8' }).trim(),
    ),
    { mode: 0o755 },
  );
  return { cniBin, runc };
}

/** Clock ticks (USER_HZ) in ms. */
function ticks(s: string): number {
  return Number(s) * TICK_MS;
}

function summarizeWrapLog(log: string, pods: number): string {
  if (!existsSync(log)) return '(no wrapper log)';
  const by = new Map<string, { n: number; wall: number; cpu: number }>();
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    const [what, wallUs, user, sys] = line.split(' ');
    if (!what || !wallUs) continue;
    const e = by.get(what) ?? { n: 0, wall: 0, cpu: 0 };
    e.n++;
    e.wall += Number(wallUs) / 1000;
    e.cpu += ticks(user ?? '0') + ticks(sys ?? '0');
    by.set(what, e);
  }
  const rows = [...by.entries()].sort((a, b) => b[1].cpu - a[1].cpu);
  return [
    '| exec | calls | per pod | wall ms each (mean) | CPU ms each (mean) | CPU ms per pod |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      ([what, e]) =>
        `| ${what} | ${e.n} | ${(e.n / pods).toFixed(1)} | ${(e.wall / e.n).toFixed(1)} | ${(e.cpu / e.n).toFixed(1)} | ${(e.cpu / pods).toFixed(1)} |`,
    ),
  ].join('\n');
}

function podConfig(name: string, logDir: string): PodSandboxConfig {
  return {
    metadata: { name, uid: `uid-${name}`, namespace: 'sandbox-cost', attempt: 0 },
    hostname: name,
    logDirectory: join(logDir, name),
    portMappings: [],
    labels: { 'io.kubernetes.pod.name': name },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
}

async function startPod(
  rt: CriRuntime,
  name: string,
  logDir: string,
): Promise<{ id: string; sandbox: number; create: number; start: number }> {
  const config = podConfig(name, logDir);
  const t0 = performance.now();
  const id = await rt.runPodSandbox(config);
  const t1 = performance.now();
  const cid = await rt.createContainer(id, sleeperContainerConfig(BUSYBOX_IMAGE), config);
  const t2 = performance.now();
  await rt.startContainer(cid);
  const t3 = performance.now();
  return { id, sandbox: t1 - t0, create: t2 - t1, start: t3 - t2 };
}

/** CPU ms of a process, its own and its reaped children's (0s when it is gone). */
function procCpu(pid: number): { self: number; children: number } {
  return processCpuMs(pid) ?? { self: 0, children: 0 };
}

/** CPU ms of the shim daemons serving `socket` (their own, and their reaped children: runc). */
function shimCpu(socket: string): { self: number; children: number; count: number } {
  const out = { self: 0, children: 0, count: 0 };
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const cmd = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (!cmd[0]?.includes('containerd-shim') || !cmd.includes(socket)) continue;
    } catch {
      continue;
    }
    const c = procCpu(Number(e));
    out.self += c.self;
    out.children += c.children;
    out.count++;
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

const work = await tempDir('kubit-sandbox-cost-');
const wrapLog = join(work.path, 'wrap.log');
const wrappers = WRAP ? writeWrappers(work.path, wrapLog) : undefined;
const registry = await startRegistry();
const group = new CpuGroup();
let containerd: Awaited<ReturnType<typeof startContainerd>> | undefined;
let rt: CriRuntime | undefined;
try {
  await pushTestImages(registry.host);
  containerd = await startContainerd({
    mirror: registry.host,
    patchConfig: (toml) => {
      if (!wrappers) return toml;
      const out = toml
        .replace('bin_dir = "/usr/lib/cni"', `bin_dir = "${wrappers.cniBin}"`)
        .replace(
          'runtime_type = "io.containerd.runc.v2"',
          `runtime_type = "io.containerd.runc.v2"\n      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n        BinaryName = "${wrappers.runc}"`,
        );
      if (!out.includes(wrappers.cniBin) || !out.includes(wrappers.runc))
        throw new Error('config.toml.tmpl changed: cannot wrap bin_dir / runc');
      return out;
    },
    patchConflist: (json) => {
      if (CHAIN === 'default') return json;
      const c = JSON.parse(json) as { plugins: { type: string }[] };
      c.plugins = c.plugins.filter((p) => p.type !== 'portmap');
      return JSON.stringify(c, null, 2);
    },
  });
  group.add(containerd.process.pid);
  rt = new CriRuntime({ endpoint: containerd.endpoint, timeoutMs: 300_000 });
  await rt.pullImage(BUSYBOX_IMAGE);
  // Warm-up: pulls the pause image, loads the CNI config.
  const warm = await startPod(rt, 'warm-up', work.path);
  const ids: string[] = [warm.id];
  if (existsSync(wrapLog)) writeFileSync(wrapLog, '');

  const c0 = group.read();
  const singles: { sandbox: number; create: number; start: number }[] = [];
  for (let i = 0; i < PODS; i++) {
    const r = await startPod(rt, `single-${i}`, work.path);
    singles.push(r);
    ids.push(r.id);
  }
  const c1 = group.read();
  const singleWrap = WRAP ? summarizeWrapLog(wrapLog, PODS) : '';
  if (existsSync(wrapLog)) writeFileSync(wrapLog, '');

  const tb = performance.now();
  const load0 = readFileSync('/proc/loadavg', 'utf8').trim();
  // At most CONCURRENCY pods in flight (all of them by default), each started as one ends.
  const batch: { id: string; sandbox: number; create: number; start: number; total: number }[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, BATCH) }, async () => {
      for (let i = next++; i < BATCH; i = next++) {
        const r = await startPod(rt as CriRuntime, `batch-${i}`, work.path);
        batch.push({ ...r, total: performance.now() - tb });
      }
    }),
  );
  const batchWall = performance.now() - tb;
  const c2 = group.read();
  for (const r of batch) ids.push(r.id);
  const batchWrap = WRAP ? summarizeWrapLog(wrapLog, BATCH) : '';
  if (existsSync(wrapLog)) writeFileSync(wrapLog, '');

  const daemon = procCpu(containerd.process.pid);
  const shims = shimCpu(containerd.socket);
  const started = ids.length;
  for (const id of ids) {
    await rt.stopPodSandbox(id);
    await rt.removePodSandbox(id);
  }
  const c3 = group.read();
  const removeWrap = WRAP ? summarizeWrapLog(wrapLog, ids.length) : '';

  const per = (a: { user: number; sys: number }, b: { user: number; sys: number }, n: number) =>
    `${((b.user - a.user) / n).toFixed(0)} user + ${((b.sys - a.sys) / n).toFixed(0)} sys = ${((b.user - a.user + b.sys - a.sys) / n).toFixed(0)} ms`;
  const out = [
    `sandbox-cost ${new Date().toISOString()}, chain ${CHAIN}${WRAP ? ', wrapped (CNI plugins, runc)' : ''}; load ${load0}`,
    '',
    `CPU of containerd and all it starts (cpuacct), per pod: one at a time ${per(c0, c1, PODS)}; batch of ${BATCH} ${per(c1, c2, BATCH)}; stop+remove ${per(c2, c3, ids.length)}`,
    `one at a time (median ms): RunPodSandbox ${median(singles.map((s) => s.sandbox)).toFixed(0)}, CreateContainer ${median(singles.map((s) => s.create)).toFixed(0)}, StartContainer ${median(singles.map((s) => s.start)).toFixed(0)}`,
    `batch of ${BATCH}, ${CONCURRENCY} at a time: all Running after ${batchWall.toFixed(0)} ms (median pod ${median(batch.map((b) => b.total)).toFixed(0)}); RunPodSandbox median ${median(batch.map((s) => s.sandbox)).toFixed(0)}`,
    `load after: ${readFileSync('/proc/loadavg', 'utf8').trim()}`,
    `by process, per pod started (warm-up and pulls included): containerd itself ${(daemon.self / started).toFixed(0)} ms, its reaped children (CNI plugins, \`shim start\`) ${(daemon.children / started).toFixed(0)} ms; ${shims.count} shim daemons ${(shims.self / started).toFixed(0)} ms, their reaped children (runc) ${(shims.children / started).toFixed(0)} ms`,
  ];
  if (WRAP)
    out.push(
      '',
      'execs, one at a time:',
      '',
      singleWrap,
      '',
      `execs, batch of ${BATCH}:`,
      '',
      batchWrap,
      '',
      'execs, stop + remove:',
      '',
      removeWrap,
    );
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  rt?.close();
  await containerd?.stop();
  await registry.stop();
  group.remove();
  await work.cleanup();
}
