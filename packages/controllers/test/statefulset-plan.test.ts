// The StatefulSet controller's decisions without I/O: names and identity,
// OrderedReady and Parallel scaling, failed pods, rolling updates with a
// partition and maxUnavailable, OnDelete, claims and their owners, revisions.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { claimOwnerRefs, claimsFor } from '../src/statefulset/claims.js';
import {
  identityMatches,
  newStatefulPod,
  POD_INDEX_LABEL,
  POD_NAME_LABEL,
  parentAndOrdinal,
  REVISION_LABEL,
  storageMatches,
} from '../src/statefulset/identity.js';
import { type Action, type PlanInput, planSync } from '../src/statefulset/plan.js';
import {
  applyRevision,
  newRevision,
  revisionHash,
  revisionsToTruncate,
} from '../src/statefulset/revisions.js';
import type { ControllerRevision, PersistentVolumeClaim, Pod, StatefulSet } from '../src/types.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');

function sts(replicas: number, spec: Partial<NonNullable<StatefulSet['spec']>> = {}): StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: 'default', uid: 'set-uid', generation: 2 },
    spec: {
      replicas,
      serviceName: 'nginx',
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx:1' }] },
      },
      podManagementPolicy: 'OrderedReady',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      ...spec,
    },
  };
}

/** A pod of the set at `revision`, Running and Ready since a minute ago unless told. */
function pod(
  set: StatefulSet,
  ordinal: number,
  revision = 'web-a',
  state: 'ready' | 'pending' | 'failed' | 'terminating' = 'ready',
): Pod {
  const p = newStatefulPod(set, set, ordinal, revision);
  const since = new Date(NOW - 60_000).toISOString();
  const status: Pod['status'] =
    state === 'pending'
      ? { phase: 'Pending' }
      : state === 'failed'
        ? { phase: 'Failed' }
        : { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: since }] };
  const deletionTimestamp = state === 'terminating' ? new Date(NOW).toISOString() : undefined;
  return { ...p, metadata: { ...p.metadata, uid: `uid-${ordinal}`, deletionTimestamp }, status };
}

function input(set: StatefulSet, pods: Pod[], update = 'web-a', current = 'web-a'): PlanInput {
  return {
    set,
    pods,
    currentSet: set,
    updateSet: set,
    currentRevision: current,
    updateRevision: update,
    collisionCount: 0,
    now: NOW,
  };
}

const describeActions = (as: Action[]) =>
  as.map((a) => `${a.kind}${a.kind === 'delete' ? `(${a.why})` : ''} ${a.pod.metadata?.name}`);

describe('StatefulSet identity', () => {
  test('a pod is named by ordinal, labelled, and has the hostname, subdomain, owner and claims', () => {
    const set = sts(3, {
      ordinals: { start: 5 },
      volumeClaimTemplates: [{ metadata: { name: 'www' }, spec: { accessModes: ['ReadWriteOnce'] } }],
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx:1' }], volumes: [{ name: 'www', emptyDir: {} }] },
      },
    });
    const p = newStatefulPod(set, set, 6, 'web-abc');
    assert.equal(p.metadata!.name, 'web-6');
    assert.deepEqual(p.metadata!.labels, {
      app: 'web',
      [REVISION_LABEL]: 'web-abc',
      [POD_NAME_LABEL]: 'web-6',
      [POD_INDEX_LABEL]: '6',
    });
    assert.equal(p.spec!.hostname, 'web-6');
    assert.equal(p.spec!.subdomain, 'nginx');
    assert.deepEqual(p.metadata!.ownerReferences, [
      {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        name: 'web',
        uid: 'set-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    // The template's own volume of the claim's name is replaced by the claim.
    assert.deepEqual(p.spec!.volumes, [{ name: 'www', persistentVolumeClaim: { claimName: 'www-web-6' } }]);
    assert.ok(identityMatches(set, p));
    assert.ok(storageMatches(set, p));
    assert.ok(!storageMatches(set, { ...p, spec: { ...p.spec!, volumes: [] } }));
    assert.deepEqual(parentAndOrdinal(p), { parent: 'web', ordinal: 6 });
    const [claim] = claimsFor(set, 6);
    assert.equal(claim.metadata!.name, 'www-web-6');
    assert.deepEqual(claim.metadata!.labels, { app: 'web' });
  });

  test('ordinals.start moves the range: replicas 2 from 5 are web-5 and web-6', () => {
    const set = sts(2, { ordinals: { start: 5 }, podManagementPolicy: 'Parallel' });
    assert.deepEqual(describeActions(planSync(input(set, [])).actions), ['create web-5', 'create web-6']);
  });
});

describe('StatefulSet scaling', () => {
  test('OrderedReady creates the lowest missing ordinal, one at a time', () => {
    const set = sts(3);
    assert.deepEqual(describeActions(planSync(input(set, [])).actions), ['create web-0']);
    assert.deepEqual(describeActions(planSync(input(set, [pod(set, 0)])).actions), ['create web-1']);
  });

  test('OrderedReady waits while a pod is not Running and Ready, or terminating', () => {
    const set = sts(3);
    assert.deepEqual(planSync(input(set, [pod(set, 0, 'web-a', 'pending')])).actions, []);
    assert.deepEqual(planSync(input(set, [pod(set, 0, 'web-a', 'terminating')])).actions, []);
  });

  test('OrderedReady waits for minReadySeconds and asks to look again then', () => {
    const set = sts(2, { minReadySeconds: 120 });
    const plan = planSync(input(set, [pod(set, 0)]));
    assert.deepEqual(plan.actions, []);
    assert.equal(plan.requeueAfterMs, 60_100);
    assert.equal(plan.status.readyReplicas, 1);
    assert.equal(plan.status.availableReplicas, 0);
  });

  test('Parallel also looks again when a Ready pod becomes available', () => {
    const set = sts(1, { minReadySeconds: 90, podManagementPolicy: 'Parallel' });
    assert.equal(planSync(input(set, [pod(set, 0)])).requeueAfterMs, 30_100);
    assert.equal(
      planSync(input(sts(1, { podManagementPolicy: 'Parallel' }), [pod(set, 0)])).requeueAfterMs,
      undefined,
    );
  });

  test('a failed pod is deleted, not replaced in the same sync (its name must be free)', () => {
    const set = sts(3);
    const plan = planSync(input(set, [pod(set, 0), pod(set, 1, 'web-a', 'failed'), pod(set, 2)]));
    assert.deepEqual(describeActions(plan.actions), ['delete(failed) web-1']);
  });

  test('OrderedReady scales down from the highest ordinal, one at a time', () => {
    const set = sts(1);
    const pods = [pod(set, 0), pod(set, 1), pod(set, 2)];
    assert.deepEqual(describeActions(planSync(input(set, pods)).actions), ['delete(condemned) web-2']);
    const terminating = [pod(set, 0), pod(set, 1), pod(set, 2, 'web-a', 'terminating')];
    assert.deepEqual(planSync(input(set, terminating)).actions, []);
  });

  test('OrderedReady deletes an unhealthy condemned pod only when it is the first unhealthy one', () => {
    const set = sts(1);
    // web-2 is unhealthy and the highest: it goes first.
    assert.deepEqual(
      describeActions(
        planSync(input(set, [pod(set, 0), pod(set, 1), pod(set, 2, 'web-a', 'pending')])).actions,
      ),
      ['delete(condemned) web-2'],
    );
    // web-1 is unhealthy but web-2 (higher) is not: web-2 is deleted first.
    assert.deepEqual(
      describeActions(
        planSync(input(set, [pod(set, 0), pod(set, 1, 'web-a', 'pending'), pod(set, 2)])).actions,
      ),
      ['delete(condemned) web-2'],
    );
  });

  test('Parallel creates and deletes all at once', () => {
    const up = sts(3, { podManagementPolicy: 'Parallel' });
    assert.deepEqual(describeActions(planSync(input(up, [])).actions), [
      'create web-0',
      'create web-1',
      'create web-2',
    ]);
    const down = sts(1, { podManagementPolicy: 'Parallel' });
    assert.deepEqual(
      describeActions(planSync(input(down, [pod(down, 0), pod(down, 1), pod(down, 2)])).actions),
      ['delete(condemned) web-2', 'delete(condemned) web-1'],
    );
  });

  test('a pod that lost its identity labels gets them back', () => {
    const set = sts(1);
    const p = pod(set, 0);
    const { [POD_INDEX_LABEL]: _gone, ...labels } = p.metadata!.labels!;
    const plan = planSync(input(set, [{ ...p, metadata: { ...p.metadata, labels } }]));
    assert.deepEqual(describeActions(plan.actions), ['fixIdentity web-0']);
    assert.equal(plan.actions[0].pod.metadata?.labels?.[POD_INDEX_LABEL], '0');
  });

  test('the status counts pods by readiness and revision', () => {
    const set = sts(3);
    const plan = planSync(input(set, [pod(set, 0, 'web-a'), pod(set, 1, 'web-b', 'pending')], 'web-b'));
    assert.deepEqual(
      { ...plan.status },
      {
        observedGeneration: 2,
        replicas: 2,
        readyReplicas: 1,
        availableReplicas: 1,
        currentReplicas: 1,
        updatedReplicas: 1,
        currentRevision: 'web-a',
        updateRevision: 'web-b',
        collisionCount: 0,
      },
    );
  });
});

describe('StatefulSet updates', () => {
  const old = (set: StatefulSet, n: number) => Array.from({ length: n }, (_, i) => pod(set, i, 'web-a'));

  test('a rolling update replaces the highest ordinal first, then waits for it', () => {
    const set = sts(3);
    assert.deepEqual(describeActions(planSync(input(set, old(set, 3), 'web-b')).actions), [
      'delete(update) web-2',
    ]);
    const recreated = [pod(set, 0, 'web-a'), pod(set, 1, 'web-a'), pod(set, 2, 'web-b', 'pending')];
    assert.deepEqual(planSync(input(set, recreated, 'web-b')).actions, []);
    const ready = [pod(set, 0, 'web-a'), pod(set, 1, 'web-a'), pod(set, 2, 'web-b')];
    assert.deepEqual(describeActions(planSync(input(set, ready, 'web-b')).actions), ['delete(update) web-1']);
  });

  test('a deleted pod is recreated at the update revision above the partition, the current one below', () => {
    const set = sts(3, { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } });
    const low = planSync(input(set, [pod(set, 1, 'web-a'), pod(set, 2, 'web-b')], 'web-b'));
    assert.equal(low.actions[0].pod.metadata?.labels?.[REVISION_LABEL], 'web-a');
    const high = planSync(input(set, [pod(set, 0, 'web-a'), pod(set, 1, 'web-a')], 'web-b'));
    assert.equal(high.actions[0].pod.metadata?.labels?.[REVISION_LABEL], 'web-b');
  });

  test('a partitioned update stops at the partition and does not complete', () => {
    const set = sts(3, { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } });
    const pods = [pod(set, 0, 'web-a'), pod(set, 1, 'web-a'), pod(set, 2, 'web-b')];
    const plan = planSync(input(set, pods, 'web-b'));
    assert.deepEqual(plan.actions, []);
    assert.equal(plan.status.currentRevision, 'web-a');
    assert.equal(plan.status.updatedReplicas, 1);
    assert.equal(plan.status.currentReplicas, 2);
  });

  test('maxUnavailable replaces that many at once, counting pods already unavailable', () => {
    const set = sts(4, {
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0, maxUnavailable: 2 } },
    });
    assert.deepEqual(describeActions(planSync(input(set, old(set, 4), 'web-b')).actions), [
      'delete(update) web-3',
      'delete(update) web-2',
    ]);
    const oneDown = [
      pod(set, 0, 'web-a'),
      pod(set, 1, 'web-a', 'pending'),
      pod(set, 2, 'web-a'),
      pod(set, 3, 'web-a'),
    ];
    const parallel = { ...set, spec: { ...set.spec!, podManagementPolicy: 'Parallel' } };
    assert.deepEqual(describeActions(planSync(input(parallel, oneDown, 'web-b')).actions), [
      'delete(update) web-3',
    ]);
  });

  test('a finished update makes the update revision current', () => {
    const set = sts(2);
    const plan = planSync(input(set, [pod(set, 0, 'web-b'), pod(set, 1, 'web-b')], 'web-b'));
    assert.equal(plan.status.currentRevision, 'web-b');
    assert.equal(plan.status.currentReplicas, 2);
  });

  test('OnDelete never deletes a pod for an update', () => {
    const set = sts(3, { updateStrategy: { type: 'OnDelete' } });
    assert.deepEqual(planSync(input(set, old(set, 3), 'web-b')).actions, []);
  });
});

describe('StatefulSet revisions and claims', () => {
  test('a revision holds the template as a replacing patch, named by its hash', () => {
    const set = sts(1);
    const rev = newRevision(set, 1, 0);
    assert.deepEqual(rev.data, { spec: { template: { ...set.spec!.template, $patch: 'replace' } } });
    assert.equal(rev.metadata!.name, `web-${revisionHash(rev.data, 0)}`);
    assert.equal(rev.metadata!.labels![REVISION_LABEL], revisionHash(rev.data, 0));
    assert.equal(rev.metadata!.labels!.app, 'web');
    assert.notEqual(revisionHash(rev.data, 0), revisionHash(rev.data, 1));
    const changed = sts(1, {
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'nginx:2' }] },
      },
    });
    assert.deepEqual(applyRevision(changed, rev).spec!.template, set.spec!.template);
  });

  test('history keeps revisionHistoryLimit revisions besides the live ones', () => {
    const revs = [1, 2, 3, 4].map(
      (n) => ({ metadata: { name: `r${n}` }, revision: n }) as ControllerRevision,
    );
    assert.deepEqual(
      revisionsToTruncate(revs, new Set(['r4', 'r2']), 1).map((r) => r.metadata!.name),
      ['r1'],
    );
  });

  test('claim owners follow the retention policy', () => {
    const claim: PersistentVolumeClaim = { metadata: { name: 'www-web-2', namespace: 'default' } };
    const refsFor = (policy: { whenDeleted?: string; whenScaled?: string }, replicas: number) => {
      const set = sts(replicas, {
        persistentVolumeClaimRetentionPolicy: policy,
        volumeClaimTemplates: [{ metadata: { name: 'www' } }],
      });
      return claimOwnerRefs(claim, set, pod(set, 2))?.map((r) => `${r.kind}/${r.name}`);
    };
    assert.equal(refsFor({ whenDeleted: 'Retain', whenScaled: 'Retain' }, 3), undefined);
    assert.deepEqual(refsFor({ whenDeleted: 'Delete', whenScaled: 'Retain' }, 3), ['StatefulSet/web']);
    assert.deepEqual(refsFor({ whenDeleted: 'Delete', whenScaled: 'Retain' }, 1), ['StatefulSet/web']);
    assert.equal(refsFor({ whenDeleted: 'Retain', whenScaled: 'Delete' }, 3), undefined);
    assert.deepEqual(refsFor({ whenDeleted: 'Retain', whenScaled: 'Delete' }, 1), ['Pod/web-2']);
    assert.deepEqual(refsFor({ whenDeleted: 'Delete', whenScaled: 'Delete' }, 1), ['Pod/web-2']);
  });
});
