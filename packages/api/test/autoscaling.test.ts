// autoscaling's conversions and defaults: a v2 HPA read as v1 keeps what v1 cannot say
// in Kubernetes' annotations and comes back whole; a plain v1 HPA means its CPU target.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultHorizontalPodAutoscaler, hpaV1ToV2, hpaV2ToV1 } from '../src/autoscaling.js';

const v2 = {
  apiVersion: 'autoscaling/v2',
  kind: 'HorizontalPodAutoscaler',
  metadata: { name: 'web', namespace: 'default', annotations: { team: 'a' } },
  spec: {
    scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
    minReplicas: 2,
    maxReplicas: 9,
    metrics: [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } },
      },
      {
        type: 'Resource',
        resource: { name: 'memory', target: { type: 'AverageValue', averageValue: '200Mi' } },
      },
      {
        type: 'Pods',
        pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } },
      },
    ],
    behavior: {
      scaleDown: {
        stabilizationWindowSeconds: 30,
        selectPolicy: 'Max',
        policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }],
      },
    },
  },
  status: {
    currentReplicas: 3,
    desiredReplicas: 3,
    currentMetrics: [
      {
        type: 'Resource',
        resource: { name: 'cpu', current: { averageUtilization: 40, averageValue: '40m' } },
      },
      { type: 'Resource', resource: { name: 'memory', current: { averageValue: '100Mi' } } },
    ],
    conditions: [{ type: 'AbleToScale', status: 'True', reason: 'ReadyForNewScale', message: 'm' }],
  },
};

test('v2 → v1: the CPU target in its field, the rest in annotations; and back again, whole', () => {
  const v1 = hpaV2ToV1(v2);
  assert.equal(v1.apiVersion, 'autoscaling/v1');
  const spec = v1.spec as Record<string, unknown>;
  assert.equal(spec.targetCPUUtilizationPercentage, 60);
  assert.equal(spec.metrics, undefined);
  const annotations = (v1.metadata as { annotations: Record<string, string> }).annotations;
  assert.equal(annotations.team, 'a');
  assert.deepEqual(JSON.parse(annotations['autoscaling.alpha.kubernetes.io/metrics']), [
    { type: 'Resource', resource: { name: 'memory', targetAverageValue: '200Mi' } },
    { type: 'Pods', pods: { metricName: 'qps', targetAverageValue: '10' } },
  ]);
  assert.equal((v1.status as Record<string, unknown>).currentCPUUtilizationPercentage, 40);
  assert.ok(annotations['autoscaling.alpha.kubernetes.io/behavior']);
  assert.ok(annotations['autoscaling.alpha.kubernetes.io/conditions']);
  const back = hpaV1ToV2(v1);
  // The CPU's current averageValue is the one thing v1 has no room for.
  const want = structuredClone(v2);
  want.status.currentMetrics[0].resource.current = { averageUtilization: 40 } as never;
  assert.deepEqual(back, want);
});

test('a v1 HPA without a target means 80% CPU; with one, that', () => {
  const plain = {
    apiVersion: 'autoscaling/v1',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'x' },
    spec: { maxReplicas: 3 },
  };
  assert.deepEqual((hpaV1ToV2(plain).spec as { metrics: unknown }).metrics, [
    { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } },
  ]);
  const fifty = hpaV1ToV2({ ...plain, spec: { maxReplicas: 3, targetCPUUtilizationPercentage: 50 } });
  assert.equal(
    (fifty.spec as { metrics: { resource: { target: { averageUtilization: number } } }[] }).metrics[0]
      .resource.target.averageUtilization,
    50,
  );
});

test('v2 defaults: minReplicas 1, 80% CPU, behavior rules filled in only when behavior is given', () => {
  const a: Record<string, unknown> = { spec: { maxReplicas: 3 } };
  defaultHorizontalPodAutoscaler(a);
  assert.deepEqual(a.spec, {
    maxReplicas: 3,
    minReplicas: 1,
    metrics: [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
      },
    ],
  });
  const b: Record<string, unknown> = {
    spec: { maxReplicas: 3, behavior: { scaleUp: { stabilizationWindowSeconds: 5 } } },
  };
  defaultHorizontalPodAutoscaler(b);
  const behavior = (b.spec as { behavior: Record<string, Record<string, unknown>> }).behavior;
  assert.equal(behavior.scaleUp.stabilizationWindowSeconds, 5);
  assert.deepEqual(behavior.scaleUp.policies, [
    { type: 'Pods', value: 4, periodSeconds: 15 },
    { type: 'Percent', value: 100, periodSeconds: 15 },
  ]);
  assert.equal(behavior.scaleDown.stabilizationWindowSeconds, 300);
});
