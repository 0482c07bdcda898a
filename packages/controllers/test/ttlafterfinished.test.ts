// The TTL-after-finished controller over the fake cluster: a finished Job is
// deleted (in the foreground) once its TTL has passed, not before; a running
// Job or one without a TTL is left alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Job } from '@kubit/api';
import { resources as res } from '@kubit/client';
import { FakeCluster } from '../src/testing.js';
import { TTLAfterFinishedController, timeLeftMs } from '../src/ttlafterfinished.js';
import { newFactory, settle, startInformers } from './helpers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function finishedJob(name: string, ttl: number | undefined): Job {
  return {
    metadata: { name, namespace: 'default' },
    spec: { ttlSecondsAfterFinished: ttl, template: { spec: { containers: [{ name: 'c', image: 'x' }] } } },
  };
}

async function markComplete(c: FakeCluster, name: string, at: number): Promise<void> {
  const j = await c.get<Job>(res.jobs, 'default', name);
  const t = new Date(at).toISOString();
  await c.update(
    res.jobs,
    {
      ...j,
      status: {
        conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: t }],
        completionTime: t,
      },
    },
    'status',
  );
}

test('timeLeftMs: from the finish condition, only with a TTL', () => {
  const j = finishedJob('a', 30);
  assert.equal(timeLeftMs(j, T0), undefined, 'not finished');
  j.status = {
    conditions: [{ type: 'Failed', status: 'True', lastTransitionTime: new Date(T0).toISOString() }],
  };
  assert.equal(timeLeftMs(j, T0 + 10_000), 20_000);
  assert.equal(timeLeftMs(j, T0 + 40_000), -10_000);
  assert.equal(timeLeftMs({ ...j, spec: { ...j.spec!, ttlSecondsAfterFinished: undefined } }, T0), undefined);
});

test('deletes a finished Job in the foreground once its TTL passes', async () => {
  const clock = { now: T0 };
  const cluster = new FakeCluster({ now: () => clock.now });
  const informers = newFactory(cluster);
  const ttl = new TTLAfterFinishedController(cluster, informers, { now: () => clock.now });
  await startInformers(informers);
  await cluster.create(res.jobs, 'default', finishedJob('done', 30));
  await cluster.create(res.jobs, 'default', finishedJob('keep', undefined));
  await cluster.create(res.jobs, 'default', finishedJob('running', 0));
  await markComplete(cluster, 'done', T0);
  await markComplete(cluster, 'keep', T0);
  await settle([ttl]);
  assert.equal(cluster.writesOf('delete', 'jobs').length, 0, 'not before the TTL');
  clock.now = T0 + 31_000;
  await ttl.reconcile('default/done');
  await ttl.reconcile('default/keep');
  await ttl.reconcile('default/running');
  assert.deepEqual(
    cluster.writesOf('delete', 'jobs').map((w) => w.name),
    ['done'],
  );
  const gone = await cluster.get<Job>(res.jobs, 'default', 'done');
  assert.ok(gone.metadata?.deletionTimestamp);
  assert.deepEqual(gone.metadata?.finalizers, ['foregroundDeletion']);
  informers.stop();
});
