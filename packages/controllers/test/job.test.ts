// The Job controller's logic over the in-memory FakeCluster and the client's
// real informers: completions and parallelism, counting through
// uncountedTerminatedPods and the tracking finalizer, backoffLimit with its
// back-off, activeDeadlineSeconds, suspend, Indexed Jobs and pod failure
// policies. The same controller on a real stack is job-stack.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Job, JobSpec, Pod } from '@kubit/api';
import { resources as res } from '@kubit/client';
import { RecordingEvents } from '../src/events.js';
import { JobController } from '../src/job/controller.js';
import { COMPLETION_INDEX_ANNOTATION, COMPLETION_INDEX_LABEL } from '../src/job/indexes.js';
import { JOB_TRACKING_FINALIZER } from '../src/job/pods.js';
import { FakeCluster } from '../src/testing.js';
import { newFactory, settle, startInformers } from './helpers.js';

async function setup() {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const now = () => clock.now;
  const cluster = new FakeCluster({ now });
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const jc = new JobController(cluster, informers, { now, events });
  await startInformers(informers);
  return { clock, cluster, informers, jc, events, run: () => settle([jc]) };
}

function job(name: string, spec: Partial<JobSpec> = {}): Job {
  return {
    metadata: { name, namespace: 'default' },
    spec: {
      template: { spec: { containers: [{ name: 'main', image: 'busybox' }], restartPolicy: 'Never' } },
      ...spec,
    },
  };
}

const getJob = (c: FakeCluster, name: string) => c.get<Job>(res.jobs, 'default', name);
const pods = (c: FakeCluster) => c.all<Pod>(res.pods);
const running = (c: FakeCluster) =>
  pods(c).filter(
    (p) => !p.metadata?.deletionTimestamp && !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''),
  );

/** What a kubelet reports when the pod's container exits with `exitCode`. */
async function finish(
  c: FakeCluster,
  p: Pod,
  exitCode: number,
  conditions: { type: string; status: string }[] = [],
) {
  const at = new Date(c.now()).toISOString();
  await c.update(
    res.pods,
    {
      ...p,
      status: {
        phase: exitCode === 0 ? 'Succeeded' : 'Failed',
        conditions,
        containerStatuses: [
          {
            name: 'main',
            image: 'busybox',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode, finishedAt: at, startedAt: at } },
          },
        ],
      },
    },
    'status',
  );
}

const types = (j: Job) => (j.status?.conditions ?? []).filter((c) => c.status === 'True').map((c) => c.type);

describe('Job controller', () => {
  test('5 completions, parallelism 2: never more than 2 at a time, then Complete', async () => {
    const { cluster, informers, events, run } = await setup();
    const created = await cluster.create(res.jobs, 'default', job('pi', { completions: 5, parallelism: 2 }));
    let maxActive = 0;
    for (let round = 0; round < 10; round++) {
      await run();
      const now = running(cluster);
      maxActive = Math.max(maxActive, now.length);
      if (now.length === 0) break;
      await finish(cluster, now[0], 0);
    }
    await run();
    const j = await getJob(cluster, 'pi');
    assert.equal(maxActive, 2);
    assert.equal(j.status?.succeeded, 5);
    assert.equal(j.status?.failed ?? 0, 0);
    assert.equal(j.status?.active, 0);
    assert.deepEqual(j.status?.uncountedTerminatedPods, { succeeded: [], failed: [] });
    assert.deepEqual(types(j), ['SuccessCriteriaMet', 'Complete']);
    assert.equal(j.status?.conditions?.[1].reason, 'CompletionsReached');
    assert.ok(j.status?.startTime && j.status.completionTime);
    assert.equal(cluster.writesOf('create', 'pods').length, 5);
    for (const p of pods(cluster)) {
      assert.deepEqual(p.metadata?.ownerReferences, [
        {
          apiVersion: 'batch/v1',
          kind: 'Job',
          name: 'pi',
          uid: created.metadata?.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      assert.equal(p.metadata?.labels?.['batch.kubernetes.io/job-name'], 'pi');
      assert.equal(p.metadata?.finalizers, undefined, 'counted pods lose the tracking finalizer');
    }
    assert.equal(events.reasons().filter((r) => r === 'SuccessfulCreate').length, 5);
    assert.equal(events.reasons().at(-1), 'Completed');
    informers.stop();
  });

  test('a slow watch never makes it create or delete twice (expectations)', async () => {
    const { cluster, informers, jc, events } = await setup();
    await cluster.create(res.jobs, 'default', job('slow', { completions: 6, parallelism: 3 }));
    await new Promise((r) => setImmediate(r));
    cluster.holdWatches();
    await jc.reconcile('default/slow'); // creates 3; their ADDED events are held
    await jc.reconcile('default/slow'); // the cache still shows none: must not create again
    assert.equal(cluster.writesOf('create', 'pods').length, 3);
    cluster.releaseWatches();
    await settle([jc]);
    assert.equal(cluster.writesOf('create', 'pods').length, 3);
    // Fewer in parallel: one pod goes, once.
    const j = await getJob(cluster, 'slow');
    await cluster.update(res.jobs, { ...j, spec: { ...j.spec!, parallelism: 2 } });
    await new Promise((r) => setImmediate(r));
    cluster.holdWatches();
    await jc.reconcile('default/slow');
    await jc.reconcile('default/slow');
    assert.equal(cluster.writesOf('delete', 'pods').length, 1);
    cluster.releaseWatches();
    await settle([jc]);
    assert.equal(cluster.writesOf('delete', 'pods').length, 1);
    assert.equal(events.reasons().filter((r) => r === 'SuccessfulDelete').length, 1);
    assert.equal(running(cluster).length, 2);
    informers.stop();
  });

  test('every pod carries the tracking finalizer until it is counted', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create(res.jobs, 'default', job('t', { completions: 2, parallelism: 2 }));
    await run();
    for (const p of pods(cluster)) assert.deepEqual(p.metadata?.finalizers, [JOB_TRACKING_FINALIZER]);
    informers.stop();
  });

  test('a crash between recording a pod and removing its finalizer counts it once', async () => {
    const { cluster, informers, jc, run } = await setup();
    await cluster.create(res.jobs, 'default', job('once', { completions: 2, parallelism: 1 }));
    await run();
    const [p] = running(cluster);
    // The finalizer removal fails: the pod is recorded as uncounted and keeps its finalizer.
    await finish(cluster, p, 0);
    cluster.failNext.push({ verb: 'update', resource: 'pods', error: new Error('connection reset') });
    await new Promise((r) => setImmediate(r));
    await assert.rejects(jc.reconcile('default/once'), /connection reset/);
    let j = await getJob(cluster, 'once');
    assert.deepEqual(j.status?.uncountedTerminatedPods?.succeeded, [p.metadata?.uid]);
    assert.equal(j.status?.succeeded ?? 0, 0);
    informers.stop();
    // A new controller (a restarted controller manager) picks up from the status.
    const informers2 = newFactory(cluster);
    const jc2 = new JobController(cluster, informers2, { now: cluster.now });
    await startInformers(informers2);
    await settle([jc2]);
    j = await getJob(cluster, 'once');
    assert.equal(j.status?.succeeded, 1);
    assert.deepEqual(j.status?.uncountedTerminatedPods, { succeeded: [], failed: [] });
    assert.equal(running(cluster).length, 1);
    assert.equal(cluster.writesOf('create', 'pods').length, 2);
    informers2.stop();
  });

  test('backoffLimit: failed pods are replaced after the back-off, then the Job fails', async () => {
    const { clock, cluster, informers, jc, events, run } = await setup();
    await cluster.create(res.jobs, 'default', job('bad', { backoffLimit: 2 }));
    await run();
    for (let failure = 1; failure <= 3; failure++) {
      const [p] = running(cluster);
      assert.ok(p, `a pod runs before failure ${failure}`);
      await finish(cluster, p, 1);
      await run();
      if (failure < 3) {
        // Waiting out the back-off: 10 s after the first failure, 20 s after the second.
        assert.equal(running(cluster).length, 0, 'no replacement during the back-off');
        clock.now += 10_000 * 2 ** (failure - 1) + 1;
        await jc.reconcile('default/bad');
        await run();
      }
    }
    const j = await getJob(cluster, 'bad');
    assert.equal(j.status?.failed, 3);
    assert.deepEqual(types(j), ['FailureTarget', 'Failed']);
    const failed = j.status?.conditions?.find((c) => c.type === 'Failed');
    assert.equal(failed?.reason, 'BackoffLimitExceeded');
    assert.equal(failed?.message, 'Job has reached the specified backoff limit');
    assert.equal(cluster.writesOf('create', 'pods').length, 3);
    assert.equal(events.reasons().at(-1), 'BackoffLimitExceeded');
    informers.stop();
  });

  test('a restarted controller keeps waiting out the back-off', async () => {
    const { clock, cluster, informers, run } = await setup();
    await cluster.create(res.jobs, 'default', job('patient', { backoffLimit: 3 }));
    await run();
    await finish(cluster, running(cluster)[0], 1);
    await run();
    informers.stop();
    clock.now += 1000;
    const informers2 = newFactory(cluster);
    const jc2 = new JobController(cluster, informers2, { now: cluster.now });
    await startInformers(informers2);
    await settle([jc2]);
    assert.equal(running(cluster).length, 0, 'still in the 10 s back-off');
    clock.now += 9001;
    await jc2.reconcile('default/patient');
    assert.equal(running(cluster).length, 1);
    informers2.stop();
  });

  test('activeDeadlineSeconds: running pods are deleted and the Job fails with DeadlineExceeded', async () => {
    const { clock, cluster, informers, jc, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('slow', { parallelism: 2, completions: 4, activeDeadlineSeconds: 30 }),
    );
    await run();
    assert.equal(running(cluster).length, 2);
    clock.now += 31_000;
    await jc.reconcile('default/slow');
    await run();
    const j = await getJob(cluster, 'slow');
    assert.deepEqual(types(j), ['FailureTarget', 'Failed']);
    assert.equal(j.status?.conditions?.at(-1)?.reason, 'DeadlineExceeded');
    assert.equal(pods(cluster).length, 0, 'deleted pods went once their finalizers were removed');
    assert.equal(j.status?.failed, 2);
    informers.stop();
  });

  test('suspend deletes the running pods; resume starts them again', async () => {
    const { cluster, informers, events, run } = await setup();
    await cluster.create(res.jobs, 'default', job('s', { parallelism: 2, completions: 2 }));
    await run();
    let j = await getJob(cluster, 's');
    await cluster.update(res.jobs, { ...j, spec: { ...j.spec!, suspend: true } });
    await run();
    j = await getJob(cluster, 's');
    assert.equal(running(cluster).length, 0);
    assert.equal(j.status?.active, 0);
    assert.deepEqual(types(j), ['Suspended']);
    assert.equal(j.status?.conditions?.[0].reason, 'JobSuspended');
    await cluster.update(res.jobs, { ...j, spec: { ...j.spec!, suspend: false } });
    await run();
    j = await getJob(cluster, 's');
    assert.equal(running(cluster).length, 2);
    assert.equal(j.status?.conditions?.[0].status, 'False');
    assert.equal(j.status?.conditions?.[0].reason, 'JobResumed');
    assert.ok(events.reasons().includes('Suspended') && events.reasons().includes('Resumed'));
    informers.stop();
  });

  test('Indexed: each pod gets its index; completedIndexes as intervals', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('ix', { completions: 4, parallelism: 4, completionMode: 'Indexed' }),
    );
    await run();
    const ps = running(cluster);
    const byIndex = new Map(ps.map((p) => [p.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION], p]));
    assert.deepEqual([...byIndex.keys()].sort(), ['0', '1', '2', '3']);
    for (const [ix, p] of byIndex) {
      assert.equal(p.metadata?.labels?.[COMPLETION_INDEX_LABEL], ix);
      assert.equal(p.spec?.hostname, `ix-${ix}`);
      assert.match(p.metadata?.name ?? '', new RegExp(`^ix-${ix}-[a-z0-9]{5}$`));
      assert.deepEqual(p.spec?.containers[0].env, [
        {
          name: 'JOB_COMPLETION_INDEX',
          valueFrom: { fieldRef: { fieldPath: `metadata.annotations['${COMPLETION_INDEX_ANNOTATION}']` } },
        },
      ]);
    }
    for (const ix of ['0', '2', '3']) await finish(cluster, byIndex.get(ix)!, 0);
    await run();
    let j = await getJob(cluster, 'ix');
    assert.equal(j.status?.completedIndexes, '0,2-3');
    assert.equal(j.status?.succeeded, 3);
    assert.deepEqual(types(j), []);
    await finish(cluster, byIndex.get('1')!, 0);
    await run();
    j = await getJob(cluster, 'ix');
    assert.equal(j.status?.completedIndexes, '0-3');
    assert.deepEqual(types(j), ['SuccessCriteriaMet', 'Complete']);
    informers.stop();
  });

  test('Indexed with backoffLimitPerIndex: a failed index is retried, then recorded in failedIndexes', async () => {
    const { clock, cluster, informers, jc, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('pi', { completions: 2, parallelism: 2, completionMode: 'Indexed', backoffLimitPerIndex: 1 }),
    );
    await run();
    const index = (p: Pod) => p.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION];
    for (let attempt = 0; attempt < 2; attempt++) {
      const one = running(cluster).find((p) => index(p) === '1');
      assert.ok(one, `index 1 runs (attempt ${attempt})`);
      assert.equal(
        one.metadata?.annotations?.['batch.kubernetes.io/job-index-failure-count'],
        String(attempt),
      );
      await finish(cluster, one, 3);
      await run();
      clock.now += 60_000;
      await jc.reconcile('default/pi');
      await run();
    }
    await finish(cluster, running(cluster).find((p) => index(p) === '0')!, 0);
    await run();
    const j = await getJob(cluster, 'pi');
    assert.equal(j.status?.failedIndexes, '1');
    assert.equal(j.status?.completedIndexes, '0');
    assert.equal(j.status?.conditions?.at(-1)?.type, 'Failed');
    assert.equal(j.status?.conditions?.at(-1)?.reason, 'FailedIndexes');
    informers.stop();
  });

  test('backoffLimitPerIndex: a failed index waits out its own back-off, the others go on', async () => {
    const { clock, cluster, informers, jc, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('own', { completions: 3, parallelism: 2, completionMode: 'Indexed', backoffLimitPerIndex: 2 }),
    );
    await run();
    const index = (p: Pod) => p.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION];
    const indexes = () => running(cluster).map(index).sort();
    assert.deepEqual(indexes(), ['0', '1']);
    await finish(cluster, running(cluster).find((p) => index(p) === '1')!, 1);
    await run();
    assert.deepEqual(indexes(), ['0', '2'], 'index 2 takes the free place at once');
    await finish(cluster, running(cluster).find((p) => index(p) === '0')!, 0);
    await run();
    assert.deepEqual(indexes(), ['2'], 'index 1 still in its back-off');
    clock.now += 10_001;
    await jc.reconcile('default/own');
    await run();
    assert.deepEqual(indexes(), ['1', '2']);
    informers.stop();
  });

  test('podFailurePolicy: Ignore does not count, FailJob fails the Job', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('pfp', {
        backoffLimit: 0,
        podFailurePolicy: {
          rules: [
            { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
            { action: 'FailJob', onExitCodes: { containerName: 'main', operator: 'In', values: [42] } },
          ],
        },
      }),
    );
    await run();
    // Disrupted: not counted (backoffLimit 0 would fail the Job), and replaced at once.
    await finish(cluster, running(cluster)[0], 137, [{ type: 'DisruptionTarget', status: 'True' }]);
    await run();
    let j = await getJob(cluster, 'pfp');
    assert.equal(j.status?.failed ?? 0, 0);
    assert.deepEqual(types(j), []);
    assert.equal(running(cluster).length, 1);
    const [p] = running(cluster);
    await finish(cluster, p, 42);
    await run();
    j = await getJob(cluster, 'pfp');
    assert.deepEqual(types(j), ['FailureTarget', 'Failed']);
    const failed = j.status?.conditions?.at(-1);
    assert.equal(failed?.reason, 'PodFailurePolicy');
    assert.equal(
      failed?.message,
      `Container main for pod default/${p.metadata?.name} failed with exit code 42 matching FailJob rule at index 1`,
    );
    informers.stop();
  });

  test('successPolicy: the Job succeeds when its rule is met, and its other pods are stopped', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create(
      res.jobs,
      'default',
      job('leader', {
        completions: 3,
        parallelism: 3,
        completionMode: 'Indexed',
        successPolicy: { rules: [{ succeededIndexes: '0' }] },
      }),
    );
    await run();
    const leader = running(cluster).find(
      (p) => p.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION] === '0',
    );
    await finish(cluster, leader!, 0);
    await run();
    const j = await getJob(cluster, 'leader');
    assert.deepEqual(types(j), ['SuccessCriteriaMet', 'Complete']);
    assert.equal(j.status?.conditions?.at(-1)?.reason, 'SuccessPolicy');
    assert.equal(j.status?.conditions?.at(-1)?.message, 'Matched rules at index 0');
    assert.equal(j.status?.completedIndexes, '0');
    assert.equal(running(cluster).length, 0);
    informers.stop();
  });

  test('podReplacementPolicy Failed: a terminating pod is replaced only once it has failed', async () => {
    const { clock, cluster, informers, jc, run } = await setup();
    await cluster.create(res.jobs, 'default', job('patient', { podReplacementPolicy: 'Failed' }));
    await run();
    const [p] = running(cluster);
    await cluster.delete(res.pods, 'default', p.metadata?.name ?? '');
    await run();
    let j = await getJob(cluster, 'patient');
    assert.equal(running(cluster).length, 0, 'no replacement while it terminates');
    assert.equal(j.status?.terminating, 1);
    const terminating = await cluster.get<Pod>(res.pods, 'default', p.metadata?.name ?? '');
    await finish(cluster, terminating, 137);
    await run();
    j = await getJob(cluster, 'patient');
    assert.equal(j.status?.failed, 1);
    // Replaced after the failure's back-off.
    clock.now += 10_001;
    await jc.reconcile('default/patient');
    await run();
    assert.equal(running(cluster).length, 1);
    informers.stop();
  });

  test('a deleted Job lets go of its pods, also when a Job of the same name replaces it', async () => {
    const { cluster, informers, run } = await setup();
    await cluster.create(res.jobs, 'default', job('gone', { completions: 1, parallelism: 1 }));
    await run();
    const [p] = running(cluster);
    await cluster.delete(res.jobs, 'default', 'gone');
    await run();
    const left = await cluster.get<Pod>(res.pods, 'default', p.metadata?.name ?? '');
    assert.equal(left.metadata?.finalizers, undefined);

    await cluster.create(res.jobs, 'default', job('again', { completions: 1, parallelism: 1 }));
    await run();
    const [old] = running(cluster).filter(
      (x) => x.metadata?.labels?.['batch.kubernetes.io/job-name'] === 'again',
    );
    await cluster.delete(res.jobs, 'default', 'again');
    // Recreated before the controller sees the deletion: the old pod is not the new Job's.
    await cluster.create(res.jobs, 'default', job('again', { completions: 1, parallelism: 1 }));
    await run();
    const stale = await cluster.get<Pod>(res.pods, 'default', old.metadata?.name ?? '');
    assert.equal(stale.metadata?.finalizers, undefined);
    informers.stop();
  });
});
