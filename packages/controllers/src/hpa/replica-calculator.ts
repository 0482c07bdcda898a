// How many replicas one Resource metric asks for: Kubernetes' replica calculator
// (pkg/controller/podautoscaler/replica_calculator.go) as pure functions. Pods are
// grouped first: deleted and failed pods are ignored, pending pods (and, for CPU, pods
// still starting whose sample may predate their readiness) are "unready", pods without a
// sample are "missing". The ready pods' usage gives a ratio to the target; within the
// tolerance nothing changes. Missing pods then count as using the target (or 100%) on
// a scale down and nothing on a scale up, unready pods nothing on a scale up, so neither
// makes the HPA move further than the pods it can see justify.
import type { Pod } from '@kubit/api';
import { toMilli } from '@kubit/api';

/** One pod's usage of the resource: millicores for CPU, bytes for memory (as milli-units for both). */
export interface PodMetric {
  /** Usage in milli-units (CPU millicores, memory millibytes: Kubernetes' MilliValue). */
  value: number;
  /** When the sample was taken and over how long (ms). */
  timestampMs: number;
  windowMs: number;
}

export interface CalculatorOptions {
  tolerance: number;
  /** CPU samples of pods younger than this are only trusted once the pod is ready (5 min in Kubernetes). */
  cpuInitializationPeriodMs: number;
  /** A pod unready this long after its start is taken as never ready yet (30 s in Kubernetes). */
  delayOfInitialReadinessStatusMs: number;
  now: number;
}

export const DEFAULT_CALCULATOR_OPTIONS: Omit<CalculatorOptions, 'now'> = {
  tolerance: 0.1,
  cpuInitializationPeriodMs: 5 * 60_000,
  delayOfInitialReadinessStatusMs: 30_000,
};

export interface Recommendation {
  replicas: number;
  /** For Utilization targets: the ready pods' usage as a percentage of their requests. */
  utilization?: number;
  /** The ready pods' average usage (milli-units). */
  averageValue: number;
}

export class MetricsError extends Error {}

interface Groups {
  readyCount: number;
  unready: Set<string>;
  missing: Set<string>;
  ignored: Set<string>;
}

const nameOf = (p: Pod) => p.metadata?.name ?? '';

function groupPods(
  pods: Pod[],
  metrics: Map<string, PodMetric>,
  resource: string,
  o: CalculatorOptions,
): Groups {
  const g: Groups = { readyCount: 0, unready: new Set(), missing: new Set(), ignored: new Set() };
  for (const pod of pods) {
    const name = nameOf(pod);
    if (pod.metadata?.deletionTimestamp || pod.status?.phase === 'Failed') {
      g.ignored.add(name);
      continue;
    }
    if (pod.status?.phase === 'Pending') {
      g.unready.add(name);
      continue;
    }
    const metric = metrics.get(name);
    if (!metric) {
      g.missing.add(name);
      continue;
    }
    if (resource === 'cpu') {
      const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
      const start = pod.status?.startTime ? Date.parse(pod.status.startTime) : undefined;
      let unready: boolean;
      if (!ready || start === undefined) unready = true;
      else {
        const transition = ready.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : start;
        if (start + o.cpuInitializationPeriodMs > o.now) {
          // Still starting: trust the sample only once the pod is ready and a whole window
          // of it was measured after that.
          unready = ready.status === 'False' || metric.timestampMs < transition + metric.windowMs;
        } else {
          // Past its start-up: ignore it only if it is unready and never was ready.
          unready = ready.status === 'False' && start + o.delayOfInitialReadinessStatusMs > transition;
        }
      }
      if (unready) {
        g.unready.add(name);
        continue;
      }
    }
    g.readyCount++;
  }
  return g;
}

/** Each pod's request of the resource (milli-units), summed over its containers; a container without one is an error. */
export function podRequests(pods: Pod[], resource: string, container?: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const pod of pods) {
    let sum = 0;
    for (const c of pod.spec?.containers ?? []) {
      if (container && c.name !== container) continue;
      const req = c.resources?.requests?.[resource];
      if (req === undefined)
        throw new MetricsError(
          `missing request for ${resource} in container ${c.name} of Pod ${nameOf(pod)}`,
        );
      sum += toMilli(req);
    }
    out.set(nameOf(pod), sum);
  }
  return out;
}

function utilizationRatio(metrics: Map<string, PodMetric>, requests: Map<string, number>, target: number) {
  let used = 0;
  let requested = 0;
  let entries = 0;
  for (const [name, m] of metrics) {
    const r = requests.get(name);
    if (r === undefined) continue;
    used += m.value;
    requested += r;
    entries++;
  }
  if (entries === 0 || requested === 0) throw new MetricsError('no metrics returned matched known pods');
  const utilization = Math.trunc((used * 100) / requested);
  return { ratio: utilization / target, utilization, average: Math.trunc(used / entries) };
}

function averageRatio(metrics: Map<string, PodMetric>, target: number) {
  let used = 0;
  for (const m of metrics.values()) used += m.value;
  const average = metrics.size ? used / metrics.size : 0;
  return { ratio: average / target, average: Math.trunc(average) };
}

const withinTolerance = (ratio: number, tolerance: number) => Math.abs(1 - ratio) <= tolerance;

/**
 * The replicas a Resource metric wants. `target` is a utilization percentage (type
 * Utilization) or an average value in milli-units (type AverageValue).
 */
export function resourceReplicas(args: {
  currentReplicas: number;
  pods: Pod[];
  metrics: Map<string, PodMetric>;
  resource: string;
  target: { utilization: number } | { averageValue: number };
  options: CalculatorOptions;
  container?: string;
}): Recommendation {
  const { currentReplicas, pods, resource, options } = args;
  if (pods.length === 0)
    throw new MetricsError('no pods returned by selector while calculating replica count');
  const metrics = new Map(args.metrics);
  const g = groupPods(pods, metrics, resource, options);
  for (const name of [...g.ignored, ...g.unready]) metrics.delete(name);
  if (metrics.size === 0)
    throw new MetricsError('did not receive metrics for targeted pods (pods might be unready)');

  const byUtilization = 'utilization' in args.target;
  const requests = byUtilization ? podRequests(pods, resource, args.container) : new Map<string, number>();
  const ratioOf = (m: Map<string, PodMetric>) =>
    'utilization' in args.target
      ? utilizationRatio(m, requests, args.target.utilization)
      : { ...averageRatio(m, args.target.averageValue), utilization: undefined };
  const first = ratioOf(metrics);
  const result = (replicas: number): Recommendation => ({
    replicas,
    averageValue: first.average,
    ...(first.utilization !== undefined ? { utilization: first.utilization } : {}),
  });

  const scaleUpWithUnready = g.unready.size > 0 && first.ratio > 1;
  if (!scaleUpWithUnready && g.missing.size === 0) {
    if (withinTolerance(first.ratio, options.tolerance)) return result(currentReplicas);
    return result(Math.ceil(first.ratio * g.readyCount));
  }

  // Fill in the pods the first ratio could not see, so they damp the move rather than amplify it.
  if (g.missing.size > 0 && first.ratio !== 1) {
    for (const name of g.missing) {
      let value = 0;
      if (first.ratio < 1) {
        value =
          'utilization' in args.target
            ? ((requests.get(name) ?? 0) * Math.max(100, args.target.utilization)) / 100
            : args.target.averageValue;
      }
      metrics.set(name, { value, timestampMs: options.now, windowMs: 0 });
    }
  }
  if (scaleUpWithUnready)
    for (const name of g.unready) metrics.set(name, { value: 0, timestampMs: options.now, windowMs: 0 });

  const second = ratioOf(metrics);
  if (
    withinTolerance(second.ratio, options.tolerance) ||
    (first.ratio < 1 && second.ratio > 1) ||
    (first.ratio > 1 && second.ratio < 1)
  )
    return result(currentReplicas);
  const replicas = Math.ceil(second.ratio * metrics.size);
  if ((second.ratio < 1 && replicas > currentReplicas) || (second.ratio > 1 && replicas < currentReplicas))
    return result(currentReplicas);
  return result(replicas);
}
