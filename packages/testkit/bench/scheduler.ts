import { join } from 'node:path';
import type { Node, Pod } from '@kubit/api';
import { type KubeClient, type KubeObject, resources, type Watch } from '@kubit/client';
import type { ControlPlane } from '../src/controlplane.js';
import { daemonCommand, freePort, processCpuMs, startProcess, type TestProcess } from '../src/process.js';
import {
  benchClient,
  forEachConcurrent,
  machineHeader,
  ms,
  now,
  parseFlags,
  percentile,
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

const SCRIPT = 'bench:scheduler';
const GROUP_SIZE = 10;

/** CPU ms (user + system) a process has used so far; NaN once it is gone. */
function cpuMs(pid: number): number {
  return processCpuMs(pid)?.self ?? Number.NaN;
}

/** Counts from the apiserver's /metrics: store operations and requests, by label. */
async function apiserverCounts(client: KubeClient): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const res = await client
    .rawRequest({ method: 'GET', path: '/metrics', accept: 'text/plain' })
    .catch(() => null);
  if (res?.statusCode !== 200) return out;
  for (const line of res.body.split('\n')) {
    const store = /^apiserver_storage_request_duration_seconds_count\{operation="([^"]+)"\} (\d+)/.exec(line);
    if (store) out.set(`store ${store[1]}`, Number(store[2]));
    const req = /^apiserver_request_total\{(.*)\} (\d+)/.exec(line);
    if (req) {
      const verb = /verb="([^"]*)"/.exec(req[1])?.[1] ?? '?';
      const resource = /resource="([^"]*)"/.exec(req[1])?.[1] ?? '?';
      const k = `${verb} ${resource}`;
      out.set(k, (out.get(k) ?? 0) + Number(req[2]));
    }
  }
  return out;
}

/** What grew between two apiserverCounts, per bound pod, largest first. */
function countsPerPod(before: Map<string, number>, after: Map<string, number>, pods: number): string {
  const rows: [string, number][] = [];
  for (const [k, v] of after) {
    const d = v - (before.get(k) ?? 0);
    if (d / pods >= 0.01) rows.push([k, d / pods]);
  }
  rows.sort((a, b) => b[1] - a[1]);
  return rows.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
}

/** The processes whose CPU per bound pod a batch reports. */
function cpuTargets(cp: ControlPlane, scheduler: TestProcess): { name: string; pid: number }[] {
  return [
    { name: 'scheduler', pid: scheduler.pid },
    { name: 'apiserver', pid: cp.apiserver.pid },
    ...cp.store.processes.map((p, i) => ({ name: `store-${i}`, pid: p.pid })),
  ];
}

function nodeBody(name: string): Node {
  const alloc = { cpu: '32', memory: '128Gi', pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubit.io/bench': 'hollow' } },
    spec: {},
    status: {
      allocatable: alloc,
      capacity: alloc,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'KubeletReady',
          message: 'registered by bench:scheduler',
          lastHeartbeatTime: new Date().toISOString(),
          lastTransitionTime: new Date().toISOString(),
        },
      ],
    },
  };
}

function podBody(name: string, namespace: string, antiAffinity: boolean, index: number): Pod {
  const group = `g${Math.floor(index / GROUP_SIZE)}`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: group } },
    spec: {
      containers: [
        {
          name: 'c',
          image: 'busybox:latest',
          resources: { requests: { cpu: '10m', memory: '16Mi' } },
        },
      ],
      ...(antiAffinity
        ? {
            affinity: {
              podAntiAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: [
                  { labelSelector: { matchLabels: { app: group } }, topologyKey: 'kubernetes.io/hostname' },
                ],
              },
            },
          }
        : {}),
    },
  };
}

async function registerNodes(client: KubeClient, count: number): Promise<void> {
  const r = await forEachConcurrent(count, 32, async (i) => {
    const body = nodeBody(`hollow-${i}`);
    const created = await client.create<Node>(resources.nodes, body);
    // Status may be dropped on create: set it through the status subresource too.
    await client.updateStatus<Node>(resources.nodes, { ...created, status: body.status });
  });
  if (r.errors) throw new Error(`${r.errors} of ${count} nodes failed to register: ${r.firstError}`);
}

function startScheduler(cp: ControlPlane, kubeconfig: string, port: number, name: string): TestProcess {
  const cmd = daemonCommand('scheduler', 'main.ts');
  // For A/B runs of the scheduler from another tree (e.g. an older copy of its sources).
  const otherMain = process.env.KUBIT_SCHEDULER_MAIN;
  if (otherMain) cmd.args = [...cmd.args.slice(0, -1), otherMain];
  const profDir = process.env.KUBIT_SCHEDULER_CPU_PROF;
  return startProcess({
    name,
    command: cmd.command,
    args: [
      ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
      ...cmd.args,
      `--kubeconfig=${kubeconfig}`,
      `--secure-port=${port}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, `${name}.log`),
  });
}

/** Watches a namespace and notes when each pod first shows a nodeName. */
class BindingWatch {
  readonly boundAt = new Map<string, number>();
  readonly nodeOf = new Map<string, string>();
  /** Called once, at the first binding seen. */
  onFirstBind: (() => void) | undefined;
  private readonly watch: Watch<Pod>;
  error: Error | undefined;
  private stopped = false;

  /** Takes ownership of `client` (its own, so binding events never queue behind creates). */
  constructor(
    private readonly client: KubeClient,
    namespace: string,
    resourceVersion: string,
  ) {
    this.watch = client.watch<Pod>(resources.pods, {
      namespace,
      resourceVersion,
      maxBuffered: 100_000,
      onEvent: (ev) => {
        if (ev.type === 'ERROR') {
          // e.g. 410 Expired: the watch is over and bindings after it would go unseen.
          this.error = new Error(`watch ERROR event: ${JSON.stringify(ev.object).slice(0, 200)}`);
          return;
        }
        const name = ev.object.metadata?.name;
        const node = ev.object.spec?.nodeName;
        if (name && node && !this.boundAt.has(name)) {
          if (this.boundAt.size === 0) this.onFirstBind?.();
          this.boundAt.set(name, now());
          this.nodeOf.set(name, node);
        }
      },
      onClose: (err) => {
        if (!this.stopped) this.error ??= err ?? new Error('the server ended the watch');
      },
    });
  }

  async waitFor(count: number, timeoutMs: number): Promise<boolean> {
    const end = now() + timeoutMs;
    while (this.boundAt.size < count && now() < end) {
      if (this.error) throw new Error(`the binding watch failed: ${this.error.message}`);
      await sleep(50);
    }
    return this.boundAt.size >= count;
  }

  stop(): void {
    this.stopped = true;
    this.watch.stop();
    this.client.close();
  }
}

async function ensureNamespace(client: KubeClient, name: string): Promise<string> {
  await client.create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const list = await client.list(resources.pods, { namespace: name, limit: 1 });
  return list.metadata.resourceVersion ?? '0';
}

interface Row {
  what: string;
  pods: string;
  rate: string;
  p50: string;
  p99: string;
  target: string;
  note: string;
}

/** Anti-affinity groups must not share a node: counts the groups that do. */
function antiAffinityViolations(w: BindingWatch, count: number): number {
  let bad = 0;
  for (let g = 0; g * GROUP_SIZE < count; g++) {
    const nodes = new Set<string>();
    let members = 0;
    for (let i = g * GROUP_SIZE; i < Math.min(count, (g + 1) * GROUP_SIZE); i++) {
      const n = w.nodeOf.get(`p-${i}`);
      if (n) {
        nodes.add(n);
        members++;
      }
    }
    if (nodes.size < members) bad++;
  }
  return bad;
}

/**
 * The batch: `count` pods created pending (scheduler stopped), then the scheduler
 * starts and binds them; rate from the first bind to the last.
 */
async function batch(
  cp: ControlPlane,
  client: KubeClient,
  schedulerKubeconfig: string,
  kind: 'plain' | 'anti-affinity',
  count: number,
  batchSeconds: number,
): Promise<{ row: Row; cpuRow: Row; countRow: Row; scheduler: TestProcess; rss: number }> {
  const ns = `bench-${kind}`;
  const rv = await ensureNamespace(client, ns);
  // Watching from before the creates: a watch started later from this resourceVersion
  // could be too old for the watch cache (410) once 10,000 pods were written.
  const watch = new BindingWatch(benchClient(cp.kubeconfigPath, 4), ns, rv);
  progress(`${kind}: creating ${count} pending pods with 64 clients`);
  const t0 = now();
  const r = await forEachConcurrent(count, 64, async (i) => {
    await client.create(resources.pods, podBody(`p-${i}`, ns, kind === 'anti-affinity', i), {
      namespace: ns,
    });
  });
  if (r.errors) {
    watch.stop();
    throw new Error(`${r.errors} pod creates failed: ${r.firstError}`);
  }
  progress(`${kind}: created at ${(count / ((now() - t0) / 1000)).toFixed(0)}/s; starting the scheduler`);
  // What the apiserver and the store spend doing nothing (raft ticks, leases): per-pod
  // CPU is reported above this idle rate, so a slow batch on a busy host does not
  // charge its extra seconds of background work to the pods.
  const idleTargets = [cp.apiserver.pid, ...cp.store.processes.map((p) => p.pid)];
  const idleStart = idleTargets.map(cpuMs);
  const idleT0 = now();
  await sleep(2000);
  const idleRate = idleTargets.map((pid, i) => (cpuMs(pid) - idleStart[i]) / (now() - idleT0));
  const countsBefore = await apiserverCounts(client);
  const scheduler = startScheduler(cp, schedulerKubeconfig, await freePort(), `kubit-scheduler-${kind}`);
  const startedAt = now();
  const targets = cpuTargets(cp, scheduler);
  const cpuBefore = targets.map((t) => (t.name === 'scheduler' ? 0 : cpuMs(t.pid)));
  let schedulerStartupCpu = Number.NaN;
  watch.onFirstBind = () => {
    schedulerStartupCpu = cpuMs(scheduler.pid);
  };
  const benchCpuBefore = process.cpuUsage();
  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(scheduler.pid));
  }, 250);
  let all = false;
  try {
    const deadline = now() + batchSeconds * 1000;
    while (now() < deadline && scheduler.running) {
      const done = await watch.waitFor(count, 1000).catch(() => undefined);
      if (done === undefined) break; // the watch failed: reported in the note
      if (done) {
        all = true;
        break;
      }
    }
  } finally {
    clearInterval(sampler);
    watch.stop();
  }
  const cpuAfter = targets.map((t) => cpuMs(t.pid));
  const benchCpu = process.cpuUsage(benchCpuBefore);
  const elapsed = now() - startedAt;
  const countsAfter = await apiserverCounts(client);
  const times = sortedCopy([...watch.boundAt.values()]);
  const first = times[0] ?? Number.NaN;
  const last = times[times.length - 1] ?? Number.NaN;
  const rate = times.length > 1 ? (times.length - 1) / ((last - first) / 1000) : Number.NaN;
  const fromStart = times.map((t) => t - startedAt);
  const violations = kind === 'anti-affinity' ? antiAffinityViolations(watch, count) : 0;
  // Events are best effort (the scheduler drops them when its queue is full): count what was written.
  const events = await client
    .list<KubeObject & { reason?: string }>(resources.events, { namespace: ns })
    .then((l) => l.items.filter((e) => e.reason === 'Scheduled').length)
    .catch(() => Number.NaN);
  const notes = [
    kind === 'plain' ? (rate >= 1000 && all ? 'MET' : 'MISSED') : '',
    `first bind ${ms(first - startedAt)} ms after the scheduler started`,
    all ? '' : `only ${times.length} of ${count} bound within ${batchSeconds} s`,
    watch.error ? `binding watch failed: ${watch.error.message.slice(0, 120)}` : '',
    scheduler.running ? '' : 'the scheduler EXITED during the run',
    violations ? `${violations} anti-affinity groups share a node` : '',
    `${events} Scheduled events written by the end of the batch`,
  ];
  const bound = Math.max(1, times.length);
  const perPod = targets.map((t, i) => {
    const idle = i === 0 ? 0 : idleRate[i - 1] * elapsed;
    return `${t.name} ${((cpuAfter[i] - cpuBefore[i] - idle) / bound).toFixed(2)}`;
  });
  perPod.push(`bench ${((benchCpu.user + benchCpu.system) / 1000 / bound).toFixed(2)}`);
  const idleNote = targets
    .slice(1)
    .map((t, i) => `${t.name} ${(idleRate[i] * 1000).toFixed(0)}`)
    .join(', ');
  return {
    cpuRow: {
      what: `CPU ms per bound pod, ${kind} batch`,
      pods: '',
      rate: '',
      p50: '',
      p99: '',
      target: '',
      note: `${perPod.join(', ')} (scheduler: since its start, of which ${schedulerStartupCpu.toFixed(0)} ms before its first bind; others: above their idle CPU ms/s: ${idleNote})`,
    },
    countRow: {
      what: `apiserver requests and store operations per bound pod, ${kind} batch`,
      pods: '',
      rate: '',
      p50: '',
      p99: '',
      target: '',
      note: countsPerPod(countsBefore, countsAfter, bound),
    },
    row: {
      what: `batch of pending pods, ${kind}`,
      pods: `${times.length}/${count}`,
      rate: `${rate.toFixed(0)}/s`,
      p50: `${ms(percentile(sortedCopy(fromStart), 50))} (since start)`,
      p99: `${ms(percentile(sortedCopy(fromStart), 99))} (since start)`,
      target: kind === 'plain' ? '≥ 1,000 pods/s' : '',
      note: notes.filter(Boolean).join('; '),
    },
    scheduler,
    rss: peakRss,
  };
}

/** With the scheduler running: pods created at a steady rate, each timed from its POST's response to its binding. */
async function paced(
  cp: ControlPlane,
  client: KubeClient,
  kind: 'plain' | 'anti-affinity',
  rate: number,
  seconds: number,
): Promise<Row> {
  const ns = `bench-${kind}-paced`;
  const rv = await ensureNamespace(client, ns);
  const watch = new BindingWatch(benchClient(cp.kubeconfigPath, 4), ns, rv);
  const createdAt = new Map<string, number>();
  const total = Math.round(rate * seconds);
  let errors = 0;
  const start = now();
  const inflight: Promise<void>[] = [];
  try {
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / rate - now();
      if (wait > 0) await sleep(wait);
      const name = `p-${i}`;
      const t0 = now();
      inflight.push(
        client.create(resources.pods, podBody(name, ns, kind === 'anti-affinity', i), { namespace: ns }).then(
          () => {
            createdAt.set(name, t0);
          },
          () => {
            errors++;
          },
        ),
      );
    }
    await Promise.all(inflight);
    await watch.waitFor(total - errors, 60_000);
  } finally {
    watch.stop();
  }
  const lat: number[] = [];
  for (const [name, t] of watch.boundAt) {
    const c = createdAt.get(name);
    if (c !== undefined) lat.push(t - c);
  }
  const s = sortedCopy(lat);
  return {
    what: `paced ${rate}/s, ${kind}: creation (POST sent) → bound`,
    pods: `${lat.length}/${total}`,
    rate: `${rate}/s offered`,
    p50: ms(percentile(s, 50)),
    p99: ms(percentile(s, 99)),
    target: '',
    note: errors ? `${errors} creates failed` : '',
  };
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), {
    store: 'kubit-store',
    members: 3,
    nodes: 1000,
    pods: 10_000,
    'paced-rate': 100,
    'paced-seconds': 5,
    'batch-seconds': 240,
    kinds: 'plain,anti-affinity',
  });
  const kinds = flags.kinds.split(',').map((k) => {
    if (k !== 'plain' && k !== 'anti-affinity')
      throw new UsageError(`${SCRIPT}: --kinds takes plain and/or anti-affinity, not "${k}"`);
    return k;
  });
  const program = storeProgram(SCRIPT, flags.store);
  const header = machineHeader();
  progress(`starting the control plane on ${program} ×${flags.members}`);
  const { cp, storeTitle } = await startBenchControlPlane(program, flags.members);
  cleanup.add('control plane', () => cp.stop());
  const schedulerKubeconfig = await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler);
  const client = benchClient(cp.kubeconfigPath, 128);
  cleanup.add('client', () => client.close());
  progress(`registering ${flags.nodes} nodes`);
  await registerNodes(client, flags.nodes);

  const rows: Row[] = [];
  for (const kind of kinds) {
    const b = await batch(cp, client, schedulerKubeconfig, kind, flags.pods, flags['batch-seconds']);
    cleanup.add(`scheduler (${kind})`, () => b.scheduler.stop());
    rows.push(b.row, b.cpuRow, b.countRow);
    if (b.scheduler.running && flags['paced-seconds'] > 0) {
      progress(`${kind}: paced creates at ${flags['paced-rate']}/s`);
      rows.push(await paced(cp, client, kind, flags['paced-rate'], flags['paced-seconds']));
    }
    rows.push({
      what: `scheduler VmRSS, ${kind} run`,
      pods: '',
      rate: '',
      p50: '',
      p99: '',
      target: '',
      note: `peak ${b.rss.toFixed(0)} MiB during the batch; ${rssMiB(b.scheduler.pid).toFixed(0)} MiB at the end`,
    });
    // The next kind gets a fresh scheduler, so its batch is measured from a cold start too.
    await b.scheduler.stop();
  }
  if (!cp.apiserver.running) {
    rows.push({
      what: 'apiserver',
      pods: '',
      rate: '',
      p50: '',
      p99: '',
      target: '',
      note: 'EXITED during the run',
    });
  }

  process.stdout.write(`${header}\n\n`);
  process.stdout.write(
    `kubit-scheduler on kubit-apiserver on ${storeTitle}; ${flags.nodes} nodes (Node objects), ${flags.pods} pods per batch; ms\n\n`,
  );
  process.stdout.write(
    `${table(
      ['measurement', 'bound', 'rate', 'p50 ms', 'p99 ms', 'target', 'note'],
      rows.map((r) => [r.what, r.pods, r.rate, r.p50, r.p99, r.target, r.note]),
    )}\n`,
  );
});
