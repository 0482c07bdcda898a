// A Job's conditions, with Kubernetes' types, reasons and messages. A Job that
// is going to finish first gets FailureTarget or SuccessCriteriaMet (its pods
// are then terminated), and Failed or Complete only once none is left running,
// as Kubernetes 1.31+ does.
import type { Job, JobCondition } from '@kubit/api';
import { isoNow } from '../objects.js';

export type JobConditionType = 'Complete' | 'Failed' | 'FailureTarget' | 'SuccessCriteriaMet' | 'Suspended';

export const REASON_COMPLETIONS_REACHED = 'CompletionsReached';
export const REASON_BACKOFF_LIMIT_EXCEEDED = 'BackoffLimitExceeded';
export const REASON_DEADLINE_EXCEEDED = 'DeadlineExceeded';
export const REASON_POD_FAILURE_POLICY = 'PodFailurePolicy';
export const REASON_FAILED_INDEXES = 'FailedIndexes';
export const REASON_MAX_FAILED_INDEXES_EXCEEDED = 'MaxFailedIndexesExceeded';
export const REASON_SUCCESS_POLICY = 'SuccessPolicy';

export const MESSAGE_COMPLETIONS_REACHED = 'Reached expected number of succeeded pods';
export const MESSAGE_BACKOFF_LIMIT_EXCEEDED = 'Job has reached the specified backoff limit';
export const MESSAGE_DEADLINE_EXCEEDED = 'Job was active longer than specified deadline';
export const MESSAGE_FAILED_INDEXES = 'Job has failed indexes';
export const MESSAGE_MAX_FAILED_INDEXES_EXCEEDED =
  'Job has exceeded the specified maximal number of failed indexes';

/** Why a Job is going to end: the reason and message its final condition will carry. */
export interface Verdict {
  reason: string;
  message: string;
}

export function findCondition(job: Job, type: JobConditionType): JobCondition | undefined {
  return job.status?.conditions?.find((c) => c.type === type);
}

export function hasTrueCondition(job: Job, type: JobConditionType): boolean {
  return findCondition(job, type)?.status === 'True';
}

/** Complete or Failed: nothing is done for the Job any more. */
export function isJobFinished(job: Job): boolean {
  return hasTrueCondition(job, 'Complete') || hasTrueCondition(job, 'Failed');
}

/** When the Job finished (its Complete or Failed condition's time), or undefined. */
export function jobFinishTime(job: Job): string | undefined {
  for (const c of job.status?.conditions ?? []) {
    if ((c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') return c.lastTransitionTime;
  }
  return undefined;
}

/**
 * Sets a condition on a list (returns a new list): an existing condition of the
 * type stays in its place and keeps its lastTransitionTime unless its status changes.
 */
export function withCondition(
  conditions: readonly JobCondition[] | undefined,
  type: JobConditionType,
  status: 'True' | 'False',
  reason: string,
  message: string,
  now: number,
): JobCondition[] {
  const t = isoNow(now);
  const old = conditions?.find((c) => c.type === type);
  const next: JobCondition = {
    type,
    status,
    reason,
    message,
    lastProbeTime: old && old.status === status ? (old.lastProbeTime ?? t) : t,
    lastTransitionTime: old && old.status === status ? (old.lastTransitionTime ?? t) : t,
  };
  if (!old) return [...(conditions ?? []), next];
  return (conditions ?? []).map((c) => (c === old ? next : c));
}
