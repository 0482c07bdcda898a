import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { numFeasibleNodesToFind } from '../src/algorithm.js';
import { formatFitError } from '../src/fit-error.js';
import { buildFramework, parseSchedulerConfig } from '../src/framework/profile.js';
import { unschedulable } from '../src/framework/types.js';

describe('profiles', () => {
  it('has Kubernetes default score weights', () => {
    const f = buildFramework();
    assert.deepEqual(
      f.score.map((s) => [s.plugin.name, s.weight]),
      [
        ['TaintToleration', 3],
        ['NodeAffinity', 2],
        ['NodeResourcesFit', 1],
        ['PodTopologySpread', 2],
        ['InterPodAffinity', 2],
        ['NodeResourcesBalancedAllocation', 1],
      ],
    );
    assert.deepEqual(
      f.filter.map((p) => p.name),
      [
        'NodeUnschedulable',
        'NodeName',
        'TaintToleration',
        'NodeAffinity',
        'NodePorts',
        'NodeResourcesFit',
        'VolumeBinding',
        'PodTopologySpread',
        'InterPodAffinity',
      ],
    );
    assert.deepEqual(
      f.preBind.map((p) => p.name),
      ['VolumeBinding'],
    );
  });

  it('reads weights, disabled plugins and profiles from a KubeSchedulerConfiguration', () => {
    const cfg = parseSchedulerConfig(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesBalancedAllocation
        weight: 5
      disabled:
      - name: TaintToleration
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: no-scoring
  plugins:
    score:
      disabled:
      - name: '*'
`);
    assert.equal(cfg.percentageOfNodesToScore, 30);
    const [a, b] = cfg.profiles.map((p) => buildFramework(p, cfg.percentageOfNodesToScore));
    assert.equal(a.percentageOfNodesToScore, 30);
    assert.equal(a.score.find((s) => s.plugin.name === 'NodeResourcesBalancedAllocation')?.weight, 5);
    assert.equal(
      a.score.some((s) => s.plugin.name === 'TaintToleration'),
      false,
    );
    assert.equal(
      a.filter.some((p) => p.name === 'TaintToleration'),
      true,
      'disabling a score plugin keeps its filter',
    );
    assert.equal(b.schedulerName, 'no-scoring');
    assert.equal(b.score.length, 0);
  });

  it('rejects bad configuration with a clear message', () => {
    assert.throws(
      () => parseSchedulerConfig('kind: Pod'),
      /kind is "Pod", expected KubeSchedulerConfiguration/,
    );
    assert.throws(
      () => parseSchedulerConfig('profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]'),
      /unknown plugin "Nope"/,
    );
    assert.throws(
      () => parseSchedulerConfig('percentageOfNodesToScore: 200'),
      /percentageOfNodesToScore must be a number in \[0, 100\]/,
    );
  });
});

describe('numFeasibleNodesToFind', () => {
  const cases: [number, number, number][] = [
    [50, 0, 50],
    [99, 0, 99],
    [100, 0, 100],
    [1000, 0, 420], // 50 - 1000/125 = 42%
    [5000, 0, 500], // 50 - 40 = 10%
    [10_000, 0, 500], // 50 - 80 < 5 → 5%
    [150, 0, 100], // 48% of 150 = 72 → at least 100
    [1000, 30, 300],
    [1000, 100, 1000],
  ];
  for (const [n, pct, want] of cases)
    it(`${n} nodes, ${pct}% → ${want}`, () => assert.equal(numFeasibleNodesToFind(n, pct), want));
});

describe('FitError message', () => {
  it('counts identical reasons and sorts the "<n> <reason>" strings', () => {
    const statuses = new Map([
      [
        'n1',
        { plugin: 'NodeResourcesFit', status: unschedulable('Insufficient cpu', 'Insufficient memory') },
      ],
      ['n2', { plugin: 'NodeResourcesFit', status: unschedulable('Insufficient memory') }],
      ['n3', { plugin: 'TaintToleration', status: unschedulable('node(s) had untolerated taint {a: b}') }],
    ]);
    assert.equal(
      formatFitError(3, statuses, null),
      '0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {a: b}, 2 Insufficient memory.',
    );
  });
  it('prints a PreFilter rejection once', () => {
    const pre = { plugin: 'X', status: unschedulable('something is wrong') };
    assert.equal(formatFitError(5, new Map(), pre), '0/5 nodes are available: something is wrong.');
  });
  it('says so when there are no nodes', () => {
    assert.equal(formatFitError(0, new Map(), null), 'no nodes available to schedule pods');
  });
});
