// The CronJob controller against a real apiserver and store (testkit's control plane),
// the controller in this process with a clock the test moves, so a `*/1 * * * *`
// schedule fires without waiting a minute: the Job it creates (name, owner,
// scheduled-timestamp annotation, template), status.active and lastScheduleTime,
// Forbid holding back a second Job while one runs, and history pruning of finished
// Jobs. No Job controller runs: the test finishes Jobs by writing their status.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CronJob, Job } from '@kubit/api';
import { KubeClient, resources, SharedInformerFactory } from '@kubit/client';
import { type ControlPlane, startControlPlane, waitFor } from '@kubit/testkit';
import { runWorkers } from '../src/controller.js';
import { CronJobController, SCHEDULED_TIMESTAMP_ANNOTATION } from '../src/cronjob/controller.js';
import { RecordingEvents } from '../src/events.js';
import { RestCluster } from '../src/rest-cluster.js';
import { w } from './cm-process.js';

const NS = 'default';
let cp: ControlPlane;
let client: KubeClient;
let informers: SharedInformerFactory;
let ctrl: CronJobController;
let running: Promise<void>;
const events = new RecordingEvents();
/** The controller's clock: moved by the test. */
let clock = Date.now();

/** Failed reconciles show in the test's output; the rest is quiet. */
const silentLog = {
  debug() {},
  info() {},
  warn(o: unknown, msg: string) {
    console.error(msg, o);
  },
  error(o: unknown, msg: string) {
    console.error(msg, o);
  },
  child() {
    return silentLog;
  },
} as unknown as Parameters<typeof runWorkers>[2];

before(async () => {
  cp = await startControlPlane();
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  informers = new SharedInformerFactory(client);
  ctrl = new CronJobController(new RestCluster(client), informers, { now: () => clock, events });
  informers.start();
  await informers.waitForCacheSync();
  running = runWorkers(ctrl, 1, silentLog);
});

after(async () => {
  ctrl?.queue.shutDown();
  await informers?.stop();
  await running;
  client?.close();
  await cp?.stop();
});

function cronJob(name: string, spec: Partial<NonNullable<CronJob['spec']>> = {}): CronJob {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, namespace: NS },
    spec: {
      schedule: '*/1 * * * *',
      timeZone: 'UTC',
      jobTemplate: {
        metadata: { labels: { team: 'a' } },
        spec: {
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'c', image: 'busybox:1.36', command: ['true'] }],
            },
          },
        },
      },
      ...spec,
    },
  };
}

const getCronJob = (name: string) => client.get<CronJob>(resources.cronjobs, name, { namespace: NS });

async function ownedJobs(cj: { metadata?: { uid?: string } }): Promise<Job[]> {
  const l = await client.list<Job>(resources.jobs, { namespace: NS });
  return l.items
    .filter((j) => j.metadata?.ownerReferences?.some((r) => r.uid === cj.metadata?.uid))
    .filter((j) => !j.metadata?.deletionTimestamp);
}

/** Moves the clock to `seconds` past the next minute after `from`, and has the controller look. */
function tickTo(from: number, seconds = 5): number {
  const minute = Math.floor(from / 60_000) * 60_000 + 60_000;
  clock = minute + seconds * 1000;
  return minute;
}

async function poke(name: string): Promise<void> {
  ctrl.queue.add(`${NS}/${name}`);
}

/** What the Job controller would write once the Job's pods succeeded. */
async function complete(job: Job, startedAt: number): Promise<void> {
  const cur = await client.get<Job>(resources.jobs, job.metadata!.name!, { namespace: NS });
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
  await client.updateStatus(
    resources.jobs,
    w({
      ...cur,
      status: {
        startTime: iso(startedAt),
        completionTime: iso(startedAt + 1000),
        succeeded: 1,
        conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: iso(startedAt + 1000) }],
      },
    }),
  );
}

describe('CronJob controller', () => {
  test('a */1 schedule creates the minute’s Job from the template, owned and annotated', async () => {
    const cj = await client.create(resources.cronjobs, w(cronJob('every-minute')), { namespace: NS });
    const minute = tickTo(Date.parse(cj.metadata!.creationTimestamp!));
    await poke('every-minute');
    const name = `every-minute-${minute / 60_000}`;
    const [job] = await waitFor('the Job of the first minute', async () => {
      const js = await ownedJobs(cj);
      return js.length > 0 ? js : undefined;
    });
    assert.equal(job.metadata?.name, name);
    assert.equal(job.metadata?.labels?.team, 'a');
    assert.equal(
      job.metadata?.annotations?.[SCHEDULED_TIMESTAMP_ANNOTATION],
      new Date(minute).toISOString().replace('.000Z', 'Z'),
    );
    assert.deepEqual(job.metadata?.ownerReferences, [
      {
        apiVersion: 'batch/v1',
        kind: 'CronJob',
        name: 'every-minute',
        uid: cj.metadata!.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(job.spec?.template.spec?.containers[0].image, 'busybox:1.36');
    const st = await waitFor('status.active', async () => {
      const s = (await getCronJob('every-minute')).status;
      return s?.active?.length ? s : undefined;
    });
    assert.deepEqual(
      st.active?.map((a) => a.name),
      [name],
    );
    assert.equal(Date.parse(st.lastScheduleTime!), minute);
    await waitFor('SuccessfulCreate', () => events.reasons().includes('SuccessfulCreate') || undefined);
    await client.delete(resources.cronjobs, 'every-minute', { namespace: NS });
  });

  test('Forbid starts no second Job while one runs; once it finishes the held-back start gets its Job; history is pruned', async () => {
    const cj = await client.create(
      resources.cronjobs,
      w(cronJob('forbid', { concurrencyPolicy: 'Forbid', successfulJobsHistoryLimit: 1 })),
      { namespace: NS },
    );
    const first = tickTo(Math.max(clock, Date.parse(cj.metadata!.creationTimestamp!)));
    await poke('forbid');
    const [job1] = await waitFor('the first Job', async () => {
      const js = await ownedJobs(cj);
      return js.length === 1 ? js : undefined;
    });
    await waitFor('the first Job active', async () =>
      (await getCronJob('forbid')).status?.active?.length ? true : undefined,
    );
    // The next minute comes while the first still runs.
    const held = tickTo(clock);
    events.events.length = 0;
    await poke('forbid');
    await waitFor('JobAlreadyActive', () => events.reasons().includes('JobAlreadyActive') || undefined);
    assert.equal((await ownedJobs(cj)).length, 1);
    // It finishes: it leaves status.active, and the held-back start time (no starting
    // deadline) gets its Job at once, as in Kubernetes.
    await complete(job1, first + 2000);
    const jobs = await waitFor('the second Job', async () => {
      const js = await ownedJobs(cj);
      return js.length === 2 ? js : undefined;
    });
    const job2 = jobs.find((j) => j.metadata?.name === `forbid-${held / 60_000}`);
    assert.ok(job2, JSON.stringify(jobs.map((j) => j.metadata?.name)));
    const st = await waitFor('status with the second Job active', async () => {
      const s = (await getCronJob('forbid')).status;
      return s?.active?.length === 1 && s.active[0].uid === job2.metadata?.uid ? s : undefined;
    });
    assert.equal(Date.parse(st.lastSuccessfulTime!), first + 3000);
    assert.equal(Date.parse(st.lastScheduleTime!), held);
    await waitFor('SawCompletedJob', () => events.reasons().includes('SawCompletedJob') || undefined);
    // History: with successfulJobsHistoryLimit 1, completing the second prunes the first.
    await complete(job2, held + 2000);
    await waitFor('the older finished Job pruned', async () => {
      const js = await ownedJobs(cj);
      return js.length === 1 && js[0].metadata?.name === job2.metadata?.name ? true : undefined;
    });
    // The event follows the delete's answer, which can come after the Job is seen gone.
    await waitFor('SuccessfulDelete', () => events.reasons().includes('SuccessfulDelete') || undefined);
  });
});
