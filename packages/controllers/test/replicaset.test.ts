import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { RecordingEvents } from '../src/events.js';
import { podsToDelete } from '../src/pod-ranking.js';
import { ReplicaSetController } from '../src/replicaset.js';
import { FakeCluster } from '../src/testing.js';
import type { Pod, ReplicaSet } from '../src/types.js';
import { newFactory, replicaSet, runAllPods, runPod, settle, startInformers } from './helpers.js';

async function setup(opts: { now?: () => number; burstReplicas?: number } = {}) {
  const cluster = new FakeCluster(opts.now ? { now: opts.now } : {});
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const rsc = new ReplicaSetController(cluster, informers, { ...opts, events });
  await startInformers(informers);
  return { cluster, informers, rsc, events };
}

const pods = (c: FakeCluster) => c.all<Pod>(res.pods).filter((p) => !p.metadata?.deletionTimestamp);
const getRS = (c: FakeCluster, name: string) => c.get<ReplicaSet>(res.replicasets, 'default', name);

describe('ReplicaSet controller', () => {
  test('creates pods from the template, owned by the ReplicaSet', async () => {
    const { cluster, informers, rsc } = await setup();
    const rs = await cluster.create(res.replicasets, 'default', replicaSet('web', 3));
    await settle([rsc]);
    const ps = pods(cluster);
    assert.equal(ps.length, 3);
    for (const p of ps) {
      assert.match(p.metadata!.name!, /^web-[a-z0-9]{5}$/);
      assert.equal(p.metadata!.generateName, 'web-');
      assert.deepEqual(p.metadata!.labels, { app: 'web' });
      assert.deepEqual(p.metadata!.ownerReferences, [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: 'web',
          uid: rs.metadata!.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      assert.equal(p.spec!.containers[0].image, 'nginx:1');
    }
    const st = (await getRS(cluster, 'web')).status!;
    assert.equal(st.replicas, 3);
    assert.equal(st.fullyLabeledReplicas, 3);
    assert.equal(st.readyReplicas, 0);
    assert.equal(st.observedGeneration, 1);
    informers.stop();
  });

  test('scales down and up, and replaces deleted pods', async () => {
    const { cluster, informers, rsc, events } = await setup();
    await cluster.create(res.replicasets, 'default', replicaSet('web', 4));
    await settle([rsc]);
    const rs = await getRS(cluster, 'web');
    await cluster.update(res.replicasets, { ...rs, spec: { ...rs.spec!, replicas: 2 } });
    await settle([rsc]);
    assert.equal(pods(cluster).length, 2);
    assert.equal(events.reasons().filter((r) => r === 'SuccessfulCreate').length, 4);
    const deleted = events.events.filter((e) => e.reason === 'SuccessfulDelete');
    assert.equal(deleted.length, 2);
    assert.equal(deleted[0].object, 'ReplicaSet/default/web');
    assert.match(deleted[0].message, /^Deleted pod: web-[a-z0-9]{5}$/);
    const victim = pods(cluster)[0];
    await cluster.delete(res.pods, 'default', victim.metadata!.name!);
    await settle([rsc]);
    assert.equal(pods(cluster).length, 2);
    assert.ok(!pods(cluster).some((p) => p.metadata!.uid === victim.metadata!.uid));
    assert.equal((await getRS(cluster, 'web')).status!.observedGeneration, 2);
    informers.stop();
  });

  test('a slow watch never makes it create twice (expectations)', async () => {
    const { cluster, informers, rsc } = await setup();
    await cluster.create(res.replicasets, 'default', replicaSet('web', 3));
    await settle([rsc]);
    assert.equal(pods(cluster).length, 3);
    // The RS is reconciled again while the pod creations are not yet observed.
    cluster.holdWatches();
    const rs = await getRS(cluster, 'web');
    await cluster.update(res.replicasets, { ...rs, spec: { ...rs.spec!, replicas: 5 } });
    cluster.releaseWatches();
    await new Promise((r) => setImmediate(r));
    cluster.holdWatches();
    await rsc.reconcile('default/web'); // creates 2; their ADDED events are held
    assert.equal(pods(cluster).length, 5);
    await rsc.reconcile('default/web'); // the cache still shows 3: must not create again
    await rsc.reconcile('default/web');
    assert.equal(pods(cluster).length, 5);
    assert.deepEqual(rsc.expectations.pending('default/web'), { adds: 2, deletes: 0 });
    cluster.releaseWatches();
    await settle([rsc]);
    assert.equal(pods(cluster).length, 5);
    assert.equal(cluster.writesOf('create', 'pods').length, 5);
    informers.stop();
  });

  test('a slow watch never makes it delete twice', async () => {
    const { cluster, informers, rsc } = await setup();
    await cluster.create(res.replicasets, 'default', replicaSet('web', 4));
    await settle([rsc]);
    const rs = await getRS(cluster, 'web');
    await cluster.update(res.replicasets, { ...rs, spec: { ...rs.spec!, replicas: 2 } });
    await new Promise((r) => setImmediate(r));
    cluster.holdWatches();
    await rsc.reconcile('default/web');
    await rsc.reconcile('default/web');
    assert.equal(pods(cluster).length, 2);
    assert.equal(cluster.writesOf('delete', 'pods').length, 2);
    cluster.releaseWatches();
    await settle([rsc]);
    assert.equal(pods(cluster).length, 2);
    assert.equal(cluster.writesOf('delete', 'pods').length, 2);
    informers.stop();
  });

  test('adopts matching orphans and releases pods that stop matching', async () => {
    const { cluster, informers, rsc } = await setup();
    await cluster.create(res.pods, 'default', {
      metadata: { name: 'orphan', labels: { app: 'web' } },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    await cluster.create(res.pods, 'default', {
      metadata: { name: 'other', labels: { app: 'db' } },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    const rs = await cluster.create(res.replicasets, 'default', replicaSet('web', 2));
    await settle([rsc]);
    const orphan = await cluster.get<Pod>(res.pods, 'default', 'orphan');
    assert.equal(orphan.metadata!.ownerReferences?.[0].uid, rs.metadata!.uid);
    assert.equal((await cluster.get<Pod>(res.pods, 'default', 'other')).metadata!.ownerReferences, undefined);
    assert.equal(pods(cluster).filter((p) => p.metadata!.labels!.app === 'web').length, 2);
    // Relabel the adopted pod: it is released and replaced.
    await cluster.update(res.pods, {
      ...orphan,
      metadata: { ...orphan.metadata!, labels: { app: 'debug' } },
    });
    await settle([rsc]);
    assert.equal(
      (await cluster.get<Pod>(res.pods, 'default', 'orphan')).metadata!.ownerReferences,
      undefined,
    );
    assert.equal(pods(cluster).filter((p) => p.metadata!.labels!.app === 'web').length, 2);
    informers.stop();
  });

  test('never claims pods controlled by someone else', async () => {
    const { cluster, informers, rsc } = await setup();
    await cluster.create(res.pods, 'default', {
      metadata: {
        name: 'taken',
        labels: { app: 'web' },
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'x', uid: 'u-x', controller: true },
        ],
      },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    await cluster.create(res.replicasets, 'default', replicaSet('web', 1));
    await settle([rsc]);
    assert.equal(pods(cluster).length, 2);
    assert.equal(
      (await cluster.get<Pod>(res.pods, 'default', 'taken')).metadata!.ownerReferences![0].uid,
      'u-x',
    );
    informers.stop();
  });

  test('counts ready and available replicas with minReadySeconds', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const { cluster, informers, rsc } = await setup({ now: () => now });
    await cluster.create(res.replicasets, 'default', {
      ...replicaSet('web', 2),
      spec: { ...replicaSet('web', 2).spec!, minReadySeconds: 30 },
    });
    await settle([rsc]);
    await runAllPods(cluster, now);
    await settle([rsc]);
    let st = (await getRS(cluster, 'web')).status!;
    assert.equal(st.readyReplicas, 2);
    assert.equal(st.availableReplicas, 0);
    now += 31_000;
    await rsc.reconcile('default/web');
    st = (await getRS(cluster, 'web')).status!;
    assert.equal(st.availableReplicas, 2);
    informers.stop();
  });

  test('creates at most burstReplicas per sync and stops a batch run at the first failure', async () => {
    const { cluster, informers, rsc } = await setup({ burstReplicas: 3 });
    await cluster.create(res.replicasets, 'default', replicaSet('web', 5));
    await new Promise((r) => setImmediate(r));
    await rsc.reconcile('default/web');
    assert.equal(cluster.writesOf('create', 'pods').length, 3);
    await settle([rsc]);
    assert.equal(pods(cluster).length, 5);

    const { forbiddenWithMessage } = await import('@kubit/api');
    const err = forbiddenWithMessage({ group: '', resource: 'pods' }, 'web-x', 'exceeded quota');
    const rs = await getRS(cluster, 'web');
    await cluster.update(res.replicasets, { ...rs, spec: { ...rs.spec!, replicas: 20 } });
    await new Promise((r) => setImmediate(r));
    cluster.failNext.push({ verb: 'create', resource: 'pods', error: err });
    const before = cluster.writesOf('create', 'pods').length;
    await assert.rejects(rsc.reconcile('default/web'), /exceeded quota/);
    // Slow start: the first batch (1 pod) failed, so no more were tried.
    assert.equal(cluster.writesOf('create', 'pods').length, before);
    assert.ok(rsc.expectations.satisfied('default/web'));
    const failure = (await getRS(cluster, 'web')).status!.conditions?.find(
      (c) => c.type === 'ReplicaFailure',
    );
    assert.equal(failure?.reason, 'FailedCreate');
    informers.stop();
  });

  test('deletes unscheduled, pending, not-ready pods first', () => {
    const mk = (
      name: string,
      node: string,
      phase: string,
      ready: boolean,
      created = '2026-01-01T00:00:00Z',
    ): Pod => ({
      metadata: { name, creationTimestamp: created },
      spec: { nodeName: node || undefined, containers: [] },
      status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
    });
    const all = [
      mk('running-ready', 'n1', 'Running', true),
      mk('running-notready', 'n2', 'Running', false),
      mk('pending-scheduled', 'n3', 'Pending', false),
      mk('unscheduled', '', 'Pending', false),
      mk('newer-ready', 'n4', 'Running', true, '2026-01-02T00:00:00Z'),
    ];
    assert.deepEqual(
      podsToDelete(all, 5).map((p) => p.metadata!.name),
      ['unscheduled', 'pending-scheduled', 'running-notready', 'newer-ready', 'running-ready'],
    );
    // Doubled-up pods go before lone ones.
    const doubled = [
      mk('a', 'n1', 'Running', true),
      mk('b', 'n2', 'Running', true),
      mk('c', 'n2', 'Running', true),
    ];
    assert.notEqual(podsToDelete(doubled, 1)[0].metadata!.name, 'a');
  });

  test('does not touch pods of a ReplicaSet being deleted', async () => {
    const { cluster, informers, rsc } = await setup();
    await cluster.create(res.replicasets, 'default', replicaSet('web', 2));
    await settle([rsc]);
    await runPod(cluster, pods(cluster)[0]);
    await cluster.delete(res.replicasets, 'default', 'web', { propagationPolicy: 'Foreground' });
    await settle([rsc]);
    assert.equal(pods(cluster).length, 2);
    informers.stop();
  });
});
