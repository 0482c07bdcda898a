// pnpm bench:deployment — kubit-controller-manager (from dist/) in the full stack
// (3-member store, kubit-apiserver, kubit-scheduler, kubit-hollow nodes): a
// Deployment of 1,000 replicas on 100 hollow nodes, the time until all are
// available (and when 50/90/99 % were), then a rolling update of it (an env
// var changes) until it is complete as `kubit rollout status` means it; and
// the controller manager's resident memory.
//
//   node packages/testkit/dist/bench/deployment.js [--store=kubit-store|etcd]
//        [--members=3] [--nodes=100] [--replicas=1000] [--timeout-seconds=900]
//
// Build first: npx tsc -b packages/testkit packages/apiserver packages/scheduler
//              packages/controllers packages/kubelet packages/store
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Deployment, Node, Pod } from '@kubit/api';
import { type KubeClient, resources, type Watch } from '@kubit/client';
import type { ControlPlane } from '../src/controlplane.js';
import { freePort, startDaemon, type TestProcess } from '../src/process.js';
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

const SCRIPT = 'bench:deployment';
const NS = 'bench';
const NAME = 'web';

function daemon(cp: ControlPlane, name: string, pkg: string, entry: string, args: string[]): TestProcess {
  return startDaemon({ name, pkg, entry, args, logDir: cp.logDir });
}

/** The error for a daemon that exited, with the end of its log (the log directory goes away at clean-up). */
function exitedError(cp: ControlPlane, p: TestProcess): Error {
  let tail = '';
  try {
    tail = readFileSync(join(cp.logDir, `${p.name}.log`), 'utf8')
      .trim()
      .split('\n')
      .slice(-5)
      .join('\n');
  } catch {
    tail = '(no log)';
  }
  return new Error(`${p.name} exited during the run; its log ends:\n${tail}`);
}

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
    for (const p of procs) if (!p.running) throw exitedError(cp, p);
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

  const cmKubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
  const schedKubeconfig = await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler);
  const maxPods = Math.max(110, Math.ceil((flags.replicas * 1.5) / flags.nodes) + 10);
  progress(`starting kubit-scheduler, kubit-controller-manager and ${flags.nodes} hollow nodes`);
  const scheduler = daemon(cp, 'scheduler', 'scheduler', 'main.ts', [
    `--kubeconfig=${schedKubeconfig}`,
    '--leader-elect=false',
    `--secure-port=${await freePort()}`,
    '--bind-address=127.0.0.1',
  ]);
  cleanup.add('scheduler', () => scheduler.stop());
  const cm = daemon(cp, 'controller-manager', 'controllers', 'main.ts', [
    `--kubeconfig=${cmKubeconfig}`,
    '--leader-elect=false',
    `--secure-port=${await freePort()}`,
    '--bind-address=127.0.0.1',
  ]);
  cleanup.add('controller manager', () => cm.stop());
  const hollow = daemon(cp, 'hollow', 'kubelet', 'hollow.ts', [
    `--nodes=${flags.nodes}`,
    '--name-prefix=hollow-',
    `--max-pods=${maxPods}`,
    `--kubeconfig=${cp.kubeconfigPath}`,
  ]);
  cleanup.add('hollow nodes', () => hollow.stop());
  const procs = [scheduler, cm, hollow];

  const readyDeadline = now() + 300_000;
  for (;;) {
    for (const p of procs) if (!p.running) throw exitedError(cp, p);
    const nodes = await client.list<Node>(resources.nodes);
    const ready = nodes.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
    if (ready === flags.nodes) break;
    if (now() > readyDeadline)
      throw new Error(`only ${ready} of ${flags.nodes} hollow nodes Ready after 300 s`);
    await sleep(500);
  }
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
