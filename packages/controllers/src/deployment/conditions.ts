// The Progressing and Available conditions of a Deployment, with Kubernetes'
// reasons and messages, and the decisions that depend on them.
import type { Deployment, DeploymentCondition } from '../types.js';
import { DEFAULT_PROGRESS_DEADLINE_SECONDS } from './util.js';

type DStatus = NonNullable<Deployment['status']>;

export const Reason = {
  NewRSCreated: 'NewReplicaSetCreated',
  FoundNewRS: 'FoundNewReplicaSet',
  RSUpdated: 'ReplicaSetUpdated',
  NewRSAvailable: 'NewReplicaSetAvailable',
  TimedOut: 'ProgressDeadlineExceeded',
  Paused: 'DeploymentPaused',
  Resumed: 'DeploymentResumed',
  MinimumAvailable: 'MinimumReplicasAvailable',
  MinimumUnavailable: 'MinimumReplicasUnavailable',
} as const;

export function getCondition(s: DStatus | undefined, type: string): DeploymentCondition | undefined {
  return s?.conditions?.find((c) => c.type === type);
}

/**
 * Sets a condition, keeping lastTransitionTime when the status did not change
 * (only lastUpdateTime moves), as Kubernetes does.
 */
export function setCondition(s: DStatus, c: DeploymentCondition): void {
  const old = getCondition(s, c.type);
  if (old && old.status === c.status && old.reason === c.reason) {
    if (old.message === c.message) return;
  }
  const next = { ...c };
  if (old && old.status === c.status) next.lastTransitionTime = old.lastTransitionTime;
  s.conditions = [...(s.conditions ?? []).filter((x) => x.type !== c.type), next];
}

export function condition(
  type: string,
  status: string,
  reason: string,
  message: string,
  now: string,
): DeploymentCondition {
  return { type, status, reason, message, lastUpdateTime: now, lastTransitionTime: now };
}

export function progressDeadlineSeconds(d: Deployment): number | undefined {
  const v = d.spec?.progressDeadlineSeconds;
  if (v === undefined) return DEFAULT_PROGRESS_DEADLINE_SECONDS;
  // MaxInt32 means "no deadline", as in Kubernetes.
  return v >= 2147483647 ? undefined : v;
}

/** Every replica is updated and available, and the controller has seen the latest spec. */
export function deploymentComplete(d: Deployment, s: DStatus): boolean {
  const want = d.spec?.replicas ?? 1;
  return (
    (s.updatedReplicas ?? 0) === want &&
    (s.replicas ?? 0) === want &&
    (s.availableReplicas ?? 0) === want &&
    (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0)
  );
}

/** Something moved since the last status: more updated/ready/available pods, fewer old ones. */
export function deploymentProgressing(d: Deployment, s: DStatus): boolean {
  const old = d.status ?? {};
  const oldOld = (old.replicas ?? 0) - (old.updatedReplicas ?? 0);
  const newOld = (s.replicas ?? 0) - (s.updatedReplicas ?? 0);
  return (
    (s.updatedReplicas ?? 0) > (old.updatedReplicas ?? 0) ||
    newOld < oldOld ||
    (s.readyReplicas ?? 0) > (old.readyReplicas ?? 0) ||
    (s.availableReplicas ?? 0) > (old.availableReplicas ?? 0)
  );
}

/** No progress for progressDeadlineSeconds since the Progressing condition last moved. */
export function deploymentTimedOut(d: Deployment, s: DStatus, now: number): boolean {
  const deadline = progressDeadlineSeconds(d);
  if (deadline === undefined) return false;
  const c = getCondition(s, 'Progressing');
  if (!c) return false;
  if (c.reason === Reason.TimedOut) return true;
  if (c.reason === Reason.NewRSAvailable) return false;
  const from = Date.parse(c.lastUpdateTime ?? '');
  return Number.isFinite(from) && from + deadline * 1000 < now;
}
