// The pod logic against the in-memory runtime: every path a pod can take.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { PodManager, type PodManagerOptions } from '../src/pods/manager.js';
import { MemoryObjectSource, RecordingSink } from '../src/pods/sinks.js';
import { FakeRuntime, type FakeRuntimeOptions } from '../src/runtime/fake.js';
import { containerState, FAST_BACKOFF, makePod, waitStatus, waitUntil } from './helpers.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(fake: FakeRuntimeOptions = {}, opts: Partial<PodManagerOptions> = {}, pods: Pod[] = []) {
  const runtime = new FakeRuntime(fake);
  const sink = new RecordingSink();
  const objects = new MemoryObjectSource();
  const dir = await tempDir('kubit-kubelet-fake-');
  const manager = new PodManager({
    runtime,
    objects,
    statusSink: sink,
    events: sink,
    hostIP: '127.0.0.1',
    rootDir: dir.path,
    relistIntervalMs: 100,
    retryMs: 100,
    crashBackoff: FAST_BACKOFF,
    imageBackoff: FAST_BACKOFF,
    ...opts,
  });
  await manager.start(pods);
  cleanups.push(() => dir.cleanup());
  cleanups.push(() => manager.stop());
  cleanups.push(() => runtime.close());
  return { runtime, sink, objects, manager, dir: dir.path };
}

const nginx = (extra: object = {}) => ({ name: 'web', image: 'nginx:1.25', ...extra });

test('a pod goes from ContainerCreating to Running with an IP, conditions and events', async () => {
  const { sink, manager } = await setup();
  const pod = makePod('web', { containers: [nginx()] });
  manager.upsert(pod);
  const s = await waitStatus(
    sink,
    pod,
    'Running and Ready',
    (st) => st.phase === 'Running' && !!containerState(st, 'web')?.ready,
  );
  assert.match(s.podIP ?? '', /^10\.88\.0\.\d+$/);
  assert.deepEqual(s.podIPs, [{ ip: s.podIP }]);
  assert.equal(s.hostIP, '127.0.0.1');
  assert.ok(s.startTime);
  const web = containerState(s, 'web');
  assert.ok(web?.state?.running?.startedAt);
  assert.match(web?.containerID ?? '', /^fake:\/\//);
  assert.match(web?.imageID ?? '', /^sha256:/);
  assert.equal(web?.restartCount, 0);
  for (const type of ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready']) {
    assert.equal(s.conditions?.find((c) => c.type === type)?.status, 'True', type);
  }
  assert.equal(s.qosClass, 'BestEffort');
  assert.deepEqual(sink.reasons('default/web'), ['Pulling', 'Pulled', 'Created', 'Started']);
});

test('a missing image gives ErrImagePull, then ImagePullBackOff', async () => {
  const { sink, manager } = await setup({ pullable: (i) => !i.includes('missing') });
  const pod = makePod('nope', { containers: [{ name: 'c', image: 'missing:1' }] });
  manager.upsert(pod);
  const first = await waitStatus(
    sink,
    pod,
    'ErrImagePull',
    (s) => containerState(s, 'c')?.state?.waiting?.reason === 'ErrImagePull',
  );
  assert.equal(first.phase, 'Pending');
  assert.match(containerState(first, 'c')?.state?.waiting?.message ?? '', /Failed to pull image "missing:1"/);
  await waitStatus(
    sink,
    pod,
    'ImagePullBackOff',
    (s) => containerState(s, 'c')?.state?.waiting?.reason === 'ImagePullBackOff',
  );
  await waitUntil(
    'a second pull attempt',
    () => sink.reasons('default/nope').filter((r) => r === 'Pulling').length >= 2,
  );
  const reasons = sink.reasons('default/nope');
  assert.ok(reasons.includes('Failed'));
  assert.ok(reasons.includes('BackOff'));
});

test('imagePullPolicy Never with an absent image is ErrImageNeverPull', async () => {
  const { sink, manager, runtime } = await setup();
  const pod = makePod('never', { containers: [{ name: 'c', image: 'busybox:1', imagePullPolicy: 'Never' }] });
  manager.upsert(pod);
  await waitStatus(
    sink,
    pod,
    'ErrImageNeverPull',
    (s) => containerState(s, 'c')?.state?.waiting?.reason === 'ErrImageNeverPull',
  );
  assert.ok(!runtime.calls.some((c) => c.startsWith('PullImage')));
  runtime.addImage('busybox:1');
  await waitStatus(sink, pod, 'Running', (s) => s.phase === 'Running');
});

test('IfNotPresent does not pull an image that is there', async () => {
  const { sink, manager, runtime } = await setup();
  runtime.addImage('busybox:1');
  const pod = makePod('present', { containers: [{ name: 'c', image: 'busybox:1' }] });
  manager.upsert(pod);
  await waitStatus(sink, pod, 'Running', (s) => s.phase === 'Running');
  assert.ok(!runtime.calls.some((c) => c.startsWith('PullImage')));
});

test('a crashing container goes into CrashLoopBackOff with growing backoff and restartCount', async () => {
  const { sink, manager } = await setup({ behavior: () => ({ exitAfterMs: 20, exitCode: 3 }) });
  const pod = makePod('crash', { containers: [{ name: 'c', image: 'busybox:1' }] });
  manager.upsert(pod);
  const s = await waitStatus(sink, pod, 'CrashLoopBackOff after 3 restarts', (st) => {
    const c = containerState(st, 'c');
    return c?.state?.waiting?.reason === 'CrashLoopBackOff' && (c.restartCount ?? 0) >= 3;
  });
  const c = containerState(s, 'c');
  assert.equal(c?.lastState?.terminated?.exitCode, 3);
  assert.equal(c?.lastState?.terminated?.reason, 'Error');
  assert.equal(s.phase, 'Running');
  const messages = sink.events.filter((e) => e.reason === 'BackOff').map((e) => e.message);
  assert.ok(messages.length >= 1);
  const waits = new Set<string>();
  await waitUntil('the backoff to reach its maximum', () => {
    const m = containerState(sink.status('default/crash') ?? {}, 'c')?.state?.waiting?.message;
    if (m) waits.add(/back-off (\d+)s/.exec(m)?.[1] ?? '');
    return waits.has('1');
  });
});

test('restartPolicy Never: exit 0 is Succeeded, exit 1 is Failed; OnFailure restarts only failures', async () => {
  const { sink, manager, runtime } = await setup({
    behavior: (c) => ({ exitAfterMs: 20, exitCode: c.metadata.name === 'ok' ? 0 : 1 }),
  });
  const ok = makePod('ok', { restartPolicy: 'Never', containers: [{ name: 'ok', image: 'busybox:1' }] });
  const bad = makePod('bad', { restartPolicy: 'Never', containers: [{ name: 'bad', image: 'busybox:1' }] });
  const onf = makePod('onf', {
    restartPolicy: 'OnFailure',
    containers: [{ name: 'ok', image: 'busybox:1' }],
  });
  manager.upsert(ok);
  manager.upsert(bad);
  manager.upsert(onf);
  const s1 = await waitStatus(sink, ok, 'Succeeded', (s) => s.phase === 'Succeeded');
  assert.equal(containerState(s1, 'ok')?.state?.terminated?.reason, 'Completed');
  assert.equal(s1.conditions?.find((c) => c.type === 'Ready')?.reason, 'PodCompleted');
  const s2 = await waitStatus(sink, bad, 'Failed', (s) => s.phase === 'Failed');
  assert.equal(containerState(s2, 'bad')?.state?.terminated?.exitCode, 1);
  await waitStatus(sink, onf, 'Succeeded', (s) => s.phase === 'Succeeded');
  // A finished pod's sandbox is stopped, and nothing is started again.
  await waitUntil('the sandboxes of finished pods to stop', async () =>
    (await runtime.listPodSandbox()).every((sb) => sb.state === 'SANDBOX_NOTREADY'),
  );
  const creates = runtime.calls.filter((c) => c.startsWith('CreateContainer')).length;
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(runtime.calls.filter((c) => c.startsWith('CreateContainer')).length, creates);
});

test('init containers run in order, each to completion, before the containers', async () => {
  const { sink, manager, runtime } = await setup({
    behavior: (c) => (c.metadata.name.startsWith('init') ? { exitAfterMs: 50, exitCode: 0 } : {}),
  });
  const pod = makePod('init', {
    initContainers: [
      { name: 'init-1', image: 'busybox:1' },
      { name: 'init-2', image: 'busybox:1' },
    ],
    containers: [{ name: 'main', image: 'busybox:1' }],
  });
  manager.upsert(pod);
  const pending = await waitStatus(
    sink,
    pod,
    'Pending with init running',
    (s) => s.phase === 'Pending' && !!s.initContainerStatuses,
  );
  assert.equal(pending.conditions?.find((c) => c.type === 'Initialized')?.status, 'False');
  const s = await waitStatus(sink, pod, 'Running', (st) => st.phase === 'Running');
  assert.equal(s.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  assert.equal(containerState(s, 'init-1')?.state?.terminated?.reason, 'Completed');
  const order = runtime.calls.filter((c) => c.startsWith('StartContainer')).map((c) => c.split(' ')[1]);
  assert.deepEqual(order, ['init-1', 'init-2', 'main']);
});

test('a failing init container with restartPolicy Never fails the pod', async () => {
  const { sink, manager, runtime } = await setup({ behavior: () => ({ exitAfterMs: 20, exitCode: 2 }) });
  const pod = makePod('initfail', {
    restartPolicy: 'Never',
    initContainers: [{ name: 'init', image: 'busybox:1' }],
    containers: [{ name: 'main', image: 'busybox:1' }],
  });
  manager.upsert(pod);
  const s = await waitStatus(sink, pod, 'Failed', (st) => st.phase === 'Failed');
  assert.equal(containerState(s, 'init')?.state?.terminated?.exitCode, 2);
  assert.ok(!runtime.calls.includes('StartContainer main'));
});

test('a missing configMap keeps the pod ContainerCreating with FailedMount until it appears', async () => {
  const { sink, manager, objects, dir } = await setup();
  const pod = makePod('cm', {
    volumes: [
      { name: 'conf', configMap: { name: 'settings' } },
      { name: 'opt', secret: { secretName: 'absent', optional: true } },
      { name: 'scratch', emptyDir: {} },
    ],
    containers: [
      {
        name: 'c',
        image: 'busybox:1',
        volumeMounts: [
          { name: 'conf', mountPath: '/etc/conf' },
          { name: 'scratch', mountPath: '/scratch' },
        ],
      },
    ],
  });
  manager.upsert(pod);
  const s = await waitStatus(
    sink,
    pod,
    'ContainerCreating',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ContainerCreating',
  );
  assert.equal(s.phase, 'Pending');
  await waitUntil('FailedMount', () => sink.reasons('default/cm').includes('FailedMount'));
  const ev = sink.events.find((e) => e.reason === 'FailedMount');
  assert.match(ev?.message ?? '', /configmap "settings" not found/);
  objects.putConfigMap({
    metadata: { name: 'settings', namespace: 'default' },
    data: { 'app.conf': 'x=1\n' },
  });
  await waitStatus(sink, pod, 'Running', (st) => st.phase === 'Running');
  const { readFile } = await import('node:fs/promises');
  const content = await readFile(
    `${dir}/pods/${pod.metadata?.uid}/volumes/kubernetes.io~configmap/conf/app.conf`,
    'utf8',
  );
  assert.equal(content, 'x=1\n');
});

test('env from values, fieldRef, configMapKeyRef and secretKeyRef, with $(VAR) expansion', async () => {
  const { sink, manager, objects, runtime } = await setup();
  objects.putConfigMap({ metadata: { name: 'cfg', namespace: 'default' }, data: { color: 'blue' } });
  objects.putSecret({
    metadata: { name: 'sec', namespace: 'default' },
    data: { pw: Buffer.from('hunter2').toString('base64') },
  });
  const pod = makePod('env', {
    containers: [
      {
        name: 'c',
        image: 'busybox:1',
        command: ['echo', '$(GREETING)'],
        env: [
          { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
          { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'color' } } },
          { name: 'PW', valueFrom: { secretKeyRef: { name: 'sec', key: 'pw' } } },
          { name: 'GREETING', value: 'hi $(NAME) in $(COLOR)' },
        ],
        resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
        workingDir: '/tmp',
      },
    ],
  });
  manager.upsert(pod);
  const s = await waitStatus(sink, pod, 'Running', (st) => st.phase === 'Running');
  const [ct] = runtime.containers.values();
  const env = Object.fromEntries(ct.config.envs.map((e) => [e.key, e.value]));
  assert.equal(env.NAME, 'env');
  assert.equal(env.IP, s.podIP);
  assert.equal(env.COLOR, 'blue');
  assert.equal(env.PW, 'hunter2');
  assert.equal(env.GREETING, 'hi env in blue');
  assert.deepEqual(ct.config.command, ['echo', 'hi env in blue']);
  assert.equal(ct.config.workingDir, '/tmp');
  assert.deepEqual(ct.config.linux?.resources, {
    cpuShares: 256,
    cpuPeriod: 100_000,
    cpuQuota: 50_000,
    memoryLimitInBytes: 128 * 1024 * 1024,
  });
  assert.equal(s.qosClass, 'Burstable');
});

test('a missing secret key is CreateContainerConfigError', async () => {
  const { sink, manager } = await setup();
  const pod = makePod('badenv', {
    containers: [
      {
        name: 'c',
        image: 'busybox:1',
        env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'nope', key: 'k' } } }],
      },
    ],
  });
  manager.upsert(pod);
  const s = await waitStatus(
    sink,
    pod,
    'CreateContainerConfigError',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'CreateContainerConfigError',
  );
  assert.match(containerState(s, 'c')?.state?.waiting?.message ?? '', /secret "nope" not found/);
});

test('readiness follows the readiness probe; a failing liveness probe restarts the container', async () => {
  let ready = false;
  const { sink, manager } = await setup({
    exec: (c, cmd) => {
      if (cmd[0] === 'ready') return { exitCode: ready ? 0 : 1 };
      if (cmd[0] === 'alive') return { exitCode: c.metadata.attempt === 0 ? 1 : 0, stdout: 'dead' };
      return { exitCode: 0 };
    },
  });
  const pod = makePod('probes', {
    containers: [
      { name: 'r', image: 'busybox:1', readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 1 } },
      {
        name: 'l',
        image: 'busybox:1',
        livenessProbe: { exec: { command: ['alive'] }, periodSeconds: 1, failureThreshold: 2 },
      },
    ],
  });
  manager.upsert(pod);
  const s = await waitStatus(
    sink,
    pod,
    'Running, not ready',
    (st) => st.phase === 'Running' && !!containerState(st, 'r')?.state?.running,
  );
  assert.equal(containerState(s, 'r')?.ready, false);
  assert.equal(s.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  ready = true;
  await waitStatus(sink, pod, 'r ready', (st) => containerState(st, 'r')?.ready === true);
  const restarted = await waitStatus(
    sink,
    pod,
    'l restarted',
    (st) => (containerState(st, 'l')?.restartCount ?? 0) >= 1,
  );
  assert.ok(containerState(restarted, 'l'));
  assert.ok(sink.events.some((e) => e.reason === 'Unhealthy' && /Liveness probe failed/.test(e.message)));
  assert.ok(sink.events.some((e) => e.reason === 'Killing' && /failed liveness probe/.test(e.message)));
  ready = false;
  await waitStatus(sink, pod, 'r unready again', (st) => containerState(st, 'r')?.ready === false);
});

test('deleting a pod stops its containers and sandbox, then reports it terminated', async () => {
  const { sink, manager, runtime } = await setup();
  const pod = makePod('del', { containers: [nginx()] });
  manager.upsert(pod);
  await waitStatus(sink, pod, 'Running', (s) => s.phase === 'Running');
  manager.upsert({
    ...pod,
    metadata: { ...pod.metadata, deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 5 },
  });
  await waitUntil('podTerminated', () => sink.terminated.includes('default/del'));
  assert.equal(runtime.sandboxes.size, 0);
  assert.equal(runtime.containers.size, 0);
  assert.ok(sink.reasons('default/del').includes('Killing'));
  assert.equal(manager.worker(pod.metadata?.uid ?? ''), undefined);
});

test('a restarted kubelet adopts running containers and starts nothing twice; orphans are removed', async () => {
  const runtime = new FakeRuntime();
  const sink = new RecordingSink();
  const objects = new MemoryObjectSource();
  const dir = await tempDir('kubit-kubelet-adopt-');
  cleanups.push(() => dir.cleanup());
  const opts = {
    runtime,
    objects,
    statusSink: sink,
    events: sink,
    hostIP: '127.0.0.1',
    rootDir: dir.path,
    relistIntervalMs: 100,
    retryMs: 100,
  };
  const keep = makePod('keep', { containers: [nginx()] });
  const gone = makePod('gone', { containers: [nginx()] });
  const first = new PodManager(opts);
  await first.start([keep, gone]);
  await waitStatus(sink, keep, 'Running', (s) => s.phase === 'Running');
  await waitStatus(sink, gone, 'Running', (s) => s.phase === 'Running');
  first.stop(); // as if killed: the runtime keeps running everything
  const creates = runtime.calls.filter((c) => c.startsWith('CreateContainer')).length;
  const sink2 = new RecordingSink();
  const second = new PodManager({ ...opts, statusSink: sink2, events: sink2 });
  cleanups.push(() => second.stop());
  await second.start([keep]); // "gone" was deleted while the kubelet was down
  const s = await waitStatus(sink2, keep, 'Running', (st) => st.phase === 'Running');
  assert.equal(containerState(s, 'web')?.restartCount, 0);
  await waitUntil('the orphan to be removed', async () => (await runtime.listPodSandbox()).length === 1);
  assert.equal(runtime.calls.filter((c) => c.startsWith('CreateContainer')).length, creates);
  assert.equal(runtime.containers.size, 1);
});

test('admission rejects pods beyond maxPods or allocatable resources', async () => {
  const { sink, manager } = await setup(
    {},
    { maxPods: 1, allocatable: { milliCpu: 1000, memoryBytes: 1 << 30 } },
  );
  const a = makePod('a', { containers: [nginx()] });
  const b = makePod('b', { containers: [nginx()] });
  manager.upsert(a);
  manager.upsert(b);
  const s = await waitStatus(sink, b, 'Failed', (st) => st.phase === 'Failed');
  assert.equal(s.reason, 'OutOfpods');
  await waitStatus(sink, a, 'Running', (st) => st.phase === 'Running');
});

test('admission rejects a pod whose cpu request does not fit', async () => {
  const { sink, manager } = await setup({}, { allocatable: { milliCpu: 1000, memoryBytes: 1 << 30 } });
  const big = makePod('big', { containers: [nginx({ resources: { requests: { cpu: '2' } } })] });
  manager.upsert(big);
  const s = await waitStatus(sink, big, 'Failed', (st) => st.phase === 'Failed');
  assert.equal(s.reason, 'OutOfcpu');
});

test('changing a container image in the pod spec restarts the container with the new image', async () => {
  const { sink, manager, runtime } = await setup();
  const pod = makePod('respec', { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1' }] });
  manager.upsert(pod);
  await waitStatus(sink, pod, 'Running', (s) => s.phase === 'Running');
  const changed = structuredClone(pod);
  if (changed.spec) changed.spec.containers[0].image = 'busybox:2';
  manager.upsert(changed);
  const s = await waitStatus(sink, changed, 'running busybox:2', (st) => {
    const c = containerState(st, 'c');
    return !!c?.state?.running && c.restartCount === 1;
  });
  assert.equal(s.phase, 'Running');
  assert.ok(sink.events.some((e) => e.reason === 'Killing' && /definition changed/.test(e.message)));
  const running = [...runtime.containers.values()].filter((c) => c.status.state === 'CONTAINER_RUNNING');
  assert.deepEqual(
    running.map((c) => c.config.image.image),
    ['busybox:2'],
  );
});

test('a new pod starts without a look first, its image checked alongside the sandbox, Running reported as StartContainer returns; its own changes cause no second sync', async () => {
  const fake = new FakeRuntime();
  fake.images.set('docker.io/library/nginx:1.25', {
    id: 'sha256:ab',
    repoTags: ['nginx:1.25'],
    repoDigests: [],
    size: 1,
  });
  /** Each runtime call as "method <first argument as JSON>". */
  const calls: string[] = [];
  const runtime = new Proxy(fake, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return (...args: unknown[]) => {
        calls.push(`${prop} ${JSON.stringify(args[0] ?? '')}`);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  cleanups.push(() => fake.close());
  const { sink, manager } = await setup({}, { runtime, relistIntervalMs: 20, resyncIntervalMs: 600_000 });
  const pod = makePod('web', { containers: [nginx({ imagePullPolicy: 'IfNotPresent' })] });
  const uid = pod.metadata?.uid ?? '';
  sink.onChange(() => {
    const phase = sink.status('default/web')?.phase;
    if (phase && !calls.includes(`status ${phase}`)) calls.push(`status ${phase}`);
  });
  manager.upsert(pod);
  await waitStatus(sink, pod, 'Running', (st) => st.phase === 'Running');
  await new Promise((r) => setTimeout(r, 300)); // a dozen relists
  const ofPod = (c: string) => c.includes(uid);
  const run = calls.findIndex((c) => c.startsWith('runPodSandbox'));
  assert.ok(run >= 0);
  assert.deepEqual(
    calls.filter((c) => c.startsWith('listPodSandbox') && ofPod(c)),
    [],
    'the worker never listed the pod: not before its sandbox, and no relist made it sync again',
  );
  const imageCheck = calls.findIndex((c) => c.startsWith('imageStatus'));
  assert.ok(imageCheck >= 0 && imageCheck < run, 'ImageStatus is asked before RunPodSandbox returns');
  assert.equal(calls.filter((c) => c.startsWith('imageStatus')).length, 1);
  const running = calls.indexOf('status Running');
  const confirmed = calls.findIndex((c) => c.startsWith('containerStatus'));
  assert.ok(running >= 0 && running < confirmed, 'Running is reported before ContainerStatus is asked');
  assert.deepEqual(sink.reasons('default/web'), ['Created', 'Started']);
});
