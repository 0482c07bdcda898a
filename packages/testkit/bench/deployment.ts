import type { Deployment, Pod } from '@kubit/api';
import { type KubeClient, resources, type Watch } from '@kubit/client';
import type { ControlPlane } from '../src/controlplane.js';
import type { TestProcess } from '../src/process.js';
import {
  benchClient,
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
} from './common.js';
import { assertRunning, startHollowStack } from './hollow-stack.js';

const SCRIPT = 'bench:deployment';
const NS = 'bench';
const NAME = 'web';

function deploymentBody(replicas: number): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: NAME } },
      // Kubernetes' defaults, spelled out so the table says what ran: 25 % surge, 25 % unavailable.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      template: {
        metadata: { labels: { app: NAME } },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [{ name: 'c', image: 'pause', env: [{ name: 'VERSION', value: '1' }] }],
        },
      },
    },
  };
}

const versionOf = (p: Pod) => p.spec?.containers[0]?.env?.find((e) => e.name === 'VERSION')?.value ?? '';
const isReady = (p: Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/**
 * Watches the namespace's pods: when each pod of each version first became
 * Ready, and the fewest available (Ready, not terminating) pods seen at any
 * event since `trackFloor()`.
 */
class PodWatch {
  /** version → pod name → ms (performance.now) it was first seen Ready */
  readonly readyAt = new Map<string, Map<string, number>>();
  private readonly pods = new Map<string, Pod>();
  private readonly watch: Watch<Pod>;
  private available = 0;
  lowestAvailable = Number.POSITIVE_INFINITY;
  private tracking = false;
  error: Error | undefined;
  private stopped = false;

  constructor(
    private readonly client: KubeClient,
    resourceVersion: string,
  ) {
    this.watch = client.watch<Pod>(resources.pods, {
      namespace: NS,
      resourceVersion,
      maxBuffered: 200_000,
      onEvent: (ev) => {
        if (ev.type === 'BOOKMARK') return;
        if (ev.type === 'ERROR') {
          this.error = new Error(`watch ERROR event: ${JSON.stringify(ev.object).slice(0, 200)}`);
          return;
        }
        const p = ev.object;
        const name = p.metadata?.name ?? '';
        const old = this.pods.get(name);
        if (old && isAvailable(old)) this.available--;
        if (ev.type === 'DELETED') this.pods.delete(name);
        else {
          this.pods.set(name, p);
          if (isAvailable(p)) this.available++;
          if (isReady(p)) {
            const v = versionOf(p);
            let m = this.readyAt.get(v);
            if (!m) {
              m = new Map();
              this.readyAt.set(v, m);
            }
            if (!m.has(name)) m.set(name, now());
          }
        }
        if (this.tracking) this.lowestAvailable = Math.min(this.lowestAvailable, this.available);
      },
      onClose: (err) => {
        if (!this.stopped) this.error ??= err ?? new Error('the server ended the pod watch');
      },
    });
  }

  trackFloor(): void {
    this.tracking = true;
    this.lowestAvailable = this.available;
  }

  /** ms after `t0` at which p % of `count` pods of `version` were Ready. */
  mark(version: string, count: number, p: number, t0: number): number {
    const times = sortedCopy([...(this.readyAt.get(version)?.values() ?? [])]);
    const k = Math.ceil((p / 100) * count);
    return times.length >= k && k > 0 ? times[k - 1] - t0 : Number.NaN;
  }

  stop(): void {
    this.stopped = true;
    this.watch.stop();
    this.client.close();
  }
}

const isAvailable = (p: Pod) => isReady(p) && !p.metadata?.deletionTimestamp;

/** As `kubit rollout status`: the controller saw the spec, and every replica is updated and available. */
function complete(d: Deployment, replicas: number): boolean {
  const s = d.status;
  return (
    s?.observedGeneration === d.metadata?.generation &&
    s?.updatedReplicas === replicas &&
    s?.replicas === replicas &&
    s?.availableReplicas === replicas
  );
}

async function waitComplete(
  cp: ControlPlane,
  client: KubeClient,
  replicas: number,
  timeoutMs: number,
  watch: PodWatch,
  procs: TestProcess[],
): Promise<{ doneAt: number; last: Deployment | undefined }> {
  const end = now() + timeoutMs;
  let last: Deployment | undefined;
  while (now() < end) {
    if (watch.error) throw new Error(`the pod watch failed: ${watch.error.message}`);
    assertRunning(cp, procs);
    last = await client.get<Deployment>(resources.deployments, NAME, { namespace: NS });
    if (complete(last, replicas)) return { doneAt: now(), last };
    await sleep(100);
  }
  return { doneAt: Number.NaN, last };
}

function secs(x: number): string {
  return Number.isFinite(x) ? (x / 1000).toFixed(1) : '-';
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), {
    store: 'kubit-store',
    members: 3,
    nodes: 100,
    replicas: 1000,
    'timeout-seconds': 900,
  });
  const program = storeProgram(SCRIPT, flags.store);
  if (flags.nodes < 1 || flags.replicas < 1) throw new Error(`${SCRIPT}: --nodes and --replicas must be ≥ 1`);
  const header = machineHeader();
  progress(`starting the control plane on ${program} ×${flags.members}`);
  const { cp, storeTitle } = await startBenchControlPlane(program, flags.members);
  cleanup.add('control plane', () => cp.stop());
  const client = benchClient(cp.kubeconfigPath, 16);
  cleanup.add('client', () => client.close());

  const maxPods = Math.max(110, Math.ceil((flags.replicas * 1.5) / flags.nodes) + 10);
  const { procs, controllerManager: cm } = await startHollowStack(cp, client, cleanup, {
    nodes: flags.nodes,
    maxPods,
  });
  await client.create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  const rv = (await client.list(resources.pods, { namespace: NS, limit: 1 })).metadata.resourceVersion ?? '0';
  const watch = new PodWatch(benchClient(cp.kubeconfigPath, 2), rv);
  cleanup.add('pod watch', () => watch.stop());

  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, rssMiB(cm.pid) || 0);
  }, 250);
  cleanup.add('rss sampler', () => clearInterval(sampler));
  const idleRss = rssMiB(cm.pid);
  const timeoutMs = flags['timeout-seconds'] * 1000;
  const n = flags.replicas;

  progress(`creating a Deployment of ${n} replicas`);
  const t0 = now();
  await client.create(resources.deployments, deploymentBody(n), { namespace: NS });
  const first = await waitComplete(cp, client, n, timeoutMs, watch, procs);
  const createdRss = rssMiB(cm.pid);
  progress(`all available after ${secs(first.doneAt - t0)} s; rolling update (VERSION=2)`);

  await sleep(1000);
  watch.trackFloor();
  const t1 = now();
  await client.patch(
    resources.deployments,
    NAME,
    [{ op: 'replace', path: '/spec/template/spec/containers/0/env/0/value', value: '2' }],
    { namespace: NS, type: 'json' },
  );
  const second = await waitComplete(cp, client, n, timeoutMs, watch, procs);
  progress(`rolled out after ${secs(second.doneAt - t1)} s`);
  clearInterval(sampler);
  const endRss = rssMiB(cm.pid);
  const floor = n - Math.floor(n * 0.25);

  const row = (what: string, version: string, t: number, done: number, note: string) => [
    what,
    secs(done - t),
    secs(watch.mark(version, n, 50, t)),
    secs(watch.mark(version, n, 90, t)),
    secs(watch.mark(version, n, 99, t)),
    Number.isFinite(done)
      ? note
      : `NOT complete within ${flags['timeout-seconds']} s: ${JSON.stringify(second.last?.status ?? first.last?.status).slice(0, 200)}`,
  ];
  const rows = [
    row(`create: ${n} replicas available`, '1', t0, first.doneAt, 'from the POST to status complete'),
    row(
      'rolling update (env var), 25 %/25 %',
      '2',
      t1,
      second.doneAt,
      `from the PATCH to complete; fewest available pods at any watch event: ${watch.lowestAvailable} (floor ${floor})`,
    ),
    [
      'kubit-controller-manager VmRSS',
      '',
      '',
      '',
      '',
      `${idleRss.toFixed(0)} MiB idle, ${createdRss.toFixed(0)} MiB after the create, peak ${peakRss.toFixed(0)} MiB, ${endRss.toFixed(0)} MiB at the end`,
    ],
  ];
  if (!cp.apiserver.running) rows.push(['apiserver', '', '', '', '', 'EXITED during the run']);

  process.stdout.write(`${header}\n\n`);
  process.stdout.write(
    `kubit-controller-manager with kubit-scheduler on kubit-apiserver on ${storeTitle}; ${flags.nodes} hollow nodes, a Deployment of ${n} replicas; seconds (50/90/99 %: when that share of the replicas was Ready)\n\n`,
  );
  process.stdout.write(`${table(['measurement', 'total s', '50 % s', '90 % s', '99 % s', 'note'], rows)}\n`);
});
