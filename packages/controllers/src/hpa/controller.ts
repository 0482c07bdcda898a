// The HorizontalPodAutoscaler controller (Kubernetes' podautoscaler): every sync period
// each HPA reads its target's scale subresource, the pods its selector picks and their
// resource metrics, asks replica-calculator.ts what each metric wants (the most of them
// wins), holds that to `behavior` (behavior.ts: stabilization windows, scaling policies,
// min/max; an HPA without behavior gets Kubernetes' defaults), writes the scale when it
// changes, and keeps the HPA's status: replicas, current metrics, and the AbleToScale,
// ScalingActive and ScalingLimited conditions, with events for rescales and failures.
import { isDeepStrictEqual } from 'node:util';
import {
  defaultScaleDownRules,
  defaultScaleUpRules,
  type HorizontalPodAutoscaler,
  isConflict,
  isNotFound,
  type MetricSpec,
  type Pod,
  parseLabelSelector,
  toMilli,
} from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import type { KubeObject } from '../types.js';
import { type HpaApi, hpaResource } from './api.js';
import { limitRate, type ScaleEvent, stabilize, type TimedRecommendation } from './behavior.js';
import {
  DEFAULT_CALCULATOR_OPTIONS,
  MetricsError,
  type Recommendation,
  resourceReplicas,
} from './replica-calculator.js';

export interface HpaControllerOptions {
  api: HpaApi;
  /** --horizontal-pod-autoscaler-sync-period (15 s). */
  syncPeriodMs?: number;
  /** --horizontal-pod-autoscaler-downscale-stabilization (5 min): the scale-down window without behavior. */
  downscaleStabilizationMs?: number;
  tolerance?: number;
  cpuInitializationPeriodMs?: number;
  initialReadinessDelayMs?: number;
  events?: EventSink;
  log?: Logger;
  now?: () => number;
}

type Condition = {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime?: string;
};
type MetricStatus = NonNullable<NonNullable<HorizontalPodAutoscaler['status']>['currentMetrics']>[number];

interface MetricResult {
  replicas: number;
  status: MetricStatus;
  /** Words for the rescale event ("cpu resource utilization (percentage of request) above target"). */
  what: string;
  above: boolean;
}

const MAX_EVENTS_AGE_MS = 30 * 60_000;

export class HorizontalPodAutoscalerController implements Controller {
  readonly name = 'horizontalpodautoscaling';
  readonly queue = new RateLimitingQueue<string>();
  private readonly hpas: Informer<HorizontalPodAutoscaler>;
  private readonly pods: Informer<Pod>;
  private readonly api: HpaApi;
  private readonly syncPeriodMs: number;
  private readonly events: EventSink;
  private readonly now: () => number;
  /** Per HPA: its recent recommendations and scale events (Kubernetes keeps them in memory too). */
  private readonly recommendations = new Map<string, TimedRecommendation[]>();
  private readonly scaleEvents = new Map<string, { up: ScaleEvent[]; down: ScaleEvent[] }>();

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: HpaControllerOptions,
  ) {
    this.api = opts.api;
    this.syncPeriodMs = opts.syncPeriodMs ?? 15_000;
    this.events = opts.events ?? noEvents;
    this.now = opts.now ?? Date.now;
    this.hpas = informers.forResource<HorizontalPodAutoscaler>(hpaResource);
    this.pods = informers.forResource<Pod>(resources.pods);
    this.hpas.addEventHandler({
      onAdd: (h) => this.queue.add(keyOf(h as KubeObject)),
      onUpdate: (old, h) => {
        // Its own status writes come back as updates; only a spec change is news.
        if (old.metadata?.generation !== h.metadata?.generation) this.queue.add(keyOf(h as KubeObject));
      },
      onDelete: (h) => {
        const key = keyOf(h as KubeObject);
        this.recommendations.delete(key);
        this.scaleEvents.delete(key);
      },
    });
  }

  async reconcile(key: string): Promise<void> {
    const hpa = this.hpas.store.getByKey(key);
    if (!hpa) return;
    try {
      await this.sync(key, structuredClone(hpa));
    } finally {
      // Periodic, whatever happened: metrics move without any object changing.
      if (this.hpas.store.getByKey(key)) this.queue.addAfter(key, this.syncPeriodMs);
    }
  }

  private event(hpa: HorizontalPodAutoscaler, type: 'Normal' | 'Warning', reason: string, message: string) {
    this.events.event(
      { ...(hpa as KubeObject), apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
      type,
      reason,
      message,
    );
  }

  private async sync(key: string, hpa: HorizontalPodAutoscaler): Promise<void> {
    const { namespace = '' } = splitKey(key);
    const spec = hpa.spec;
    if (!spec) return;
    const ref = spec.scaleTargetRef;
    const refText = `${ref.kind}/${ref.name}`;
    const conditions: Condition[] = [];
    const status = { ...(hpa.status ?? {}), observedGeneration: hpa.metadata?.generation };
    const write = () =>
      this.writeStatus(hpa, { ...status, desiredReplicas: status.desiredReplicas ?? 0 }, conditions);

    let target: Awaited<ReturnType<HpaApi['getScale']>>;
    try {
      target = await this.api.getScale(namespace, {
        apiVersion: ref.apiVersion,
        kind: ref.kind,
        name: ref.name,
      });
    } catch (err) {
      const message = `the HPA controller was unable to get the target's current scale: ${(err as Error).message}`;
      conditions.push({ type: 'AbleToScale', status: 'False', reason: 'FailedGetScale', message });
      this.event(hpa, 'Warning', 'FailedGetScale', (err as Error).message);
      await write();
      if (isNotFound(err)) return;
      throw err;
    }
    const currentReplicas = target.scale.spec?.replicas ?? 0;
    status.currentReplicas = target.scale.status?.replicas ?? currentReplicas;
    const minReplicas = spec.minReplicas ?? 1;
    const maxReplicas = spec.maxReplicas;
    const now = this.now();

    let desired: number;
    let reason: string;
    if (currentReplicas === 0 && minReplicas !== 0) {
      conditions.push({
        type: 'ScalingActive',
        status: 'False',
        reason: 'ScalingDisabled',
        message: 'scaling is disabled since the replica count of the target is zero',
      });
      desired = 0;
      reason = '';
    } else if (currentReplicas > maxReplicas) {
      desired = maxReplicas;
      reason = 'Current number of replicas above Spec.MaxReplicas';
    } else if (currentReplicas < minReplicas) {
      desired = minReplicas;
      reason = 'Current number of replicas below Spec.MinReplicas';
    } else {
      let proposal: { replicas: number; statuses: MetricStatus[]; what: string; above: boolean };
      try {
        proposal = await this.computeReplicas(
          namespace,
          hpa,
          target.scale.status?.selector ?? '',
          currentReplicas,
          now,
        );
      } catch (err) {
        const message = (err as Error).message;
        const reasonText =
          err instanceof MetricsError || /metrics|request/.test(message)
            ? 'FailedGetResourceMetric'
            : 'FailedComputeMetricsReplicas';
        conditions.push({
          type: 'AbleToScale',
          status: 'True',
          reason: 'SucceededGetScale',
          message: "the HPA controller was able to get the target's current scale",
        });
        conditions.push({
          type: 'ScalingActive',
          status: 'False',
          reason: reasonText,
          message: `the HPA was unable to compute the replica count: ${message}`,
        });
        this.event(hpa, 'Warning', reasonText, message);
        await write();
        return;
      }
      status.currentMetrics = proposal.statuses;
      conditions.push({
        type: 'ScalingActive',
        status: 'True',
        reason: 'ValidMetricFound',
        message: `the HPA was able to successfully calculate a replica count from ${proposal.what}`,
      });
      const up = defaultScaleUpRules(spec.behavior?.scaleUp);
      const down = defaultScaleDownRules(
        spec.behavior?.scaleDown,
        Math.round((this.opts.downscaleStabilizationMs ?? 300_000) / 1000),
      );
      const history = this.recommendations.get(key) ?? [];
      const stabilized = stabilize(history, proposal.replicas, currentReplicas, up, down, now);
      this.remember(key, history, { atMs: now, replicas: proposal.replicas }, up, down);
      const events = this.scaleEvents.get(key) ?? { up: [], down: [] };
      const limited = limitRate({
        desired: stabilized,
        current: currentReplicas,
        minReplicas,
        maxReplicas,
        up,
        down,
        upEvents: events.up,
        downEvents: events.down,
        now,
      });
      desired = limited.replicas;
      conditions.push(
        limited.limited
          ? {
              type: 'ScalingLimited',
              status: 'True',
              reason: limited.limited.reason,
              message: limited.limited.message,
            }
          : {
              type: 'ScalingLimited',
              status: 'False',
              reason: 'DesiredWithinRange',
              message: 'the desired count is within the acceptable range',
            },
      );
      reason = proposal.above ? `${proposal.what} above target` : 'All metrics below target';
    }

    status.desiredReplicas = desired;
    if (desired !== currentReplicas && !(currentReplicas === 0 && minReplicas !== 0)) {
      try {
        await this.api.updateScale(namespace, target.resource, {
          ...target.scale,
          spec: { ...target.scale.spec, replicas: desired },
        });
      } catch (err) {
        const message = `the HPA controller was unable to update the target scale: ${(err as Error).message}`;
        conditions.unshift({ type: 'AbleToScale', status: 'False', reason: 'FailedUpdateScale', message });
        this.event(
          hpa,
          'Warning',
          'FailedRescale',
          `New size: ${desired}; reason: ${reason}; error: ${(err as Error).message}`,
        );
        await write();
        throw err;
      }
      this.recordScaleEvent(key, currentReplicas, desired, now);
      status.lastScaleTime = new Date(now).toISOString();
      conditions.unshift({
        type: 'AbleToScale',
        status: 'True',
        reason: 'SucceededRescale',
        message: `the HPA controller was able to update the target scale to ${desired}`,
      });
      this.event(hpa, 'Normal', 'SuccessfulRescale', `New size: ${desired}; reason: ${reason}`);
      this.opts.log?.info(
        { hpa: key, target: refText, from: currentReplicas, to: desired, reason },
        'rescaled',
      );
    } else {
      conditions.unshift({
        type: 'AbleToScale',
        status: 'True',
        reason: 'ReadyForNewScale',
        message: 'recommended size matches current size',
      });
    }
    await write();
  }

  /** Each metric's replicas; the most wins (Kubernetes: the largest recommendation). */
  private async computeReplicas(
    namespace: string,
    hpa: HorizontalPodAutoscaler,
    selectorText: string,
    currentReplicas: number,
    now: number,
  ) {
    if (!selectorText) throw new Error('selector is required');
    const selector = parseLabelSelector(selectorText);
    const pods = this.pods.store
      .listInNamespace(namespace)
      .filter((p) => selector.matches(p.metadata?.labels ?? {}));
    const results: MetricResult[] = [];
    const errors: string[] = [];
    for (const m of hpa.spec?.metrics ?? []) {
      try {
        results.push(await this.metricReplicas(namespace, m, selectorText, pods, currentReplicas, now));
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    if (results.length === 0) throw new MetricsError(errors.join('; ') || 'no metrics to scale on');
    const best = results.reduce((a, b) => (b.replicas > a.replicas ? b : a));
    return {
      replicas: best.replicas,
      statuses: results.map((r) => r.status),
      what: best.what,
      above: best.above,
    };
  }

  private async metricReplicas(
    namespace: string,
    m: MetricSpec,
    selectorText: string,
    pods: Pod[],
    currentReplicas: number,
    now: number,
  ): Promise<MetricResult> {
    const source =
      m.type === 'Resource' ? m.resource : m.type === 'ContainerResource' ? m.containerResource : undefined;
    if (!source)
      throw new MetricsError(`metric type ${m.type} is not supported (only Resource and ContainerResource)`);
    const container = m.type === 'ContainerResource' ? m.containerResource?.container : undefined;
    const name = source.name;
    let metrics: Awaited<ReturnType<HpaApi['podMetrics']>>;
    try {
      metrics = await this.api.podMetrics(namespace, selectorText, name, container);
    } catch (err) {
      throw new MetricsError(
        `failed to get ${name} utilization: unable to get metrics for resource ${name}: ${(err as Error).message}`,
      );
    }
    const options = {
      ...DEFAULT_CALCULATOR_OPTIONS,
      ...(this.opts.tolerance !== undefined ? { tolerance: this.opts.tolerance } : {}),
      ...(this.opts.cpuInitializationPeriodMs !== undefined
        ? { cpuInitializationPeriodMs: this.opts.cpuInitializationPeriodMs }
        : {}),
      ...(this.opts.initialReadinessDelayMs !== undefined
        ? { delayOfInitialReadinessStatusMs: this.opts.initialReadinessDelayMs }
        : {}),
      now,
    };
    const t = source.target;
    const byUtilization = t.type === 'Utilization';
    const targetValue = byUtilization ? (t.averageUtilization ?? 0) : toMilli(t.averageValue ?? '0');
    let rec: Recommendation;
    try {
      rec = resourceReplicas({
        currentReplicas,
        pods,
        metrics,
        resource: name,
        target: byUtilization ? { utilization: targetValue } : { averageValue: targetValue },
        options,
        ...(container ? { container } : {}),
      });
    } catch (err) {
      throw new MetricsError(`failed to get ${name} utilization: ${(err as Error).message}`);
    }
    const current = {
      averageValue: milliQuantity(rec.averageValue, name),
      ...(rec.utilization !== undefined ? { averageUtilization: rec.utilization } : {}),
    };
    const status: MetricStatus =
      m.type === 'Resource'
        ? { type: 'Resource', resource: { name, current } }
        : { type: 'ContainerResource', containerResource: { name, container: container ?? '', current } };
    const what = `${name} resource${byUtilization ? ' utilization (percentage of request)' : ''}`;
    const above = byUtilization ? (rec.utilization ?? 0) > targetValue : rec.averageValue > targetValue;
    return {
      replicas: rec.replicas,
      status,
      what:
        m.type === 'ContainerResource'
          ? `${name} container resource${byUtilization ? ' utilization (percentage of request)' : ''}`
          : what,
      above,
    };
  }

  /** Keeps the recommendations still inside either window, plus this one. */
  private remember(
    key: string,
    history: TimedRecommendation[],
    rec: TimedRecommendation,
    up: { stabilizationWindowSeconds?: number },
    down: { stabilizationWindowSeconds?: number },
  ): void {
    const longest = Math.max(up.stabilizationWindowSeconds ?? 0, down.stabilizationWindowSeconds ?? 0) * 1000;
    this.recommendations.set(key, [...history.filter((r) => r.atMs > rec.atMs - longest), rec]);
  }

  private recordScaleEvent(key: string, from: number, to: number, now: number): void {
    const e = this.scaleEvents.get(key) ?? { up: [], down: [] };
    const fresh = (list: ScaleEvent[]) => list.filter((x) => x.atMs > now - MAX_EVENTS_AGE_MS);
    e.up = fresh(e.up);
    e.down = fresh(e.down);
    if (to > from) e.up.push({ atMs: now, change: to - from });
    else e.down.push({ atMs: now, change: from - to });
    this.scaleEvents.set(key, e);
  }

  private async writeStatus(
    hpa: HorizontalPodAutoscaler,
    status: NonNullable<HorizontalPodAutoscaler['status']>,
    conditions: Condition[],
  ): Promise<void> {
    const old = hpa.status?.conditions ?? [];
    const nowText = new Date(this.now()).toISOString();
    // One condition of each type; a condition keeps its transition time while its status holds.
    const byType = new Map<string, Condition>();
    for (const c of conditions) if (!byType.has(c.type)) byType.set(c.type, c);
    for (const o of old) if (!byType.has(o.type)) byType.set(o.type, o as Condition);
    const merged = [...byType.values()].map((c) => {
      const before = old.find((o) => o.type === c.type);
      return {
        ...c,
        lastTransitionTime:
          before && before.status === c.status && before.lastTransitionTime
            ? before.lastTransitionTime
            : nowText,
      };
    });
    const next = { ...hpa, status: { ...status, conditions: merged } };
    // As Kubernetes' controller: no write when nothing changed (every sync would be one otherwise).
    if (
      isDeepStrictEqual(JSON.parse(JSON.stringify(hpa.status ?? {})), JSON.parse(JSON.stringify(next.status)))
    )
      return;
    try {
      await this.cluster.update(hpaResource, next as unknown as KubeObject, 'status');
    } catch (err) {
      if (isNotFound(err)) return;
      // A newer HPA in the cache: the next sync writes from it.
      if (isConflict(err)) return;
      throw err;
    }
  }
}

/** A milli-unit usage as a quantity: CPU in millicores ("250m"), other resources in whole units. */
function milliQuantity(milli: number, resource: string): string {
  return resource === 'cpu' ? `${Math.round(milli)}m` : `${Math.round(milli / 1000)}`;
}
