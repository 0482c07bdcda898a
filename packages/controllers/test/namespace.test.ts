import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { NamespaceController, namespacedForCleanup } from '../src/namespace.js';
import { FakeCluster } from '../src/testing.js';
import type { Namespace, Pod } from '../src/types.js';
import { newFactory, replicaSet, settle, sleep, startInformers } from './helpers.js';

describe('namespace controller', () => {
  test('deleting a namespace deletes its content, then the namespace', async () => {
    const cluster = new FakeCluster();
    const informers = newFactory(cluster);
    const nc = new NamespaceController(cluster, informers, {
      resources: namespacedForCleanup,
      recheckMs: 20,
    });
    await startInformers(informers);
    await cluster.create(res.namespaces, undefined, { metadata: { name: 'team' } } satisfies Namespace);
    await cluster.create(res.namespaces, undefined, { metadata: { name: 'other' } } satisfies Namespace);
    await cluster.create(res.replicasets, 'team', replicaSet('web', 1));
    await cluster.create(res.configmaps, 'team', { metadata: { name: 'cfg' } });
    await cluster.create(res.pods, 'team', {
      metadata: { name: 'held', finalizers: ['example.com/hold'] },
      spec: { containers: [] },
    } satisfies Pod);
    await cluster.create(res.configmaps, 'other', { metadata: { name: 'cfg' } });
    await cluster.delete(res.namespaces, undefined, 'team');
    const ns = await cluster.get<Namespace>(res.namespaces, undefined, 'team');
    assert.equal(ns.status!.phase, 'Terminating');
    await settle([nc]);
    assert.equal(cluster.all(res.configmaps, 'team').length, 0);
    assert.equal(cluster.all(res.replicasets, 'team').length, 0);
    // The pod with a finalizer is terminating; the namespace waits for it.
    assert.equal(cluster.all(res.pods, 'team').length, 1);
    assert.deepEqual((await cluster.get<Namespace>(res.namespaces, undefined, 'team')).spec!.finalizers, [
      'kubernetes',
    ]);
    const held = await cluster.get<Pod>(res.pods, 'team', 'held');
    await cluster.update(res.pods, { ...held, metadata: { ...held.metadata, finalizers: undefined } });
    for (let i = 0; i < 50 && cluster.all(res.namespaces).length > 1; i++) {
      await sleep(25);
      await settle([nc]);
    }
    assert.deepEqual(
      cluster.all(res.namespaces).map((n) => n.metadata!.name),
      ['other'],
    );
    assert.equal(cluster.all(res.configmaps, 'other').length, 1);
    informers.stop();
  });

  test('custom resources discovery finds are emptied too', async () => {
    const cluster = new FakeCluster();
    const informers = newFactory(cluster);
    const crontabs = {
      group: 'stable.example.com',
      version: 'v1',
      resource: 'crontabs',
      namespaced: true,
      kind: 'CronTab',
    };
    let asked = 0;
    const nc = new NamespaceController(cluster, informers, {
      resources: namespacedForCleanup,
      discover: async () => {
        asked++;
        return [crontabs];
      },
      recheckMs: 20,
    });
    await startInformers(informers);
    await cluster.create(res.namespaces, undefined, { metadata: { name: 'team' } } satisfies Namespace);
    await cluster.create(crontabs, 'team', { metadata: { name: 'tab' }, spec: { cronSpec: '* * * * *' } });
    await cluster.delete(res.namespaces, undefined, 'team');
    for (let i = 0; i < 50 && cluster.all(res.namespaces).length > 0; i++) {
      await sleep(25);
      await settle([nc]);
    }
    assert.ok(asked > 0);
    assert.equal(cluster.all(crontabs, 'team').length, 0);
    assert.equal(cluster.all(res.namespaces).length, 0);
    informers.stop();
  });
});
