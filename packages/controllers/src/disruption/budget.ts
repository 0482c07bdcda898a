// The disruption controller's arithmetic, pure (Kubernetes' pkg/controller/disruption):
// how many pods a PodDisruptionBudget expects and wants healthy, which pods count as
// healthy, which recorded evictions still stand, and the status that follows.
import type { PodDisruptionBudget } from '@kubit/api';
import type { ResourceRef } from '@kubit/client';
import { isPodReady } from '../objects.js';
import type { Pod } from '../types.js';

/** policy/v1 PodDisruptionBudgets (not among @kubit/client's well-known resources yet). */
export const pdbResource: ResourceRef = {
  group: 'policy',
  version: 'v1',
  resource: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

/** How long an eviction's entry in status.disruptedPods stands before the pod must be gone (2 minutes). */
export const DELETION_TIMEOUT_MS = 2 * 60 * 1000;

export type BudgetStatus = NonNullable<PodDisruptionBudget['status']>;
type IntOrString = number | string;

/** The scale of the controller of a pod: its uid and replicas; undefined when it has none we know. */
export type ScaleOf = (pod: Pod) => { uid: string; replicas: number } | undefined;

/** intstr.GetScaledValueFromIntOrPercent, rounding up, as the disruption controller uses it. */
export function scaledValue(v: IntOrString, total: number): number {
  if (typeof v === 'number') return v;
  const m = /^([0-9]+)%$/.exec(v);
  if (!m) throw new Error(`invalid value for IntOrString: invalid value "${v}"`);
  return Math.ceil((Number(m[1]) * total) / 100);
}

export interface Expected {
  expectedCount: number;
  desiredHealthy: number;
  /** Pods without a controller (a percentage or maxUnavailable cannot count them). */
  unmanaged: string[];
}

/**
 * expectedPods and desiredHealthy: maxUnavailable and a percentage minAvailable need
 * the pods' controllers' scale (their sum); an integer minAvailable is taken as it is,
 * with the pods found as expected. Throws when a pod's controller cannot be found.
 */
export function expectedPods(pdb: PodDisruptionBudget, pods: readonly Pod[], scaleOf: ScaleOf): Expected {
  const spec = pdb.spec ?? {};
  const unmanaged: string[] = [];
  const scale = (): number => {
    const byController = new Map<string, number>();
    for (const p of pods) {
      const ref = p.metadata?.ownerReferences?.find((r) => r.controller === true);
      if (!ref) {
        unmanaged.push(p.metadata?.name ?? '');
        continue;
      }
      if (byController.has(ref.uid)) continue;
      const s = scaleOf(p);
      if (!s) throw new Error(`found no controllers for pod "${p.metadata?.name ?? ''}"`);
      byController.set(s.uid, s.replicas);
    }
    let sum = 0;
    for (const n of byController.values()) sum += n;
    return sum;
  };
  if (spec.maxUnavailable !== undefined && spec.maxUnavailable !== null) {
    const expectedCount = scale();
    const max = scaledValue(spec.maxUnavailable as IntOrString, expectedCount);
    return { expectedCount, desiredHealthy: Math.max(0, expectedCount - max), unmanaged };
  }
  if (spec.minAvailable !== undefined && spec.minAvailable !== null) {
    if (typeof spec.minAvailable === 'number') {
      return { expectedCount: pods.length, desiredHealthy: spec.minAvailable, unmanaged };
    }
    const expectedCount = scale();
    return { expectedCount, desiredHealthy: scaledValue(spec.minAvailable, expectedCount), unmanaged };
  }
  return { expectedCount: 0, desiredHealthy: 0, unmanaged };
}

/**
 * The evictions of status.disruptedPods that still stand: pods that exist, are not yet
 * being deleted and were evicted less than DELETION_TIMEOUT_MS ago. Also the earliest
 * time one of them expires (when to look again) and the pods whose time is up.
 */
export function standingDisruptions(
  pdb: PodDisruptionBudget,
  pods: readonly Pod[],
  now: number,
): { disrupted: Record<string, string>; recheckAt?: number; expired: Pod[] } {
  const recorded = pdb.status?.disruptedPods ?? {};
  const disrupted: Record<string, string> = {};
  const expired: Pod[] = [];
  let recheckAt: number | undefined;
  for (const p of pods) {
    const name = p.metadata?.name ?? '';
    if (p.metadata?.deletionTimestamp || !Object.hasOwn(recorded, name)) continue;
    const at = Date.parse(String(recorded[name]));
    const deadline = (Number.isFinite(at) ? at : 0) + DELETION_TIMEOUT_MS;
    if (deadline < now) {
      expired.push(p);
      continue;
    }
    disrupted[name] = String(recorded[name]);
    if (recheckAt === undefined || deadline < recheckAt) recheckAt = deadline;
  }
  return { disrupted, recheckAt, expired };
}

/** Ready pods that are neither being deleted nor about to be (a standing eviction). */
export function countHealthy(pods: readonly Pod[], disrupted: Record<string, string>): number {
  let n = 0;
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp) continue;
    if (Object.hasOwn(disrupted, p.metadata?.name ?? '')) continue;
    if (isPodReady(p)) n++;
  }
  return n;
}

type Condition = NonNullable<BudgetStatus['conditions']>[number];

/** apimeta.SetStatusCondition: the transition time moves only when the status changes. */
export function setCondition(
  conditions: readonly Condition[],
  c: Omit<Condition, 'lastTransitionTime'>,
  now: string,
) {
  const old = conditions.find((x) => x.type === c.type);
  const next: Condition = {
    ...c,
    lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now,
  };
  return old ? conditions.map((x) => (x.type === c.type ? next : x)) : [...conditions, next];
}

/** The DisruptionAllowed condition the status's disruptionsAllowed calls for. */
export function disruptionAllowedCondition(status: BudgetStatus): Omit<Condition, 'lastTransitionTime'> {
  const allowed = (status.disruptionsAllowed ?? 0) > 0;
  return {
    type: 'DisruptionAllowed',
    status: allowed ? 'True' : 'False',
    reason: allowed ? 'SufficientPods' : 'InsufficientPods',
    message: '',
    observedGeneration: status.observedGeneration ?? 0,
  };
}

/** pdbhelper.ConditionsAreUpToDate. */
export function conditionsUpToDate(pdb: PodDisruptionBudget): boolean {
  const c = pdb.status?.conditions?.find((x) => x.type === 'DisruptionAllowed');
  if (!c || (pdb.status?.observedGeneration ?? 0) !== (pdb.metadata?.generation ?? 0)) return false;
  const want = disruptionAllowedCondition(pdb.status ?? ({} as BudgetStatus));
  return c.status === want.status && c.reason === want.reason;
}

/**
 * The status for these counts, or undefined when the stored one already says it all.
 * disruptionsAllowed is currentHealthy - desiredHealthy, and 0 while no pod is expected
 * (a budget whose first pods appear stays safe until it is computed again).
 */
export function nextStatus(
  pdb: PodDisruptionBudget,
  counts: { currentHealthy: number; desiredHealthy: number; expectedCount: number },
  disrupted: Record<string, string>,
  now: string,
): BudgetStatus | undefined {
  const { currentHealthy, desiredHealthy, expectedCount } = counts;
  let disruptionsAllowed = currentHealthy - desiredHealthy;
  if (expectedCount <= 0 || disruptionsAllowed <= 0) disruptionsAllowed = 0;
  const s = pdb.status;
  const generation = pdb.metadata?.generation ?? 0;
  const sameDisrupted =
    JSON.stringify(sortKeys(s?.disruptedPods ?? {})) === JSON.stringify(sortKeys(disrupted));
  if (
    s &&
    s.currentHealthy === currentHealthy &&
    s.desiredHealthy === desiredHealthy &&
    s.expectedPods === expectedCount &&
    s.disruptionsAllowed === disruptionsAllowed &&
    sameDisrupted &&
    (s.observedGeneration ?? 0) === generation &&
    conditionsUpToDate(pdb)
  ) {
    return undefined;
  }
  const next: BudgetStatus = {
    observedGeneration: generation,
    disruptionsAllowed,
    currentHealthy,
    desiredHealthy,
    expectedPods: expectedCount,
    conditions: s?.conditions ?? [],
  };
  if (Object.keys(disrupted).length > 0) next.disruptedPods = disrupted;
  next.conditions = setCondition(next.conditions ?? [], disruptionAllowedCondition(next), now);
  return next;
}

/** failSafe's status: no disruption allowed, the DisruptionAllowed condition SyncFailed with the error. */
export function failSafeStatus(pdb: PodDisruptionBudget, err: Error, now: string): BudgetStatus {
  const s: BudgetStatus = {
    disruptionsAllowed: 0,
    currentHealthy: 0,
    desiredHealthy: 0,
    expectedPods: 0,
    ...(pdb.status ?? {}),
  };
  s.disruptionsAllowed = 0;
  s.conditions = setCondition(
    s.conditions ?? [],
    {
      type: 'DisruptionAllowed',
      status: 'False',
      reason: 'SyncFailed',
      message: err.message,
      observedGeneration: s.observedGeneration ?? 0,
    },
    now,
  );
  return s;
}

function sortKeys(o: Record<string, unknown>): [string, unknown][] {
  return Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
