// Unit tests of the DaemonSet controller's pure logic: which nodes a daemon pod
// belongs on (selector, affinity, taints, the tolerations every daemon pod gets)
// and the rolling-update maths.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DaemonSet, Node, Pod } from '@kubit/api';
import { FailedPodBackoff } from '../src/daemonset/backoff.js';
import {
  affinityForNode,
  nodeShouldRunDaemonPod,
  targetNodeName,
  withDaemonTolerations,
} from '../src/daemonset/eligibility.js';
import {
  CONTROLLER_REVISION_HASH,
  planRollingUpdate,
  type UpdateInput,
  updatedDesiredNodeCounts,
} from '../src/daemonset/update.js';

function node(name: string, labels: Record<string, string> = {}, taints: Node['spec'] = {}): Node {
  return { metadata: { name, labels }, spec: taints };
}

function ds(spec: Partial<NonNullable<NonNullable<DaemonSet['spec']>['template']['spec']>> = {}): DaemonSet {
  return {
    metadata: { name: 'agent', namespace: 'default' },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'c' }], ...spec } },
    },
  };
}

describe('nodeShouldRunDaemonPod', () => {
  test('nodeSelector and required node affinity choose the nodes', () => {
    const d = ds({ nodeSelector: { role: 'edge' } });
    assert.deepEqual(nodeShouldRunDaemonPod(node('a', { role: 'edge' }), d), {
      shouldRun: true,
      shouldContinueRunning: true,
    });
    assert.equal(nodeShouldRunDaemonPod(node('b', { role: 'core' }), d).shouldContinueRunning, false);
    const byAffinity = ds({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1'] }] },
              { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['special'] }] },
            ],
          },
        },
      },
    });
    assert.equal(nodeShouldRunDaemonPod(node('a', { zone: 'z1' }), byAffinity).shouldRun, true);
    assert.equal(nodeShouldRunDaemonPod(node('special'), byAffinity).shouldRun, true);
    assert.equal(nodeShouldRunDaemonPod(node('other', { zone: 'z2' }), byAffinity).shouldRun, false);
    assert.equal(nodeShouldRunDaemonPod(node('a'), ds({ nodeName: 'b' })).shouldRun, false);
  });

  test('an untolerated NoSchedule taint keeps new pods off but lets a running one stay', () => {
    const tainted = node('t', {}, { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] });
    assert.deepEqual(nodeShouldRunDaemonPod(tainted, ds()), {
      shouldRun: false,
      shouldContinueRunning: true,
    });
    const tolerant = ds({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu' }] });
    assert.equal(nodeShouldRunDaemonPod(tainted, tolerant).shouldRun, true);
  });

  test('an untolerated NoExecute taint evicts', () => {
    const tainted = node('t', {}, { taints: [{ key: 'evict', effect: 'NoExecute' }] });
    assert.deepEqual(nodeShouldRunDaemonPod(tainted, ds()), {
      shouldRun: false,
      shouldContinueRunning: false,
    });
  });

  test('daemon pods tolerate not-ready, unreachable, pressure and cordons; hostNetwork also network-unavailable', () => {
    const taints = [
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' },
      { key: 'node.kubernetes.io/disk-pressure', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/pid-pressure', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' },
    ];
    assert.equal(nodeShouldRunDaemonPod(node('n', {}, { taints }), ds()).shouldRun, true);
    const net = node(
      'n',
      {},
      { taints: [{ key: 'node.kubernetes.io/network-unavailable', effect: 'NoSchedule' }] },
    );
    assert.equal(nodeShouldRunDaemonPod(net, ds()).shouldRun, false);
    assert.equal(nodeShouldRunDaemonPod(net, ds({ hostNetwork: true })).shouldRun, true);
    // A template toleration with the same key and effect is replaced, not duplicated.
    const tol = withDaemonTolerations({
      containers: [],
      tolerations: [
        {
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          effect: 'NoExecute',
          tolerationSeconds: 5,
        },
      ],
    });
    const notReady = tol.filter((t) => t.key === 'node.kubernetes.io/not-ready');
    assert.equal(notReady.length, 1);
    assert.equal(notReady[0].tolerationSeconds, undefined);
  });
});

describe('node affinity of a daemon pod', () => {
  test('replaces the required terms with metadata.name In [node], keeping the rest', () => {
    const a = affinityForNode(
      {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['old'] }] }],
          },
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 1, preference: { matchExpressions: [{ key: 'x', operator: 'Exists' }] } },
          ],
        },
      },
      'node-2',
    );
    assert.deepEqual(a.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-2'] }] }],
    });
    assert.equal(a.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length, 1);
    assert.equal(targetNodeName({ spec: { containers: [], affinity: a } }), 'node-2');
    assert.equal(targetNodeName({ spec: { containers: [], nodeName: 'n', affinity: a } }), 'n');
  });
});

describe('rolling update maths', () => {
  test('maxSurge and maxUnavailable round percentages up; both 0 means 1 unavailable', () => {
    const d = ds();
    d.spec!.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '10%', maxSurge: 0 } };
    assert.deepEqual(updatedDesiredNodeCounts(d, 5), { maxSurge: 0, maxUnavailable: 1 });
    d.spec!.updateStrategy.rollingUpdate = { maxUnavailable: 0, maxSurge: '30%' };
    assert.deepEqual(updatedDesiredNodeCounts(d, 5), { maxSurge: 2, maxUnavailable: 0 });
    d.spec!.updateStrategy.rollingUpdate = { maxUnavailable: '0%', maxSurge: 0 };
    assert.deepEqual(updatedDesiredNodeCounts(d, 5), { maxSurge: 0, maxUnavailable: 1 });
  });

  const ready = '2026-01-01T00:00:00Z';
  function pod(name: string, hash: string, isReady = true): Pod {
    return {
      metadata: { name, labels: { [CONTROLLER_REVISION_HASH]: hash }, creationTimestamp: ready },
      spec: { containers: [] },
      status: {
        conditions: [{ type: 'Ready', status: isReady ? 'True' : 'False', lastTransitionTime: ready }],
      },
    };
  }
  const input = (nodeToPods: Map<string, Pod[]>, maxSurge: number, maxUnavailable: number): UpdateInput => ({
    nodeToPods,
    hash: 'new',
    generation: undefined,
    maxSurge,
    maxUnavailable,
    minReadySeconds: 0,
    now: Date.parse(ready) + 1000,
    shouldRun: () => true,
  });

  test('maxUnavailable 1 deletes one old pod at a time and waits for its replacement', () => {
    const nodes = new Map([
      ['a', [pod('a-old', 'old')]],
      ['b', [pod('b-old', 'old')]],
      ['c', [pod('c-old', 'old')]],
    ]);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 1)), { podsToDelete: ['a-old'], nodesToCreate: [] });
    // a's new pod is not available yet: nothing else goes.
    nodes.set('a', [pod('a-new', 'new', false)]);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 1)).podsToDelete, []);
    // a's pod is being replaced (no pod at all): still unavailable.
    nodes.set('a', []);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 1)).podsToDelete, []);
    nodes.set('a', [pod('a-new', 'new')]);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 1)).podsToDelete, ['b-old']);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 2)).podsToDelete, ['b-old', 'c-old']);
  });

  test('an old pod that is not available is replaced even past maxUnavailable', () => {
    const nodes = new Map([
      ['a', [pod('a-new', 'new', false)]],
      ['b', [pod('b-old', 'old', false)]],
      ['c', [pod('c-old', 'old')]],
    ]);
    assert.deepEqual(planRollingUpdate(input(nodes, 0, 1)).podsToDelete, ['b-old']);
  });

  test('maxSurge creates new pods beside old ones and deletes an old one once its new one is available', () => {
    const nodes = new Map([
      ['a', [pod('a-old', 'old')]],
      ['b', [pod('b-old', 'old')]],
      ['c', [pod('c-old', 'old')]],
    ]);
    assert.deepEqual(planRollingUpdate(input(nodes, 1, 0)), { podsToDelete: [], nodesToCreate: ['a'] });
    nodes.set('a', [pod('a-old', 'old'), pod('a-new', 'new', false)]);
    assert.deepEqual(planRollingUpdate(input(nodes, 1, 0)), { podsToDelete: [], nodesToCreate: [] });
    nodes.set('a', [pod('a-old', 'old'), pod('a-new', 'new')]);
    assert.deepEqual(planRollingUpdate(input(nodes, 1, 0)), {
      podsToDelete: ['a-old'],
      nodesToCreate: ['b'],
    });
  });
});

describe('failed pod back-off', () => {
  test('replacing a failed pod on a node waits 1 s, then doubles, per node', () => {
    let now = 0;
    const b = new FailedPodBackoff(() => now);
    assert.equal(b.mayReplace('ds', 'a'), true);
    assert.equal(b.mayReplace('ds', 'a'), false);
    assert.equal(b.mayReplace('ds', 'b'), true, 'another node has its own back-off');
    assert.equal(b.nextRetryIn('ds'), 1000);
    now = 1000;
    assert.equal(b.mayReplace('ds', 'a'), true);
    now = 2999;
    assert.equal(b.mayReplace('ds', 'a'), false);
    now = 3000;
    assert.equal(b.mayReplace('ds', 'a'), true);
    assert.equal(b.nextRetryIn('ds'), 4000);
    assert.equal(b.nextRetryIn('other'), undefined);
  });
});
