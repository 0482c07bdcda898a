// A rolling update and a kubectl-style rollback on a real stack: etcd and
// kubit-apiserver (testkit's control plane), kubit-controller-manager,
// kubit-scheduler and kubit-hollow nodes whose pods become Ready. A watch on the
// Deployment's pods checks the availability floor (replicas - maxUnavailable)
// at every single event while the rollout runs, and a watch on its ReplicaSets
// checks the surge ceiling (replicas + maxSurge) on their spec.replicas.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Deployment, Pod, PodTemplateSpec, ReplicaSet } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';
import { w } from './cm-process.js';

const NS = 'default';
const REPLICAS = 4;
const MAX_SURGE = 1;
const MAX_UNAVAILABLE = 1;
const FLOOR = REPLICAS - MAX_UNAVAILABLE;
const CEILING = REPLICAS + MAX_SURGE;
const REVISION = 'deployment.kubernetes.io/revision';
const NODES = 3;

let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({
    nodes: NODES,
    controllers: 'replicaset,deployment,garbagecollector',
  });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

/** The last lines of each daemon's log and the Deployment's state, for a failure message. */
async function diagnostics(): Promise<string> {
  const d = await getDeployment().catch((e: Error) => e.message);
  return `${cluster.logs(8)}\n--- deployment ---\n${JSON.stringify(d)}`;
}

const isAvailable = (p: Pod) =>
  !p.metadata?.deletionTimestamp &&
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/**
 * Watches the app's pods and ReplicaSets and checks, at every event, that at
 * least FLOOR pods are available and the ReplicaSets ask for at most CEILING.
 */
class RolloutWatcher {
  readonly violations: string[] = [];
  podEvents = 0;
  rsEvents = 0;
  lowestAvailable = Number.POSITIVE_INFINITY;
  private readonly pods = new Map<string, Pod>();
  private readonly sets = new Map<string, ReplicaSet>();
  private readonly watches: { stop(): void }[] = [];

  async start(app: string): Promise<void> {
    const pods = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` });
    for (const p of pods.items) this.pods.set(p.metadata!.name!, p);
    const sets = await client.list<ReplicaSet>(resources.replicasets, {
      namespace: NS,
      labelSelector: `app=${app}`,
    });
    for (const rs of sets.items) this.sets.set(rs.metadata!.name!, rs);
    this.checkPods('initial list');
    this.watches.push(
      client.watch<Pod>(resources.pods, {
        namespace: NS,
        labelSelector: `app=${app}`,
        resourceVersion: pods.metadata?.resourceVersion,
        onEvent: (ev) => {
          if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
          this.podEvents++;
          const name = ev.object.metadata!.name!;
          if (ev.type === 'DELETED') this.pods.delete(name);
          else this.pods.set(name, ev.object);
          this.checkPods(`${ev.type} pod ${name}`);
        },
        onClose: (err) => {
          if (err) this.violations.push(`the pod watch broke: ${err.message}`);
        },
      }),
      client.watch<ReplicaSet>(resources.replicasets, {
        namespace: NS,
        labelSelector: `app=${app}`,
        resourceVersion: sets.metadata?.resourceVersion,
        onEvent: (ev) => {
          if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
          this.rsEvents++;
          const name = ev.object.metadata!.name!;
          if (ev.type === 'DELETED') this.sets.delete(name);
          else this.sets.set(name, ev.object);
          const asked = [...this.sets.values()].reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
          if (asked > CEILING)
            this.violations.push(`${asked} replicas asked for > ${CEILING} at ${ev.type} ${name}`);
        },
      }),
    );
  }

  private checkPods(at: string): void {
    const available = [...this.pods.values()].filter(isAvailable).length;
    this.lowestAvailable = Math.min(this.lowestAvailable, available);
    if (available < FLOOR) this.violations.push(`${available} available pods < ${FLOOR} at ${at}`);
  }

  stop(): void {
    for (const x of this.watches) x.stop();
  }
}

function template(version: string): PodTemplateSpec {
  return {
    metadata: { labels: { app: 'web' } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'c', image: 'pause', env: [{ name: 'VERSION', value: version }] }],
    },
  };
}

const versionOf = (p: Pod) => p.spec?.containers[0].env?.find((e) => e.name === 'VERSION')?.value;

async function getDeployment(): Promise<Deployment> {
  return client.get<Deployment>(resources.deployments, 'web', { namespace: NS });
}

async function webSets(): Promise<ReplicaSet[]> {
  return (await client.list<ReplicaSet>(resources.replicasets, { namespace: NS, labelSelector: 'app=web' }))
    .items;
}

/** Complete: every replica updated and available, nothing else left, as `kubectl rollout status` checks. */
async function rolledOut(version: string): Promise<Deployment | undefined> {
  const d = await getDeployment();
  const s = d.status;
  if (s?.observedGeneration !== d.metadata?.generation) return undefined;
  if (s?.updatedReplicas !== REPLICAS || s.replicas !== REPLICAS || s.availableReplicas !== REPLICAS)
    return undefined;
  const pods = (
    await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: 'app=web' })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
  return pods.length === REPLICAS && pods.every((p) => versionOf(p) === version && isAvailable(p))
    ? d
    : undefined;
}

describe('rolling update on hollow nodes', { timeout: 150_000 }, () => {
  test('never drops below the availability floor, and a rollback reuses the old ReplicaSet', async () => {
    try {
      await rollOutAndBack();
    } catch (err) {
      (err as Error).message += `\n${await diagnostics()}`;
      throw err;
    }
  });
});

async function rollOutAndBack(): Promise<void> {
  await client.create(
    resources.deployments,
    w<Deployment>({
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: REPLICAS,
        selector: { matchLabels: { app: 'web' } },
        strategy: {
          type: 'RollingUpdate',
          rollingUpdate: { maxSurge: MAX_SURGE, maxUnavailable: MAX_UNAVAILABLE },
        },
        template: template('1'),
      },
    }),
    { namespace: NS },
  );
  await waitFor('revision 1 to be available', () => rolledOut('1'), 60_000, 200);
  const [first] = await webSets();

  const watcher = new RolloutWatcher();
  await watcher.start('web');
  try {
    // A rolling update: change an environment variable of the template.
    await client.patch(
      resources.deployments,
      'web',
      [{ op: 'replace', path: '/spec/template', value: template('2') }],
      { namespace: NS, type: 'json' },
    );
    const d2 = await waitFor('revision 2 to roll out', () => rolledOut('2'), 60_000, 200);
    assert.equal(d2.metadata?.annotations?.[REVISION], '2');
    const progressing = d2.status?.conditions?.find((c) => c.type === 'Progressing');
    assert.deepEqual([progressing?.status, progressing?.reason], ['True', 'NewReplicaSetAvailable']);
    const available = d2.status?.conditions?.find((c) => c.type === 'Available');
    assert.deepEqual([available?.status, available?.reason], ['True', 'MinimumReplicasAvailable']);

    // `kubectl rollout undo`: the client copies revision 1's template (without
    // its pod-template-hash label) back into the Deployment.
    const old = structuredClone(first.spec!.template!);
    delete old.metadata!.labels!['pod-template-hash'];
    await client.patch(
      resources.deployments,
      'web',
      [{ op: 'replace', path: '/spec/template', value: old }],
      {
        namespace: NS,
        type: 'json',
      },
    );
    const d3 = await waitFor('the rollback to roll out', () => rolledOut('1'), 60_000, 200);
    assert.equal(d3.metadata?.annotations?.[REVISION], '3');
    const sets = await webSets();
    assert.equal(sets.length, 2, 'the rollback reuses the first ReplicaSet instead of making a third');
    const reused = sets.find((rs) => rs.metadata?.uid === first.metadata?.uid);
    assert.ok(reused, 'the first ReplicaSet is still there');
    assert.equal(reused.metadata?.annotations?.[REVISION], '3');
    assert.equal(reused.spec?.replicas, REPLICAS);
    const second = sets.find((rs) => rs.metadata?.uid !== first.metadata?.uid);
    assert.equal(second?.spec?.replicas, 0);
  } finally {
    watcher.stop();
  }
  assert.deepEqual(watcher.violations, []);
  // The checks really ran on the rollout's events: every pod was replaced twice.
  assert.ok(watcher.podEvents >= 4 * REPLICAS, `only ${watcher.podEvents} pod events seen`);
  assert.ok(watcher.rsEvents > 0);
  assert.ok(watcher.lowestAvailable >= FLOOR && watcher.lowestAvailable <= REPLICAS);
}
