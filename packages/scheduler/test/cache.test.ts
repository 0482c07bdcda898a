import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulerCache } from '../src/cache.js';
import { ActionType, CycleState } from '../src/framework/types.js';
import { compileLabelSelector } from '../src/labels.js';
import { type NodeInfo, NodeTrait } from '../src/node-info.js';
import { NodeResourcesFit } from '../src/plugins/node-resources.js';
import { labelPairKey, newPodInfo } from '../src/pod-info.js';
import { parseMilli, parseValue } from '../src/quantity.js';
import { nodeUpdateActions } from '../src/scheduler.js';
import { antiAffinityByHostname, node, onNode, pod } from './fixtures.js';

describe('SchedulerCache', () => {
  it('keeps per-node aggregates as pods come and go', () => {
    const c = new SchedulerCache();
    c.addOrUpdateNode(node('n1'));
    const withPort = pod(
      'w',
      {
        cpu: '250m',
        memory: '1Gi',
        containers: [
          {
            name: 'c',
            ports: [{ containerPort: 80, hostPort: 8080 }],
            resources: { requests: { cpu: '250m', memory: '1Gi' } },
          },
        ],
      },
      { labels: { app: 'web' } },
    );
    c.addPod(onNode(withPort, 'n1'));
    c.addPod(onNode(pod('b', { affinity: antiAffinityByHostname('web') }), 'n1'));
    const n = c.get('n1')!;
    assert.equal(n.requested.milliCpu, 250);
    assert.equal(n.requested.memory, 1024 ** 3);
    assert.equal(n.nonZeroRequested.milliCpu, 350, 'the request-less pod counts 100m for scoring');
    assert.equal(n.pods.size, 2);
    assert.ok(n.usedPorts.has('TCP/8080'));
    assert.equal(n.labelCounts.get('default\x00app=web'), 1);
    assert.equal(n.podsWithRequiredAntiAffinity.size, 1);
    assert.equal(c.existingTerms.requiredAnti.size, 1);
    c.removePod(onNode(withPort, 'n1'));
    c.removePod(onNode(pod('b'), 'n1'));
    assert.deepEqual(
      [
        n.requested.milliCpu,
        n.requested.memory,
        n.nonZeroRequested.milliCpu,
        n.pods.size,
        n.usedPorts.size,
        n.labelCounts.size,
      ],
      [0, 0, 0, 0, 0, 0],
    );
    assert.equal(c.existingTerms.requiredAnti.size, 0);
  });

  it('assumes, confirms, forgets and expires pods', () => {
    let t = 0;
    const c = new SchedulerCache({ now: () => t, assumedPodTtlMs: 30_000 });
    c.addOrUpdateNode(node('n1'));
    const a = pod('a', { cpu: '1' });
    c.assumePod(newPodInfo(a), 'n1');
    assert.equal(c.isAssumed('default/a'), true);
    assert.equal(c.get('n1')!.requested.milliCpu, 1000);
    assert.throws(() => c.assumePod(newPodInfo(a), 'n1'), /already in the scheduler cache/);
    c.forgetPod('default/a');
    assert.equal(c.get('n1')!.requested.milliCpu, 0);

    c.assumePod(newPodInfo(a), 'n1');
    c.finishBinding('default/a');
    c.addPod(onNode(a, 'n1')); // the watch confirms it
    t = 60_000;
    assert.deepEqual(c.cleanupExpiredAssumedPods(), []);
    assert.equal(c.isAssumed('default/a'), false);
    assert.equal(c.get('n1')!.requested.milliCpu, 1000);

    const b = pod('b', { cpu: '1' });
    c.assumePod(newPodInfo(b), 'n1');
    t = 70_000;
    assert.deepEqual(c.cleanupExpiredAssumedPods(), [], 'no TTL before the binding finished');
    c.finishBinding('default/b');
    t = 100_001;
    assert.deepEqual(c.cleanupExpiredAssumedPods(), ['default/b']);
    assert.equal(c.get('n1')!.requested.milliCpu, 1000);
  });

  it('hides deleted nodes but keeps their pods until those are deleted', () => {
    const c = new SchedulerCache();
    c.addOrUpdateNode(node('n1'));
    c.addOrUpdateNode(node('n2'));
    c.addPod(onNode(pod('a'), 'n1'));
    c.removeNode('n1');
    assert.deepEqual(
      c.nodes.map((n) => n.name),
      ['n2'],
    );
    assert.equal(c.get('n1'), undefined);
    c.addOrUpdateNode(node('n1'));
    assert.equal(c.get('n1')!.pods.size, 1);
  });
});

describe('cluster-wide indexes the plugins use to skip work', () => {
  it('counts nodes by trait as nodes are added, changed and deleted', () => {
    const c = new SchedulerCache();
    const traits = () => [
      c.nodesWithTrait(NodeTrait.Unschedulable),
      c.nodesWithTrait(NodeTrait.HardTaint),
      c.nodesWithTrait(NodeTrait.SoftTaint),
    ];
    c.addOrUpdateNode(node('n1'));
    c.addOrUpdateNode(node('n2', { taints: [{ key: 'a', effect: 'NoExecute' }] }));
    assert.deepEqual(traits(), [0, 1, 0]);
    c.addOrUpdateNode(
      node('n1', { unschedulable: true, taints: [{ key: 'b', effect: 'PreferNoSchedule' }] }),
    );
    assert.deepEqual(traits(), [1, 1, 1]);
    c.addOrUpdateNode(node('n2'));
    assert.deepEqual(traits(), [1, 0, 1]);
    c.addPod(onNode(pod('a'), 'n1'));
    c.removeNode('n1'); // kept node-less for its pod: its traits no longer count
    assert.deepEqual(traits(), [0, 0, 0]);
    c.addOrUpdateNode(node('n1', { taints: [{ key: 'c', effect: 'NoSchedule' }] }));
    assert.deepEqual(traits(), [0, 1, 0]);
    assert.equal(c.nodesWithTrait(NodeTrait.HardTaint | NodeTrait.SoftTaint), 1);
  });

  it("keeps each node's packed numbers (what the resource filter and scores read) in step", () => {
    const c = new SchedulerCache();
    c.addOrUpdateNode(node('n1', { cpu: '2', memory: '4Gi', pods: '3' }));
    const n = c.get('n1')!;
    const hot = () => [...n.hot];
    c.addPod(onNode(pod('a', { cpu: '500m', memory: '1Gi' }), 'n1'));
    c.assumePod(newPodInfo(pod('b')), 'n1'); // request-less: counts 100m / 200Mi for scoring only
    assert.deepEqual(hot(), [2000, 4 * 1024 ** 3, 3, 500, 1024 ** 3, 2, 600, 1024 ** 3 + 200 * 1024 ** 2]);
    c.addOrUpdateNode(node('n1', { cpu: '1', memory: '2Gi', pods: '2' })); // the node shrinks
    assert.deepEqual(hot().slice(0, 3), [1000, 2 * 1024 ** 3, 2]);
    const fit = new NodeResourcesFit();
    const state = new CycleState();
    assert.deepEqual(fit.filter(state, newPodInfo(pod('c', { cpu: '600m' })), n)?.reasons, [
      'Too many pods',
      'Insufficient cpu',
    ]);
    c.forgetPod('default/b');
    c.removePod(onNode(pod('a'), 'n1'));
    assert.deepEqual(hot(), [1000, 2 * 1024 ** 3, 2, 0, 0, 0, 0, 0]);
    assert.equal(fit.filter(state, newPodInfo(pod('c', { cpu: '600m' })), n), null);
  });

  it('indexes nodes by the labels of their pods, assumed ones included', () => {
    const c = new SchedulerCache();
    c.addOrUpdateNode(node('n1'));
    c.addOrUpdateNode(node('n2'));
    const web = (name: string) => pod(name, {}, { labels: { app: 'web' } });
    const key = labelPairKey('default', 'app=web');
    const count = () =>
      [...(c.nodesWithPodLabel(key) ?? new Map<NodeInfo, number>())].map(([n, k]) => `${n.name}:${k}`).sort();
    c.addPod(onNode(web('a'), 'n1'));
    c.addPod(onNode(web('b'), 'n1'));
    c.assumePod(newPodInfo(web('c')), 'n2');
    assert.deepEqual(count(), ['n1:2', 'n2:1']);
    c.forgetPod('default/c');
    c.removePod(onNode(web('a'), 'n1'));
    assert.deepEqual(count(), ['n1:1']);
    c.updatePod(onNode(pod('b', {}, { labels: { app: 'db' } }), 'n1')); // relabelled
    assert.equal(c.nodesWithPodLabel(key), undefined);
    assert.equal(c.nodesWithPodLabel(labelPairKey('default', 'app=db'))?.get(c.get('n1')!), 1);
  });

  it('files existing required anti-affinity terms by the one label they select, or as others', () => {
    const c = new SchedulerCache();
    c.addOrUpdateNode(node('n1'));
    const single = pod('s', { affinity: antiAffinityByHostname('web') });
    const notIn = pod('o', {
      affinity: {
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            {
              labelSelector: { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['x'] }] },
              topologyKey: 'kubernetes.io/hostname',
            },
          ],
        },
      },
    });
    c.addPod(onNode(single, 'n1'));
    c.addPod(onNode(pod('s2', { affinity: antiAffinityByHostname('web') }), 'n1'));
    c.addPod(onNode(notIn, 'n1'));
    const t = c.existingTerms;
    assert.equal(t.requiredAntiByLabel.get(labelPairKey('default', 'app=web'))?.size, 1, 'one distinct term');
    assert.equal(t.requiredAntiOther.size, 1);
    c.removePod(onNode(single, 'n1'));
    assert.equal(t.requiredAntiByLabel.size, 1, 'the term stays while s2 has it');
    c.removePod(onNode(pod('s2'), 'n1'));
    c.removePod(onNode(notIn, 'n1'));
    assert.deepEqual([t.requiredAntiByLabel.size, t.requiredAntiOther.size, t.requiredAnti.size], [0, 0, 0]);
  });
});

describe('node update events', () => {
  it('names what changed', () => {
    const base = node('n', { labels: { a: '1' } });
    assert.equal(nodeUpdateActions(base, node('n', { labels: { a: '1' } })), 0);
    assert.equal(nodeUpdateActions(base, node('n', { labels: { a: '2' } })), ActionType.UpdateNodeLabel);
    assert.equal(
      nodeUpdateActions(base, node('n', { labels: { a: '1' }, cpu: '8' })),
      ActionType.UpdateNodeAllocatable,
    );
    assert.equal(
      nodeUpdateActions(base, node('n', { labels: { a: '1' }, unschedulable: true })),
      ActionType.UpdateNodeTaint,
    );
    assert.equal(
      nodeUpdateActions(
        base,
        node('n', { labels: { a: '1' }, taints: [{ key: 'k', effect: 'NoSchedule' }] }),
      ),
      ActionType.UpdateNodeTaint,
    );
  });
});

describe('quantities and selectors', () => {
  it('parses quantities as Kubernetes does', () => {
    assert.equal(parseMilli('100m'), 100);
    assert.equal(parseMilli('1.5'), 1500);
    assert.equal(parseMilli('2'), 2000);
    assert.equal(parseValue('1Gi'), 1024 ** 3);
    assert.equal(parseValue('128Mi'), 128 * 1024 ** 2);
    assert.equal(parseValue('1k'), 1000);
    assert.equal(parseValue('1e3'), 1000);
    assert.equal(parseValue('0.5'), 1, 'values round up');
    assert.throws(() => parseMilli('12 apples'), /cannot parse '12 apples': quantities must match/);
  });

  it('matches label selectors: null matches nothing, empty matches everything', () => {
    assert.equal(compileLabelSelector(undefined).matches({ a: '1' }), false);
    assert.equal(compileLabelSelector({}).matches({ a: '1' }), true);
    const s = compileLabelSelector({
      matchLabels: { app: 'web' },
      matchExpressions: [
        { key: 'tier', operator: 'In', values: ['fe', 'be'] },
        { key: 'canary', operator: 'DoesNotExist' },
        { key: 'env', operator: 'NotIn', values: ['prod'] },
      ],
    });
    assert.equal(s.matches({ app: 'web', tier: 'fe' }), true);
    assert.equal(s.matches({ app: 'web', tier: 'fe', env: 'prod' }), false);
    assert.equal(s.matches({ app: 'web', tier: 'fe', canary: 'x' }), false);
    assert.equal(s.matches({ app: 'web', tier: 'db' }), false);
    assert.equal(s.matches({ app: 'web', constructor: 'x' }), false);
    assert.throws(
      () => compileLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] }),
      /"Gt" is not a valid label selector operator/,
    );
  });
});
