// The Job and TTL-after-finished controllers on a real stack: testkit's
// workload cluster (etcd, kubit-apiserver, a controller manager running the
// garbage collector, kubit-scheduler, kubit-hollow nodes whose pods become
// Running) and a second kubit-controller-manager running `job` and
// `ttl-after-finished`, which the restart test stops and starts again. Hollow
// nodes end a pod only when its annotations ask (kubit.dev/hollow-exit-code,
// the last test), so the other tests write the end a kubelet would report
// (pods/status Succeeded or Failed with a terminated container), as
// Kubernetes' own Job integration tests do.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Job, Pod, PodCondition } from '@kubit/api';
import { isConflict, isNotFound } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  freePort,
  startDaemon,
  startWorkloadCluster,
  type TestProcess,
  type WorkloadCluster,
  waitFor,
} from '@kubit/testkit';
import { w } from './cm-process.js';

const NS = 'default';

let cluster: WorkloadCluster;
let client: KubeClient;
let jobManager: TestProcess | undefined;
let kubeconfig: string;

async function startJobManager(): Promise<void> {
  jobManager = startDaemon({
    name: 'job-controller-manager',
    pkg: 'controllers',
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--controllers=job,ttl-after-finished',
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ],
    logDir: cluster.cp.logDir,
  });
}

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 2, controllers: 'garbagecollector' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
  // A file of its own: rewriting the workload cluster's controller-manager.kubeconfig
  // could race with that controller manager reading it.
  kubeconfig = await cluster.cp.kubeconfigFor('job-controller-manager', cluster.cp.pki.controllerManager);
  await startJobManager();
});

after(async () => {
  await jobManager?.stop();
  client?.close();
  await cluster?.stop();
});

function newJob(name: string, spec: Partial<NonNullable<Job['spec']>> = {}): Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS },
    spec: {
      template: {
        spec: {
          containers: [{ name: 'main', image: 'busybox:1.36' }],
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 0,
        },
      },
      ...spec,
    },
  };
}

const getJob = (name: string) => client.get<Job>(resources.jobs, name, { namespace: NS });

async function jobPods(name: string): Promise<Pod[]> {
  const list = await client.list<Pod>(resources.pods, {
    namespace: NS,
    labelSelector: `batch.kubernetes.io/job-name=${name}`,
  });
  return list.items;
}

const isTerminal = (p: Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
/** Running as the hollow node reported it: it will not write this pod's status again. */
const isRunning = (p: Pod) =>
  p.status?.phase === 'Running' && !!p.status.podIP && !p.metadata?.deletionTimestamp;

const logs = () => `\n${cluster.logs(20)}`;

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 60_000): Promise<T> {
  let value: T | undefined | false;
  try {
    await waitFor(
      what,
      async () => {
        value = await probe();
        return value !== undefined && value !== false;
      },
      ms,
      200,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}${logs()}`);
  }
  return value as T;
}

/** Writes what a kubelet reports when the pod's only container exits. */
async function finishPod(p: Pod, exitCode: number, extra: PodCondition[] = []): Promise<void> {
  let current = p;
  for (let attempt = 0; ; attempt++) {
    const now = `${new Date().toISOString().slice(0, 19)}Z`;
    const status = {
      ...current.status,
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      conditions: [
        ...(current.status?.conditions ?? []).filter(
          (c) => c.type !== 'Ready' && c.type !== 'ContainersReady',
        ),
        { type: 'Ready', status: 'False', lastTransitionTime: now },
        ...extra.map((c) => ({ ...c, lastTransitionTime: now })),
      ],
      containerStatuses: (current.status?.containerStatuses ?? []).map((c) => ({
        ...c,
        ready: false,
        started: false,
        state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', finishedAt: now } },
      })),
    };
    try {
      await client.updateStatus(resources.pods, w({ ...current, status }), { namespace: NS });
      return;
    } catch (err) {
      if (!isConflict(err) || attempt >= 5) throw err;
      current = await client.get<Pod>(resources.pods, p.metadata?.name ?? '', { namespace: NS });
    }
  }
}

const trueTypes = (j: Job) =>
  (j.status?.conditions ?? []).filter((c) => c.status === 'True').map((c) => c.type);
const finished = (j: Job) => trueTypes(j).some((t) => t === 'Complete' || t === 'Failed');

/** Finishes the Job's running pods one at a time with `exitCode` until it is done; returns the most seen running. */
async function runToEnd(name: string, exitCode = 0): Promise<number> {
  let most = 0;
  // Long enough for a failure back-off (10 s, then 20 s) and the pods' scheduling.
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    const j = await getJob(name);
    if (finished(j)) return most;
    const pods = await jobPods(name);
    most = Math.max(most, pods.filter((p) => !isTerminal(p) && !p.metadata?.deletionTimestamp).length);
    const next = pods.find(isRunning);
    if (!next) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    await finishPod(next, exitCode);
    // The next pod is created once this one is counted.
    await until(`pod ${next.metadata?.name} counted`, async () => {
      const p = (await jobPods(name)).find((x) => x.metadata?.uid === next.metadata?.uid);
      return !p?.metadata?.finalizers?.includes('batch.kubernetes.io/job-tracking');
    });
  }
  throw new Error(`job ${name} did not finish${logs()}`);
}

test('5 completions with parallelism 2: at most 2 pods at a time, then Complete', async () => {
  const created = await client.create(resources.jobs, w(newJob('five', { completions: 5, parallelism: 2 })), {
    namespace: NS,
  });
  await until('2 running pods', async () => (await jobPods('five')).filter(isRunning).length === 2);
  const most = await runToEnd('five');
  assert.ok(most <= 2, `at most 2 pods ran at once, saw ${most}`);
  const j = await until('Complete', async () => {
    const x = await getJob('five');
    return trueTypes(x).includes('Complete') && x;
  });
  assert.equal(j.status?.succeeded, 5);
  assert.equal(j.status?.active ?? 0, 0);
  assert.deepEqual(trueTypes(j), ['SuccessCriteriaMet', 'Complete']);
  assert.ok(j.status?.completionTime);
  const pods = await jobPods('five');
  assert.equal(pods.length, 5, 'exactly 5 pods were made');
  for (const p of pods) {
    assert.equal(p.metadata?.ownerReferences?.[0].uid, created.metadata?.uid);
    assert.equal(p.metadata?.ownerReferences?.[0].controller, true);
    assert.equal(p.metadata?.finalizers, undefined);
  }
});

test('a failing Job stops at backoffLimit', async () => {
  await client.create(resources.jobs, w(newJob('fails', { backoffLimit: 1 })), { namespace: NS });
  await runToEnd('fails', 1);
  const j = await getJob('fails');
  assert.equal(j.status?.failed, 2);
  assert.deepEqual(trueTypes(j), ['FailureTarget', 'Failed']);
  assert.equal(j.status?.conditions?.at(-1)?.reason, 'BackoffLimitExceeded');
  assert.equal((await jobPods('fails')).length, 2);
});

test('an Indexed Job gives each pod its index', async () => {
  await client.create(
    resources.jobs,
    w(newJob('idx', { completions: 3, parallelism: 3, completionMode: 'Indexed' })),
    { namespace: NS },
  );
  const pods = await until('3 running pods', async () => {
    const ps = (await jobPods('idx')).filter(isRunning);
    return ps.length === 3 && ps;
  });
  const indexes = pods
    .map((p) => p.metadata?.annotations?.['batch.kubernetes.io/job-completion-index'])
    .sort();
  assert.deepEqual(indexes, ['0', '1', '2']);
  for (const p of pods) {
    const ix = p.metadata?.annotations?.['batch.kubernetes.io/job-completion-index'];
    assert.equal(p.metadata?.labels?.['batch.kubernetes.io/job-completion-index'], ix);
    assert.equal(p.spec?.hostname, `idx-${ix}`);
    assert.ok(p.spec?.containers[0].env?.some((e) => e.name === 'JOB_COMPLETION_INDEX'));
  }
  await runToEnd('idx');
  const j = await getJob('idx');
  assert.equal(j.status?.completedIndexes, '0-2');
  assert.ok(trueTypes(j).includes('Complete'));
});

test('a podFailurePolicy Ignore rule does not count a disrupted pod', async () => {
  await client.create(
    resources.jobs,
    w(
      newJob('ignore', {
        backoffLimit: 0,
        podFailurePolicy: {
          rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
        },
      }),
    ),
    { namespace: NS },
  );
  const first = await until('a running pod', async () => (await jobPods('ignore')).find(isRunning));
  await finishPod(first, 137, [{ type: 'DisruptionTarget', status: 'True' }]);
  const second = await until('a replacement pod', async () =>
    (await jobPods('ignore')).find((p) => isRunning(p) && p.metadata?.uid !== first.metadata?.uid),
  );
  let j = await getJob('ignore');
  assert.equal(j.status?.failed ?? 0, 0);
  assert.ok(!finished(j));
  await finishPod(second, 0);
  j = await until('Complete', async () => {
    const x = await getJob('ignore');
    return trueTypes(x).includes('Complete') && x;
  });
  assert.equal(j.status?.succeeded, 1);
  assert.equal(j.status?.failed ?? 0, 0);
});

test('a controller manager restart in the middle of a Job loses no completion and adds no pod', async () => {
  await client.create(resources.jobs, w(newJob('restart', { completions: 4, parallelism: 2 })), {
    namespace: NS,
  });
  const [a, b] = await until('2 running pods', async () => {
    const ps = (await jobPods('restart')).filter(isRunning);
    return ps.length === 2 && ps;
  });
  await finishPod(a, 0);
  await until('1 succeeded', async () => (await getJob('restart')).status?.succeeded === 1);
  await jobManager?.stop();
  // While it is down: a pod finishes; it keeps its finalizer until counted.
  await finishPod(b, 0);
  const held = await client.get<Pod>(resources.pods, b.metadata?.name ?? '', { namespace: NS });
  assert.ok(held.metadata?.finalizers?.includes('batch.kubernetes.io/job-tracking'));
  await startJobManager();
  await runToEnd('restart');
  const j = await getJob('restart');
  assert.equal(j.status?.succeeded, 4);
  assert.ok(trueTypes(j).includes('Complete'));
  assert.equal((await jobPods('restart')).length, 4, 'exactly 4 pods were made');
});

test('ttlSecondsAfterFinished deletes the finished Job and its pods', async () => {
  // 5 s, not 1: on a busy machine a 1 s TTL could delete the Job before runToEnd saw it finished.
  await client.create(resources.jobs, w(newJob('ttl', { ttlSecondsAfterFinished: 5 })), { namespace: NS });
  await runToEnd('ttl');
  await until('the Job deleted', async () => {
    try {
      await getJob('ttl');
      return false;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  });
  await until('its pod deleted', async () => (await jobPods('ttl')).length === 0);
});

test('pods annotated to exit on hollow nodes run a Job to completion on their own', async () => {
  const j = newJob('selfrun', { completions: 4, parallelism: 2 });
  j.spec!.template.metadata = {
    annotations: { 'kubit.dev/hollow-exit-code': '0', 'kubit.dev/hollow-run-ms': '200' },
  };
  await client.create(resources.jobs, w(j), { namespace: NS });
  const done = await until('Complete', async () => {
    const x = await getJob('selfrun');
    return trueTypes(x).includes('Complete') && x;
  });
  assert.equal(done.status?.succeeded, 4);
  assert.equal((await jobPods('selfrun')).length, 4);
});
