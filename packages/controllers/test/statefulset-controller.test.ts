// The StatefulSet controller over the in-memory FakeCluster, for what the real
// stack cannot show on demand: a pod that fails is replaced under its name,
// history is trimmed to revisionHistoryLimit, orphans are adopted only when
// their name makes them the set's, and OnDelete waits for the user.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { RecordingEvents } from '../src/events.js';
import { StatefulSetController } from '../src/statefulset/controller.js';
import { FakeCluster } from '../src/testing.js';
import type { ControllerRevision, PersistentVolumeClaim, Pod, StatefulSet } from '../src/types.js';
import { newFactory, runAllPods, settle, startInformers, template } from './helpers.js';

async function setup(claimsServed = false) {
  const cluster = new FakeCluster();
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const ssc = new StatefulSetController(cluster, informers, { events, claimsServed });
  await startInformers(informers);
  return { cluster, informers, ssc, events };
}

function statefulSet(replicas: number, spec: Partial<NonNullable<StatefulSet['spec']>> = {}): StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas,
      serviceName: 'web',
      selector: { matchLabels: { app: 'web' } },
      template: template({ app: 'web' }),
      podManagementPolicy: 'OrderedReady',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      revisionHistoryLimit: 10,
      ...spec,
    },
  };
}

const pods = (c: FakeCluster) => c.all<Pod>(res.pods).filter((p) => !p.metadata?.deletionTimestamp);
const names = (c: FakeCluster) =>
  pods(c)
    .map((p) => p.metadata!.name!)
    .sort();
const getSet = (c: FakeCluster) => c.get<StatefulSet>(res.statefulsets, 'default', 'web');

/** Plays scheduler and kubelet until the set stops changing. */
async function converge(cluster: FakeCluster, ssc: StatefulSetController): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await settle([ssc]);
    await runAllPods(cluster);
  }
  await settle([ssc]);
}

async function setImage(cluster: FakeCluster, image: string): Promise<void> {
  const set = await getSet(cluster);
  await cluster.update(res.statefulsets, {
    ...set,
    spec: { ...set.spec!, template: template({ app: 'web' }, image) },
  });
}

describe('StatefulSet controller (FakeCluster)', () => {
  test('a failed pod is deleted and replaced under the same name', async () => {
    const { cluster, informers, ssc, events } = await setup();
    await cluster.create(res.statefulsets, 'default', statefulSet(3));
    await converge(cluster, ssc);
    assert.deepEqual(names(cluster), ['web-0', 'web-1', 'web-2']);
    const web1 = pods(cluster).find((p) => p.metadata!.name === 'web-1')!;
    await cluster.update(res.pods, { ...web1, status: { phase: 'Failed' } }, 'status');
    await converge(cluster, ssc);
    assert.deepEqual(names(cluster), ['web-0', 'web-1', 'web-2']);
    assert.notEqual(
      pods(cluster).find((p) => p.metadata!.name === 'web-1')!.metadata!.uid,
      web1.metadata!.uid,
    );
    assert.ok(
      events.events.some(
        (e) =>
          e.reason === 'RecreatingFailedPod' &&
          e.message === 'StatefulSet default/web is recreating failed Pod web-1',
      ),
    );
    assert.ok(events.events.some((e) => e.message === 'delete Pod web-1 in StatefulSet web successful'));
    informers.stop();
  });

  test('history keeps revisionHistoryLimit old revisions', async () => {
    const { cluster, informers, ssc } = await setup();
    await cluster.create(res.statefulsets, 'default', statefulSet(2, { revisionHistoryLimit: 1 }));
    await converge(cluster, ssc);
    for (const image of ['nginx:2', 'nginx:3', 'nginx:4']) {
      await setImage(cluster, image);
      await converge(cluster, ssc);
    }
    assert.ok(pods(cluster).every((p) => p.spec!.containers[0].image === 'nginx:4'));
    const revs = cluster
      .all<ControllerRevision>(res.controllerrevisions)
      .sort((a, b) => a.revision - b.revision);
    // The live one (current = update) and one more.
    assert.deepEqual(
      revs.map((r) => r.revision),
      [3, 4],
    );
    const set = await getSet(cluster);
    assert.equal(set.status!.currentRevision, revs[1].metadata!.name);
    assert.equal(set.status!.updateRevision, revs[1].metadata!.name);
    informers.stop();
  });

  test('adopts an orphan named as its pod, never one named otherwise', async () => {
    const { cluster, informers, ssc } = await setup();
    const orphan = (name: string): Pod => ({
      metadata: { name, namespace: 'default', labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'nginx:1' }] },
    });
    await cluster.create(res.pods, 'default', orphan('web-0'));
    await cluster.create(res.pods, 'default', orphan('other-0'));
    // OnDelete: an adopted pod has no revision label, and a rolling update would replace it.
    const set = await cluster.create(
      res.statefulsets,
      'default',
      statefulSet(1, { updateStrategy: { type: 'OnDelete' } }),
    );
    await converge(cluster, ssc);
    const byName = new Map(pods(cluster).map((p) => [p.metadata!.name!, p]));
    assert.equal(byName.get('web-0')!.metadata!.ownerReferences?.[0]?.uid, set.metadata!.uid);
    assert.equal(byName.get('other-0')!.metadata!.ownerReferences, undefined);
    assert.equal(cluster.writesOf('create', 'pods').length, 2);
    informers.stop();
  });

  test('OnDelete replaces nothing; a pod the user deletes comes back at the new revision', async () => {
    const { cluster, informers, ssc } = await setup();
    await cluster.create(
      res.statefulsets,
      'default',
      statefulSet(2, { updateStrategy: { type: 'OnDelete' } }),
    );
    await converge(cluster, ssc);
    await setImage(cluster, 'nginx:2');
    await converge(cluster, ssc);
    assert.ok(pods(cluster).every((p) => p.spec!.containers[0].image === 'nginx:1'));
    let set = await getSet(cluster);
    assert.notEqual(set.status!.currentRevision, set.status!.updateRevision);
    assert.equal(set.status!.updatedReplicas, 0);
    await cluster.delete(res.pods, 'default', 'web-1');
    await converge(cluster, ssc);
    const image = (n: string) => pods(cluster).find((p) => p.metadata!.name === n)!.spec!.containers[0].image;
    assert.equal(image('web-1'), 'nginx:2');
    assert.equal(image('web-0'), 'nginx:1');
    set = await getSet(cluster);
    assert.equal(set.status!.updatedReplicas, 1);
    assert.equal(set.status!.currentReplicas, 1);
    informers.stop();
  });

  test('a pod scaled back up waits while its old claim is still owned by the deleted pod', async () => {
    const { cluster, informers, ssc } = await setup(true);
    await cluster.create(
      res.statefulsets,
      'default',
      statefulSet(2, {
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'] } }],
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Delete' },
      }),
    );
    await converge(cluster, ssc);
    const claim = () =>
      cluster.get<PersistentVolumeClaim>(res.persistentvolumeclaims, 'default', 'data-web-1');
    const web1 = pods(cluster).find((p) => p.metadata!.name === 'web-1')!;
    assert.equal((await claim()).metadata!.ownerReferences, undefined);
    // Scale down: the claim is handed to its pod, and the pod deleted (no garbage collector here).
    let set = await getSet(cluster);
    await cluster.update(res.statefulsets, { ...set, spec: { ...set.spec!, replicas: 1 } });
    await converge(cluster, ssc);
    assert.deepEqual(names(cluster), ['web-0']);
    assert.deepEqual(
      (await claim()).metadata!.ownerReferences?.map((r) => `${r.kind}/${r.name}/${r.uid}`),
      [`Pod/web-1/${web1.metadata!.uid}`],
    );
    // Back up before the claim is collected: web-1 must wait for it to go.
    set = await getSet(cluster);
    await cluster.update(res.statefulsets, { ...set, spec: { ...set.spec!, replicas: 2 } });
    await converge(cluster, ssc);
    assert.deepEqual(names(cluster), ['web-0']);
    await cluster.delete(res.persistentvolumeclaims, 'default', 'data-web-1');
    // The retry's backoff: run the key again until web-1 is back.
    for (let i = 0; i < 5 && names(cluster).length < 2; i++) {
      await ssc.reconcile('default/web').catch(() => {});
      await converge(cluster, ssc);
    }
    assert.deepEqual(names(cluster), ['web-0', 'web-1']);
    assert.equal((await claim()).metadata!.ownerReferences, undefined);
    informers.stop();
  });
});
