// What one sync of a StatefulSet does, decided from the pods it owns and its
// two revisions, without I/O (Kubernetes' updateStatefulSet in
// stateful_set_control.go): replace failed pods, create the missing ordinals,
// delete the ordinals past the end, then roll the template. OrderedReady does
// one step at a time, lowest first on the way up and highest first on the way
// down, and only while every pod before it is Running and Ready (and
// available for minReadySeconds); Parallel creates and deletes all at once.
// A rolling update replaces pods from the highest ordinal down to the
// partition, at most maxUnavailable unavailable at once; OnDelete never
// replaces a pod, the user does.
import { scaledValue } from '../deployment/util.js';
import { isPodAvailable, isPodReady, podReadyCondition } from '../objects.js';
import type { Pod, StatefulSet, StatefulSetStatus } from '../types.js';
import {
  identityMatches,
  inOrdinalRange,
  newStatefulPod,
  ordinalOf,
  replicasOf,
  revisionOfPod,
  startOrdinal,
  withIdentity,
} from './identity.js';

export type Action =
  | { kind: 'create'; pod: Pod }
  | { kind: 'delete'; pod: Pod; why: 'failed' | 'condemned' | 'update' }
  | { kind: 'fixIdentity'; pod: Pod };

export interface PlanInput {
  set: StatefulSet;
  /** The pods the set owns (terminating ones included). */
  pods: readonly Pod[];
  /** The set as of its current and its update revision, and their names. */
  currentSet: StatefulSet;
  updateSet: StatefulSet;
  currentRevision: string;
  updateRevision: string;
  collisionCount: number;
  now: number;
}

export interface Plan {
  actions: Action[];
  status: StatefulSetStatus;
  /** Look again then: a Ready pod becomes available with time, not with an event. */
  requeueAfterMs?: number;
}

const isTerminating = (p: Pod) => p.metadata?.deletionTimestamp !== undefined;
const isFinished = (p: Pod) => p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded';
export const isRunningAndReady = (p: Pod) => p.status?.phase === 'Running' && isPodReady(p);
const isAvailable = (p: Pod, minReady: number, now: number) =>
  isRunningAndReady(p) && isPodAvailable(p, minReady, now);
const isHealthy = (p: Pod, minReady: number, now: number) =>
  !isTerminating(p) && isAvailable(p, minReady, now);

/** How long until a Ready pod has been Ready for minReadySeconds. */
function untilAvailable(p: Pod, minReady: number, now: number): number | undefined {
  const since = Date.parse(podReadyCondition(p)?.lastTransitionTime ?? '');
  if (!isRunningAndReady(p) || !Number.isFinite(since)) return undefined;
  return Math.max(0, since + minReady * 1000 - now) + 100;
}

export const isParallel = (set: StatefulSet) => set.spec?.podManagementPolicy === 'Parallel';
export const isOnDelete = (set: StatefulSet) => set.spec?.updateStrategy?.type === 'OnDelete';

/** maxUnavailable of a rolling update as a number of pods: rounded up, at least 1. */
export function maxUnavailableOf(set: StatefulSet): number {
  const v = set.spec?.updateStrategy?.rollingUpdate?.maxUnavailable;
  return Math.max(1, scaledValue(v, replicasOf(set), true, '1'));
}

/**
 * The new pod for ordinal `ord`: below the partition a rolling update keeps
 * the current revision; everywhere else new pods are of the update revision.
 */
function versionedPod(input: PlanInput, ordinal: number, currentReplicas: number): Pod {
  const { set, currentSet, updateSet, currentRevision, updateRevision } = input;
  const index = ordinal - startOrdinal(set);
  const strategy = currentSet.spec?.updateStrategy;
  const keepsCurrent =
    strategy?.type !== 'OnDelete' &&
    (strategy?.rollingUpdate?.partition !== undefined
      ? index < strategy.rollingUpdate.partition
      : index < currentReplicas);
  return keepsCurrent
    ? newStatefulPod(set, currentSet, ordinal, currentRevision)
    : newStatefulPod(set, updateSet, ordinal, updateRevision);
}

export function planSync(input: PlanInput): Plan {
  const { set, now } = input;
  const minReady = set.spec?.minReadySeconds ?? 0;
  const start = startOrdinal(set);
  const n = replicasOf(set);
  const monotonic = !isParallel(set);
  const replicas: (Pod | undefined)[] = new Array(n).fill(undefined);
  const condemned: Pod[] = [];
  for (const p of input.pods) {
    const ord = ordinalOf(p);
    if (inOrdinalRange(set, ord)) replicas[ord - start] = p;
    else if (ord >= 0) condemned.push(p);
  }
  condemned.sort((a, b) => ordinalOf(a) - ordinalOf(b));

  const actions: Action[] = [];
  // The pods as they will be after this sync's writes, for the status.
  const after = new Map(input.pods.map((p) => [p.metadata?.name ?? '', p]));
  const markDeleted = (p: Pod) =>
    after.set(p.metadata?.name ?? '', {
      ...p,
      metadata: { ...p.metadata, deletionTimestamp: new Date(now).toISOString() },
    });
  let requeueAfterMs: number | undefined;
  const waitFor = (p: Pod) => {
    const ms = untilAvailable(p, minReady, now);
    if (ms !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? ms, ms);
  };
  const currentReplicasNow = input.pods.filter(
    (p) => !isTerminating(p) && revisionOfPod(p) === input.currentRevision,
  ).length;

  const done = (): Plan => {
    // The status counts available pods: look again when a Ready one becomes available.
    if (minReady > 0) for (const p of after.values()) if (!isAvailable(p, minReady, now)) waitFor(p);
    return { actions, status: statusOf(input, [...after.values()]), requeueAfterMs };
  };
  if (set.metadata?.deletionTimestamp) return done();

  // 1. Every ordinal in range: replace the failed, create the missing.
  for (let i = 0; i < n; i++) {
    const p = replicas[i];
    if (p && isFinished(p)) {
      // The new pod comes on a later sync, once this one is gone: same name.
      if (!isTerminating(p)) {
        actions.push({ kind: 'delete', pod: p, why: 'failed' });
        markDeleted(p);
      }
      if (monotonic) return done();
      continue;
    }
    if (!p) {
      const pod = versionedPod(input, start + i, currentReplicasNow);
      replicas[i] = pod;
      actions.push({ kind: 'create', pod });
      after.set(pod.metadata?.name ?? '', pod);
      if (monotonic) return done();
      continue;
    }
    if (monotonic && (isTerminating(p) || !isRunningAndReady(p))) return done();
    if (monotonic && !isAvailable(p, minReady, now)) return done();
    // Labels can be put back; volumes cannot change on a live pod.
    if (!isTerminating(p) && !identityMatches(set, p))
      actions.push({ kind: 'fixIdentity', pod: withIdentity(set, p) });
  }

  // 2. Ordinals past the end, highest first. OrderedReady deletes one at a
  // time and not past an unhealthy pod, unless that pod is the first
  // unhealthy one (deleting it is how the set gets healthy again).
  const firstUnhealthy =
    replicas.find((p) => p && !isHealthy(p, minReady, now)) ??
    [...condemned].reverse().find((p) => !isHealthy(p, minReady, now));
  for (let j = condemned.length - 1; j >= 0; j--) {
    const p = condemned[j];
    if (isTerminating(p)) {
      if (monotonic) return done();
      continue;
    }
    if (monotonic && !isRunningAndReady(p) && p !== firstUnhealthy) return done();
    actions.push({ kind: 'delete', pod: p, why: 'condemned' });
    markDeleted(p);
    if (monotonic) return done();
  }

  // 3. The update: OnDelete leaves it to the user.
  if (isOnDelete(set)) return done();
  const partition = set.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
  const maxUnavailable = maxUnavailableOf(set);
  let unavailable = 0;
  for (const p of replicas) if (!p || !isHealthy(p, minReady, now)) unavailable++;
  for (let i = n - 1; i >= partition && unavailable < maxUnavailable; i--) {
    const p = replicas[i];
    if (!p || revisionOfPod(p) === input.updateRevision || isTerminating(p)) continue;
    actions.push({ kind: 'delete', pod: p, why: 'update' });
    markDeleted(p);
    // An unavailable pod being replaced was counted already.
    if (isHealthy(p, minReady, now)) unavailable++;
  }
  return done();
}

/** The status of the set with these pods (Kubernetes' counting, and its completeRollingUpdate). */
export function statusOf(input: PlanInput, pods: readonly Pod[]): StatefulSetStatus {
  const { set, now } = input;
  const minReady = set.spec?.minReadySeconds ?? 0;
  const status: StatefulSetStatus = {
    observedGeneration: set.metadata?.generation,
    replicas: pods.length,
    readyReplicas: pods.filter(isRunningAndReady).length,
    availableReplicas: pods.filter((p) => isAvailable(p, minReady, now)).length,
    currentReplicas: pods.filter((p) => !isTerminating(p) && revisionOfPod(p) === input.currentRevision)
      .length,
    updatedReplicas: pods.filter((p) => !isTerminating(p) && revisionOfPod(p) === input.updateRevision)
      .length,
    currentRevision: input.currentRevision,
    updateRevision: input.updateRevision,
    collisionCount: input.collisionCount,
  };
  if (set.status?.conditions?.length) status.conditions = set.status.conditions;
  // A rolling update is complete when every pod is updated and Ready.
  if (
    !isOnDelete(set) &&
    status.updatedReplicas === status.replicas &&
    status.readyReplicas === status.replicas
  ) {
    status.currentReplicas = status.updatedReplicas;
    status.currentRevision = status.updateRevision;
  }
  return status;
}
