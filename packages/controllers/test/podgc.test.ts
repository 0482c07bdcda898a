import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { PodGarbageCollector } from '../src/podgc.js';
import { FakeCluster } from '../src/testing.js';
import type { Node, Pod } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

describe('pod garbage collector', () => {
  test('force-deletes pods of a node that stays gone past the quarantine', async () => {
    const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
    const cluster = new FakeCluster({ now: () => clock.now });
    const informers = newFactory(cluster);
    const gc = new PodGarbageCollector(cluster, informers, { now: () => clock.now, quarantineMs: 40_000 });
    await startInformers(informers);
    await cluster.create(res.nodes, undefined, { metadata: { name: 'alive' } } satisfies Node);
    const pod = (name: string, nodeName?: string) =>
      cluster.create(res.pods, 'default', {
        metadata: { name },
        spec: { nodeName, containers: [] },
      } satisfies Pod);
    await pod('on-alive', 'alive');
    await pod('on-ghost', 'ghost');
    await pod('pending');
    await settle([gc]);
    assert.equal(cluster.all(res.pods).length, 3, 'nothing goes during the quarantine');
    clock.now += 41_000;
    await gc.reconcile('default/on-ghost');
    await gc.reconcile('default/on-alive');
    await gc.reconcile('default/pending');
    assert.deepEqual(
      cluster
        .all<Pod>(res.pods)
        .map((p) => p.metadata!.name)
        .sort(),
      ['on-alive', 'pending'],
    );
    informers.stop();
  });
});
