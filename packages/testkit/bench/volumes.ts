// pnpm bench:volumes — issue 20's benchmark, through the whole of Kubit
// (3-member store, apiserver with its local-path and kubit-disk classes,
// scheduler with VolumeBinding, controller manager with the persistentvolume-
// binder, one real kubit-kubelet on a real containerd that provisions its
// node's volumes; busybox pre-pushed to a test registry):
//
// 1. pod start-up: from the POST of a new claim (then of its pod, as soon as the
//    claim's returns) to the pod Running as a watch sees it, for (a) a pod
//    without volumes, (b) one with a new local-path claim, (c) one with a new
//    kubit-disk claim (sparse file, loop device, mkfs.ext4), the three taking
//    turns round by round so a drift of the machine's speed reaches all alike.
//    Targets: (b) p50 ≤ (a) p50 + 100 ms, (c) p50 ≤ (a) p50 + 500 ms.
// 2. sequential write throughput in one container: dd of 256 MiB with
//    conv=fsync on a kubit-disk volume and on an emptyDir (the node's own
//    filesystem: both live under the kubelet's root dir), in turns. Target:
//    kubit-disk ≥ 0.9 × emptyDir.
//
//   node packages/testkit/dist/bench/volumes.js [--store=kubit-store|etcd] [--members=3]
//        [--rounds=10] [--claim-size=1Gi] [--dd-rounds=10] [--dd-mib=256] [--dd-flag=conv=fsync]
//
// The kubelet traces each pod's start-up steps (KUBIT_KUBELET_TRACE_FILE) and the
// bench watches claims and volumes, so the run prints where each kind's time goes.
// Needs root (containerd, CNI, loop devices, mounts). Clean-up deletes the pods and
// claims (the kubelet unmounts and detaches, reclaim Delete removes the data), then
// unmounts and detaches whatever is left under its temporary directory.
//
// Build first: pnpm -s build
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Event as CoreEvent, PersistentVolume, PersistentVolumeClaim, Pod, Volume } from '@kubit/api';
import { SELECTED_NODE_ANNOTATION } from '@kubit/api';
import { type KubeClient, resources } from '@kubit/client';
import { loopDevicesUnder, mountsUnder } from '@kubit/cri/host-mounts';
import { unmountUnder } from '@kubit/cri/node-teardown';
import { startContainerd } from '../src/containerd.js';
import { pushTestImages } from '../src/images.js';
import { startTestKubelet } from '../src/kubelet.js';
import { freePort, startDaemon, tempDir } from '../src/process.js';
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
import { ddScript, mbPerSecond, parseDdLog } from './volumes-dd.js';

const SCRIPT = 'bench:volumes';
const NODE = 'bench-node';
const NS = 'default';

/** What a measured pod mounts: nothing, or a new claim of that class. */
const KINDS = ['no volume', 'local-path', 'kubit-disk'] as const;
type Kind = (typeof KINDS)[number];

const epoch = (): number => performance.timeOrigin + performance.now();

function claimBody(name: string, storageClassName: string, size: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NS },
    spec: { storageClassName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
  };
}

function podBody(name: string, volumes: Volume[], command: string[], mounts: Record<string, string>): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'c',
          image: 'busybox:latest',
          imagePullPolicy: 'IfNotPresent',
          command,
          volumeMounts: Object.entries(mounts).map(([name, mountPath]) => ({ name, mountPath })),
        },
      ],
      volumes,
    },
  };
}

/** Epoch ms of the first time each watched thing was seen, by "<what> <name>". */
class Sightings {
  private readonly at = new Map<string, number>();
  note(key: string): void {
    if (!this.at.has(key)) this.at.set(key, epoch());
  }
  get(key: string): number | undefined {
    return this.at.get(key);
  }
}

/** Watches pods, claims and volumes from `resourceVersion` on, noting the moments the table needs. */
function watchAll(client: KubeClient, resourceVersion: string, seen: Sightings): () => void {
  const pods = client.watch<Pod>(resources.pods, {
    namespace: NS,
    resourceVersion,
    onEvent: (ev) => {
      const name = ev.object.metadata?.name;
      if (!name) return;
      if (ev.object.spec?.nodeName) seen.note(`bound ${name}`);
      if (ev.object.status?.phase === 'Running') seen.note(`running ${name}`);
    },
  });
  const claims = client.watch<PersistentVolumeClaim>(resources.persistentvolumeclaims, {
    namespace: NS,
    resourceVersion,
    onEvent: (ev) => {
      const name = ev.object.metadata?.name;
      if (!name) return;
      if (ev.object.metadata?.annotations?.[SELECTED_NODE_ANNOTATION]) seen.note(`selected ${name}`);
      if (ev.object.status?.phase === 'Bound') seen.note(`claim-bound ${name}`);
    },
  });
  const volumes = client.watch<PersistentVolume>(resources.persistentvolumes, {
    resourceVersion,
    onEvent: (ev) => {
      const claim = ev.object.spec?.claimRef?.name;
      if (claim && ev.type === 'ADDED') seen.note(`pv ${claim}`);
    },
  });
  return () => {
    pods.stop();
    claims.stop();
    volumes.stop();
  };
}

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
    const steps = out.get(e.uid) ?? new Map<string, number>();
    if (!steps.has(e.step)) steps.set(e.step, e.t);
    out.set(e.uid, steps);
  }
  return out;
}

interface Started {
  kind: Kind;
  name: string;
  uid: string;
  /** Epoch ms of the first POST (the claim's, or the pod's when it has none). */
  postedAt: number;
  /** POST → Running seen by the watch. */
  ms: number;
}

async function waitSeen(seen: Sightings, key: string, timeoutMs: number): Promise<number> {
  const end = now() + timeoutMs;
  for (;;) {
    const t = seen.get(key);
    if (t !== undefined) return t;
    if (now() > end) throw new Error(`not seen after ${timeoutMs} ms: ${key}`);
    await sleep(5);
  }
}

/** Creates the new claim (if any), then the pod, and waits for the pod to be Running. */
async function startOne(
  client: KubeClient,
  seen: Sightings,
  kind: Kind,
  name: string,
  claimSize: string,
): Promise<Started> {
  const volumes: Volume[] =
    kind === 'no volume' ? [] : [{ name: 'v', persistentVolumeClaim: { claimName: name } }];
  const pod = podBody(name, volumes, ['sleep', '3600'], kind === 'no volume' ? {} : { v: '/v' });
  const postedAt = epoch();
  // The claim first, as `kubectl apply` of a claim and its pod sends them: a pod whose
  // claim does not exist yet is unschedulable and waits out the scheduler's back-off.
  if (kind !== 'no volume')
    await client.create(resources.persistentvolumeclaims, claimBody(name, kind, claimSize), {
      namespace: NS,
    });
  const created = await client.create<Pod>(resources.pods, pod, { namespace: NS });
  const runningAt = await waitSeen(seen, `running ${name}`, 120_000);
  return { kind, name, uid: created.metadata?.uid ?? '', postedAt, ms: runningAt - postedAt };
}

/** The moments of a pod's start-up, in order, each from the bench's watches or the kubelet's trace. */
const POINTS: {
  what: string;
  at: (p: Started, seen: Sightings, trace: Map<string, number>) => number | undefined;
}[] = [
  { what: 'scheduler: claim gets selected-node', at: (p, s) => s.get(`selected ${p.name}`) },
  { what: 'kubelet: PersistentVolume created', at: (p, s) => s.get(`pv ${p.name}`) },
  { what: 'binder: claim Bound', at: (p, s) => s.get(`claim-bound ${p.name}`) },
  { what: 'scheduler: pod bound to the node', at: (p, s) => s.get(`bound ${p.name}`) },
  { what: 'kubelet: sees the pod', at: (_p, _s, t) => t.get('watch-delivered') },
  { what: 'kubelet: volumes ready (attach, mkfs, mount)', at: (_p, _s, t) => t.get('volumes-ready') },
  { what: 'kubelet: sandbox started', at: (_p, _s, t) => t.get('sandbox-started') },
  { what: 'kubelet: container started', at: (_p, _s, t) => t.get('container-started') },
  { what: 'kubelet: Running status set', at: (_p, _s, t) => t.get('status-set') },
  { what: 'watch sees Running', at: (p) => p.postedAt + p.ms },
];

/** Rows of (moment, p50 and p90 ms after the POST per kind). */
function whereRows(runs: Started[], seen: Sightings, trace: Map<string, Map<string, number>>): string[][] {
  return POINTS.map((point) => [
    point.what,
    ...KINDS.flatMap((kind) => {
      const xs = sortedCopy(
        runs.flatMap((p) => {
          if (p.kind !== kind) return [];
          const t = point.at(p, seen, trace.get(p.uid) ?? new Map());
          return t === undefined ? [] : [t - p.postedAt];
        }),
      );
      return xs.length ? [ms(percentile(xs, 50)), ms(percentile(xs, 90))] : ['', ''];
    }),
  ]);
}

/** Each measured pod's FailedMount messages (the kubelet then syncs it again 2 s later). */
async function failedMounts(client: KubeClient, runs: Started[]): Promise<Map<string, string[]>> {
  const events = await client.list<CoreEvent>(resources.events, { namespace: NS });
  const names = new Set(runs.map((r) => r.name));
  const out = new Map<string, string[]>();
  for (const e of events.items) {
    const pod = e.involvedObject?.name ?? '';
    if (e.reason !== 'FailedMount' || !names.has(pod)) continue;
    out.set(pod, [...(out.get(pod) ?? []), e.message ?? '']);
  }
  return out;
}

/** The container's log through the apiserver (and the kubelet's API). */
async function podLog(client: KubeClient, name: string): Promise<string> {
  const res = await client.rawRequest({
    method: 'GET',
    path: `/api/v1/namespaces/${NS}/pods/${name}/log`,
    accept: 'text/plain',
  });
  return res.statusCode === 200 ? res.body : '';
}

/**
 * Deletes what the bench made and waits for the volumes to go: the pods first and
 * until they are gone (the kubelet unmounts their volumes before it lets a pod go),
 * then the claims, so reclaim Delete finds the volumes unmounted and removes them.
 */
async function deleteAll(client: KubeClient, timeoutMs: number): Promise<void> {
  const end = now() + timeoutMs;
  const names = async <T extends Pod | PersistentVolumeClaim | PersistentVolume>(
    res: typeof resources.pods,
    namespace?: string,
  ): Promise<T[]> => (await client.list<T>(res, namespace ? { namespace } : {})).items;
  for (const p of await names<Pod>(resources.pods, NS))
    await client.delete(resources.pods, p.metadata?.name ?? '', { namespace: NS }).catch(() => {});
  while (now() < end && (await names<Pod>(resources.pods, NS)).length > 0) await sleep(250);
  for (const c of await names<PersistentVolumeClaim>(resources.persistentvolumeclaims, NS))
    await client
      .delete(resources.persistentvolumeclaims, c.metadata?.name ?? '', { namespace: NS })
      .catch(() => {});
  let left: string[] = [];
  while (now() < end) {
    left = [
      ...(await names<Pod>(resources.pods, NS)).map((p) => `pod ${p.metadata?.name} ${p.status?.phase}`),
      ...(await names<PersistentVolumeClaim>(resources.persistentvolumeclaims, NS)).map(
        (c) => `pvc ${c.metadata?.name} ${c.status?.phase}`,
      ),
      ...(await names<PersistentVolume>(resources.persistentvolumes)).map(
        (v) => `pv ${v.metadata?.name} ${v.status?.phase} (${v.spec?.storageClassName})`,
      ),
    ];
    if (left.length === 0) return;
    await sleep(500);
  }
  progress(
    `${left.length} objects still there after ${timeoutMs} ms (${left.slice(0, 4).join('; ')}); the clean-up unmounts and detaches what they held`,
  );
}

runBench(async (cleanup) => {
  const flags = parseFlags(SCRIPT, process.argv.slice(2), {
    store: 'kubit-store',
    members: 3,
    rounds: 10,
    'claim-size': '1Gi',
    'dd-rounds': 10,
    'dd-mib': 256,
    'dd-flag': 'conv=fsync',
  });
  if (!['conv=fsync', 'oflag=direct'].includes(flags['dd-flag']))
    throw new UsageError(`${SCRIPT}: --dd-flag takes conv=fsync or oflag=direct, not "${flags['dd-flag']}"`);
  const program = storeProgram(SCRIPT, flags.store);
  if (process.getuid?.() !== 0)
    throw new UsageError(`${SCRIPT} needs root: containerd, CNI, loop devices, mounts`);
  const header = machineHeader();

  progress('starting the registry, the control plane and containerd');
  const registry = await startRegistry();
  cleanup.add('registry', () => registry.stop());
  await pushTestImages(registry.host);
  const { cp, storeTitle } = await startBenchControlPlane(program, flags.members, { nodes: [NODE] });
  cleanup.add('control plane', () => cp.stop());
  // Removed last (clean-up runs last first): sandbox logs, volumes and disks live there.
  const root = await tempDir('kubit-bench-volumes-');
  cleanup.add('kubelet dir', () => root.cleanup());
  // After containerd and the kubelet have stopped: whatever the kubelet did not undo.
  cleanup.add('mounts and loop devices', async () => {
    await unmountUnder(root.path);
    const left = [
      ...mountsUnder(root.path).map((m) => m.mountPoint),
      ...loopDevicesUnder(root.path).map((l) => l.device),
    ];
    if (left.length) process.stderr.write(`cleanup: still there: ${left.join(', ')}\n`);
  });
  const containerd = await startContainerd({ mirror: registry.host });
  cleanup.add('containerd', () => containerd.stop());

  const traceFile = join(root.path, 'startup-trace.jsonl');
  const kubelet = await startTestKubelet(cp, {
    node: NODE,
    containerd,
    dir: root.path,
    logFile: join(cp.logDir, 'kubelet.log'),
    env: { KUBIT_KUBELET_TRACE_FILE: traceFile },
  });
  cleanup.add('kubelet', () => kubelet.stop());
  const scheduler = startDaemon({
    name: 'scheduler',
    pkg: 'scheduler',
    entry: 'main.ts',
    logDir: cp.logDir,
    args: [
      `--kubeconfig=${await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler)}`,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ],
  });
  cleanup.add('scheduler', () => scheduler.stop());
  const cm = startDaemon({
    name: 'controller-manager',
    pkg: 'controllers',
    entry: 'main.ts',
    logDir: cp.logDir,
    args: [
      `--kubeconfig=${await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager)}`,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ],
  });
  cleanup.add('controller manager', () => cm.stop());

  const client = benchClient(cp.kubeconfigPath, 16);
  cleanup.add('client', () => client.close());
  await kubelet.waitReady(client, 300_000, 200);
  // Registered last, so it runs first: the kubelet, binder and provisioner undo the volumes themselves.
  cleanup.add('pods and claims', () => deleteAll(client, 120_000));

  const list = await client.list(resources.pods, { namespace: NS, limit: 1 });
  const seen = new Sightings();
  const stopWatches = watchAll(client, list.metadata.resourceVersion ?? '0', seen);
  cleanup.add('watches', () => stopWatches());

  // One of each first: pulls busybox and pause, loads the code paths, makes the node's storage dirs.
  progress('warm-up: one pod of each kind');
  for (const kind of KINDS)
    await startOne(client, seen, kind, `warm-${kind.replace(' ', '-')}`, flags['claim-size']);

  progress(`${flags.rounds} rounds of a pod of each kind, in turns`);
  const runs: Started[] = [];
  for (let round = 0; round < flags.rounds; round++) {
    // The order turns too, so no kind always comes right after another.
    const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length]);
    for (const kind of order) {
      const name = `${kind === 'no volume' ? 'none' : kind}-${round}`;
      runs.push(await startOne(client, seen, kind, name, flags['claim-size']));
    }
  }
  const trace = readTrace(traceFile);
  const mountFailures = await failedMounts(client, runs);

  progress(
    `write throughput: dd ${flags['dd-mib']} MiB ${flags['dd-flag']} on kubit-disk and on an emptyDir, ${flags['dd-rounds']} rounds`,
  );
  const ddName = 'dd';
  await client.create(
    resources.persistentvolumeclaims,
    claimBody(ddName, 'kubit-disk', flags['claim-size']),
    {
      namespace: NS,
    },
  );
  const script = ddScript({
    targets: { 'kubit-disk': '/disk', emptyDir: '/node' },
    rounds: flags['dd-rounds'],
    mib: flags['dd-mib'],
    flag: flags['dd-flag'],
  });
  await client.create<Pod>(
    resources.pods,
    podBody(
      ddName,
      [
        { name: 'disk', persistentVolumeClaim: { claimName: ddName } },
        { name: 'node', emptyDir: {} },
      ],
      ['sh', '-c', script],
      { disk: '/disk', node: '/node' },
    ),
    { namespace: NS },
  );
  await waitSeen(seen, `running ${ddName}`, 120_000);
  const ddEnd = now() + 600_000;
  let dd = parseDdLog(await podLog(client, ddName));
  while (!dd) {
    if (now() > ddEnd) throw new Error('the dd container did not finish in 600 s');
    await sleep(500);
    dd = parseDdLog(await podLog(client, ddName));
  }
  if (dd.length !== 2 * flags['dd-rounds'])
    throw new Error(`expected ${2 * flags['dd-rounds']} timed writes, the container printed ${dd.length}`);

  const down = [
    kubelet.process.running ? '' : 'kubelet EXITED',
    scheduler.running ? '' : 'scheduler EXITED',
    cm.running ? '' : 'controller manager EXITED',
    cp.apiserver.running ? '' : 'apiserver EXITED',
  ].filter(Boolean);

  const of = (kind: Kind) => sortedCopy(runs.filter((r) => r.kind === kind).map((r) => r.ms));
  const base = of('no volume');
  const targets: Record<Kind, number | undefined> = {
    'no volume': undefined,
    'local-path': 100,
    'kubit-disk': 500,
  };
  const startupRows = KINDS.map((kind) => {
    const xs = of(kind);
    const d = percentile(xs, 50) - percentile(base, 50);
    const target = targets[kind];
    return [
      kind === 'no volume' ? 'pod without volumes' : `pod with a new ${kind} claim`,
      String(xs.length),
      ms(percentile(xs, 50)),
      ms(percentile(xs, 90)),
      kind === 'no volume' ? '' : ms(d),
      kind === 'no volume' ? '' : ms(percentile(xs, 90) - percentile(base, 90)),
      target === undefined ? '' : `p50 ≤ no volume + ${target} ms`,
      target === undefined ? '' : d <= target ? 'MET' : 'MISSED',
    ];
  });
  // In the order written: the first write on a new disk races ext4's lazy inode-table init.
  const mbps = (target: string) =>
    dd.filter((r) => r.target === target).map((r) => mbPerSecond(flags['dd-mib'], r.seconds));
  const diskInOrder = mbps('kubit-disk');
  const nodeInOrder = mbps('emptyDir');
  const disk = sortedCopy(diskInOrder);
  const node = sortedCopy(nodeInOrder);
  const ratio = percentile(disk, 50) / percentile(node, 50);
  // Each round's two writes ran back to back, so their ratio is the least touched by
  // the machine's drift; the verdict takes the median of those.
  const paired = sortedCopy(diskInOrder.map((d, i) => d / (nodeInOrder[i] ?? Number.NaN)));
  const pairedRatio = percentile(paired, 50);
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' ');

  process.stdout.write(`${header}\n\n`);
  process.stdout.write(
    `volumes on kubit-apiserver + kubit-scheduler + kubit-controller-manager + one kubit-kubelet on containerd 1.6, store ${storeTitle}; claims of ${flags['claim-size']}, busybox present; ms${
      down.length ? `; ${down.join(', ')}` : ''
    }\n\n`,
  );
  process.stdout.write(
    `${table(
      [
        'pod start-up: POST → Running (watch)',
        'pods',
        'p50 ms',
        'p90 ms',
        'p50 − no volume',
        'p90 − no volume',
        'target',
        'verdict',
      ],
      startupRows,
    )}\n`,
  );
  process.stdout.write(
    `\nwhere the time goes: ms after the POST\n\n${table(['moment', ...KINDS.flatMap((k) => [`${k} p50`, `${k} p90`])], whereRows(runs, seen, trace))}\n`,
  );
  const failedRows = KINDS.map((kind) => {
    const pods = runs.filter((r) => r.kind === kind && mountFailures.has(r.name));
    const messages = [...new Set(pods.flatMap((r) => mountFailures.get(r.name) ?? []))];
    return [
      kind,
      `${pods.length} of ${runs.filter((r) => r.kind === kind).length}`,
      messages.join(' / ').slice(0, 300),
    ];
  });
  process.stdout.write(
    `\npods whose volume set-up failed first (FailedMount; the kubelet syncs again 2 s later):\n\n${table(['kind', 'pods', 'messages'], failedRows)}\n`,
  );
  process.stdout.write(
    `\n${table(
      [
        `sequential write, dd bs=1M count=${flags['dd-mib']} ${flags['dd-flag']}, one container`,
        'writes',
        'p50 MB/s',
        'each MB/s, in the order written',
        'target',
        'verdict',
      ],
      [
        [
          'emptyDir (the node filesystem)',
          String(node.length),
          percentile(node, 50).toFixed(0),
          fmt(nodeInOrder),
          '',
          '',
        ],
        [
          'kubit-disk (ext4 on a loop device)',
          String(disk.length),
          percentile(disk, 50).toFixed(0),
          fmt(diskInOrder),
          "≥ 0.9 × emptyDir (median of the rounds' ratios)",
          `${pairedRatio.toFixed(2)}× ${pairedRatio >= 0.9 ? 'MET' : 'MISSED'} (p50 ÷ p50 ${ratio.toFixed(2)}×)`,
        ],
        [
          'kubit-disk, its first write only (ext4 just made)',
          '1',
          (diskInOrder[0] ?? 0).toFixed(0),
          '',
          '',
          `${((diskInOrder[0] ?? 0) / percentile(node, 50)).toFixed(2)}× of emptyDir p50`,
        ],
      ],
    )}\n`,
  );
});
