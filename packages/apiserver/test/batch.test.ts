// batch/v1 Jobs and CronJobs against kubit-apiserver on a real etcd: the generated
// selector, defaults, status kept apart from spec, validation with field paths, and
// the real kubectl's create job / create cronjob / get.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const BATCH = '/apis/batch/v1/namespaces/default';

function job(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36' }] } },
      ...spec,
    },
  };
}

describe('batch/v1 Jobs', () => {
  it('creates a Job with a selector and pod labels generated from its uid', async () => {
    const r = await api.post(`${BATCH}/jobs`, job('j1'));
    assert.equal(r.status, 201, r.text);
    const uid = r.body.metadata.uid;
    assert.ok(uid);
    assert.deepEqual(r.body.spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } });
    assert.deepEqual(r.body.spec.template.metadata.labels, {
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': 'j1',
      'controller-uid': uid,
      'job-name': 'j1',
    });
    assert.equal(r.body.spec.backoffLimit, 6);
    assert.equal(r.body.spec.completions, 1);
    assert.equal(r.body.metadata.generation, 1);
    assert.deepEqual(r.body.status, {});
  });

  it('keeps status apart from spec and spec apart from status', async () => {
    const cur = (await api.get(`${BATCH}/jobs/j1`)).body;
    const withStatus = { ...cur, status: { active: 1, startTime: '2026-01-01T00:00:00Z' } };
    let r = await api.put(`${BATCH}/jobs/j1`, withStatus);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.status, {});
    r = await api.put(`${BATCH}/jobs/j1/status`, {
      ...r.body,
      spec: { ...r.body.spec, parallelism: 9 },
      status: withStatus.status,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status.active, 1);
    assert.equal(r.body.spec.parallelism, 1);
  });

  it('refuses a bad Job with Kubernetes field paths, and a changed template', async () => {
    const r = await api.post(
      `${BATCH}/jobs`,
      job('bad', { parallelism: -1, template: { spec: { containers: [{ name: 'c', image: 'busybox' }] } } }),
    );
    assert.equal(r.status, 422, r.text);
    const fields = r.body.details.causes.map((c: { field: string }) => c.field);
    assert.ok(fields.includes('spec.parallelism'), r.text);
    assert.ok(fields.includes('spec.template.spec.restartPolicy'), r.text);
    const cur = (await api.get(`${BATCH}/jobs/j1`)).body;
    cur.spec.template.spec.containers[0].image = 'busybox:1.37';
    const u = await api.put(`${BATCH}/jobs/j1`, cur);
    assert.equal(u.status, 422, u.text);
    assert.match(u.text, /spec.template: Invalid value: .*field is immutable/);
  });
});

describe('batch/v1 CronJobs', () => {
  it('creates a CronJob with defaults and refuses a bad schedule', async () => {
    const cj = {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick' },
      spec: { schedule: '@hourly', jobTemplate: job('x').spec ? { spec: job('x').spec } : {} },
    };
    const r = await api.post(`${BATCH}/cronjobs`, cj);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.concurrencyPolicy, 'Allow');
    assert.equal(r.body.spec.successfulJobsHistoryLimit, 3);
    const bad = await api.post(`${BATCH}/cronjobs`, {
      ...cj,
      metadata: { name: 'bad' },
      spec: { ...cj.spec, schedule: 'TZ=UTC 0 0 * * *' },
    });
    assert.equal(bad.status, 422, bad.text);
    assert.match(bad.text, /cannot use TZ or CRON_TZ in schedule, use timeZone field instead/);
  });
});

describe('the real kubectl', () => {
  it('creates and lists Jobs and CronJobs, and a Job from a CronJob', async () => {
    let r = await kubectl(cp, ['create', 'job', 'hello', '--image=busybox:1.36', '--', 'echo', 'hi']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /job.batch\/hello created/);
    r = await kubectl(cp, ['get', 'jobs']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /NAME\s+STATUS\s+COMPLETIONS\s+DURATION\s+AGE/);
    assert.match(r.stdout, /hello\s+Running\s+0\/1\s+\S+/);
    r = await kubectl(cp, ['get', 'job', 'hello', '-o', 'wide']);
    assert.match(r.stdout, /hello\s+Running\s+0\/1\s+.*busybox:1.36\s+batch.kubernetes.io\/controller-uid=/);
    r = await kubectl(cp, [
      'create',
      'cronjob',
      'every-minute',
      '--image=busybox:1.36',
      '--schedule=*/1 * * * *',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /cronjob.batch\/every-minute created/);
    r = await kubectl(cp, ['get', 'cronjobs']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /NAME\s+SCHEDULE\s+TIMEZONE\s+SUSPEND\s+ACTIVE\s+LAST SCHEDULE\s+AGE/);
    assert.match(r.stdout, /every-minute\s+\*\/1 \* \* \* \*\s+<none>\s+False\s+0\s+<none>/);
    r = await kubectl(cp, ['create', 'job', 'manual-run', '--from=cronjob/every-minute']);
    assert.equal(r.code, 0, r.stderr);
    const made = (await api.get(`${BATCH}/jobs/manual-run`)).body;
    assert.equal(made.metadata.annotations['cronjob.kubernetes.io/instantiate'], 'manual');
    assert.equal(made.metadata.ownerReferences[0].kind, 'CronJob');
    assert.equal(made.spec.template.spec.containers[0].image, 'busybox:1.36');
    r = await kubectl(cp, ['create', 'cronjob', 'bad', '--image=busybox', '--schedule=* * *'], {
      allowFail: true,
    });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /spec.schedule: Invalid value: "\* \* \*"/);
  });
});
