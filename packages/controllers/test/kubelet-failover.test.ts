// kubit-test: serial
// A node dies and its pods come back elsewhere, on real kubelets: etcd and
// kubit-apiserver, kubit-scheduler, kubit-controller-manager (node monitor
// grace period 10 s), and two kubit-kubelet processes, each on its own real
// containerd pulling from a local registry. A ReplicaSet runs two busybox pods;
// after a kill -9 of one kubelet its node goes Ready=Unknown with the NoExecute
// unreachable taint, its pods are evicted once their 2 s toleration runs out,
// and the ReplicaSet's replacements run on the surviving node.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Node, Pod, ReplicaSet } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { unmountUnder } from '@kubit/cri/node-teardown';
import {
  type ControlPlane,
  pushTestImages,
  startContainerd,
  startControlPlane,
  startRegistry,
  startTestKubelet,
  type TestContainerd,
  type TestProcess,
  type TestRegistry,
  tempDir,
  waitFor,
} from '@kubit/testkit';
import { startSchedulerAndControllers, w } from './cm-process.js';

const NODES = ['node-a', 'node-b'];
const NS = 'default';
const TOLERATION_SECONDS = 2;

interface RealNode {
  name: string;
  containerd: TestContainerd;
  kubelet: TestProcess;
}

let cp: ControlPlane | undefined;
let registry: TestRegistry | undefined;
let root: { path: string; cleanup: () => Promise<void> } | undefined;
let client: KubeClient | undefined;
const nodes: RealNode[] = [];
const daemons: TestProcess[] = [];

function logOf(name: string): string {
  try {
    return readFileSync(join(root?.path ?? '', `${name}.log`), 'utf8')
      .trim()
      .split('\n')
      .slice(-8)
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/** The last lines of every log, for a failure message. */
function logs(): string {
  return ['controller-manager', 'scheduler', ...NODES.map((n) => `kubelet-${n}`)]
    .map((n) => `--- ${n} ---\n${logOf(n)}`)
    .join('\n');
}

async function startNode(plane: ControlPlane, reg: TestRegistry, name: string): Promise<RealNode> {
  const containerd = await startContainerd({ mirror: reg.host });
  const dir = root?.path ?? '';
  const { process: kubelet } = await startTestKubelet(plane, {
    node: name,
    containerd,
    dir,
    rootDir: join(dir, name),
    logFile: join(dir, `kubelet-${name}.log`),
    name: `kubelet-${name}`,
  });
  return { name, containerd, kubelet };
}

before(async () => {
  root = await tempDir('kubit-cm-failover-');
  const started = await Promise.allSettled([
    startControlPlane({ nodes: NODES }).then((c) => {
      cp = c;
    }),
    startRegistry().then((r) => {
      registry = r;
    }),
  ]);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  const plane = cp!;
  const reg = registry!;
  await pushTestImages(reg.host);
  for (const name of NODES) nodes.push(await startNode(plane, reg, name));
  daemons.push(
    ...(await startSchedulerAndControllers(
      plane,
      root?.path ?? '',
      ['replicaset', 'nodelifecycle', 'garbagecollector', 'podgc'],
      ['--node-monitor-grace-period=10s', '--node-monitor-period=1s'],
    )),
  );
  client = KubeClient.fromKubeconfig({ kubeconfig: plane.kubeconfigPath });
});

after(async () => {
  for (const d of daemons.reverse()) await d.stop();
  for (const n of nodes) await n.kubelet.stop();
  client?.close();
  // The killed kubelet left its pods' containers and volume mounts behind.
  for (const n of nodes) await n.containerd.stop();
  if (root) await unmountUnder(root.path);
  await registry?.stop();
  await cp?.stop();
  await root?.cleanup();
});

const readyOf = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;

async function appPods(): Promise<Pod[]> {
  return (await client!.list<Pod>(resources.pods, { namespace: NS, labelSelector: 'app=sleeper' })).items;
}

test('a node whose kubelet is killed has its pods evicted and replaced on the other node', {
  timeout: 420_000,
}, async () => {
  const api = client!;
  try {
    await waitFor(
      'both nodes Ready',
      async () => {
        for (const n of nodes) if (!n.kubelet.running) throw new Error(`kubelet on ${n.name} exited`);
        const list = await api.list<Node>(resources.nodes);
        return list.items.length === NODES.length && list.items.every((n) => readyOf(n) === 'True');
      },
      // Generous: on a loaded machine two kubelets under tsx take a while to start.
      180_000,
      250,
    );
    await api.create(
      resources.replicasets,
      w<ReplicaSet>({
        metadata: { name: 'sleeper', namespace: NS },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'sleeper' } },
          template: {
            metadata: { labels: { app: 'sleeper' } },
            spec: {
              terminationGracePeriodSeconds: 1,
              tolerations: [
                {
                  key: 'node.kubernetes.io/unreachable',
                  operator: 'Exists',
                  effect: 'NoExecute',
                  tolerationSeconds: TOLERATION_SECONDS,
                },
              ],
              containers: [{ name: 'sleep', image: 'busybox:latest', command: ['sleep', '3600'] }],
            },
          },
        },
      }),
      { namespace: NS },
    );
    const running = await waitFor(
      'two pods Running',
      async () => {
        const ps = (await appPods()).filter((p) => p.status?.phase === 'Running' && p.spec?.nodeName);
        return ps.length === 2 ? ps : undefined;
      },
      120_000,
      250,
    );

    // kill -9 the kubelet of a node that runs at least one of the pods.
    const victimName = running[0].spec!.nodeName!;
    const victim = nodes.find((n) => n.name === victimName)!;
    const survivor = NODES.find((n) => n !== victimName)!;
    const doomed = new Set(
      running.filter((p) => p.spec?.nodeName === victimName).map((p) => p.metadata!.uid!),
    );
    await victim.kubelet.kill();

    const dead = await waitFor(
      `${victimName} to go Ready=Unknown with the NoExecute unreachable taint`,
      async () => {
        const n = await api.get<Node>(resources.nodes, victimName);
        const tainted = n.spec?.taints?.some(
          (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
        );
        return readyOf(n) === 'Unknown' && tainted ? n : undefined;
      },
      60_000,
      250,
    );
    assert.ok(
      dead.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoSchedule'),
    );

    const replaced = await waitFor(
      `the pods of ${victimName} evicted and two pods Running on ${survivor}`,
      async () => {
        const ps = await appPods();
        const evicted = ps
          .filter((p) => doomed.has(p.metadata!.uid!))
          .every((p) => p.metadata?.deletionTimestamp !== undefined);
        const live = ps.filter((p) => !p.metadata?.deletionTimestamp && !doomed.has(p.metadata!.uid!));
        const ok =
          live.length === 2 &&
          live.every((p) => p.spec?.nodeName === survivor && p.status?.phase === 'Running');
        return evicted && ok ? live : undefined;
      },
      60_000,
      250,
    );
    assert.equal(replaced.length, 2);
    const rs = await api.get<ReplicaSet>(resources.replicasets, 'sleeper', { namespace: NS });
    assert.equal(rs.spec?.replicas, 2);
  } catch (err) {
    (err as Error).message += `\n${logs()}`;
    throw err;
  }
});
