// The pod logic on a real containerd: running, image errors, crash loops, OOM, probes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PodStatus } from 'kubernetes-types/core/v1.js';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import { restartCountOf } from '../src/pods/status.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus, waitUntil } from './helpers.js';

/**
 * Slower than FAST_BACKOFF: CrashLoopBackOff is only reported while a backoff
 * lasts, and on a loaded machine noticing an exit can take more than a second.
 */
const CRASH_BACKOFF = { initialMs: 1000, maxMs: 4000, resetMs: 60_000 };
let node: Node;
before(async () => {
  node = await startNode({ crashBackoff: CRASH_BACKOFF });
});
after(async () => {
  await node?.stop();
});

test('nginx: ContainerCreating → Running with a pod IP that answers HTTP; the access shows in its log', async () => {
  const pod = makePod('nginx', {
    containers: [
      {
        name: 'nginx',
        image: 'nginx:latest',
        ports: [{ containerPort: 80 }],
        readinessProbe: { httpGet: { path: '/', port: 80 }, periodSeconds: 1 },
      },
    ],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(
    node.sink,
    pod,
    'Ready',
    (st) => st.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
    60_000,
  );
  assert.equal(s.phase, 'Running');
  const prefix = node.containerd.podCidr.replace(/0\/24$/, '');
  assert.ok(s.podIP?.startsWith(prefix), `pod IP ${s.podIP} outside ${node.containerd.podCidr}`);
  const c = containerState(s, 'nginx');
  assert.match(c?.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
  assert.match(c?.imageID ?? '', /sha256:/);
  const res = await fetch(`http://${s.podIP}/`, { headers: { 'user-agent': 'kubit-test' } });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /Welcome to nginx/);
  await waitUntil('the access line in the log', async () =>
    (await node.logLines(pod, 'nginx')).some(
      (l) => l.includes('"GET / HTTP/1.1" 200') && l.includes('kubit-test'),
    ),
  );
  const reasons = node.sink.reasons('default/nginx');
  for (const r of ['Pulling', 'Pulled', 'Created', 'Started']) assert.ok(reasons.includes(r), r);
});

test('a missing image: ErrImagePull, then ImagePullBackOff', async () => {
  const pod = makePod('noimage', { containers: [{ name: 'c', image: 'doesnotexist:1' }] });
  node.manager.upsert(pod);
  const s = await waitStatus(
    node.sink,
    pod,
    'ErrImagePull',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ErrImagePull',
    60_000,
  );
  assert.match(containerState(s, 'c')?.state?.waiting?.message ?? '', /doesnotexist/);
  await waitStatus(
    node.sink,
    pod,
    'ImagePullBackOff',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ImagePullBackOff',
  );
});

test('a crashing container: CrashLoopBackOff, growing backoff and restartCount, lastState with its exit code', async () => {
  const pod = makePod('crash', {
    containers: [{ name: 'c', image: 'busybox:latest', command: ['sh', '-c', 'echo bye; exit 3'] }],
  });
  const uid = pod.metadata?.uid ?? '';
  node.manager.upsert(pod);
  // The backoff grows: restart 1 is immediate, restart n ≥ 2 waits at least initialMs·2^(n-2)
  // (CRASH_BACKOFF: 0, 1, 2, 4 s)
  // after the previous instance exited. Measured through CRI while the instances are still there
  // (the kubelet keeps the newest two).
  const gaps = new Map<number, number>();
  let newest = 0;
  const measured = waitUntil(
    'three restarts, measured through CRI',
    async () => {
      const ids = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
      const all = await Promise.all(
        ids.map((x) => node.runtime.containerStatus(x.id).catch(() => undefined)),
      );
      const byAttempt = new Map(all.flatMap((x) => (x ? [[restartCountOf(x), x] as const] : [])));
      for (const [n, cur] of byAttempt) {
        newest = Math.max(newest, n);
        const prev = byAttempt.get(n - 1);
        if (prev?.finishedAt && cur.startedAt && !gaps.has(n))
          gaps.set(n, (cur.startedAt - prev.finishedAt) / 1e6);
      }
      return gaps.size >= 3 || newest >= 5;
    },
    60_000,
  );
  measured.catch(() => {}); // awaited below; not unhandled if waitStatus throws first
  const s = await waitStatus(
    node.sink,
    pod,
    'CrashLoopBackOff with 2 restarts',
    (st) =>
      containerState(st, 'c')?.state?.waiting?.reason === 'CrashLoopBackOff' &&
      (containerState(st, 'c')?.restartCount ?? 0) >= 2,
    60_000,
  );
  await measured;
  assert.ok(gaps.size >= 2, `restart gaps seen: ${JSON.stringify([...gaps])}`);
  for (const [n, gap] of gaps) {
    // As in Kubernetes, the first restart is immediate and arms the delay; later ones double it.
    const atLeast = n === 1 ? 0 : Math.min(CRASH_BACKOFF.maxMs, CRASH_BACKOFF.initialMs * 2 ** (n - 2));
    assert.ok(gap >= atLeast - 5, `restart ${n} came ${gap} ms after the exit (backoff ${atLeast} ms)`);
  }
  const c = containerState(s, 'c');
  assert.equal(c?.lastState?.terminated?.exitCode, 3);
  assert.equal(c?.lastState?.terminated?.reason, 'Error');
  assert.ok(node.sink.reasons('default/crash').includes('BackOff'));
  assert.deepEqual(await node.logLines(pod, 'c', 0), ['bye']);
});

test('exceeding the memory limit is OOMKilled', async () => {
  const pod = makePod('oom', {
    restartPolicy: 'Never',
    containers: [
      {
        name: 'hog',
        image: 'busybox:latest',
        command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=128M', 'count=1'],
        resources: { limits: { memory: '16Mi' } },
      },
    ],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(node.sink, pod, 'Failed', (st) => st.phase === 'Failed', 60_000);
  const t = containerState(s, 'hog')?.state?.terminated;
  assert.equal(t?.reason, 'OOMKilled');
  assert.equal(t?.exitCode, 137);
});

test('a failing liveness probe restarts the container; readiness drives Ready', async () => {
  const pod = makePod('probed', {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: 'live',
        image: 'busybox:latest',
        command: ['sleep', '3600'],
        livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, periodSeconds: 1, failureThreshold: 2 },
      },
      {
        name: 'ready',
        image: 'busybox:latest',
        command: ['sh', '-c', 'sleep 2; touch /tmp/ready; sleep 3600'],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
      },
    ],
  });
  node.manager.upsert(pod);
  const notReady = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  assert.equal(containerState(notReady, 'ready')?.ready, false);
  await waitStatus(
    node.sink,
    pod,
    'ready container ready',
    (st) => containerState(st, 'ready')?.ready === true,
    30_000,
  );
  await waitStatus(
    node.sink,
    pod,
    'live restarted',
    (st) => (containerState(st, 'live')?.restartCount ?? 0) >= 1,
    60_000,
  );
  assert.ok(node.sink.events.some((e) => e.pod === 'default/probed' && e.reason === 'Unhealthy'));
  assert.ok(node.sink.events.some((e) => e.pod === 'default/probed' && e.reason === 'Killing'));
});

test('readiness alone drives the Ready condition, both ways, without restarts', async () => {
  const pod = makePod('gate', {
    containers: [
      {
        name: 'c',
        image: 'busybox:latest',
        command: ['sh', '-c', 'sleep 2; touch /tmp/ready; sleep 3600'],
        readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
      },
    ],
  });
  const cond = (st: PodStatus, type: string) => st.conditions?.find((c) => c.type === type)?.status;
  node.manager.upsert(pod);
  const running = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  assert.equal(cond(running, 'Ready'), 'False');
  assert.equal(cond(running, 'ContainersReady'), 'False');
  const ready = await waitStatus(node.sink, pod, 'Ready', (st) => cond(st, 'Ready') === 'True', 30_000);
  assert.equal(cond(ready, 'ContainersReady'), 'True');
  const id = (containerState(ready, 'c')?.containerID ?? '').replace('containerd://', '');
  assert.equal((await node.runtime.execSync(id, ['rm', '/tmp/ready'], 5)).exitCode, 0);
  const unready = await waitStatus(
    node.sink,
    pod,
    'not Ready again',
    (st) => cond(st, 'Ready') === 'False',
    30_000,
  );
  assert.equal(containerState(unready, 'c')?.restartCount, 0);
  assert.ok(containerState(unready, 'c')?.state?.running);
});
