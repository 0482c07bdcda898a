import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { DeploymentController } from '../src/deployment/controller.js';
import { GarbageCollector } from '../src/garbagecollector.js';
import { ReplicaSetController } from '../src/replicaset.js';
import { FakeCluster } from '../src/testing.js';
import type { ConfigMapLike, KubeObject, OwnerReference, Pod, ReplicaSet } from './gc-types.js';
import { newFactory, replicaSet, settle, startInformers, template } from './helpers.js';

const monitored = [res.deployments, res.replicasets, res.pods, res.configmaps];

async function setup(withWorkloadControllers = false) {
  const cluster = new FakeCluster();
  const informers = newFactory(cluster);
  const gc = new GarbageCollector(cluster, informers, { resources: monitored });
  const controllers = [gc] as (GarbageCollector | ReplicaSetController | DeploymentController)[];
  if (withWorkloadControllers) {
    controllers.push(
      new ReplicaSetController(cluster, informers),
      new DeploymentController(cluster, informers),
    );
  }
  await startInformers(informers);
  return { cluster, informers, gc, run: () => settle(controllers) };
}

const ref = (o: KubeObject, block = true): OwnerReference => ({
  apiVersion: o.apiVersion!,
  kind: o.kind!,
  name: o.metadata!.name!,
  uid: o.metadata!.uid!,
  controller: true,
  blockOwnerDeletion: block,
});

const names = (c: FakeCluster, r = res.pods) =>
  c
    .all(r)
    .map((o) => o.metadata!.name)
    .sort();

async function ownedPods(cluster: FakeCluster, owner: KubeObject, n: number, block = true) {
  for (let i = 0; i < n; i++) {
    await cluster.create<Pod>(res.pods, 'default', {
      metadata: { name: `p${i}`, ownerReferences: [ref(owner, block)] },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
  }
}

describe('garbage collector', () => {
  test('background: dependents of a deleted owner are deleted', async () => {
    const { cluster, informers, run } = await setup();
    const rs = await cluster.create<ReplicaSet>(res.replicasets, 'default', replicaSet('web', 0));
    await ownedPods(cluster, rs, 3);
    await cluster.create<Pod>(res.pods, 'default', { metadata: { name: 'free' }, spec: { containers: [] } });
    await run();
    assert.deepEqual(names(cluster), ['free', 'p0', 'p1', 'p2']);
    await cluster.delete(res.replicasets, 'default', 'web', { propagationPolicy: 'Background' });
    await run();
    assert.deepEqual(names(cluster), ['free']);
    informers.stop();
  });

  test('foreground: the owner stays until its blocking dependents are gone', async () => {
    const { cluster, informers, run } = await setup();
    const rs = await cluster.create<ReplicaSet>(res.replicasets, 'default', replicaSet('web', 0));
    await ownedPods(cluster, rs, 2);
    // One pod has a finalizer of its own, so it lingers.
    const p0 = await cluster.get<Pod>(res.pods, 'default', 'p0');
    await cluster.update(res.pods, { ...p0, metadata: { ...p0.metadata, finalizers: ['example.com/hold'] } });
    await run();
    await cluster.delete(res.replicasets, 'default', 'web', { propagationPolicy: 'Foreground' });
    await run();
    const owner = await cluster.get<ReplicaSet>(res.replicasets, 'default', 'web');
    assert.ok(owner.metadata!.deletionTimestamp);
    assert.deepEqual(owner.metadata!.finalizers, ['foregroundDeletion']);
    assert.deepEqual(names(cluster), ['p0']);
    const lingering = await cluster.get<Pod>(res.pods, 'default', 'p0');
    await cluster.update(res.pods, {
      ...lingering,
      metadata: { ...lingering.metadata, finalizers: undefined },
    });
    await run();
    assert.deepEqual(names(cluster), []);
    assert.deepEqual(names(cluster, res.replicasets), []);
    informers.stop();
  });

  test('orphan: dependents lose the ownerReference and stay', async () => {
    const { cluster, informers, run } = await setup();
    const rs = await cluster.create<ReplicaSet>(res.replicasets, 'default', replicaSet('web', 0));
    await ownedPods(cluster, rs, 2);
    await run();
    await cluster.delete(res.replicasets, 'default', 'web', { propagationPolicy: 'Orphan' });
    await run();
    assert.deepEqual(names(cluster, res.replicasets), []);
    assert.deepEqual(names(cluster), ['p0', 'p1']);
    for (const p of cluster.all<Pod>(res.pods)) assert.equal(p.metadata!.ownerReferences, undefined);
    informers.stop();
  });

  test('a dependent with another live owner loses only the dead reference', async () => {
    const { cluster, informers, run } = await setup();
    const a = await cluster.create<ConfigMapLike>(res.configmaps, 'default', { metadata: { name: 'a' } });
    const b = await cluster.create<ConfigMapLike>(res.configmaps, 'default', { metadata: { name: 'b' } });
    await cluster.create<ConfigMapLike>(res.configmaps, 'default', {
      metadata: {
        name: 'shared',
        ownerReferences: [
          { ...ref(a), controller: false },
          { ...ref(b), controller: false },
        ],
      },
    });
    await run();
    await cluster.delete(res.configmaps, 'default', 'a');
    await run();
    const shared = await cluster.get<ConfigMapLike>(res.configmaps, 'default', 'shared');
    assert.deepEqual(
      shared.metadata!.ownerReferences!.map((r) => r.name),
      ['b'],
    );
    await cluster.delete(res.configmaps, 'default', 'b');
    await run();
    assert.deepEqual(names(cluster, res.configmaps), []);
    informers.stop();
  });

  test('never deletes a dependent whose owner is of an unknown kind, or whose owner exists but is not cached', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create<Pod>(res.pods, 'default', {
      metadata: {
        name: 'p',
        ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u1' }],
      },
      spec: { containers: [] },
    });
    await run();
    assert.deepEqual(names(cluster), ['p']);
    informers.stop();
  });

  test('deleting a Deployment in the foreground removes its ReplicaSets and pods first', async () => {
    const { cluster, informers, run } = await setup(true);
    await cluster.create(res.deployments, 'default', {
      metadata: { name: 'web' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }) },
    });
    await run();
    assert.equal(names(cluster).length, 2);
    assert.equal(names(cluster, res.replicasets).length, 1);
    await cluster.delete(res.deployments, 'default', 'web', { propagationPolicy: 'Foreground' });
    await run();
    assert.deepEqual(names(cluster), []);
    assert.deepEqual(names(cluster, res.replicasets), []);
    assert.deepEqual(names(cluster, res.deployments), []);
    informers.stop();
  });
});

describe('garbage collector: custom resources', () => {
  test('dependents of a custom object are collected once discovery lists its resource', async () => {
    const crontabs = {
      group: 'stable.example.com',
      version: 'v1',
      resource: 'crontabs',
      namespaced: true,
      kind: 'CronTab',
    };
    const cluster = new FakeCluster();
    const informers = newFactory(cluster);
    let served: (typeof crontabs)[] = [crontabs];
    const gc = new GarbageCollector(cluster, informers, {
      resources: monitored,
      discover: async () => served,
    });
    await startInformers(informers);
    await gc.rediscover();
    const tab = await cluster.create<KubeObject>(crontabs, 'default', {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'tab' },
    });
    await ownedPods(cluster, tab, 2);
    await settle([gc]);
    assert.deepEqual(names(cluster), ['p0', 'p1'], 'the owner exists: nothing collected');
    await cluster.delete(crontabs, 'default', 'tab');
    for (let i = 0; i < 50 && names(cluster).length > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      await settle([gc]);
    }
    assert.deepEqual(names(cluster), []);
    // A resource discovery no longer lists is no longer watched.
    served = [];
    await gc.rediscover();
    assert.deepEqual(gc.customWatched(), []);
    informers.stop();
  });
});
