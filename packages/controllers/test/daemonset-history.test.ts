// The DaemonSet controller's revision history over the in-memory FakeCluster:
// a revision per template, renumbered when the template comes back, pruned to
// revisionHistoryLimit, and a name collision counted in status.collisionCount.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ControllerRevision, DaemonSet, Node } from '@kubit/api';
import { resources as res } from '@kubit/client';
import { DaemonSetController } from '../src/daemonset/controller.js';
import { revisionHash, revisionName } from '../src/daemonset/history.js';
import { RecordingEvents } from '../src/events.js';
import { FakeCluster } from '../src/testing.js';
import type { Pod } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

async function setup() {
  const cluster = new FakeCluster();
  for (const name of ['n1', 'n2']) await cluster.create<Node>(res.nodes, undefined, { metadata: { name } });
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const dsc = new DaemonSetController(cluster, informers, { events });
  await startInformers(informers);
  return { cluster, informers, dsc, events };
}

function daemonSet(image: string, limit = 10): DaemonSet {
  return {
    metadata: { name: 'agent', namespace: 'default' },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      revisionHistoryLimit: limit,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
      template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c', image }] } },
    },
  };
}

const revisions = (c: FakeCluster) =>
  c
    .all<ControllerRevision>(res.controllerrevisions)
    .map((cr) => ({ revision: cr.revision, image: imageOf(cr) }))
    .sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0));

function imageOf(cr: ControllerRevision): string | undefined {
  return (cr.data as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template.spec
    .containers[0].image;
}

async function setImage(c: FakeCluster, image: string): Promise<void> {
  const ds = await c.get<DaemonSet>(res.daemonsets, 'default', 'agent');
  const next = structuredClone(ds);
  next.spec!.template.spec!.containers[0].image = image;
  await c.update(res.daemonsets, next);
}

/** Stands in for the kubelet: pods being deleted go at once. */
async function finishDeletes(c: FakeCluster): Promise<void> {
  for (const p of c.all<Pod>(res.pods)) {
    if (p.metadata?.deletionTimestamp)
      await c.delete(res.pods, 'default', p.metadata.name!, { gracePeriodSeconds: 0 });
  }
}

describe('DaemonSet history', () => {
  test('a revision per template; an old template coming back becomes the newest revision', async () => {
    const { cluster, informers, dsc } = await setup();
    await cluster.create(res.daemonsets, 'default', daemonSet('img:1'));
    await settle([dsc]);
    assert.equal(cluster.all<Pod>(res.pods).length, 2);
    await setImage(cluster, 'img:2');
    await settle([dsc]);
    assert.deepEqual(revisions(cluster), [
      { revision: 1, image: 'img:1' },
      { revision: 2, image: 'img:2' },
    ]);
    await setImage(cluster, 'img:1');
    await settle([dsc]);
    assert.deepEqual(revisions(cluster), [
      { revision: 2, image: 'img:2' },
      { revision: 3, image: 'img:1' },
    ]);
    const ds = await cluster.get<DaemonSet>(res.daemonsets, 'default', 'agent');
    const names = cluster.all<ControllerRevision>(res.controllerrevisions).map((cr) => cr.metadata?.name);
    assert.ok(names.includes(revisionName('agent', revisionHash(ds))));
    informers.stop();
  });

  test('old revisions beyond revisionHistoryLimit are deleted, oldest first, once no pod runs them', async () => {
    const { cluster, informers, dsc } = await setup();
    await cluster.create(res.daemonsets, 'default', daemonSet('img:1', 1));
    await settle([dsc]);
    for (const image of ['img:2', 'img:3', 'img:4']) {
      await setImage(cluster, image);
      // The unready old pods are replaced at once; the kubelet finishes their deletion.
      for (let i = 0; i < 4; i++) {
        await settle([dsc]);
        await finishDeletes(cluster);
      }
    }
    await settle([dsc]);
    const pods = cluster.all<Pod>(res.pods);
    assert.ok(
      pods.every((p) => p.spec?.containers[0].image === 'img:4'),
      JSON.stringify(pods.map((p) => p.spec?.containers[0].image)),
    );
    assert.deepEqual(revisions(cluster), [
      { revision: 3, image: 'img:3' },
      { revision: 4, image: 'img:4' },
    ]);
    informers.stop();
  });

  test('a revision name taken by another template bumps status.collisionCount', async () => {
    const { cluster, informers, dsc } = await setup();
    const ds = daemonSet('img:1');
    await cluster.create<ControllerRevision>(res.controllerrevisions, 'default', {
      metadata: { name: revisionName('agent', revisionHash(ds)), namespace: 'default' },
      data: { something: 'else' },
      revision: 1,
    });
    await cluster.create(res.daemonsets, 'default', ds);
    await settle([dsc]);
    const got = await cluster.get<DaemonSet>(res.daemonsets, 'default', 'agent');
    assert.equal(got.status?.collisionCount, 1);
    const own = cluster
      .all<ControllerRevision>(res.controllerrevisions)
      .filter((cr) => cr.metadata?.ownerReferences?.[0]?.uid === got.metadata?.uid);
    assert.equal(own.length, 1);
    assert.equal(own[0].metadata?.name, revisionName('agent', revisionHash(got)));
    assert.notEqual(revisionHash(got), revisionHash(ds));
    assert.equal(cluster.all<Pod>(res.pods).length, 2);
    informers.stop();
  });
});
