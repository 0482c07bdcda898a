// The StatefulSet controller on a real stack (testkit's workload cluster: etcd,
// kubit-apiserver, kubit-controller-manager with statefulset and
// garbagecollector, kubit-scheduler, kubit-hollow nodes whose pods become
// Ready): OrderedReady brings web-0..2 up in order, a deleted pod comes back
// under its name, `kubectl scale sts` removes the highest ordinal first, a
// partitioned rolling update stops at the partition, `kubectl rollout
// status|history|undo sts` work, Parallel creates all pods at once, and each
// pod has its own claim, kept across its recreation and deleted as the
// retention policy says.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type {
  ControllerRevision,
  Event,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StatefulSet,
} from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';
import { w } from './cm-process.js';

const exec = promisify(execFile);
const NS = 'default';

let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({
    nodes: 2,
    controllers: 'statefulset,garbagecollector,persistentvolume-binder,pvc-protection,pv-protection',
  });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

async function kubectl(args: string[]): Promise<string> {
  const cp = cluster.cp;
  const full = ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(cp.dir, 'kubectl-cache'), ...args];
  try {
    return (await exec('kubectl', full, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `kubectl ${args.join(' ')} failed: ${e.message}\n${e.stdout}\n${e.stderr}\n${cluster.logs(15)}`,
    );
  }
}

const isReady = (p: Pod | undefined) =>
  p?.status?.phase === 'Running' &&
  p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

function statefulSet(
  name: string,
  replicas: number,
  spec: Partial<NonNullable<StatefulSet['spec']>> = {},
): StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'nginx:1' }], terminationGracePeriodSeconds: 0 },
      },
      ...spec,
    },
  };
}

const getSet = (name: string) => client.get<StatefulSet>(resources.statefulsets, name, { namespace: NS });

async function livePods(app: string): Promise<Pod[]> {
  const list = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** Waits until the set has exactly `names` as Ready pods and a status that says so. */
async function readySet(name: string, names: string[]): Promise<{ pods: Pod[]; set: StatefulSet }> {
  let pods: Pod[] = [];
  let set: StatefulSet | undefined;
  try {
    await waitFor(
      `pods ${names.join(',')} of sts/${name} Ready`,
      async () => {
        pods = await livePods(name);
        set = await getSet(name);
        const got = pods.map((p) => p.metadata?.name).sort();
        return (
          JSON.stringify(got) === JSON.stringify([...names].sort()) &&
          pods.every(isReady) &&
          set.status?.readyReplicas === names.length &&
          set.status?.replicas === names.length &&
          set.status?.observedGeneration === set.metadata?.generation
        );
      },
      90_000,
      200,
    );
  } catch (err) {
    const seen = pods.map((p) => `${p.metadata?.name}:${p.status?.phase}`).join(' ');
    throw new Error(
      `${(err as Error).message}: ${seen}, status ${JSON.stringify(set?.status)}\n${cluster.logs(20)}`,
    );
  }
  return { pods, set: set! };
}

/** Records, from a watch, the order pods were created and marked for deletion, and who was Ready then. */
class PodOrder {
  readonly created: string[] = [];
  readonly deleting: string[] = [];
  /** For each created pod, whether every lower ordinal was Ready when it appeared. */
  readonly lowerReadyAtCreate = new Map<string, boolean>();
  private readonly pods = new Map<string, Pod>();
  private handle?: { stop(): void };

  async start(app: string): Promise<void> {
    const list = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` });
    for (const p of list.items) this.pods.set(p.metadata!.name!, p);
    this.handle = client.watch<Pod>(resources.pods, {
      namespace: NS,
      labelSelector: `app=${app}`,
      resourceVersion: list.metadata?.resourceVersion,
      onEvent: (ev) => {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') return;
        const p = ev.object;
        const name = p.metadata!.name!;
        if (ev.type === 'DELETED') {
          // A pod with no grace period goes at once, without a deletionTimestamp first.
          if (!this.pods.get(name)?.metadata?.deletionTimestamp) this.deleting.push(name);
          this.pods.delete(name);
          return;
        }
        const before = this.pods.get(name);
        if (ev.type === 'ADDED') {
          this.created.push(name);
          const ord = Number(name.slice(name.lastIndexOf('-') + 1));
          let lowerReady = true;
          for (let i = 0; i < ord; i++) lowerReady &&= isReady(this.pods.get(`${app}-${i}`)) === true;
          this.lowerReadyAtCreate.set(name, lowerReady);
        }
        if (p.metadata?.deletionTimestamp && !before?.metadata?.deletionTimestamp) this.deleting.push(name);
        this.pods.set(name, p);
      },
      onClose: () => {},
    });
  }

  stop(): void {
    this.handle?.stop();
  }
}

test('OrderedReady: in order up, same name back, highest first down, partitioned update, rollout', async () => {
  const order = new PodOrder();
  await order.start('web');
  const created = await client.create(resources.statefulsets, w(statefulSet('web', 3)), { namespace: NS });
  let { pods, set } = await readySet('web', ['web-0', 'web-1', 'web-2']);

  // Up in order: each pod appeared only once the ones before it were Ready.
  assert.deepEqual(order.created, ['web-0', 'web-1', 'web-2']);
  assert.deepEqual([...order.lowerReadyAtCreate.values()], [true, true, true]);
  for (const p of pods) {
    const name = p.metadata!.name!;
    assert.equal(p.metadata!.labels!['statefulset.kubernetes.io/pod-name'], name);
    assert.equal(p.metadata!.labels!['apps.kubernetes.io/pod-index'], name.slice(4));
    assert.equal(p.metadata!.labels!['controller-revision-hash'], set.status!.updateRevision);
    assert.equal(p.spec!.hostname, name);
    assert.equal(p.spec!.subdomain, 'web');
    assert.deepEqual(p.metadata!.ownerReferences, [
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        name: 'web',
        uid: created.metadata!.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  }
  assert.equal(set.status!.currentRevision, set.status!.updateRevision);
  assert.equal(set.status!.currentReplicas, 3);
  assert.equal(set.status!.updatedReplicas, 3);
  assert.equal(set.status!.availableReplicas, 3);
  const firstRevision = set.status!.updateRevision!;
  const events = await client.list<Event>(resources.events, { namespace: NS });
  const messages = events.items
    .filter((e) => e.involvedObject?.name === 'web')
    .map((e) => `${e.reason}: ${e.message}`);
  assert.ok(
    messages.includes('SuccessfulCreate: create Pod web-0 in StatefulSet web successful'),
    messages.join('\n'),
  );

  // A deleted pod comes back under its name.
  const web1 = pods.find((p) => p.metadata!.name === 'web-1')!;
  await client.delete(resources.pods, 'web-1', { namespace: NS });
  ({ pods } = await readySet('web', ['web-0', 'web-1', 'web-2']));
  assert.notEqual(pods.find((p) => p.metadata!.name === 'web-1')!.metadata!.uid, web1.metadata!.uid);

  // kubectl scale: the highest ordinal goes first, one at a time.
  order.deleting.length = 0;
  assert.match(await kubectl(['scale', 'sts', 'web', '--replicas=1']), /statefulset.apps\/web scaled/);
  await readySet('web', ['web-0']);
  assert.deepEqual(order.deleting, ['web-2', 'web-1']);
  const deleted = (await client.list<Event>(resources.events, { namespace: NS })).items.filter(
    (e) => e.involvedObject?.name === 'web' && e.reason === 'SuccessfulDelete',
  );
  assert.deepEqual(deleted.map((e) => e.message).sort(), [
    'delete Pod web-1 in StatefulSet web successful',
    'delete Pod web-2 in StatefulSet web successful',
  ]);
  assert.match(await kubectl(['scale', 'sts', 'web', '--replicas=3']), /statefulset.apps\/web scaled/);
  await readySet('web', ['web-0', 'web-1', 'web-2']);

  // A rolling update with partition 2 replaces web-2 only.
  set = await getSet('web');
  set.spec!.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 2 } };
  set.spec!.template!.spec!.containers[0].image = 'nginx:2';
  await client.update(resources.statefulsets, w(set), { namespace: NS });
  await waitFor(
    'the partitioned update to reach web-2',
    async () => {
      const s = await getSet('web');
      const ps = await livePods('web');
      const image = (n: string) => ps.find((p) => p.metadata!.name === n)?.spec?.containers[0].image;
      return (
        s.status?.observedGeneration === s.metadata?.generation &&
        s.status?.updatedReplicas === 1 &&
        s.status?.readyReplicas === 3 &&
        image('web-2') === 'nginx:2' &&
        image('web-1') === 'nginx:1' &&
        image('web-0') === 'nginx:1'
      );
    },
    90_000,
    200,
  );
  assert.match(
    await kubectl(['rollout', 'status', 'sts/web', '--timeout=60s']),
    /partitioned roll out complete: 1 new pods have been updated/,
  );
  set = await getSet('web');
  assert.equal(set.status!.currentRevision, firstRevision);
  assert.notEqual(set.status!.updateRevision, firstRevision);
  assert.equal(set.status!.currentReplicas, 2);

  // Partition 0 finishes it; the update revision becomes current.
  set.spec!.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
  await client.update(resources.statefulsets, w(set), { namespace: NS });
  assert.match(
    await kubectl(['rollout', 'status', 'sts/web', '--timeout=90s']),
    /partitioned roll out complete: 3 new pods have been updated/,
  );
  ({ pods, set } = await readySet('web', ['web-0', 'web-1', 'web-2']));
  assert.ok(pods.every((p) => p.spec!.containers[0].image === 'nginx:2'));
  assert.equal(set.status!.currentRevision, set.status!.updateRevision);
  const revisions = await client.list<ControllerRevision>(resources.controllerrevisions, {
    namespace: NS,
    labelSelector: 'app=web',
  });
  assert.deepEqual(revisions.items.map((r) => r.revision).sort(), [1, 2]);
  assert.match(
    await kubectl(['rollout', 'history', 'sts/web']),
    /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>/,
  );

  assert.match(await kubectl(['rollout', 'history', 'sts/web', '--revision=2']), /Image:\s+nginx:2/);

  // rollout undo puts the first template back, as revision 3.
  assert.match(await kubectl(['rollout', 'undo', 'sts/web']), /statefulset.apps\/web rolled back/);
  await kubectl(['rollout', 'status', 'sts/web', '--timeout=90s']);
  ({ pods, set } = await readySet('web', ['web-0', 'web-1', 'web-2']));
  assert.ok(pods.every((p) => p.spec!.containers[0].image === 'nginx:1'));
  assert.equal(set.status!.updateRevision, firstRevision);
  const after = await client.get<ControllerRevision>(resources.controllerrevisions, firstRevision, {
    namespace: NS,
  });
  assert.equal(after.revision, 3);
  order.stop();

  // Deleting the set lets the garbage collector take its pods and revisions.
  await kubectl(['delete', 'sts', 'web']);
  await waitFor(
    'the set, its pods and revisions to be gone',
    async () =>
      (await client.list(resources.pods, { namespace: NS, labelSelector: 'app=web' })).items.length === 0 &&
      (await client.list(resources.controllerrevisions, { namespace: NS, labelSelector: 'app=web' })).items
        .length === 0,
    60_000,
    200,
  );
});

test('Parallel creates every pod at once, without waiting for any to be Ready', async () => {
  // No node has this label: the pods stay Pending, so OrderedReady would stop at par-0.
  const set = statefulSet('par', 3, { podManagementPolicy: 'Parallel' });
  set.spec!.template!.spec!.nodeSelector = { 'kubit.test/nowhere': 'true' };
  await client.create(resources.statefulsets, w(set), { namespace: NS });
  await waitFor(
    'par-0..2 to exist',
    async () => {
      const s = await getSet('par');
      const names = (await livePods('par')).map((p) => p.metadata!.name).sort();
      return JSON.stringify(names) === '["par-0","par-1","par-2"]' && s.status?.replicas === 3;
    },
    60_000,
    200,
  );
  const s = await getSet('par');
  assert.equal(s.status!.readyReplicas ?? 0, 0);
  await kubectl(['delete', 'sts', 'par']);
});

test('claims: one per pod, the same one back for a recreated pod, deleted as the retention policy says', async () => {
  // Hollow nodes provision nothing: static volumes of no class, which the binder hands out.
  for (const name of ['db-pv-a', 'db-pv-b']) {
    await client.create(resources.persistentvolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: {
        storageClassName: '',
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        hostPath: { path: `/tmp/${name}` },
      },
    } as PersistentVolume);
  }
  const set = statefulSet('db', 2, {
    volumeClaimTemplates: [
      {
        metadata: { name: 'data' },
        spec: {
          storageClassName: '',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
        },
      },
    ],
    persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Delete' },
  });
  const created = await client.create(resources.statefulsets, w(set), { namespace: NS });
  let { pods } = await readySet('db', ['db-0', 'db-1']);
  const claims = async () =>
    (
      await client.list<PersistentVolumeClaim>(resources.persistentvolumeclaims, {
        namespace: NS,
        labelSelector: 'app=db',
      })
    ).items.filter((c) => !c.metadata?.deletionTimestamp);
  const first = await claims();
  assert.deepEqual(first.map((c) => c.metadata!.name).sort(), ['data-db-0', 'data-db-1']);
  // The scheduler held each pod until its claim was bound (Immediate binding).
  assert.deepEqual(first.map((c) => c.spec!.volumeName).sort(), ['db-pv-a', 'db-pv-b']);
  for (const p of pods) {
    const claim = p.spec!.volumes!.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName;
    assert.equal(claim, `data-${p.metadata!.name}`);
  }
  // whenDeleted: Delete: the set owns the claims of the pods it wants.
  for (const c of first) {
    assert.deepEqual(
      c.metadata!.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.uid}`),
      [`StatefulSet/db/${created.metadata!.uid}`],
    );
  }

  // A recreated pod gets its claim back: the same object, not a new one.
  const claim1 = first.find((c) => c.metadata!.name === 'data-db-1')!;
  await client.delete(resources.pods, 'db-1', { namespace: NS });
  ({ pods } = await readySet('db', ['db-0', 'db-1']));
  const again = await client.get<PersistentVolumeClaim>(resources.persistentvolumeclaims, 'data-db-1', {
    namespace: NS,
  });
  assert.equal(again.metadata!.uid, claim1.metadata!.uid);

  // whenScaled: Delete: the claim of a pod scaled away goes with it.
  await kubectl(['scale', 'sts', 'db', '--replicas=1']);
  await readySet('db', ['db-0']);
  await waitFor(
    'data-db-1 to be deleted',
    async () => JSON.stringify((await claims()).map((c) => c.metadata!.name)) === '["data-db-0"]',
    60_000,
    200,
  );

  // whenDeleted: Delete: the set's claims go with the set.
  await kubectl(['delete', 'sts', 'db']);
  await waitFor('the claims of db to be deleted', async () => (await claims()).length === 0, 60_000, 200);
});
