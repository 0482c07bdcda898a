// What a hollow node reports for a pod annotated to exit (kubit.dev/hollow-exit-code,
// kubit.dev/hollow-run-ms): pure functions of the pod.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import {
  HOLLOW_EXIT_CODE_ANNOTATION,
  HOLLOW_RUN_MS_ANNOTATION,
  hollowExit,
  hollowFinishedStatus,
  hollowPodStatus,
} from '../src/index.js';

const pod = (annotations?: Record<string, string>): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1', annotations },
  spec: { containers: [{ name: 'main', image: 'busybox' }] },
});

test('hollowExit reads the annotations; bad or missing ones mean run for ever', () => {
  assert.equal(hollowExit(pod()), undefined);
  assert.deepEqual(hollowExit(pod({ [HOLLOW_EXIT_CODE_ANNOTATION]: '0' })), { exitCode: 0, runMs: 0 });
  assert.deepEqual(
    hollowExit(pod({ [HOLLOW_EXIT_CODE_ANNOTATION]: '42', [HOLLOW_RUN_MS_ANNOTATION]: '1500' })),
    {
      exitCode: 42,
      runMs: 1500,
    },
  );
  assert.equal(hollowExit(pod({ [HOLLOW_EXIT_CODE_ANNOTATION]: '256' })), undefined);
  assert.equal(hollowExit(pod({ [HOLLOW_EXIT_CODE_ANNOTATION]: 'x' })), undefined);
  assert.equal(
    hollowExit(pod({ [HOLLOW_EXIT_CODE_ANNOTATION]: '1', [HOLLOW_RUN_MS_ANNOTATION]: '-5' })),
    undefined,
  );
});

test('hollowFinishedStatus: Succeeded on 0, Failed otherwise, containers terminated, not Ready', () => {
  const running = {
    ...pod(),
    status: hollowPodStatus(pod(), '127.0.0.1', '10.128.0.1', new Date('2026-01-01T00:00:00Z')),
  };
  const at = new Date('2026-01-01T00:00:05Z');
  const ok = hollowFinishedStatus(running, 0, at);
  assert.equal(ok.phase, 'Succeeded');
  assert.equal(ok.podIP, '10.128.0.1');
  assert.deepEqual(ok.containerStatuses?.[0].state, {
    terminated: {
      exitCode: 0,
      reason: 'Completed',
      startedAt: '2026-01-01T00:00:00Z',
      finishedAt: '2026-01-01T00:00:05Z',
      containerID: 'fake://u1-main',
    },
  });
  assert.equal(ok.containerStatuses?.[0].ready, false);
  assert.equal(ok.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  const bad = hollowFinishedStatus(running, 2, at);
  assert.equal(bad.phase, 'Failed');
  assert.equal(bad.containerStatuses?.[0].state?.terminated?.reason, 'Error');
  assert.equal(bad.containerStatuses?.[0].state?.terminated?.exitCode, 2);
});
