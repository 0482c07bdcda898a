// The CronJob controller's decisions over the in-memory FakeCluster with a moved
// clock (the real stack is in cronjob.test.ts): Replace deletes the running Job
// before starting the next, suspend and a passed starting deadline start nothing,
// a long outage starts only the latest missed time with TooManyMissedTimes, and a
// vanished active Job leaves status.active.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CronJob, Job } from '@kubit/api';
import { resources as res } from '@kubit/client';
import { CronJobController } from '../src/cronjob/controller.js';
import { RecordingEvents } from '../src/events.js';
import { FakeCluster } from '../src/testing.js';
import { newFactory, settle, startInformers } from './helpers.js';

const T0 = Date.parse('2026-03-01T10:00:30Z');

async function setup() {
  const clock = { now: T0 };
  const cluster = new FakeCluster({ now: () => clock.now });
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const ctrl = new CronJobController(cluster, informers, { now: () => clock.now, events });
  await startInformers(informers);
  return { clock, cluster, informers, events, ctrl };
}

function cronJob(name: string, spec: Partial<NonNullable<CronJob['spec']>> = {}): CronJob {
  return {
    metadata: { name, namespace: 'default' },
    spec: {
      schedule: '*/1 * * * *',
      timeZone: 'UTC',
      concurrencyPolicy: 'Allow',
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
      jobTemplate: {
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'x' }] } } },
      },
      ...spec,
    },
  };
}

const jobs = (c: FakeCluster) => c.all<Job>(res.jobs).filter((j) => !j.metadata?.deletionTimestamp);
const names = (c: FakeCluster) =>
  jobs(c)
    .map((j) => j.metadata?.name)
    .sort();
const minuteOf = (iso: string) => Date.parse(iso) / 60_000;

describe('CronJob controller decisions', () => {
  test('Replace deletes the running Job and starts the next minute’s', async () => {
    const { clock, cluster, informers, ctrl } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('r', { concurrencyPolicy: 'Replace' }));
    clock.now = Date.parse('2026-03-01T10:01:05Z');
    await settle([ctrl]);
    assert.deepEqual(names(cluster), [`r-${minuteOf('2026-03-01T10:01:00Z')}`]);
    clock.now = Date.parse('2026-03-01T10:02:05Z');
    ctrl.queue.add('default/r');
    await settle([ctrl]);
    assert.deepEqual(names(cluster), [`r-${minuteOf('2026-03-01T10:02:00Z')}`]);
    const cj = await cluster.get<CronJob>(res.cronjobs, 'default', 'r');
    assert.deepEqual(
      cj.status?.active?.map((a) => a.name),
      [`r-${minuteOf('2026-03-01T10:02:00Z')}`],
    );
    informers.stop();
  });

  test('Allow runs Jobs side by side', async () => {
    const { clock, cluster, informers, ctrl } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('a'));
    clock.now = Date.parse('2026-03-01T10:01:05Z');
    await settle([ctrl]);
    clock.now = Date.parse('2026-03-01T10:02:05Z');
    ctrl.queue.add('default/a');
    await settle([ctrl]);
    assert.equal(jobs(cluster).length, 2);
    const cj = await cluster.get<CronJob>(res.cronjobs, 'default', 'a');
    assert.equal(cj.status?.active?.length, 2);
    informers.stop();
  });

  test('a suspended CronJob starts nothing; resumed, it starts the time that came', async () => {
    const { clock, cluster, informers, ctrl } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('s', { suspend: true }));
    clock.now = Date.parse('2026-03-01T10:01:05Z');
    await settle([ctrl]);
    assert.equal(jobs(cluster).length, 0);
    const cj = await cluster.get<CronJob>(res.cronjobs, 'default', 's');
    await cluster.update(res.cronjobs, { ...cj, spec: { ...cj.spec!, suspend: false } });
    await settle([ctrl]);
    assert.deepEqual(names(cluster), [`s-${minuteOf('2026-03-01T10:01:00Z')}`]);
    informers.stop();
  });

  test('a start time past startingDeadlineSeconds is missed, not started', async () => {
    const { clock, cluster, informers, ctrl, events } = await setup();
    await cluster.create(
      res.cronjobs,
      'default',
      cronJob('d', { schedule: '0 * * * *', startingDeadlineSeconds: 30 }),
    );
    clock.now = Date.parse('2026-03-01T11:05:00Z');
    await settle([ctrl]);
    assert.equal(jobs(cluster).length, 0);
    assert.ok(!events.reasons().includes('SuccessfulCreate'));
    // Within the deadline it starts.
    clock.now = Date.parse('2026-03-01T12:00:10Z');
    ctrl.queue.add('default/d');
    await settle([ctrl]);
    assert.deepEqual(names(cluster), [`d-${minuteOf('2026-03-01T12:00:00Z')}`]);
    informers.stop();
  });

  test('after more than 100 missed start times only the latest starts, with TooManyMissedTimes', async () => {
    const { clock, cluster, informers, ctrl, events } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('m'));
    clock.now = Date.parse('2026-03-01T13:00:30Z'); // three hours of minutes
    await settle([ctrl]);
    assert.deepEqual(names(cluster), [`m-${minuteOf('2026-03-01T13:00:00Z')}`]);
    const warning = events.events.find((e) => e.reason === 'TooManyMissedTimes');
    assert.equal(warning?.type, 'Warning');
    assert.match(warning?.message ?? '', /too many missed start times/);
    informers.stop();
  });

  test('an active Job that was deleted leaves status.active (MissingJob)', async () => {
    const { clock, cluster, informers, ctrl, events } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('g', { schedule: '0 * * * *' }));
    clock.now = Date.parse('2026-03-01T11:00:05Z');
    await settle([ctrl]);
    const [job] = jobs(cluster);
    assert.ok(job);
    await cluster.delete(res.jobs, 'default', job.metadata!.name!);
    await settle([ctrl]);
    const cj = await cluster.get<CronJob>(res.cronjobs, 'default', 'g');
    assert.deepEqual(cj.status?.active ?? [], []);
    assert.ok(events.reasons().includes('MissingJob'), events.reasons().join());
    informers.stop();
  });

  test('a deleted CronJob starts nothing more', async () => {
    const { clock, cluster, informers, ctrl } = await setup();
    await cluster.create(res.cronjobs, 'default', cronJob('x'));
    clock.now = Date.parse('2026-03-01T10:01:05Z');
    await settle([ctrl]);
    assert.equal(jobs(cluster).length, 1);
    await cluster.delete(res.cronjobs, 'default', 'x');
    await settle([ctrl]);
    clock.now = Date.parse('2026-03-01T10:02:05Z');
    ctrl.queue.add('default/x');
    await settle([ctrl]);
    assert.equal(cluster.all<Job>(res.jobs).length, 1);
    informers.stop();
  });
});
