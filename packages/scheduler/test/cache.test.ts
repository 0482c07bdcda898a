import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SchedulerCache } from '../src/cache.js';
import { ActionType } from '../src/framework/types.js';
import { compileLabelSelector } from '../src/labels.js';
import { newPodInfo } from '../src/pod-info.js';
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
