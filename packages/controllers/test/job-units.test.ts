// The Job controller's pure parts: index intervals, the failure back-off, and
// pod failure policy matching.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Job, Pod, PodFailurePolicy } from '@kubit/api';
import { backoffDelayMs, NO_BACKOFF, nextBackoffRecord, remainingBackoffMs } from '../src/job/backoff.js';
import { matchPodFailurePolicy } from '../src/job/failure-policy.js';
import { firstPendingIndexes, formatIndexes, parseIndexes, unionIndexes } from '../src/job/indexes.js';
import { pastBackoffLimitOnFailure } from '../src/job/status.js';

describe('completion indexes', () => {
  test('format as intervals and parse back', () => {
    assert.equal(formatIndexes([]), '');
    assert.equal(formatIndexes([0]), '0');
    assert.equal(formatIndexes([1, 3, 4, 5, 7]), '1,3-5,7');
    assert.equal(formatIndexes([0, 1]), '0-1');
    assert.deepEqual(parseIndexes('1,3-5,7', 10), [1, 3, 4, 5, 7]);
    assert.deepEqual(parseIndexes('', 10), []);
    assert.deepEqual(parseIndexes(undefined, 10), []);
  });

  test('parsing drops indexes at or past completions and malformed parts', () => {
    assert.deepEqual(parseIndexes('0-3,8-12', 10), [0, 1, 2, 3, 8, 9]);
    assert.deepEqual(parseIndexes('x,2,-1,4-', 10), [2]);
  });

  test('union and pending indexes', () => {
    assert.deepEqual(unionIndexes([1, 5], [3, 1]), [1, 3, 5]);
    assert.deepEqual(firstPendingIndexes(6, 2, new Set([0, 2])), [1, 3]);
    assert.deepEqual(firstPendingIndexes(3, 5, new Set([0, 1, 2])), []);
  });
});

describe('failure back-off', () => {
  test('10 s doubling per failure, capped at 6 minutes', () => {
    assert.equal(backoffDelayMs(0), 0);
    assert.equal(backoffDelayMs(1), 10_000);
    assert.equal(backoffDelayMs(2), 20_000);
    assert.equal(backoffDelayMs(3), 40_000);
    assert.equal(backoffDelayMs(6), 320_000);
    assert.equal(backoffDelayMs(7), 360_000);
    assert.equal(backoffDelayMs(1000), 360_000);
  });

  test('a success after the failures resets the count; one before them does not', () => {
    let r = nextBackoffRecord(NO_BACKOFF, [
      { succeeded: false, finishedAt: 1000 },
      { succeeded: false, finishedAt: 3000 },
    ]);
    assert.deepEqual(r, { failuresAfterLastSuccess: 2, lastFailureTime: 3000 });
    assert.equal(remainingBackoffMs(r, 3000), 20_000);
    assert.equal(remainingBackoffMs(r, 13_000), 10_000);
    assert.equal(remainingBackoffMs(r, 30_000), 0);
    r = nextBackoffRecord(r, [{ succeeded: true, finishedAt: 4000 }]);
    assert.deepEqual(r, { failuresAfterLastSuccess: 0, lastFailureTime: undefined });
    assert.equal(remainingBackoffMs(r, 4000), 0);
    r = nextBackoffRecord(NO_BACKOFF, [
      { succeeded: false, finishedAt: 5000 },
      { succeeded: true, finishedAt: 2000 },
    ]);
    assert.equal(r.failuresAfterLastSuccess, 1);
  });
});

function failedPod(opts: {
  exit?: Record<string, number>;
  init?: Record<string, number>;
  conditions?: { type: string; status: string }[];
}): Pod {
  const statuses = (m: Record<string, number> | undefined) =>
    Object.entries(m ?? {}).map(([name, exitCode]) => ({
      name,
      image: 'x',
      imageID: '',
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode } },
    }));
  return {
    metadata: { name: 'p', namespace: 'ns' },
    status: {
      phase: 'Failed',
      containerStatuses: statuses(opts.exit),
      initContainerStatuses: opts.init ? statuses(opts.init) : undefined,
      conditions: opts.conditions,
    },
  };
}

describe('pod failure policy', () => {
  const policy: PodFailurePolicy = {
    rules: [
      { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
      { action: 'FailJob', onExitCodes: { containerName: 'main', operator: 'In', values: [42] } },
      { action: 'Count', onExitCodes: { operator: 'In', values: [1] } },
      { action: 'FailIndex', onExitCodes: { operator: 'NotIn', values: [1, 42] } },
    ],
  };

  test('no policy: every failure counts', () => {
    assert.deepEqual(matchPodFailurePolicy(undefined, failedPod({ exit: { main: 42 } })), {
      action: 'Count',
      counts: true,
    });
  });

  test('rules apply in order, the first match wins', () => {
    const disrupted = failedPod({
      exit: { main: 42 },
      conditions: [{ type: 'DisruptionTarget', status: 'True' }],
    });
    assert.deepEqual(matchPodFailurePolicy(policy, disrupted), { action: 'Ignore', counts: false });
    assert.deepEqual(matchPodFailurePolicy(policy, failedPod({ exit: { main: 42 } })), {
      action: 'FailJob',
      counts: true,
      message: 'Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1',
    });
    assert.equal(matchPodFailurePolicy(policy, failedPod({ exit: { main: 1 } })).action, 'Count');
    assert.equal(matchPodFailurePolicy(policy, failedPod({ exit: { main: 7 } })).action, 'FailIndex');
  });

  test('containerName narrows onExitCodes; exit code 0 never matches; init containers count', () => {
    // 42 in a sidecar is not the main container's: FailJob skips it, and NotIn [1, 42] lists 42.
    assert.equal(matchPodFailurePolicy(policy, failedPod({ exit: { side: 42 } })).action, 'Count');
    const zero: PodFailurePolicy = {
      rules: [{ action: 'FailJob', onExitCodes: { operator: 'NotIn', values: [5] } }],
    };
    assert.equal(matchPodFailurePolicy(zero, failedPod({ exit: { main: 0 } })).action, 'Count');
    assert.equal(
      matchPodFailurePolicy(zero, failedPod({ exit: { main: 0 }, init: { setup: 3 } })).action,
      'FailJob',
    );
  });

  test('onPodConditions matches type and status', () => {
    const p: PodFailurePolicy = {
      rules: [{ action: 'FailJob', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
    };
    assert.equal(
      matchPodFailurePolicy(p, failedPod({ conditions: [{ type: 'DisruptionTarget', status: 'False' }] }))
        .action,
      'Count',
    );
    assert.equal(
      matchPodFailurePolicy(p, failedPod({ conditions: [{ type: 'DisruptionTarget', status: 'True' }] }))
        .message,
      'Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0',
    );
  });
});

describe('backoffLimit with restartPolicy OnFailure', () => {
  const onFailure = (restartPolicy: 'OnFailure' | 'Never'): Job => ({
    spec: { template: { spec: { restartPolicy, containers: [{ name: 'main' }] } } },
  });
  const withRestarts = (n: number, phase = 'Running'): Pod => ({
    status: {
      phase,
      containerStatuses: [{ name: 'main', image: 'x', imageID: '', ready: true, restartCount: n }],
    },
  });

  test('container restarts of running pods count toward the limit', () => {
    assert.equal(
      pastBackoffLimitOnFailure(onFailure('OnFailure'), [withRestarts(1), withRestarts(1)], 3),
      false,
    );
    assert.equal(
      pastBackoffLimitOnFailure(onFailure('OnFailure'), [withRestarts(2), withRestarts(1)], 3),
      true,
    );
    assert.equal(pastBackoffLimitOnFailure(onFailure('OnFailure'), [withRestarts(5, 'Succeeded')], 3), false);
    assert.equal(pastBackoffLimitOnFailure(onFailure('Never'), [withRestarts(5)], 3), false);
  });

  test('a limit of 0 allows no restart at all', () => {
    assert.equal(pastBackoffLimitOnFailure(onFailure('OnFailure'), [withRestarts(0)], 0), false);
    assert.equal(pastBackoffLimitOnFailure(onFailure('OnFailure'), [withRestarts(1)], 0), true);
  });
});
