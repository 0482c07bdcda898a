// The HPA controller over the fake cluster and an in-memory scale and metrics API: what
// it writes to the target's scale, its status (replicas, current metrics, the AbleToScale,
// ScalingActive and ScalingLimited conditions) and its events, on a scale up past
// maxReplicas, missing metrics, a missing target, a target at zero, and a scale down held
// by its stabilization window.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type HorizontalPodAutoscaler, notFound, type Pod } from '@kubit/api';
import { type ResourceRef, resources as res } from '@kubit/client';
import { RecordingEvents } from '../src/events.js';
import { type HpaApi, hpaResource, type Scale, type TargetRef } from '../src/hpa/api.js';
import { HorizontalPodAutoscalerController } from '../src/hpa/controller.js';
import type { PodMetric } from '../src/hpa/replica-calculator.js';
import { FakeCluster } from '../src/testing.js';
import type { KubeObject } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const T0 = Date.parse('2026-01-01T12:00:00Z');
const deployments: ResourceRef = res.deployments;

class FakeHpaApi implements HpaApi {
  replicas = new Map<string, number>();
  usage = new Map<string, number>();
  metricsError: string | undefined;
  writes: number[] = [];
  async getScale(_ns: string, ref: TargetRef) {
    const replicas = this.replicas.get(ref.name);
    if (replicas === undefined) {
      // The real API's answer: a NotFound Status, which the controller does not retry.
      throw notFound({ group: 'apps', resource: 'deployments' }, ref.name);
    }
    const scale: Scale = {
      metadata: { name: ref.name },
      spec: { replicas },
      status: { replicas, selector: 'app=web' },
    };
    return { resource: deployments, scale };
  }
  async updateScale(_ns: string, _r: ResourceRef, scale: Scale) {
    this.replicas.set(scale.metadata?.name ?? '', scale.spec?.replicas ?? 0);
    this.writes.push(scale.spec?.replicas ?? 0);
    return scale;
  }
  async podMetrics() {
    if (this.metricsError) throw new Error(this.metricsError);
    return new Map<string, PodMetric>(
      [...this.usage].map(([name, value]) => [name, { value, timestampMs: T0, windowMs: 15_000 }]),
    );
  }
}

function webPod(name: string): Pod {
  const longAgo = new Date(T0 - 3_600_000).toISOString();
  return {
    metadata: { name, namespace: 'default', labels: { app: 'web' } },
    spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu: '100m' } } }] },
    status: {
      phase: 'Running',
      startTime: longAgo,
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: longAgo }],
    },
  };
}

function newHpa(
  target = 'web',
  behavior?: HorizontalPodAutoscaler['spec'] extends infer S
    ? S extends { behavior?: infer B }
      ? B
      : never
    : never,
) {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name: 'web', namespace: 'default', generation: 1 },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: target },
      minReplicas: 1,
      maxReplicas: 3,
      metrics: [
        {
          type: 'Resource',
          resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } },
        },
      ],
      ...(behavior ? { behavior } : {}),
    },
  } as unknown as KubeObject;
}

async function setup(opts: { target?: string; behavior?: Parameters<typeof newHpa>[1] } = {}) {
  const clock = { now: T0 };
  const cluster = new FakeCluster({ now: () => clock.now });
  const informers = newFactory(cluster);
  const api = new FakeHpaApi();
  const events = new RecordingEvents();
  const hpa = new HorizontalPodAutoscalerController(cluster, informers, {
    api,
    events,
    now: () => clock.now,
  });
  await startInformers(informers);
  await cluster.create(hpaResource, 'default', newHpa(opts.target, opts.behavior));
  const status = async () =>
    ((await cluster.get<KubeObject>(hpaResource, 'default', 'web')) as unknown as HorizontalPodAutoscaler)
      .status as NonNullable<HorizontalPodAutoscaler['status']>;
  const condition = async (type: string) => (await status()).conditions?.find((c) => c.type === type);
  return {
    clock,
    cluster,
    api,
    events,
    hpa,
    status,
    condition,
    pods: async (n: number) => {
      for (let i = 0; i < n; i++)
        await cluster.create(res.pods, 'default', webPod(`web-${i}`) as unknown as KubeObject);
    },
  };
}

test('a scale up past maxReplicas: scaled to 3, TooManyReplicas, a SuccessfulRescale event', async () => {
  const s = await setup();
  s.api.replicas.set('web', 1);
  s.api.usage.set('web-0', 200);
  await s.pods(1);
  await settle([s.hpa]);
  assert.deepEqual(s.api.writes, [3]);
  const st = await s.status();
  assert.equal(st.desiredReplicas, 3);
  assert.equal(st.currentReplicas, 1);
  assert.ok(st.lastScaleTime);
  assert.deepEqual(st.currentMetrics, [
    {
      type: 'Resource',
      resource: { name: 'cpu', current: { averageValue: '200m', averageUtilization: 200 } },
    },
  ]);
  assert.equal((await s.condition('AbleToScale'))?.reason, 'SucceededRescale');
  assert.equal((await s.condition('ScalingActive'))?.reason, 'ValidMetricFound');
  const limited = await s.condition('ScalingLimited');
  assert.deepEqual([limited?.status, limited?.reason], ['True', 'TooManyReplicas']);
  assert.deepEqual(s.events.events, [
    {
      object: 'HorizontalPodAutoscaler/default/web',
      type: 'Normal',
      reason: 'SuccessfulRescale',
      message: 'New size: 3; reason: cpu resource utilization (percentage of request) above target',
    },
  ]);
});

test('no metrics: ScalingActive False with FailedGetResourceMetric, a warning, the scale left alone', async () => {
  const s = await setup();
  s.api.replicas.set('web', 2);
  s.api.metricsError = 'the server is currently unable to handle the request';
  await s.pods(2);
  await settle([s.hpa]);
  assert.deepEqual(s.api.writes, []);
  const active = await s.condition('ScalingActive');
  assert.deepEqual([active?.status, active?.reason], ['False', 'FailedGetResourceMetric']);
  assert.match(
    active?.message ?? '',
    /^the HPA was unable to compute the replica count: failed to get cpu utilization/,
  );
  assert.deepEqual(s.events.reasons(), ['FailedGetResourceMetric']);
});

test('a target that does not exist: AbleToScale False with FailedGetScale', async () => {
  const s = await setup({ target: 'nope' });
  await settle([s.hpa]);
  const able = await s.condition('AbleToScale');
  assert.deepEqual([able?.status, able?.reason], ['False', 'FailedGetScale']);
  // NotFound is not retried with back-off (which would warn again within milliseconds); the
  // next try is the periodic one, 15 s on.
  await new Promise((r) => setTimeout(r, 100));
  await settle([s.hpa]);
  assert.deepEqual(s.events.reasons(), ['FailedGetScale']);
});

test('a target scaled to zero by hand: scaling disabled, nothing written to it', async () => {
  const s = await setup();
  s.api.replicas.set('web', 0);
  await settle([s.hpa]);
  assert.deepEqual(s.api.writes, []);
  const active = await s.condition('ScalingActive');
  assert.deepEqual([active?.status, active?.reason], ['False', 'ScalingDisabled']);
});

test('a scale down waits out its stabilization window, then goes to the lowest recommendation', async () => {
  const s = await setup({ behavior: { scaleDown: { stabilizationWindowSeconds: 60 } } });
  s.api.replicas.set('web', 3);
  for (const p of ['web-0', 'web-1', 'web-2']) s.api.usage.set(p, 50);
  await s.pods(3);
  await settle([s.hpa]);
  assert.deepEqual(s.api.writes, [], 'at the target: nothing to do');
  assert.equal((await s.condition('AbleToScale'))?.reason, 'ReadyForNewScale');
  for (const p of ['web-0', 'web-1', 'web-2']) s.api.usage.set(p, 5);
  s.clock.now += 15_000;
  await s.hpa.reconcile('default/web');
  assert.deepEqual(s.api.writes, [], 'the window still holds the earlier recommendation of 3');
  s.clock.now += 61_000;
  await s.hpa.reconcile('default/web');
  assert.deepEqual(s.api.writes, [1]);
  assert.equal((await s.condition('ScalingLimited'))?.reason, 'DesiredWithinRange');
  assert.match(s.events.events.at(-1)?.message ?? '', /^New size: 1; reason: All metrics below target$/);
});
