// Where a Job stands, as pure functions of its spec, status and pods: whether
// it has failed or succeeded (and why), its deadline, the counters after its
// finished pods let go of their finalizers, and the canonical form its status
// is compared in before a write.
import type { Job, JobStatus, Pod } from '@kubit/api';
import { timeOf } from '../objects.js';
import {
  MESSAGE_BACKOFF_LIMIT_EXCEEDED,
  MESSAGE_COMPLETIONS_REACHED,
  MESSAGE_DEADLINE_EXCEEDED,
  MESSAGE_FAILED_INDEXES,
  MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
  REASON_BACKOFF_LIMIT_EXCEEDED,
  REASON_COMPLETIONS_REACHED,
  REASON_DEADLINE_EXCEEDED,
  REASON_FAILED_INDEXES,
  REASON_MAX_FAILED_INDEXES_EXCEEDED,
  REASON_SUCCESS_POLICY,
  type Verdict,
} from './conditions.js';
import { parseIndexes, podIndex, podIndexFailureCount } from './indexes.js';
import { isIndexed } from './pods.js';

/** The backoffLimit when the Job does not say (the apiserver defaults it to this too). */
export const DEFAULT_BACKOFF_LIMIT = 6;

/** FailureTarget's reason, if the Job has failed: a pod failure policy, too many failures, its deadline, its indexes. */
export function failureVerdict(
  job: Job,
  failed: number,
  deadlineMs: number | undefined,
  completedIdx: readonly number[],
  failedIdx: readonly number[],
  active: readonly Pod[],
): Verdict | undefined {
  const spec = job.spec!;
  const limit = spec.backoffLimit ?? DEFAULT_BACKOFF_LIMIT;
  if (
    spec.backoffLimitPerIndex === undefined &&
    (failed > limit || pastBackoffLimitOnFailure(job, active, limit))
  )
    return { reason: REASON_BACKOFF_LIMIT_EXCEEDED, message: MESSAGE_BACKOFF_LIMIT_EXCEEDED };
  if (deadlineMs !== undefined && deadlineMs <= 0)
    return { reason: REASON_DEADLINE_EXCEEDED, message: MESSAGE_DEADLINE_EXCEEDED };
  if (isIndexed(job) && spec.backoffLimitPerIndex !== undefined) {
    if (spec.maxFailedIndexes !== undefined && failedIdx.length > spec.maxFailedIndexes)
      return { reason: REASON_MAX_FAILED_INDEXES_EXCEEDED, message: MESSAGE_MAX_FAILED_INDEXES_EXCEEDED };
    const resolved = completedIdx.length + failedIdx.length;
    if (failedIdx.length > 0 && resolved >= (spec.completions ?? 1) && active.length === 0)
      return { reason: REASON_FAILED_INDEXES, message: MESSAGE_FAILED_INDEXES };
  }
  return undefined;
}

export function successVerdict(
  job: Job,
  succeeded: number,
  completedIdx: readonly number[],
  active: readonly Pod[],
): Verdict | undefined {
  const completions = job.spec?.completions;
  const reached = { reason: REASON_COMPLETIONS_REACHED, message: MESSAGE_COMPLETIONS_REACHED };
  if (isIndexed(job)) {
    const rule = matchSuccessPolicy(job, completedIdx);
    if (rule !== undefined)
      return { reason: REASON_SUCCESS_POLICY, message: `Matched rules at index ${rule}` };
    return completedIdx.length >= (completions ?? 1) ? reached : undefined;
  }
  // Without completions (a work queue), one success ends the Job once the rest have stopped.
  if (completions === undefined || completions === null)
    return succeeded > 0 && active.length === 0 ? reached : undefined;
  return succeeded >= completions ? reached : undefined;
}

/**
 * The index of the first successPolicy rule an Indexed Job meets: all of its
 * succeededIndexes done, or succeededCount of them (of all indexes when it
 * names none).
 */
export function matchSuccessPolicy(job: Job, completedIdx: readonly number[]): number | undefined {
  const completions = job.spec?.completions ?? 1;
  const done = new Set(completedIdx);
  for (const [i, rule] of (job.spec?.successPolicy?.rules ?? []).entries()) {
    const among =
      rule.succeededIndexes === undefined ? undefined : parseIndexes(rule.succeededIndexes, completions);
    const have = among === undefined ? done.size : among.filter((x) => done.has(x)).length;
    if (rule.succeededCount !== undefined && rule.succeededCount !== null) {
      if (have >= rule.succeededCount) return i;
    } else if (among !== undefined && among.length > 0 && have === among.length) return i;
  }
  return undefined;
}

/**
 * With restartPolicy OnFailure a failing container restarts inside its pod and
 * the pod never fails: its restarts count toward backoffLimit instead.
 */
export function pastBackoffLimitOnFailure(job: Job, active: readonly Pod[], limit: number): boolean {
  if (job.spec?.template?.spec?.restartPolicy !== 'OnFailure') return false;
  let restarts = 0;
  for (const p of active) {
    if (p.status?.phase !== 'Running' && p.status?.phase !== 'Pending') continue;
    for (const c of [...(p.status.initContainerStatuses ?? []), ...(p.status.containerStatuses ?? [])])
      restarts += c.restartCount ?? 0;
  }
  return limit === 0 ? restarts > 0 : restarts >= limit;
}

/** Milliseconds until activeDeadlineSeconds passes (≤ 0: passed); undefined without one or while suspended. */
export function deadlineRemainingMs(job: Job, status: JobStatus, now: number): number | undefined {
  const seconds = job.spec?.activeDeadlineSeconds;
  if (seconds === undefined || job.spec?.suspend === true || !status.startTime) return undefined;
  return timeOf(status.startTime) + seconds * 1000 - now;
}

/**
 * Moves uids whose pods have let go of their finalizer (or are gone) from
 * uncountedTerminatedPods into succeeded/failed. An Indexed Job's succeeded is
 * its count of completed indexes, kept apart.
 */
export function moveCounted(status: JobStatus, stillHeld: ReadonlySet<string>, indexed: boolean): JobStatus {
  const s = status.uncountedTerminatedPods?.succeeded ?? [];
  const f = status.uncountedTerminatedPods?.failed ?? [];
  const keepS = s.filter((u) => stillHeld.has(u));
  const keepF = f.filter((u) => stillHeld.has(u));
  return {
    ...status,
    succeeded: indexed ? status.succeeded : (status.succeeded ?? 0) + s.length - keepS.length,
    failed: (status.failed ?? 0) + f.length - keepF.length,
    uncountedTerminatedPods: { succeeded: keepS, failed: keepF },
  };
}

/** The most earlier pods of an index failed, from the failure counts its failed pods carry. */
export function indexFailures(pods: readonly Pod[], ix: number): number {
  let n = 0;
  for (const p of pods) {
    if (p.status?.phase === 'Failed' && podIndex(p) === ix) n = Math.max(n, podIndexFailureCount(p) + 1);
  }
  return n;
}

/** The status as a canonical string: key order and omitted zeros never make a write. */
export function canonical(s: JobStatus | undefined): string {
  return JSON.stringify(sortKeys(normalize(s)));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, x]) => [k, sortKeys(x)]),
  );
}

function normalize(s: JobStatus | undefined) {
  return {
    ...s,
    active: s?.active ?? 0,
    ready: s?.ready ?? 0,
    terminating: s?.terminating ?? 0,
    succeeded: s?.succeeded ?? 0,
    failed: s?.failed ?? 0,
    uncountedTerminatedPods: {
      succeeded: s?.uncountedTerminatedPods?.succeeded ?? [],
      failed: s?.uncountedTerminatedPods?.failed ?? [],
    },
    conditions: s?.conditions ?? [],
  };
}
