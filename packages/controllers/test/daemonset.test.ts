// The DaemonSet controller on a real stack (testkit's workload cluster: etcd,
// kubit-apiserver, kubit-controller-manager with daemonset and the garbage
// collector, kubit-scheduler, kubit-hollow nodes whose pods become Ready): one
// pod per node, bound by the real scheduler through its matchFields affinity; a
// tainted node only with a toleration; a node that joins gets its pod and one
// that leaves loses it; a rolling update with maxUnavailable 1 replaces one node
// at a time (a watch on the pods checks it at every event); and the real
// `kubectl rollout status|history|undo daemonset/X` over its ControllerRevisions.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { ControllerRevision, DaemonSet, Event, Node, Pod } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  startDaemon,
  startWorkloadCluster,
  type TestProcess,
  type WorkloadCluster,
  waitFor,
} from '@kubit/testkit';
import { w } from './cm-process.js';

const exec = promisify(execFile);
const NS = 'default';
const NODES = ['hollow-0', 'hollow-1', 'hollow-2'];

let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({ nodes: NODES.length, controllers: 'daemonset,garbagecollector' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

async function kubectl(args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string }> {
  const cp = cluster.cp;
  const full = ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(cp.dir, 'kubectl-cache'), ...args];
  try {
    return await exec('kubectl', full, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `kubectl ${args.join(' ')} failed: ${e.message}\n${e.stdout}\n${e.stderr}\n${cluster.logs(15)}`,
    );
  }
}

function daemonSet(
  name: string,
  spec: Partial<NonNullable<DaemonSet['spec']>> = {},
  version = 'v1',
): DaemonSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'c', image: 'pause', env: [{ name: 'VERSION', value: version }] }],
        },
      },
      ...spec,
    },
  };
}

const isReady = (p: Pod) =>
  !p.metadata?.deletionTimestamp &&
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

const versionOf = (p: Pod) => p.spec?.containers[0].env?.find((e) => e.name === 'VERSION')?.value;

async function podsOf(app: string): Promise<Pod[]> {
  return (
    await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
}

const getDS = (name: string) => client.get<DaemonSet>(resources.daemonsets, name, { namespace: NS });

/** Waits until the app has exactly one Ready pod on each of `nodes` (and none elsewhere). */
async function readyOn(app: string, nodes: string[], version?: string): Promise<Pod[]> {
  let last: Pod[] = [];
  try {
    await waitFor(
      `one Ready ${app} pod on each of ${nodes.join(', ')}`,
      async () => {
        last = await podsOf(app);
        const on = last.map((p) => p.spec?.nodeName ?? '').sort();
        return (
          JSON.stringify(on) === JSON.stringify([...nodes].sort()) &&
          last.every((p) => isReady(p) && (version === undefined || versionOf(p) === version))
        );
      },
      60_000,
      200,
    );
  } catch (err) {
    const seen = last.map(
      (p) => `${p.metadata?.name}@${p.spec?.nodeName}:${p.status?.phase}:${versionOf(p)}`,
    );
    throw new Error(`${(err as Error).message}; pods: ${seen.join(' ')}\n${cluster.logs(10)}`);
  }
  return last;
}

/** Waits until the DaemonSet's status has these fields and has observed its generation. */
async function statusBecomes(
  name: string,
  want: Partial<NonNullable<DaemonSet['status']>>,
): Promise<DaemonSet> {
  let last: DaemonSet | undefined;
  try {
    await waitFor(
      `${name}'s status to be ${JSON.stringify(want)}`,
      async () => {
        last = await getDS(name);
        const s = (last.status ?? {}) as Record<string, unknown>;
        return (
          s.observedGeneration === last.metadata?.generation &&
          Object.entries(want).every(([k, v]) => (s[k] ?? 0) === v)
        );
      },
      60_000,
      200,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last?.status)}\n${cluster.logs(10)}`);
  }
  return last!;
}

describe('one pod per node', () => {
  test('each of the three nodes runs one pod, bound by the scheduler, with the labels and tolerations', async () => {
    await client.create(resources.daemonsets, w(daemonSet('agent')), { namespace: NS });
    const pods = await readyOn('agent', NODES);
    const ds = await statusBecomes('agent', {
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberReady: 3,
      numberAvailable: 3,
      updatedNumberScheduled: 3,
      numberMisscheduled: 0,
      numberUnavailable: 0,
    });
    const revisions = (
      await client.list<ControllerRevision>(resources.controllerrevisions, {
        namespace: NS,
        labelSelector: 'app=agent',
      })
    ).items;
    assert.equal(revisions.length, 1);
    const cr = revisions[0];
    assert.equal(cr.revision, 1);
    const hash = cr.metadata?.labels?.['controller-revision-hash'];
    assert.equal(cr.metadata?.name, `agent-${hash}`);
    assert.equal(cr.metadata?.ownerReferences?.[0]?.uid, ds.metadata?.uid);
    assert.equal(
      (cr.data as { spec: { template: Record<string, unknown> } }).spec.template.$patch,
      'replace',
    );
    for (const p of pods) {
      assert.equal(p.metadata?.labels?.['controller-revision-hash'], hash);
      assert.equal(p.metadata?.labels?.['pod-template-generation'], String(ds.metadata?.generation));
      assert.equal(p.metadata?.ownerReferences?.[0]?.kind, 'DaemonSet');
      const terms =
        p.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
      assert.deepEqual(terms, [
        { matchFields: [{ key: 'metadata.name', operator: 'In', values: [p.spec?.nodeName] }] },
      ]);
      assert.ok(p.spec?.tolerations?.some((t) => t.key === 'node.kubernetes.io/unreachable'));
    }
  });

  test('a deleted pod is replaced on its node', async () => {
    const [victim] = await podsOf('agent');
    await client.delete(resources.pods, victim.metadata!.name!, { namespace: NS });
    const pods = await readyOn('agent', NODES);
    assert.ok(!pods.some((p) => p.metadata?.uid === victim.metadata?.uid));
  });
});

describe('failed and released pods', () => {
  test('a failed pod is deleted with a FailedDaemonPod event and replaced on its node', async () => {
    const [victim] = await podsOf('agent');
    await client.update(
      resources.pods,
      w({ ...victim, status: { ...victim.status, phase: 'Failed', conditions: [] } }),
      { namespace: NS, subresource: 'status' },
    );
    const pods = await readyOn('agent', NODES);
    assert.ok(!pods.some((p) => p.metadata?.uid === victim.metadata?.uid));
    await waitFor(
      'a FailedDaemonPod event',
      async () => {
        const events = (await client.list<Event>(resources.events, { namespace: NS })).items;
        return events.some(
          (e) => e.reason === 'FailedDaemonPod' && e.message?.includes(victim.metadata!.name!),
        );
      },
      30_000,
      200,
    );
  });

  test('a pod whose labels stop matching is released and replaced', async () => {
    const [victim] = await podsOf('agent');
    await client.patch(
      resources.pods,
      victim.metadata!.name!,
      { metadata: { labels: { app: 'released' } } },
      { namespace: NS, type: 'merge' },
    );
    await readyOn('agent', NODES);
    const released = await client.get<Pod>(resources.pods, victim.metadata!.name!, { namespace: NS });
    assert.equal(released.metadata?.ownerReferences, undefined);
    await client.delete(resources.pods, victim.metadata!.name!, { namespace: NS });
  });
});

describe('taints', () => {
  test('a node tainted NoSchedule gets a pod only with a toleration', async () => {
    await kubectl(['taint', 'nodes', 'hollow-2', 'dedicated=infra:NoSchedule']);
    try {
      await client.create(resources.daemonsets, w(daemonSet('plain')), { namespace: NS });
      const tolerant = daemonSet('tolerant');
      tolerant.spec!.template.spec!.tolerations = [
        { key: 'dedicated', operator: 'Equal', value: 'infra', effect: 'NoSchedule' },
      ];
      await client.create(resources.daemonsets, w(tolerant), { namespace: NS });
      await readyOn('tolerant', NODES);
      await readyOn('plain', ['hollow-0', 'hollow-1']);
      await statusBecomes('plain', { desiredNumberScheduled: 2, numberReady: 2, numberMisscheduled: 0 });
      // The agent's pod, there before the taint, keeps running: NoSchedule does not evict.
      await readyOn('agent', NODES);
    } finally {
      await kubectl(['taint', 'nodes', 'hollow-2', 'dedicated=infra:NoSchedule-']);
    }
    // Without the taint the plain DaemonSet reaches hollow-2 as well.
    await readyOn('plain', NODES);
  });

  test('a NoExecute taint the pods do not tolerate takes them off the node', async () => {
    await kubectl(['taint', 'nodes', 'hollow-1', 'evict=now:NoExecute']);
    try {
      await readyOn('plain', ['hollow-0', 'hollow-2']);
    } finally {
      await kubectl(['taint', 'nodes', 'hollow-1', 'evict=now:NoExecute-']);
    }
    await readyOn('plain', NODES);
  });
});

describe('nodes that come and go', () => {
  let extra: TestProcess | undefined;
  after(async () => {
    await extra?.stop();
  });

  test('a new node gets its pod; a removed node loses it', async () => {
    extra = startDaemon({
      name: 'hollow-extra',
      pkg: 'kubelet',
      entry: 'hollow.ts',
      args: ['--nodes=1', '--name-prefix=extra-', `--kubeconfig=${cluster.cp.kubeconfigPath}`],
      logDir: cluster.cp.logDir,
    });
    await readyOn('agent', [...NODES, 'extra-0']);
    await statusBecomes('agent', { desiredNumberScheduled: 4, numberAvailable: 4 });
    await extra.stop();
    extra = undefined;
    await client.delete(resources.nodes, 'extra-0');
    await readyOn('agent', NODES);
    await statusBecomes('agent', { desiredNumberScheduled: 3, numberAvailable: 3 });
    // The controller deletes the pod of the node that left; with no kubelet to
    // confirm its end it stays terminating until the pod GC force-deletes it.
    const all = (await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: 'app=agent' })).items;
    const left = all.filter((p) => p.spec?.nodeName === 'extra-0');
    assert.ok(left.every((p) => p.metadata?.deletionTimestamp));
    const nodes = (await client.list<Node>(resources.nodes)).items.map((n) => n.metadata?.name);
    assert.deepEqual(nodes.sort(), NODES);
  });
});

/** Watches the app's pods: at every event, how many nodes lack a Ready pod. */
class NodeWatcher {
  mostUnavailable = 0;
  mostPods = 0;
  events = 0;
  private readonly pods = new Map<string, Pod>();
  private watch?: { stop(): void };

  async start(app: string): Promise<void> {
    const list = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` });
    for (const p of list.items) this.pods.set(p.metadata!.name!, p);
    this.watch = client.watch<Pod>(resources.pods, {
      namespace: NS,
      labelSelector: `app=${app}`,
      resourceVersion: list.metadata?.resourceVersion,
      onEvent: (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
        this.events++;
        if (ev.type === 'DELETED') this.pods.delete(ev.object.metadata!.name!);
        else this.pods.set(ev.object.metadata!.name!, ev.object);
        const live = [...this.pods.values()].filter((p) => !p.metadata?.deletionTimestamp);
        this.mostPods = Math.max(this.mostPods, live.length);
        const covered = new Set([...this.pods.values()].filter(isReady).map((p) => p.spec?.nodeName));
        this.mostUnavailable = Math.max(this.mostUnavailable, NODES.filter((n) => !covered.has(n)).length);
      },
    });
  }

  stop(): void {
    this.watch?.stop();
  }
}

describe('rolling update and kubectl rollout', () => {
  test('maxUnavailable 1 replaces one node at a time; kubectl rollout status waits for it', async () => {
    await client.create(
      resources.daemonsets,
      w(
        daemonSet('roll', {
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
        }),
      ),
      { namespace: NS },
    );
    await readyOn('roll', NODES, 'v1');
    const watcher = new NodeWatcher();
    await watcher.start('roll');
    try {
      await kubectl(['set', 'env', 'daemonset/roll', 'VERSION=v2']);
      const out = await kubectl(['rollout', 'status', 'daemonset/roll', '--timeout=90s']);
      assert.match(out.stdout, /daemon set "roll" successfully rolled out/);
      await readyOn('roll', NODES, 'v2');
    } finally {
      watcher.stop();
    }
    assert.ok(watcher.events > 0);
    // Every node was replaced, but never two at once.
    assert.equal(watcher.mostUnavailable, 1);
    await statusBecomes('roll', { updatedNumberScheduled: 3, numberAvailable: 3 });
  });

  test('kubectl rollout history lists the revisions and rollout undo brings the old template back', async () => {
    const history = await kubectl(['rollout', 'history', 'daemonset/roll']);
    assert.match(history.stdout, /^1\s/m, history.stdout);
    assert.match(history.stdout, /^2\s/m, history.stdout);
    const undo = await kubectl(['rollout', 'undo', 'daemonset/roll']);
    assert.match(undo.stdout, /daemonset.apps\/roll rolled back/);
    await kubectl(['rollout', 'status', 'daemonset/roll', '--timeout=90s']);
    await readyOn('roll', NODES, 'v1');
    // The old template's revision became the newest: revisions 2 and 3, no duplicate.
    const revisions = (
      await client.list<ControllerRevision>(resources.controllerrevisions, {
        namespace: NS,
        labelSelector: 'app=roll',
      })
    ).items;
    assert.deepEqual(revisions.map((r) => r.revision).sort(), [2, 3]);
    const again = await kubectl(['rollout', 'history', 'daemonset/roll', '--revision=3']);
    assert.match(again.stdout, /VERSION:\s+v1/);
  });

  test('maxSurge 1 starts the new pod beside the old one: no node is ever without a Ready pod', async () => {
    await client.create(
      resources.daemonsets,
      w(
        daemonSet('surge', {
          updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
        }),
      ),
      { namespace: NS },
    );
    await readyOn('surge', NODES, 'v1');
    const watcher = new NodeWatcher();
    await watcher.start('surge');
    try {
      await kubectl(['set', 'env', 'daemonset/surge', 'VERSION=v2']);
      await kubectl(['rollout', 'status', 'daemonset/surge', '--timeout=90s']);
      await readyOn('surge', NODES, 'v2');
    } finally {
      watcher.stop();
    }
    assert.equal(watcher.mostUnavailable, 0);
    assert.equal(watcher.mostPods, NODES.length + 1, 'one node at a time runs two pods');
  });

  test('OnDelete keeps old pods until they are deleted', async () => {
    await client.patch(
      resources.daemonsets,
      'roll',
      { spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: null } } },
      { namespace: NS },
    );
    await kubectl(['set', 'env', 'daemonset/roll', 'VERSION=v3']);
    await statusBecomes('roll', { updatedNumberScheduled: 0, numberAvailable: 3 });
    const before = await readyOn('roll', NODES, 'v1');
    await client.delete(resources.pods, before[0].metadata!.name!, { namespace: NS });
    await statusBecomes('roll', { updatedNumberScheduled: 1, numberAvailable: 3 });
    const pods = await readyOn('roll', NODES);
    assert.deepEqual(pods.map(versionOf).sort(), ['v1', 'v1', 'v3']);
  });
});

describe('deletion', () => {
  // roll, created after extra-0 left: the pods of that node stay terminating with no kubelet.
  test('deleting a DaemonSet takes its pods and revisions with it (garbage collector)', async () => {
    const ds = await getDS('roll');
    await kubectl(['delete', 'daemonset', 'roll', '--wait=true', '--timeout=60s']);
    await waitFor(
      "roll's pods and revisions gone",
      async () => {
        const pods = (await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: 'app=roll' }))
          .items;
        const crs = (
          await client.list<ControllerRevision>(resources.controllerrevisions, {
            namespace: NS,
            labelSelector: 'app=roll',
          })
        ).items;
        return (
          pods.length === 0 && crs.every((cr) => cr.metadata?.ownerReferences?.[0]?.uid !== ds.metadata?.uid)
        );
      },
      60_000,
      200,
    );
  });
});
