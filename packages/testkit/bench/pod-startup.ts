// pnpm bench:pod-startup — time from a pod's creation (the POST) to Running as
// seen by a watch, through the whole of Kubit (3-member store, apiserver,
// scheduler, one real kubit-kubelet on a real containerd), for one pod at a
// time and for a batch of 20, the image already present; and in the same run
// the runtime's floor: RunPodSandbox + CreateContainer + StartContainer straight
// through CRI on the same containerd (one at a time, the floor and Kubit take
// turns pod by pod, so a drift of the machine's speed reaches both alike; the
// floor's batch runs just before Kubit's). Targets (issue 5): p50 ≤ floor +
// 100 ms; p99 ≤ 1 s for the batch of 20. Needs root.
//
//   node packages/testkit/dist/bench/pod-startup.js [--store=kubit-store|etcd]
//        [--members=3] [--singles=10] [--batch=20] [--pull-policy=IfNotPresent|Always]
//        [--kubelet=path/to/main.ts]
//
// --pull-policy: the pods' imagePullPolicy (busybox:latest would default to
// Always, a registry round trip per pod that the floor does not make).
// --kubelet: run that kubelet entry point from sources (tsx) instead of
// packages/kubelet's dist, e.g. an older copy for a before/after comparison.
//
// The kubelet traces each pod's start-up steps (KUBIT_KUBELET_TRACE_FILE); the
// run prints, per step, how long after the POST it happened.
//
// Build first: npx tsc -b packages/testkit packages/apiserver packages/scheduler packages/kubelet packages/store
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Pod } from '@kubit/api';
import { type KubeClient, resources } from '@kubit/client';
import { shimPids } from '@kubit/cri/node-teardown';
import { startContainerd } from '../src/containerd.js';
import { BUSYBOX_IMAGE, pushTestImages } from '../src/images.js';
import { startTestKubelet } from '../src/kubelet.js';
import { daemonCommand, freePort, processCpuMs, repoRoot, startProcess, tempDir } from '../src/process.js';
import { startRegistry } from '../src/registry.js';
import {
  benchClient,
  machineHeader,
  ms,
  now,
  parseFlags,
  percentile,
  progress,
  runBench,
  sleep,
  sortedCopy,
  startBenchControlPlane,
  storeProgram,
  table,
  UsageError,
} from './common.js';
import { type FloorSteps, floorCriClient, removeSandbox, startSandboxWithContainer } from './cri.js';

const SCRIPT = 'bench:pod-startup';
const NODE = 'bench-node';
const NS = 'default';

function podBody(name: string, pullPolicy: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'c', image: 'busybox:latest', imagePullPolicy: pullPolicy, command: ['sleep', '3600'] },
      ],
    },
  };
}

/** The kubelet's start-up steps in order (packages/kubelet/src/pods/trace.ts). */
const STEPS = [
  'watch-delivered',
  'sync-start',
  'volumes-ready',
  'sandbox-requested',
  'sandbox-started',
  'image-checked',
  'container-requested',
  'container-created',
  'start-requested',
  'container-started',
  'status-set',
  'status-written',
] as const;

/** Pods whose early Running status ContainerStatus then corrected (see readTrace). */
const corrected = new Map<string, string>();

/** uid → step → first time (epoch ms) from the kubelet's trace file; status steps only for Running. */
function readTrace(file: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as { uid: string; step: string; t: number; detail?: string };
    if ((e.step === 'status-set' || e.step === 'status-written') && e.detail !== 'Running') continue;
    if (e.step === 'status-corrected') corrected.set(e.uid, e.detail ?? '');
    const steps = out.get(e.uid) ?? new Map<string, number>();
    if (!steps.has(e.step)) steps.set(e.step, e.t);
    out.set(e.uid, steps);
  }
  return out;
}

interface Started {
  name: string;
  uid: string;
  /** Epoch ms of the POST. */
  postedAtEpoch: number;
  /** Epoch ms when the POST's response came. */
  createdAtEpoch: number;
  ms: number;
}

/** Epoch ms when the bench's watch first saw each pod bound to a node. */
const boundAt = new Map<string, number>();

/** Notes when each pod is first seen Running on a watch. */
function watchRunning(
  client: KubeClient,
  resourceVersion: string,
): { runningAt: Map<string, number>; stop: () => void } {
  const runningAt = new Map<string, number>();
  const w = client.watch<Pod>(resources.pods, {
    namespace: NS,
    resourceVersion,
    onEvent: (ev) => {
      const name = ev.object.metadata?.name;
      if (name && ev.object.status?.phase === 'Running' && !runningAt.has(name)) runningAt.set(name, now());
      const epoch = performance.timeOrigin + now();
      if (name && ev.object.spec?.nodeName && !boundAt.has(name)) boundAt.set(name, epoch);
    },
  });
  return { runningAt, stop: () => w.stop() };
}

/** Creates the pods at once (in parallel) and returns each one's POST → Running time. */
async function startPods(
  client: KubeClient,
  runningAt: Map<string, number>,
  names: string[],
  pullPolicy: string,
  timeoutMs = 120_000,
): Promise<Started[]> {
  const postedAt = new Map<string, number>();
  const postedAtEpoch = new Map<string, number>();
  const createdAtEpoch = new Map<string, number>();
  const uids = new Map<string, string>();
  await Promise.all(
    names.map(async (name) => {
      postedAt.set(name, now());
      postedAtEpoch.set(name, performance.timeOrigin + now());
      const created = await client.create<Pod>(resources.pods, podBody(name, pullPolicy), { namespace: NS });
      createdAtEpoch.set(name, performance.timeOrigin + now());
      uids.set(name, created.metadata?.uid ?? '');
    }),
  );
  const end = now() + timeoutMs;
  while (names.some((n) => !runningAt.has(n)) && now() < end) await sleep(5);
  const missing = names.filter((n) => !runningAt.has(n));
  if (missing.length)
    throw new Error(`${missing.length} pods not Running after ${timeoutMs} ms: ${missing.join(', ')}`);
  return names.map((name) => ({
    name,
    uid: uids.get(name) ?? '',
    postedAtEpoch: postedAtEpoch.get(name) ?? 0,
    createdAtEpoch: createdAtEpoch.get(name) ?? 0,
    ms: (runningAt.get(name) ?? 0) - (postedAt.get(name) ?? 0),
  }));
}

/** Rows of (step, p50 and p99 of ms after the POST) for the pods in `started`. */
function stepRows(started: Started[], trace: Map<string, Map<string, number>>): string[][] {
  const rows: string[][] = [];
  for (const step of STEPS) {
    const xs = sortedCopy(
      started.flatMap((p) => {
        const t = trace.get(p.uid)?.get(step);
        return t === undefined ? [] : [t - p.postedAtEpoch];
      }),
    );
    if (xs.length) rows.push([step, String(xs.length), ms(percentile(xs, 50)), ms(percentile(xs, 99))]);
  }
  const seen = sortedCopy(started.map((p) => p.ms));
  rows.push([
    'Running seen by the watch',
    String(seen.length),
    ms(percentile(seen, 50)),
    ms(percentile(seen, 99)),
  ]);
  return rows;
}

/** Spans of a pod's start-up, each between two points (a step, or the POST / the watch seeing Running). */
const SPANS: { what: string; from: string; to: string; kubelet?: boolean }[] = [
  { what: 'POST → its response (apiserver create)', from: 'POST', to: 'POST-returned' },
  { what: 'POST → a watch sees it bound (+ scheduler)', from: 'POST', to: 'bound' },
  { what: 'POST → kubelet sees the pod (apiserver, scheduler)', from: 'POST', to: 'watch-delivered' },
  { what: 'kubelet: before RunPodSandbox', from: 'watch-delivered', to: 'sandbox-requested', kubelet: true },
  { what: 'RunPodSandbox + PodSandboxStatus', from: 'sandbox-requested', to: 'sandbox-started' },
  {
    what: 'kubelet: sandbox → CreateContainer',
    from: 'sandbox-started',
    to: 'container-requested',
    kubelet: true,
  },
  { what: 'CreateContainer', from: 'container-requested', to: 'container-created' },
  {
    what: 'kubelet: created → StartContainer',
    from: 'container-created',
    to: 'start-requested',
    kubelet: true,
  },
  { what: 'StartContainer', from: 'start-requested', to: 'container-started' },
  {
    what: 'kubelet: started → status (ContainerStatus)',
    from: 'container-started',
    to: 'status-set',
    kubelet: true,
  },
  { what: 'status PATCH → watch sees Running', from: 'status-set', to: 'Running' },
];

/** Rows of (span, pods, p50, p99 of its ms), and the kubelet's own share summed per pod. */
function spanRows(started: Started[], trace: Map<string, Map<string, number>>): string[][] {
  const points: Record<string, (p: Started) => number | undefined> = {
    POST: (p) => p.postedAtEpoch,
    'POST-returned': (p) => p.createdAtEpoch,
    bound: (p) => boundAt.get(p.name),
    Running: (p) => p.postedAtEpoch + p.ms,
  };
  const at = (p: Started, point: string): number | undefined =>
    (points[point] ?? ((q: Started) => trace.get(q.uid)?.get(point)))(p);
  const rows: string[][] = [];
  const own = new Map<string, number>();
  for (const span of SPANS) {
    const xs: number[] = [];
    for (const p of started) {
      const from = at(p, span.from);
      const to = at(p, span.to);
      if (from === undefined || to === undefined) continue;
      xs.push(to - from);
      if (span.kubelet) own.set(p.uid, (own.get(p.uid) ?? 0) + (to - from));
    }
    const sorted = sortedCopy(xs);
    if (sorted.length)
      rows.push([span.what, String(sorted.length), ms(percentile(sorted, 50)), ms(percentile(sorted, 99))]);
  }
  const owns = sortedCopy([...own.values()]);
  if (owns.length)
    rows.push([
      "the kubelet's own share (sum of its rows)",
      String(owns.length),
      ms(percentile(owns, 50)),
      ms(percentile(owns, 99)),
    ]);
  return rows;
}

/** CPU ms of a process (its own, and its reaped children's: CNI plugins, runc); 0 when gone. */
function cpuMs(pid: number): number {
  const cpu = processCpuMs(pid);
  return cpu ? cpu.self + cpu.children : 0;
}

/** apiserver_request_total by "VERB resource", from the apiserver's /metrics. */
async function apiRequests(client: KubeClient): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const res = await client.rawRequest({ method: 'GET', path: '/metrics', accept: 'text/plain' });
  for (const line of res.body.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([^"]*)"/.exec(line)?.[1] ?? '?';
    const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '?';
    const key = `${verb} ${resource}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** Rows of (what, count per pod) for the requests made between two /metrics readings. */
function requestRows(before: Map<string, number>, after: Map<string, number>, pods: number): string[][] {
  const rows: string[][] = [];
  for (const [key, n] of after) {
    const d = n - (before.get(key) ?? 0);
    // The bench's own /metrics reads are not the pods' doing.
    if (d > 0 && !key.endsWith(' ?') && !key.startsWith('GET metrics'))
      rows.push([key, (d / pods).toFixed(2)]);
  }
  return rows.sort((a, b) => Number(b[1]) - Number(a[1]));
}

interface Row {
  what: string;
  n: number;
  p50: number;
  p99: number;
  floorP50?: number;
  target: string;
  verdict: string;
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), {
    store: 'kubit-store',
    members: 3,
    singles: 10,
    batch: 20,
    'pull-policy': 'IfNotPresent',
    kubelet: '',
  });
  const pullPolicy = flags['pull-policy'];
  if (!['IfNotPresent', 'Always'].includes(pullPolicy))
    throw new UsageError(`${SCRIPT}: --pull-policy takes IfNotPresent or Always, not "${pullPolicy}"`);
  const program = storeProgram(SCRIPT, flags.store);
  if (process.getuid?.() !== 0) throw new UsageError(`${SCRIPT} needs root: containerd, CNI and mounts`);
  const header = machineHeader();

  progress('starting the registry, the control plane and containerd');
  const registry = await startRegistry();
  cleanup.add('registry', () => registry.stop());
  await pushTestImages(registry.host);
  const { cp, storeTitle } = await startBenchControlPlane(program, flags.members, { nodes: [NODE] });
  cleanup.add('control plane', () => cp.stop());
  // Removed after containerd has stopped (clean-up runs last first): sandbox logs live there.
  const root = await tempDir('kubit-bench-kubelet-');
  cleanup.add('kubelet dir', () => root.cleanup());
  const containerd = await startContainerd({ mirror: registry.host });
  cleanup.add('containerd', () => containerd.stop());

  const traceFile = join(root.path, 'startup-trace.jsonl');
  const kubelet = await startTestKubelet(cp, {
    node: NODE,
    containerd,
    dir: root.path,
    logFile: join(cp.logDir, 'kubelet.log'),
    env: { KUBIT_KUBELET_TRACE_FILE: traceFile },
    command: flags.kubelet
      ? {
          command: process.execPath,
          args: ['--conditions=kubit-source', '--import', 'tsx', resolve(repoRoot, flags.kubelet)],
        }
      : undefined,
  });
  // Registered after containerd, so it is stopped before containerd is.
  cleanup.add('kubelet', () => kubelet.stop());
  const schedulerCmd = daemonCommand('scheduler', 'main.ts');
  const scheduler = startProcess({
    name: 'kubit-scheduler',
    command: schedulerCmd.command,
    args: [
      ...schedulerCmd.args,
      `--kubeconfig=${await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler)}`,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, 'scheduler.log'),
  });
  cleanup.add('scheduler', () => scheduler.stop());

  const client = benchClient(cp.kubeconfigPath, 64);
  cleanup.add('client', () => client.close());
  // A kubelet from sources on a loaded machine can take minutes to come up.
  await kubelet.waitReady(client, 300_000, 200);

  const list = await client.list(resources.pods, { namespace: NS, limit: 1 });
  const watch = watchRunning(client, list.metadata.resourceVersion ?? '0');
  cleanup.add('watch', () => watch.stop());
  progress('warm-up pod (pulls busybox and the pause image)');
  await startPods(client, watch.runningAt, ['warm-up'], pullPolicy);

  // CPU per pod of each process involved (measured, unlike wall times, the same on a busy machine).
  const cpuOf = (): Record<string, number> => ({
    apiserver: cpuMs(cp.apiserver.pid),
    [`store (${cp.store.processes.length} members)`]: cp.store.processes.reduce(
      (a, p) => a + cpuMs(p.pid),
      0,
    ),
    scheduler: cpuMs(scheduler.pid),
    kubelet: cpuMs(kubelet.process.pid),
    'containerd (with CNI plugins)': cpuMs(containerd.process.pid),
    'shims (with runc)': shimPids(containerd.socket).reduce((a, pid) => a + cpuMs(pid), 0),
  });
  // What each process burns with nothing to do (raft ticks, relists, leases), to subtract.
  const idle0 = cpuOf();
  const idleStart = now();
  await sleep(3000);
  const idle1 = cpuOf();
  const idleMs = now() - idleStart;

  // One at a time, the floor (the same containerd, image present, straight through CRI)
  // and Kubit take turns, pod by pod: this machine's speed drifts by tens of percent
  // within a minute, and taking turns gives both sides the same drift.
  progress(`${flags.singles} pods one at a time, the CRI floor and kubit taking turns`);
  const cri = floorCriClient(containerd.socket);
  cleanup.add('cri client', () => cri.close());
  const floorSingles: number[] = [];
  const floorSteps: FloorSteps[] = [];
  const floorSandboxes: string[] = [];
  const singleRuns: Started[] = [];
  // Kubit's CPU is summed over its own turns only (each with a settling second, in which
  // the pod's events and status land), so the floor's pods never count in it.
  const cpu0: Record<string, number> = Object.fromEntries(Object.keys(idle0).map((k) => [k, 0]));
  const cpu1: Record<string, number> = { ...cpu0 };
  let singlesMs = 0;
  const req0 = await apiRequests(client);
  for (let i = 0; i < flags.singles; i++) {
    const r = await startSandboxWithContainer(cri, {
      name: `floor-${i}`,
      image: BUSYBOX_IMAGE,
      logDirectory: root.path,
    });
    floorSingles.push(r.ms);
    floorSteps.push(r.steps);
    floorSandboxes.push(r.sandboxId);
    const before = cpuOf();
    const turnStart = now();
    singleRuns.push(...(await startPods(client, watch.runningAt, [`single-${i}`], pullPolicy)));
    await sleep(1000);
    const after = cpuOf();
    for (const k of Object.keys(cpu1)) cpu1[k] += (after[k] ?? 0) - (before[k] ?? 0);
    singlesMs += now() - turnStart;
  }
  // Each batch starts beside the same running pods (Kubit's singles, the warm-up pod).
  for (const id of floorSandboxes) await removeSandbox(cri, id);
  progress(`floor: ${flags.batch} sandboxes at once through CRI, then kubit: ${flags.batch} pods at once`);
  const floorBatch = await Promise.all(
    Array.from({ length: flags.batch }, (_, i) =>
      startSandboxWithContainer(cri, { name: `floor-b${i}`, image: BUSYBOX_IMAGE, logDirectory: root.path }),
    ),
  );
  for (const r of floorBatch) await removeSandbox(cri, r.sandboxId);
  const req1 = await apiRequests(client);
  const cpuBatch0 = cpuOf();
  const tBatch0 = now();
  const batchRuns = await startPods(
    client,
    watch.runningAt,
    Array.from({ length: flags.batch }, (_, i) => `batch-${i}`),
    pullPolicy,
  );
  await sleep(1500);
  const cpu2 = cpuOf();
  const batchMs = now() - tBatch0;
  const req2 = await apiRequests(client);
  const singles = singleRuns.map((r) => r.ms);
  const batch = batchRuns.map((r) => r.ms);
  const trace = readTrace(traceFile);

  const fs = sortedCopy(floorSingles);
  const fb = sortedCopy(floorBatch.map((r) => r.ms));
  const ks = sortedCopy(singles);
  const kb = sortedCopy(batch);
  const rows: Row[] = [
    {
      what: 'CRI floor, one at a time',
      n: fs.length,
      p50: percentile(fs, 50),
      p99: percentile(fs, 99),
      target: '',
      verdict: '',
    },
    {
      what: `CRI floor, ${flags.batch} at once`,
      n: fb.length,
      p50: percentile(fb, 50),
      p99: percentile(fb, 99),
      target: '',
      verdict: '',
    },
    {
      what: 'kubit, one pod at a time: POST → Running (watch)',
      n: ks.length,
      p50: percentile(ks, 50),
      p99: percentile(ks, 99),
      floorP50: percentile(fs, 50),
      target: 'p50 ≤ floor + 100 ms',
      verdict: percentile(ks, 50) <= percentile(fs, 50) + 100 ? 'MET' : 'MISSED',
    },
    {
      what: `kubit, batch of ${flags.batch}: POST → Running (watch)`,
      n: kb.length,
      p50: percentile(kb, 50),
      p99: percentile(kb, 99),
      floorP50: percentile(fb, 50),
      target: 'p99 ≤ 1 s',
      verdict: percentile(kb, 99) <= 1000 ? 'MET' : 'MISSED',
    },
  ];
  const down = [
    kubelet.process.running ? '' : 'kubelet EXITED',
    scheduler.running ? '' : 'scheduler EXITED',
    cp.apiserver.running ? '' : 'apiserver EXITED',
  ].filter(Boolean);

  process.stdout.write(`${header}\n\n`);
  process.stdout.write(
    `pod startup on kubit-apiserver + kubit-scheduler + one kubit-kubelet${
      flags.kubelet ? ` (${flags.kubelet}, from sources)` : ''
    } on containerd 1.6, store ${storeTitle}; busybox present, imagePullPolicy ${pullPolicy}; ms${
      down.length ? `; ${down.join(', ')}` : ''
    }\n\n`,
  );
  process.stdout.write(
    `${table(
      ['measurement', 'pods', 'p50 ms', 'p99 ms', 'p50 − floor p50', 'p50 ÷ floor p50', 'target', 'verdict'],
      rows.map((r) => [
        r.what,
        String(r.n),
        ms(r.p50),
        ms(r.p99),
        r.floorP50 === undefined ? '' : ms(r.p50 - r.floorP50),
        r.floorP50 === undefined ? '' : `${(r.p50 / r.floorP50).toFixed(2)}×`,
        r.target,
        r.verdict,
      ]),
    )}\n`,
  );
  const steps = ['step of the kubelet (first time)', 'pods', 'p50 ms after POST', 'p99 ms after POST'];
  process.stdout.write(
    `\nwhere the time goes, one pod at a time:\n\n${table(steps, stepRows(singleRuns, trace))}\n`,
  );
  process.stdout.write(
    `\nwhere the time goes, batch of ${flags.batch}:\n\n${table(steps, stepRows(batchRuns, trace))}\n`,
  );
  const all = [...singleRuns, ...batchRuns];
  process.stdout.write(
    `\nRunning statuses published before ContainerStatus and then corrected by it: ${
      all.filter((p) => corrected.has(p.uid)).length
    } of ${all.length} pods${all
      .filter((p) => corrected.has(p.uid))
      .map((p) => `\n  ${p.name}: ${corrected.get(p.uid)}`)
      .join('')}\n`,
  );
  // The floor's own calls, to set beside the kubelet's RunPodSandbox (+ PodSandboxStatus),
  // CreateContainer and StartContainer spans below: the same calls, made with the control
  // plane idle rather than busy with the pod.
  const floorStepRows = (['runPodSandbox', 'createContainer', 'startContainer'] as const).map((k) => {
    const v = sortedCopy(floorSteps.map((s) => s[k]));
    return [`floor: ${k}`, String(v.length), ms(percentile(v, 50)), ms(percentile(v, 99))];
  });
  // Per pod: the phase's CPU less what the process burns idle over as long a time.
  const perPod = (k: string, a: Record<string, number>, b: Record<string, number>, ms: number, n: number) => {
    const idleRate = ((idle1[k] ?? 0) - (idle0[k] ?? 0)) / idleMs;
    return (((b[k] ?? 0) - (a[k] ?? 0) - idleRate * ms) / n).toFixed(0);
  };
  const cpuRows = Object.keys(cpu0).map((k) => [
    k,
    (((idle1[k] ?? 0) - (idle0[k] ?? 0)) / (idleMs / 1000)).toFixed(0),
    perPod(k, cpu0, cpu1, singlesMs, flags.singles),
    perPod(k, cpuBatch0, cpu2, batchMs, flags.batch),
  ]);
  process.stdout.write(
    `\nCPU ms per pod by process (user + system from /proc, less the process's idle rate over the phase; shims: Kubit's pods only):\n\n${table(
      ['process', 'idle, ms per s', 'one at a time', `batch of ${flags.batch}`],
      cpuRows,
    )}\n`,
  );
  process.stdout.write(
    `\napiserver requests per pod, one at a time (the bench's included):\n\n${table(
      ['verb resource', 'per pod'],
      requestRows(req0, req1, flags.singles),
    )}\n`,
  );
  process.stdout.write(
    `\napiserver requests per pod, batch of ${flags.batch}:\n\n${table(
      ['verb resource', 'per pod'],
      requestRows(req1, req2, flags.batch),
    )}\n`,
  );
  const spans = ['span (ms between its two points)', 'pods', 'p50 ms', 'p99 ms'];
  process.stdout.write(`\nthe floor's CRI calls, one pod at a time:\n\n${table(spans, floorStepRows)}\n`);
  process.stdout.write(`\nspans, one pod at a time:\n\n${table(spans, spanRows(singleRuns, trace))}\n`);
  process.stdout.write(`\nspans, batch of ${flags.batch}:\n\n${table(spans, spanRows(batchRuns, trace))}\n`);
});
