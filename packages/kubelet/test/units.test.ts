// Small pieces of the pod logic on their own: backoff, cgroup resources, env expansion, status.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ContainerStatus, NOT_FOUND, RuntimeError } from '@kubit/cri';
import type { Logger } from '@kubit/daemon';
import { Backoff, DEFAULT_BACKOFF } from '../src/pods/backoff.js';
import { expandReferences } from '../src/pods/env.js';
import { logFailure } from '../src/pods/failures.js';
import { linuxResources, podRequests } from '../src/pods/resources.js';
import { computePodStatus } from '../src/pods/status.js';
import { makePod } from './helpers.js';

test("the default backoff is Kubernetes': 10 s doubling to 5 min, reset after 10 min", () => {
  assert.deepEqual(DEFAULT_BACKOFF, { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 });
  let now = 0;
  const b = new Backoff(DEFAULT_BACKOFF, () => now);
  assert.equal(b.inBackoff('k', 0), false);
  const delays: number[] = [];
  for (let i = 0; i < 7; i++) {
    b.next('k');
    delays.push(b.delayMs('k'));
    now += 1000;
  }
  assert.deepEqual(delays, [10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  assert.equal(b.inBackoff('k', now), true);
  assert.equal(b.remainingMs('k', now), 300_000);
  now += 600_001;
  b.next('k');
  assert.equal(b.delayMs('k'), 10_000);
  b.forgetPrefix('k');
  assert.equal(b.delayMs('k'), 0);
});

test('cpu and memory become shares, quota over a 100 ms period, and a byte limit', () => {
  assert.deepEqual(
    linuxResources({
      name: 'c',
      resources: { requests: { cpu: '100m' }, limits: { cpu: '2', memory: '1Gi' } },
    }),
    {
      cpuShares: 102,
      cpuPeriod: 100_000,
      cpuQuota: 200_000,
      memoryLimitInBytes: 1024 ** 3,
    },
  );
  assert.deepEqual(linuxResources({ name: 'c' }), { cpuShares: 2 });
  // A limit without a request: the request defaults to the limit.
  assert.equal(linuxResources({ name: 'c', resources: { limits: { cpu: '500m' } } }).cpuShares, 512);
  const pod = makePod('p', {
    initContainers: [{ name: 'i', resources: { requests: { cpu: '3', memory: '1Mi' } } }],
    containers: [
      { name: 'a', resources: { requests: { cpu: '1', memory: '100Mi' } } },
      { name: 'b', resources: { requests: { cpu: '500m' } } },
    ],
  });
  assert.deepEqual(podRequests(pod), { milliCpu: 3000, memoryBytes: 100 * 1024 * 1024 });
});

test('$(VAR) references expand, $$ escapes, unknown ones stay', () => {
  const vars = new Map([['A', 'x']]);
  assert.equal(expandReferences('$(A)-$(B)-$$(A)', vars), 'x-$(B)-$(A)');
});

const ns = (s: number) => s * 1e9;
function instance(
  id: string,
  state: ContainerStatus['state'],
  extra: Partial<ContainerStatus> = {},
): ContainerStatus {
  return {
    id,
    metadata: { name: 'c', attempt: 0 },
    state,
    createdAt: ns(1),
    startedAt: ns(2),
    finishedAt: state === 'CONTAINER_EXITED' ? ns(3) : 0,
    exitCode: 0,
    image: { image: 'busybox' },
    imageRef: 'sha256:abc',
    reason: '',
    message: '',
    labels: {},
    annotations: {},
    logPath: '',
    ...extra,
  };
}

test('status: a waiting reason with the last termination, restart counts, phase and conditions', () => {
  const pod = makePod('p', { containers: [{ name: 'c', image: 'busybox' }] });
  const previous = instance('old', 'CONTAINER_EXITED', {
    exitCode: 2,
    annotations: { 'io.kubernetes.container.restartCount': '3' },
  });
  const s = computePodStatus({
    pod,
    hostIP: '10.0.0.1',
    podIP: '10.244.1.5',
    startTime: '2026-01-01T00:00:00Z',
    runtimeName: 'containerd',
    instances: new Map([['c', [previous]]]),
    waiting: new Map([['c', { reason: 'CrashLoopBackOff', message: 'back-off 40s' }]]),
    ready: () => true,
    started: () => true,
  });
  assert.equal(s.phase, 'Running');
  const c = s.containerStatuses?.[0];
  assert.deepEqual(c?.state, { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } });
  assert.equal(c?.lastState?.terminated?.exitCode, 2);
  assert.equal(c?.lastState?.terminated?.reason, 'Error');
  assert.equal(c?.lastState?.terminated?.containerID, 'containerd://old');
  assert.equal(c?.restartCount, 3);
  assert.equal(c?.ready, false);
  assert.equal(s.conditions?.find((x) => x.type === 'Ready')?.status, 'False');
  assert.deepEqual(s.podIPs, [{ ip: '10.244.1.5' }]);

  const running = computePodStatus({
    pod,
    hostIP: '10.0.0.1',
    podIP: '10.244.1.5',
    startTime: '2026-01-01T00:00:00Z',
    runtimeName: 'containerd',
    instances: new Map([['c', [instance('new', 'CONTAINER_RUNNING'), previous]]]),
    waiting: new Map(),
    ready: () => true,
    started: () => true,
    previous: s,
  });
  assert.equal(running.containerStatuses?.[0]?.ready, true);
  assert.equal(running.conditions?.find((x) => x.type === 'Ready')?.status, 'True');
  // PodScheduled did not change, so its transition time is kept.
  assert.equal(
    running.conditions?.find((x) => x.type === 'PodScheduled')?.lastTransitionTime,
    s.conditions?.find((x) => x.type === 'PodScheduled')?.lastTransitionTime,
  );
});

test('a failed best-effort call is logged with its pod, call and error; NotFound (gone already) only at debug', async () => {
  const lines: { level: string; fields: unknown; msg: string }[] = [];
  const record = (level: string) => (fields: unknown, msg: string) => lines.push({ level, fields, msg });
  const log = { warn: record('warn'), debug: record('debug') } as unknown as Logger;
  const what = { pod: 'default/web', call: 'StopContainer c-1' };
  assert.equal(
    await Promise.reject(new RuntimeError('deadline exceeded', 4)).catch(logFailure(log, what)),
    undefined,
  );
  await Promise.reject(new RuntimeError('no such container', NOT_FOUND)).catch(logFailure(log, what));
  await Promise.reject(new Error('not there yet')).catch(logFailure(log, { ...what, level: 'debug' }));
  assert.deepEqual(lines, [
    {
      level: 'warn',
      fields: { pod: 'default/web', call: 'StopContainer c-1', err: 'deadline exceeded' },
      msg: 'StopContainer c-1 failed',
    },
    {
      level: 'debug',
      fields: { pod: 'default/web', call: 'StopContainer c-1', err: 'no such container' },
      msg: 'StopContainer c-1 failed',
    },
    {
      level: 'debug',
      fields: { pod: 'default/web', call: 'StopContainer c-1', err: 'not there yet' },
      msg: 'StopContainer c-1 failed',
    },
  ]);
});
