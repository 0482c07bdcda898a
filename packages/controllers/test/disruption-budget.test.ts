// The disruption controller's arithmetic (pure): expected and desired counts,
// healthy pods, standing evictions and their expiry, the status and its condition.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Pod, PodDisruptionBudget } from '@kubit/api';
import {
  countHealthy,
  DELETION_TIMEOUT_MS,
  expectedPods,
  nextStatus,
  scaledValue,
  standingDisruptions,
} from '../src/disruption/budget.js';

const pod = (name: string, ready: boolean, owner?: string, deleting = false): Pod => ({
  metadata: {
    name,
    ...(owner
      ? {
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: owner, uid: owner, controller: true },
          ],
        }
      : {}),
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});

const pdb = (spec: Record<string, unknown>, status?: object): PodDisruptionBudget => ({
  metadata: { name: 'b', namespace: 'default', generation: 1 },
  spec,
  ...(status ? { status: status as PodDisruptionBudget['status'] } : {}),
});

describe('disruption budget arithmetic', () => {
  test('percentages round up, as Kubernetes scales them for budgets', () => {
    assert.equal(scaledValue('50%', 3), 2);
    assert.equal(scaledValue('10%', 1), 1);
    assert.equal(scaledValue(2, 10), 2);
    assert.throws(() => scaledValue('x', 3));
  });

  test('expectedPods: an integer minAvailable counts the pods found; the rest use the scale', () => {
    const pods = [pod('a', true, 'rs1'), pod('b', true, 'rs1'), pod('c', true)];
    const scale = () => ({ uid: 'rs1', replicas: 5 });
    assert.deepEqual(expectedPods(pdb({ minAvailable: 2 }), pods, scale), {
      expectedCount: 3,
      desiredHealthy: 2,
      unmanaged: [],
    });
    const e = expectedPods(pdb({ maxUnavailable: '40%' }), pods, scale);
    assert.deepEqual(e, { expectedCount: 5, desiredHealthy: 3, unmanaged: ['c'] });
    assert.equal(expectedPods(pdb({ minAvailable: '50%' }), pods, scale).desiredHealthy, 3);
    assert.equal(expectedPods(pdb({ maxUnavailable: 9 }), pods, scale).desiredHealthy, 0);
    assert.throws(
      () => expectedPods(pdb({ maxUnavailable: 1 }), pods, () => undefined),
      /found no controllers for pod "a"/,
    );
  });

  test('healthy pods leave out unready, deleting and recently evicted pods; old evictions expire', () => {
    const now = Date.parse('2026-06-01T12:00:00Z');
    const recent = new Date(now - 1000).toISOString();
    const old = new Date(now - DELETION_TIMEOUT_MS - 1000).toISOString();
    const pods = [
      pod('a', true),
      pod('b', true),
      pod('c', true),
      pod('d', false),
      pod('e', true, undefined, true),
    ];
    const budget = pdb(
      { minAvailable: 1 },
      { disruptedPods: { a: recent, b: old, e: recent, gone: recent } },
    );
    const { disrupted, recheckAt, expired } = standingDisruptions(budget, pods, now);
    assert.deepEqual(disrupted, { a: recent });
    assert.equal(recheckAt, Date.parse(recent) + DELETION_TIMEOUT_MS);
    assert.deepEqual(
      expired.map((p) => p.metadata?.name),
      ['b'],
    );
    assert.equal(countHealthy(pods, disrupted), 2);
  });

  test('the status: disruptionsAllowed never negative, 0 with no expected pods, and the condition', () => {
    const now = '2026-06-01T12:00:00Z';
    const s = nextStatus(
      pdb({ minAvailable: 2 }),
      { currentHealthy: 3, desiredHealthy: 2, expectedCount: 3 },
      {},
      now,
    );
    assert.equal(s?.disruptionsAllowed, 1);
    assert.equal(s?.observedGeneration, 1);
    assert.deepEqual(s?.conditions, [
      {
        type: 'DisruptionAllowed',
        status: 'True',
        reason: 'SufficientPods',
        message: '',
        observedGeneration: 1,
        lastTransitionTime: now,
      },
    ]);
    // Unchanged: no write.
    assert.equal(
      nextStatus(
        pdb({ minAvailable: 2 }, s),
        { currentHealthy: 3, desiredHealthy: 2, expectedCount: 3 },
        {},
        'later',
      ),
      undefined,
    );
    const low = nextStatus(
      pdb({ minAvailable: 5 }, s),
      { currentHealthy: 3, desiredHealthy: 5, expectedCount: 3 },
      {},
      'later',
    );
    assert.equal(low?.disruptionsAllowed, 0);
    assert.equal(low?.conditions?.[0].reason, 'InsufficientPods');
    assert.equal(low?.conditions?.[0].lastTransitionTime, 'later');
    const none = nextStatus(
      pdb({ minAvailable: 0 }),
      { currentHealthy: 0, desiredHealthy: 0, expectedCount: 0 },
      {},
      now,
    );
    assert.equal(none?.disruptionsAllowed, 0);
  });
});
