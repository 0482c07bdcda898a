// What an HPA's `behavior` does to a recommendation, as Kubernetes' controller does
// (normalizeDesiredReplicasWithBehaviors): the stabilization windows first (scaling up
// goes to the lowest recommendation of the scale-up window, down to the highest of the
// scale-down window, so a dip or a spike does not move the replicas at once), then the
// scaling policies (at most so many pods or percent per period, counting the scale events
// already in the period; Max picks the policy allowing the biggest change, Min the
// smallest, Disabled none), then min and max replicas. Pure: the history is passed in.
import type { HPAScalingRules } from '@kubit/api';

export interface TimedRecommendation {
  atMs: number;
  replicas: number;
}

export interface ScaleEvent {
  atMs: number;
  /** Pods added (scale up) or removed (scale down), positive. */
  change: number;
}

export type LimitReason = 'TooManyReplicas' | 'TooFewReplicas' | 'ScaleUpLimit' | 'ScaleDownLimit';

export interface Normalized {
  replicas: number;
  /** The ScalingLimited condition: why replicas differs from the stabilized recommendation, if it does. */
  limited?: { reason: LimitReason; message: string };
}

const MESSAGES: Record<LimitReason, string> = {
  TooManyReplicas: 'the desired replica count is more than the maximum replica count',
  TooFewReplicas: 'the desired replica count is less than the minimum replica count',
  ScaleUpLimit: 'the desired replica count is increasing faster than the maximum scale rate',
  ScaleDownLimit: 'the desired replica count is decreasing faster than the maximum scale rate',
};

/** The recommendation the windows allow; `history` holds the earlier recommendations (not this one). */
export function stabilize(
  history: readonly TimedRecommendation[],
  recommendation: number,
  currentReplicas: number,
  up: HPAScalingRules,
  down: HPAScalingRules,
  now: number,
): number {
  const upCutoff = now - (up.stabilizationWindowSeconds ?? 0) * 1000;
  const downCutoff = now - (down.stabilizationWindowSeconds ?? 0) * 1000;
  let upRec = recommendation;
  let downRec = recommendation;
  for (const r of history) {
    if (r.atMs > upCutoff) upRec = Math.min(upRec, r.replicas);
    if (r.atMs > downCutoff) downRec = Math.max(downRec, r.replicas);
  }
  let out = currentReplicas;
  if (out < upRec) out = upRec;
  if (out > downRec) out = downRec;
  return out;
}

const changeInPeriod = (events: readonly ScaleEvent[], periodSeconds: number, now: number) =>
  events.filter((e) => e.atMs > now - periodSeconds * 1000).reduce((a, e) => a + e.change, 0);

/** The most replicas scaling up may reach now. */
export function scaleUpLimit(
  current: number,
  events: readonly ScaleEvent[],
  rules: HPAScalingRules,
  now: number,
): number {
  if (rules.selectPolicy === 'Disabled') return current;
  const pickMax = rules.selectPolicy !== 'Min';
  let result = pickMax ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  for (const p of rules.policies ?? []) {
    const start = current - changeInPeriod(events, p.periodSeconds, now);
    const proposed = p.type === 'Pods' ? start + p.value : Math.ceil(start * (1 + p.value / 100));
    result = pickMax ? Math.max(result, proposed) : Math.min(result, proposed);
  }
  return Number.isFinite(result) ? result : current;
}

/** The fewest replicas scaling down may reach now. */
export function scaleDownLimit(
  current: number,
  events: readonly ScaleEvent[],
  rules: HPAScalingRules,
  now: number,
): number {
  if (rules.selectPolicy === 'Disabled') return current;
  const pickMax = rules.selectPolicy !== 'Min';
  let result = pickMax ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  for (const p of rules.policies ?? []) {
    const start = current + changeInPeriod(events, p.periodSeconds, now);
    const proposed = p.type === 'Pods' ? start - p.value : Math.floor(start * (1 - p.value / 100));
    result = pickMax ? Math.min(result, proposed) : Math.max(result, proposed);
  }
  return Number.isFinite(result) ? result : current;
}

/** The stabilized recommendation held to the policies' rate and to min/max replicas. */
export function limitRate(args: {
  desired: number;
  current: number;
  minReplicas: number;
  maxReplicas: number;
  up: HPAScalingRules;
  down: HPAScalingRules;
  upEvents: readonly ScaleEvent[];
  downEvents: readonly ScaleEvent[];
  now: number;
}): Normalized {
  const { desired, current, now } = args;
  if (desired > current) {
    const limit = Math.max(current, scaleUpLimit(current, args.upEvents, args.up, now));
    const [allowed, reason]: [number, LimitReason] =
      args.maxReplicas > limit ? [limit, 'ScaleUpLimit'] : [args.maxReplicas, 'TooManyReplicas'];
    if (desired > allowed) return { replicas: allowed, limited: { reason, message: MESSAGES[reason] } };
    return { replicas: desired };
  }
  if (desired < current) {
    const limit = Math.min(current, scaleDownLimit(current, args.downEvents, args.down, now));
    const [allowed, reason]: [number, LimitReason] =
      args.minReplicas < limit ? [limit, 'ScaleDownLimit'] : [args.minReplicas, 'TooFewReplicas'];
    if (desired < allowed) return { replicas: allowed, limited: { reason, message: MESSAGES[reason] } };
    return { replicas: desired };
  }
  return { replicas: desired };
}
