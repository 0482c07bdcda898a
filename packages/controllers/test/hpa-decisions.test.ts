// The HPA controller's pure decisions, table-driven: the replica calculator on the cases
// of Kubernetes' replica_calculator_test.go (values per pod, CPU in millicores), and
// `behavior`: stabilization windows, scaling policies and min/max.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultScaleDownRules, defaultScaleUpRules, type HPAScalingRules, type Pod } from '@kubit/api';
import { limitRate, stabilize } from '../src/hpa/behavior.js';
import {
  type CalculatorOptions,
  DEFAULT_CALCULATOR_OPTIONS,
  type PodMetric,
  resourceReplicas,
} from '../src/hpa/replica-calculator.js';

const NOW = Date.parse('2026-01-01T12:00:00Z');
const options: CalculatorOptions = { ...DEFAULT_CALCULATOR_OPTIONS, now: NOW };
const HOUR_AGO = new Date(NOW - 3_600_000).toISOString();

function pod(i: number, request: string, ready = true): Pod {
  return {
    metadata: { name: `p${i}`, namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: request } } }] },
    status: {
      phase: 'Running',
      startTime: HOUR_AGO,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: HOUR_AGO }],
    },
  };
}

interface Case {
  name: string;
  current: number;
  requests: string[];
  /** Each pod's usage in millicores, in pod order; fewer than pods: the rest have no sample. */
  levels: number[];
  readiness?: boolean[];
  target: number;
  expected: number;
  utilization?: number;
}

const cases: Case[] = [
  {
    name: 'ScaleUp',
    current: 3,
    requests: ['1', '1', '1'],
    levels: [300, 500, 700],
    target: 30,
    expected: 5,
    utilization: 50,
  },
  {
    name: 'ScaleUpUnreadyLessScale',
    current: 3,
    requests: ['1', '1', '1'],
    levels: [300, 500, 700],
    readiness: [false, true, true],
    target: 30,
    expected: 4,
    utilization: 60,
  },
  {
    name: 'ScaleUpUnreadyNoScale',
    current: 3,
    requests: ['1', '1', '1'],
    levels: [400, 500, 700],
    readiness: [true, false, false],
    target: 30,
    expected: 3,
    utilization: 40,
  },
  {
    name: 'ScaleDown',
    current: 5,
    requests: ['1', '1', '1', '1', '1'],
    levels: [100, 300, 500, 250, 250],
    target: 50,
    expected: 3,
    utilization: 28,
  },
  {
    name: 'ScaleDownIgnoresUnreadyPods',
    current: 5,
    requests: ['1', '1', '1', '1', '1'],
    levels: [100, 300, 500, 250, 250],
    readiness: [true, true, true, false, false],
    target: 50,
    expected: 2,
    utilization: 30,
  },
  {
    name: 'Tolerance',
    current: 3,
    requests: ['0.9', '1.0', '1.1'],
    levels: [1010, 1030, 1020],
    target: 100,
    expected: 3,
    utilization: 102,
  },
  {
    name: 'SuperfluousMetrics',
    current: 4,
    requests: ['1', '1', '1', '1'],
    levels: [4000, 9500, 3000, 7000, 3200, 2000],
    target: 100,
    expected: 24,
    utilization: 587,
  },
  {
    name: 'MissingMetrics',
    current: 4,
    requests: ['1', '1', '1', '1'],
    levels: [400, 95],
    target: 100,
    expected: 3,
    utilization: 24,
  },
  {
    name: 'MissingMetricsNoChangeEq',
    current: 2,
    requests: ['1', '1'],
    levels: [1000],
    target: 100,
    expected: 2,
    utilization: 100,
  },
  {
    name: 'MissingMetricsNoChangeGt',
    current: 2,
    requests: ['1', '1'],
    levels: [1900],
    target: 100,
    expected: 2,
    utilization: 190,
  },
  {
    name: 'MissingMetricsNoChangeLt',
    current: 2,
    requests: ['1', '1'],
    levels: [600],
    target: 100,
    expected: 2,
    utilization: 60,
  },
  {
    name: 'MissingMetricsUnreadyNoChange',
    current: 3,
    requests: ['1', '1', '1'],
    levels: [100, 450],
    readiness: [false, true, true],
    target: 50,
    expected: 3,
    utilization: 45,
  },
  {
    name: 'MissingMetricsUnreadyScaleUp',
    current: 3,
    requests: ['1', '1', '1'],
    levels: [100, 2000],
    readiness: [false, true, true],
    target: 50,
    expected: 4,
    utilization: 200,
  },
  {
    name: 'MissingMetricsUnreadyScaleDown',
    current: 4,
    requests: ['1', '1', '1', '1'],
    levels: [100, 100, 100],
    readiness: [false, true, true, true],
    target: 50,
    expected: 3,
    utilization: 10,
  },
];

describe('replica calculator (Kubernetes replica_calculator_test.go cases)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const pods = c.requests.map((r, i) => pod(i, r, c.readiness?.[i] ?? true));
      const metrics = new Map<string, PodMetric>(
        c.levels.map((v, i) => [`p${i}`, { value: v, timestampMs: NOW - 10_000, windowMs: 15_000 }]),
      );
      const rec = resourceReplicas({
        currentReplicas: c.current,
        pods,
        metrics,
        resource: 'cpu',
        target: { utilization: c.target },
        options,
      });
      assert.equal(rec.replicas, c.expected);
      if (c.utilization !== undefined) assert.equal(rec.utilization, c.utilization);
    });
  }

  it('AverageValue: the average usage over the target', () => {
    const pods = [pod(0, '1'), pod(1, '1'), pod(2, '1')];
    const metrics = new Map<string, PodMetric>(
      [200_000, 100_000, 300_000].map((v, i) => [`p${i}`, { value: v, timestampMs: NOW, windowMs: 15_000 }]),
    );
    const rec = resourceReplicas({
      currentReplicas: 3,
      pods,
      metrics,
      resource: 'cpu',
      target: { averageValue: 150_000 },
      options,
    });
    assert.equal(rec.replicas, 4);
    assert.equal(rec.averageValue, 200_000);
  });

  it('errors: a container without a request, no samples, deleted and failed pods ignored', () => {
    const noRequest: Pod = { ...pod(0, '1'), spec: { containers: [{ name: 'c', image: 'x' }] } };
    const one = new Map<string, PodMetric>([['p0', { value: 200, timestampMs: NOW, windowMs: 15_000 }]]);
    assert.throws(
      () =>
        resourceReplicas({
          currentReplicas: 1,
          pods: [noRequest],
          metrics: one,
          resource: 'cpu',
          target: { utilization: 100 },
          options,
        }),
      /missing request for cpu in container c of Pod p0/,
    );
    assert.throws(
      () =>
        resourceReplicas({
          currentReplicas: 1,
          pods: [pod(0, '1')],
          metrics: new Map(),
          resource: 'cpu',
          target: { utilization: 100 },
          options,
        }),
      /did not receive metrics for targeted pods/,
    );
    const failed: Pod = { ...pod(1, '1'), status: { ...pod(1, '1').status, phase: 'Failed' } };
    const rec = resourceReplicas({
      currentReplicas: 2,
      pods: [pod(0, '1'), failed],
      metrics: new Map([...one, ['p1', { value: 5000, timestampMs: NOW, windowMs: 15_000 }]]),
      resource: 'cpu',
      target: { utilization: 100 },
      options,
    });
    assert.equal(rec.replicas, 1, 'the failed pod and its sample count for nothing');
  });

  it('a starting pod whose CPU sample predates its readiness is unready (no scale up from its start-up burst)', () => {
    const young: Pod = {
      ...pod(1, '1'),
      status: {
        phase: 'Running',
        startTime: new Date(NOW - 20_000).toISOString(),
        conditions: [
          { type: 'Ready', status: 'True', lastTransitionTime: new Date(NOW - 5_000).toISOString() },
        ],
      },
    };
    const metrics = new Map<string, PodMetric>([
      ['p0', { value: 500, timestampMs: NOW, windowMs: 15_000 }],
      ['p1', { value: 1000, timestampMs: NOW, windowMs: 15_000 }],
    ]);
    const rec = resourceReplicas({
      currentReplicas: 2,
      pods: [pod(0, '1'), young],
      metrics,
      resource: 'cpu',
      target: { utilization: 50 },
      options,
    });
    assert.equal(rec.utilization, 50, "only the older pod's sample counts");
    assert.equal(rec.replicas, 2);
  });
});

const up = defaultScaleUpRules();
const down = defaultScaleDownRules();
const rules = (r: Partial<HPAScalingRules>): HPAScalingRules => ({
  selectPolicy: 'Max',
  stabilizationWindowSeconds: 0,
  ...r,
});

describe('behavior', () => {
  const limitCases: {
    name: string;
    desired: number;
    current: number;
    min?: number;
    max?: number;
    up?: HPAScalingRules;
    down?: HPAScalingRules;
    upEvents?: { agoS: number; change: number }[];
    downEvents?: { agoS: number; change: number }[];
    expected: number;
    reason?: string;
  }[] = [
    { name: 'within range', desired: 3, current: 2, expected: 3 },
    {
      name: 'default scale up: the larger of +4 pods and +100% per 15 s',
      desired: 20,
      current: 2,
      expected: 6,
      reason: 'ScaleUpLimit',
    },
    { name: '+100% wins over +4 from 10', desired: 50, current: 10, expected: 20, reason: 'ScaleUpLimit' },
    {
      name: 'an earlier scale up in the period counts',
      desired: 20,
      current: 6,
      upEvents: [{ agoS: 5, change: 4 }],
      expected: 6,
      reason: 'ScaleUpLimit',
    },
    {
      name: 'a scale up outside the period does not',
      desired: 20,
      current: 6,
      upEvents: [{ agoS: 20, change: 4 }],
      expected: 12,
      reason: 'ScaleUpLimit',
    },
    { name: 'max replicas', desired: 20, current: 8, max: 10, expected: 10, reason: 'TooManyReplicas' },
    { name: 'min replicas', desired: 1, current: 5, min: 3, expected: 3, reason: 'TooFewReplicas' },
    {
      name: 'Min select policy picks the smallest change',
      desired: 20,
      current: 10,
      up: rules({
        selectPolicy: 'Min',
        policies: [
          { type: 'Pods', value: 2, periodSeconds: 60 },
          { type: 'Percent', value: 50, periodSeconds: 60 },
        ],
      }),
      expected: 12,
      reason: 'ScaleUpLimit',
    },
    {
      name: 'scale down by at most 1 pod a minute',
      desired: 1,
      current: 5,
      down: rules({ policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] }),
      expected: 4,
      reason: 'ScaleDownLimit',
    },
    {
      name: 'scale down by 50%: floor',
      desired: 1,
      current: 5,
      down: rules({ policies: [{ type: 'Percent', value: 50, periodSeconds: 60 }] }),
      expected: 2,
      reason: 'ScaleDownLimit',
    },
    {
      name: 'scale down disabled',
      desired: 1,
      current: 5,
      down: rules({ selectPolicy: 'Disabled', policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] }),
      expected: 5,
      reason: 'ScaleDownLimit',
    },
    { name: 'default scale down: to the target at once', desired: 1, current: 5, expected: 1 },
  ];
  for (const c of limitCases) {
    it(c.name, () => {
      const r = limitRate({
        desired: c.desired,
        current: c.current,
        minReplicas: c.min ?? 1,
        maxReplicas: c.max ?? 100,
        up: c.up ?? up,
        down: c.down ?? down,
        upEvents: (c.upEvents ?? []).map((e) => ({ atMs: NOW - e.agoS * 1000, change: e.change })),
        downEvents: (c.downEvents ?? []).map((e) => ({ atMs: NOW - e.agoS * 1000, change: e.change })),
        now: NOW,
      });
      assert.equal(r.replicas, c.expected);
      assert.equal(r.limited?.reason, c.reason);
    });
  }

  it('stabilization: down to the highest recommendation of the window, up to the lowest', () => {
    const history = [
      { atMs: NOW - 400_000, replicas: 9 },
      { atMs: NOW - 200_000, replicas: 5 },
      { atMs: NOW - 10_000, replicas: 3 },
    ];
    // The 9 is older than the 300 s window; the 5 is not.
    assert.equal(stabilize(history, 1, 6, up, down, NOW), 5);
    assert.equal(stabilize(history, 1, 4, up, down, NOW), 4, 'never up while scaling down');
    assert.equal(stabilize([], 1, 6, up, rules({ stabilizationWindowSeconds: 0 }), NOW), 1);
    const slowUp = rules({ stabilizationWindowSeconds: 60 });
    assert.equal(
      stabilize(history, 10, 2, slowUp, down, NOW),
      3,
      'up only as far as the lowest of the last 60 s',
    );
  });
});
