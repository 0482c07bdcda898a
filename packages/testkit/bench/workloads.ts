import type { DaemonSet, Job, Pod, StatefulSet } from '@kubit/api';
import { type KubeClient, resources, type Watch } from '@kubit/client';
import type { ControlPlane } from '../src/controlplane.js';
import type { StoreProgram } from '../src/etcd.js';
import type { TestProcess } from '../src/process.js';
import {
  benchClient,
  Cleanup,
  machineHeader,
  now,
  parseFlags,
  progress,
  rssMiB,
  runBench,
  sleep,
  sortedCopy,
  startBenchControlPlane,
  storeProgram,
  table,
  UsageError,
} from './common.js';
import { assertRunning, startHollowStack } from './hollow-stack.js';

const SCRIPT = 'bench:workloads';
const WORKLOADS = ['daemonset', 'statefulset', 'job'] as const;
type Workload = (typeof WORKLOADS)[number];

/**
 * Kubernetes' scheduler_perf SchedulingDaemonset threshold (pods/s, 15,000
 * nodes, 30,000 pods; kubernetes test/integration/scheduler_perf/misc/performance-config.yaml): a
 * reference number, not measured here — and it times the scheduler alone,
 * where this times the whole stack.
 */
const K8S_DAEMONSET_THRESHOLD = 1100;
/** Issue 21's target for the full stack. */
const DAEMONSET_TARGET = 1000;

const isReady = (p: Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** When each pod (namespace/name) was first seen, first Running, first Ready, first Succeeded. */
interface PodTimes {
  seen: number;
  running?: number;
  ready?: number;
  succeeded?: number;
  failed?: number;
}

/**
 * Watches every pod of the cluster from one resourceVersion on, noting the
 * moment (performance.now) of each pod's first phase changes, and the most
 * pods of a namespace that were not yet terminal at once (a Job's parallelism).
 */
class PodWatch {
  readonly times = new Map<string, PodTimes>();
  private readonly watch: Watch<Pod>;
  private readonly live = new Map<string, Set<string>>();
  private readonly peakLive = new Map<string, number>();
  error: Error | undefined;
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    resourceVersion: string,
  ) {
    this.watch = client.watch<Pod>(resources.pods, {
      resourceVersion,
      maxBuffered: 500_000,
      onEvent: (ev) => {
        if (ev.type === 'BOOKMARK') return;
        if (ev.type === 'ERROR') {
          this.error = new Error(`watch ERROR event: ${JSON.stringify(ev.object).slice(0, 200)}`);
          return;
        }
        const p = ev.object;
        const ns = p.metadata?.namespace ?? '';
        const key = `${ns}/${p.metadata?.name ?? ''}`;
        const t = now();
        let rec = this.times.get(key);
        if (!rec) {
          rec = { seen: t };
          this.times.set(key, rec);
        }
        const phase = p.status?.phase;
        if (phase === 'Running') rec.running ??= t;
        if (isReady(p)) rec.ready ??= t;
        if (phase === 'Succeeded') rec.succeeded ??= t;
        if (phase === 'Failed') rec.failed ??= t;
        let live = this.live.get(ns);
        if (!live) {
          live = new Set();
          this.live.set(ns, live);
        }
        if (ev.type === 'DELETED' || phase === 'Succeeded' || phase === 'Failed') live.delete(key);
        else live.add(key);
        this.peakLive.set(ns, Math.max(this.peakLive.get(ns) ?? 0, live.size));
      },
      onClose: (err) => {
        if (!this.stopped) this.error ??= err ?? new Error('the server ended the pod watch');
      },
    });
  }

  /** Sorted moments at which pods of `ns` reached `what`. */
  moments(ns: string, what: keyof PodTimes): number[] {
    const out: number[] = [];
    for (const [key, rec] of this.times) {
      const t = rec[what];
      if (t !== undefined && key.startsWith(`${ns}/`)) out.push(t);
    }
    return sortedCopy(out);
  }

  count(ns: string, what: keyof PodTimes): number {
    let n = 0;
    for (const [key, rec] of this.times) if (rec[what] !== undefined && key.startsWith(`${ns}/`)) n++;
    return n;
  }

  peak(ns: string): number {
    return this.peakLive.get(ns) ?? 0;
  }

  stop(): void {
    this.stopped = true;
    this.watch.stop();
    this.client.close();
  }
}

/** ms after `t0` at which p % of `count` moments had passed (NaN if fewer happened). */
function mark(moments: number[], count: number, p: number, t0: number): number {
  const k = Math.ceil((p / 100) * count);
  return moments.length >= k && k > 0 ? moments[k - 1] - t0 : Number.NaN;
}

function secs(x: number): string {
  return Number.isFinite(x) ? (x / 1000).toFixed(1) : '-';
}

interface Stack {
  cp: ControlPlane;
  client: KubeClient;
  watch: PodWatch;
  procs: TestProcess[];
  cm: TestProcess;
  timeoutMs: number;
}

/** Polls `done` (every 50 ms) until it holds; fails fast if a daemon or the watch died. */
async function waitFor(stack: Stack, what: string, done: () => Promise<boolean> | boolean): Promise<number> {
  const end = now() + stack.timeoutMs;
  while (now() < end) {
    if (stack.watch.error) throw new Error(`the pod watch failed: ${stack.watch.error.message}`);
    assertRunning(stack.cp, stack.procs);
    if (await done()) return now();
    await sleep(50);
  }
  progress(`${what}: not done within ${stack.timeoutMs / 1000} s`);
  return Number.NaN;
}

async function namespace(client: KubeClient, name: string): Promise<void> {
  await client.create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** Samples the controller manager's VmRSS while `fn` runs; its peak in MiB. */
async function withPeakRss<T>(pid: number, fn: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = rssMiB(pid) || 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(pid) || 0);
  }, 250);
  try {
    return { result: await fn(), peak };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * One line of a workload's table. Times in ms; undefined leaves a cell blank,
 * NaN prints '-' (it did not happen in time). `rate` is in `unit`.
 */
interface Row {
  what: string;
  total?: number;
  p50?: number;
  p90?: number;
  p99?: number;
  rate?: number;
  unit?: string;
  /** The 50/90/99 % cells are milliseconds, not seconds. */
  inMs?: boolean;
  note: string;
}

interface Section {
  workload: Workload;
  rows: Row[];
}

/** When the controller's pods appeared (first watch event): splits the controller's share from the scheduler's and the nodes'. */
function createdRow(stack: Stack, ns: string, count: number, t0: number): Row {
  const seen = stack.watch.moments(ns, 'seen');
  const last = seen.length > 0 ? seen[seen.length - 1] - t0 : Number.NaN;
  return {
    what: '… pods created (first watch event)',
    total: last,
    p50: mark(seen, count, 50, t0),
    p90: mark(seen, count, 90, t0),
    p99: mark(seen, count, 99, t0),
    rate: perSec(seen.length, last),
    unit: 'pods/s',
    note: `${seen.length} pods created; the rest of the time is scheduling, binding and the hollow nodes' status writes`,
  };
}

const perSec = (count: number, ms: number) =>
  Number.isFinite(ms) && ms > 0 ? (count * 1000) / ms : Number.NaN;

function rssRow(peak: number): Row {
  return {
    what: 'kubit-controller-manager peak VmRSS',
    rate: peak,
    unit: 'MiB',
    note: 'sampled every 250 ms',
  };
}

async function daemonSetBench(stack: Stack, nodes: number): Promise<Row[]> {
  const ns = 'bench-ds';
  await namespace(stack.client, ns);
  const body: DaemonSet = {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'agent', namespace: ns },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: {
        metadata: { labels: { app: 'agent' } },
        spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'pause' }] },
      },
    },
  };
  progress(`daemonset: one pod on each of ${nodes} nodes`);
  const { result, peak } = await withPeakRss(stack.cm.pid, async () => {
    const t0 = now();
    await stack.client.create(resources.daemonsets, body, { namespace: ns });
    const running = await waitFor(stack, 'daemonset', () => stack.watch.count(ns, 'running') >= nodes);
    // The controller's own account must agree: every node has its pod, and it is ready.
    const status = await waitFor(stack, 'daemonset status', async () => {
      const s = (await stack.client.get<DaemonSet>(resources.daemonsets, 'agent', { namespace: ns })).status;
      return (
        s?.desiredNumberScheduled === nodes && s.numberReady === nodes && s.updatedNumberScheduled === nodes
      );
    });
    return { t0, running, status };
  });
  const { t0, running, status } = result;
  const moments = stack.watch.moments(ns, 'running');
  const total = running - t0;
  const podsPerSec = perSec(nodes, total);
  progress(`daemonset: all Running after ${secs(total)} s (${podsPerSec.toFixed(0)} pods/s)`);
  return [
    {
      what: `DaemonSet on ${nodes} nodes: every pod Running`,
      total,
      p50: mark(moments, nodes, 50, t0),
      p90: mark(moments, nodes, 90, t0),
      p99: mark(moments, nodes, 99, t0),
      rate: podsPerSec,
      unit: 'pods/s',
      note: Number.isFinite(total)
        ? `from the POST to the last pod seen Running; status numberReady=${nodes} ${secs(status - t0)} s after the POST`
        : `NOT all Running within ${stack.timeoutMs / 1000} s (${stack.watch.count(ns, 'running')} were)`,
    },
    createdRow(stack, ns, nodes, t0),
    {
      what: 'Kubernetes scheduler_perf SchedulingDaemonset threshold',
      rate: K8S_DAEMONSET_THRESHOLD,
      unit: 'pods/s',
      note: `reference, not measured: the published threshold (scheduler alone, 15,000 nodes); kubit ÷ threshold ${Number.isFinite(podsPerSec) ? (podsPerSec / K8S_DAEMONSET_THRESHOLD).toFixed(2) : '-'}; issue 21's target ≥ ${DAEMONSET_TARGET} pods/s: ${podsPerSec >= DAEMONSET_TARGET ? 'met' : 'NOT met'}`,
    },
    rssRow(peak),
  ];
}

async function statefulSetBench(stack: Stack, replicas: number): Promise<Row[]> {
  const ns = 'bench-sts';
  await namespace(stack.client, ns);
  const body: StatefulSet = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'db', namespace: ns },
    spec: {
      replicas,
      serviceName: 'db',
      podManagementPolicy: 'OrderedReady',
      selector: { matchLabels: { app: 'db' } },
      template: {
        metadata: { labels: { app: 'db' } },
        spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: 'pause' }] },
      },
    },
  };
  progress(`statefulset: ${replicas} replicas, OrderedReady`);
  const { result, peak } = await withPeakRss(stack.cm.pid, async () => {
    const t0 = now();
    await stack.client.create(resources.statefulsets, body, { namespace: ns });
    const done = await waitFor(stack, 'statefulset', async () => {
      if (stack.watch.count(ns, 'ready') < replicas) return false;
      const s = (await stack.client.get<StatefulSet>(resources.statefulsets, 'db', { namespace: ns })).status;
      return s?.readyReplicas === replicas && s.currentReplicas === replicas;
    });
    return { t0, done };
  });
  const { t0, done } = result;
  // In OrderedReady, pod i+1 is created only once pod i is Ready: the gap between
  // consecutive Ready moments is the full cost of one pod through the stack.
  const ready = stack.watch.moments(ns, 'ready');
  const gaps = sortedCopy(ready.map((t, i) => t - (i === 0 ? t0 : ready[i - 1])));
  const total = done - t0;
  progress(`statefulset: all Ready after ${secs(total)} s`);
  const pct = (p: number) => mark(gaps, gaps.length, p, 0);
  return [
    {
      what: `StatefulSet of ${replicas}, OrderedReady: all Ready`,
      total,
      rate: Number.isFinite(total) ? total / replicas : Number.NaN,
      unit: 'ms/pod',
      note: Number.isFinite(total)
        ? 'from the POST to status readyReplicas = replicas'
        : `NOT all Ready within ${stack.timeoutMs / 1000} s (${ready.length} were)`,
    },
    {
      what: 'one pod: Ready of pod i-1 → Ready of pod i (ms)',
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      inMs: true,
      note: 'the gaps, in ms: create, schedule, bind, hollow node Running+Ready, the controller sees it',
    },
    rssRow(peak),
  ];
}

async function jobBench(
  stack: Stack,
  completions: number,
  parallelism: number,
  runMs: number,
): Promise<Row[]> {
  const ns = 'bench-job';
  await namespace(stack.client, ns);
  const body: Job = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'batch', namespace: ns },
    spec: {
      completions,
      parallelism,
      backoffLimit: 0,
      template: {
        metadata: {
          // The hollow node plays a container that exits 0 after runMs.
          annotations: { 'kubit.dev/hollow-exit-code': '0', 'kubit.dev/hollow-run-ms': String(runMs) },
        },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'c', image: 'pause' }],
        },
      },
    },
  };
  progress(`job: ${completions} completions, parallelism ${parallelism}, pods run ${runMs} ms`);
  let last: Job | undefined;
  const { result, peak } = await withPeakRss(stack.cm.pid, async () => {
    const t0 = now();
    await stack.client.create(resources.jobs, body, { namespace: ns });
    let polled = 0;
    const done = await waitFor(stack, 'job', async () => {
      // The watch is local; ask the apiserver only every 250 ms or once the pods are done.
      if (stack.watch.count(ns, 'succeeded') < completions && polled++ % 5 !== 0) return false;
      last = await stack.client.get<Job>(resources.jobs, 'batch', { namespace: ns });
      if (last.status?.conditions?.some((c) => c.type === 'Failed' && c.status === 'True'))
        throw new Error(`the Job failed: ${JSON.stringify(last.status).slice(0, 300)}`);
      return last.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') === true;
    });
    return { t0, done };
  });
  const { t0, done } = result;
  const succeeded = stack.watch.moments(ns, 'succeeded');
  const total = done - t0;
  progress(`job: Complete after ${secs(total)} s (${perSec(completions, total).toFixed(0)} completions/s)`);
  return [
    {
      what: `Job: ${completions} completions, parallelism ${parallelism}`,
      total,
      p50: mark(succeeded, completions, 50, t0),
      p90: mark(succeeded, completions, 90, t0),
      p99: mark(succeeded, completions, 99, t0),
      rate: perSec(completions, total),
      unit: 'completions/s',
      note: Number.isFinite(total)
        ? `from the POST to the Complete condition (status.succeeded=${last?.status?.succeeded}); 50/90/99 %: pods seen Succeeded; hollow pods run ${runMs} ms`
        : `NOT Complete within ${stack.timeoutMs / 1000} s: ${JSON.stringify(last?.status ?? {}).slice(0, 200)}`,
    },
    createdRow(stack, ns, completions, t0),
    {
      what: 'most unfinished pods of the Job at once',
      rate: stack.watch.peak(ns),
      unit: 'pods',
      note: `parallelism ${parallelism}; counted at every pod watch event`,
    },
    rssRow(peak),
  ];
}

const cell = (x: number | undefined, inMs = false) =>
  x === undefined ? '' : !Number.isFinite(x) ? '-' : inMs ? x.toFixed(0) : secs(x);
const rateCell = (r: Row) =>
  r.rate === undefined ? '' : `${Number.isFinite(r.rate) ? r.rate.toFixed(0) : '-'} ${r.unit ?? ''}`.trim();

function singleTable(rows: Row[]): string {
  return table(
    ['measurement', 'total s', '50 % s', '90 % s', '99 % s', 'rate', 'note'],
    rows.map((r) => [
      r.what,
      cell(r.total),
      cell(r.p50, r.inMs),
      cell(r.p90, r.inMs),
      cell(r.p99, r.inMs),
      rateCell(r),
      r.note,
    ]),
  );
}

/** The same rows from two stores side by side; the ratio is kubit-store's total ÷ etcd's (or rate ÷ rate, or p99 ÷ p99). */
function sideBySide(a: Row[], b: Row[]): string {
  const ratio = (x: Row, y: Row | undefined): string => {
    const pick = (r: Row | undefined) => r?.total ?? r?.rate ?? r?.p99;
    const [u, v] = [pick(x), pick(y)];
    return u !== undefined && v !== undefined && Number.isFinite(u) && Number.isFinite(v) && v > 0
      ? `${(u / v).toFixed(2)}×`
      : '';
  };
  return table(
    [
      'measurement',
      'kubit-store s',
      'etcd s',
      'kubit-store',
      'etcd',
      'kubit-store ÷ etcd (time, else value)',
    ],
    a.map((r, i) => {
      const e = b[i];
      const reference = r.what.startsWith('Kubernetes');
      return [
        r.what,
        cell(r.total) || (r.inMs ? `p99 ${cell(r.p99, true)} ms` : ''),
        cell(e?.total) || (e?.inMs ? `p99 ${cell(e.p99, true)} ms` : ''),
        rateCell(r),
        reference ? '(same reference)' : e ? rateCell(e) : '',
        reference ? '' : ratio(r, e),
      ];
    }),
  );
}

function parseWorkloads(value: string): Workload[] {
  const out: Workload[] = [];
  for (const w of value.split(',').filter((x) => x !== '')) {
    if (!(WORKLOADS as readonly string[]).includes(w))
      throw new UsageError(`${SCRIPT}: --workloads takes some of ${WORKLOADS.join(',')}, not "${w}"`);
    out.push(w as Workload);
  }
  if (out.length === 0) throw new UsageError(`${SCRIPT}: --workloads names none`);
  return out;
}

const DEFAULTS = {
  store: 'kubit-store',
  members: 3,
  nodes: 1000,
  workloads: WORKLOADS.join(','),
  'statefulset-replicas': 100,
  'job-completions': 10_000,
  'job-parallelism': 500,
  'job-run-ms': 0,
  'timeout-seconds': 600,
};
type Flags = typeof DEFAULTS;

/** Starts the whole stack on `program`, runs the workloads one after another, stops it all again. */
async function runOnStore(
  program: StoreProgram,
  flags: Flags,
  workloads: Workload[],
  outer: Cleanup,
): Promise<{ storeTitle: string; sections: Section[] }> {
  // Its own clean-up, to stop this stack before the next store's; Ctrl-C runs it through `outer`.
  const cleanup = new Cleanup();
  outer.add(`the stack on ${program}`, () => cleanup.run());
  try {
    progress(`starting the control plane on ${program} ×${flags.members}`);
    const { cp, storeTitle } = await startBenchControlPlane(program, flags.members);
    cleanup.add('control plane', () => cp.stop());
    const client = benchClient(cp.kubeconfigPath, 16);
    cleanup.add('client', () => client.close());

    // Finished Job pods stay (as in Kubernetes, until the Job goes); room for all of them anyway.
    const maxPods = Math.max(
      110,
      Math.ceil((flags['job-completions'] + flags['statefulset-replicas']) / flags.nodes) + 10,
    );
    const { procs, controllerManager: cm } = await startHollowStack(cp, client, cleanup, {
      nodes: flags.nodes,
      maxPods,
    });
    const rv = (await client.list(resources.pods, { limit: 1 })).metadata.resourceVersion ?? '0';
    const watch = new PodWatch(benchClient(cp.kubeconfigPath, 2), rv);
    cleanup.add('pod watch', () => watch.stop());
    const stack: Stack = { cp, client, watch, procs, cm, timeoutMs: flags['timeout-seconds'] * 1000 };

    const sections: Section[] = [];
    for (const workload of workloads) {
      const rows =
        workload === 'daemonset'
          ? await daemonSetBench(stack, flags.nodes)
          : workload === 'statefulset'
            ? await statefulSetBench(stack, flags['statefulset-replicas'])
            : await jobBench(stack, flags['job-completions'], flags['job-parallelism'], flags['job-run-ms']);
      if (!cp.apiserver.running) rows.push({ what: 'apiserver', note: 'EXITED during the run' });
      sections.push({ workload, rows });
    }
    return { storeTitle, sections };
  } finally {
    progress(`stopping the stack on ${program}`);
    await cleanup.run();
  }
}

runBench(async (outer) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), DEFAULTS);
  // both: the same workloads on kubit-store and then on etcd, and a table of the two side by side.
  if (!['kubit-store', 'etcd', 'both'].includes(flags.store))
    throw new UsageError(`${SCRIPT}: --store takes kubit-store, etcd or both, not "${flags.store}"`);
  const programs: StoreProgram[] =
    flags.store === 'both' ? ['kubit-store', 'etcd'] : [storeProgram(SCRIPT, flags.store)];
  const workloads = parseWorkloads(flags.workloads);
  if (
    flags.nodes < 1 ||
    flags['statefulset-replicas'] < 1 ||
    flags['job-completions'] < 1 ||
    flags['job-parallelism'] < 1
  )
    throw new UsageError(`${SCRIPT}: --nodes, --statefulset-replicas, --job-* must be ≥ 1`);
  const header = machineHeader();
  const runs = [];
  for (const program of programs) runs.push(await runOnStore(program, flags, workloads, outer));

  const out = [`${header}\n`];
  for (const run of runs) {
    out.push(
      `kubit-controller-manager with kubit-scheduler on kubit-apiserver on ${run.storeTitle}; ${flags.nodes} hollow nodes; the workloads one after another on the same cluster\n`,
    );
    for (const s of run.sections) out.push(`${singleTable(s.rows)}\n`);
  }
  if (runs.length === 2) {
    out.push(`side by side: ${runs[0].storeTitle} vs ${runs[1].storeTitle}\n`);
    for (const [i, s] of runs[0].sections.entries())
      out.push(`${sideBySide(s.rows, runs[1].sections[i]?.rows ?? [])}\n`);
  }
  process.stdout.write(`${out.join('\n')}`);
});
