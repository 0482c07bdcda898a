// The pod logic on a real containerd: running, image errors, crash loops, OOM, probes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus, waitUntil } from './helpers.js';

let node: Node;
before(async () => {
  node = await startNode();
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

test('a crashing container: CrashLoopBackOff, growing restartCount, lastState with its exit code', async () => {
  const pod = makePod('crash', {
    containers: [{ name: 'c', image: 'busybox:latest', command: ['sh', '-c', 'echo bye; exit 3'] }],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(
    node.sink,
    pod,
    'CrashLoopBackOff with 2 restarts',
    (st) =>
      containerState(st, 'c')?.state?.waiting?.reason === 'CrashLoopBackOff' &&
      (containerState(st, 'c')?.restartCount ?? 0) >= 2,
    60_000,
  );
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
    30_000,
  );
  assert.ok(node.sink.events.some((e) => e.pod === 'default/probed' && e.reason === 'Unhealthy'));
  assert.ok(node.sink.events.some((e) => e.pod === 'default/probed' && e.reason === 'Killing'));
});
