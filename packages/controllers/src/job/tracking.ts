// Counting a Job's finished pods without losing or repeating one. A finished pod
// still holding the tracking finalizer is new: its uid goes into
// status.uncountedTerminatedPods (an Indexed Job's success: its index into
// completedIndexes), which is written before the finalizer is removed. A uid
// whose pod no longer holds the finalizer (or is gone) moves into the counters.
// After a restart the status says what was being counted, and pods without the
// finalizer were counted already.
import type { Job, Pod } from '@kubit/api';
import { type BackoffRecord, type FinishedPod, NO_BACKOFF, nextBackoffRecord } from './backoff.js';
import { REASON_POD_FAILURE_POLICY, type Verdict } from './conditions.js';
import { type FailurePolicyMatch, matchPodFailurePolicy } from './failure-policy.js';
import { parseIndexes, podIndex, podIndexFailureCount, unionIndexes } from './indexes.js';
import { hasTrackingFinalizer, isIndexed, podFinishTime, podOutcome } from './pods.js';

export interface Tally {
  /** Uids counted but not yet in succeeded/failed, including the ones found now. */
  uncountedSucceeded: Set<string>;
  uncountedFailed: Set<string>;
  completedIndexes: number[];
  failedIndexes: number[];
  /** Pods whose finalizer goes now (their end is recorded). */
  toRelease: Pod[];
  /** Uids of pods that still hold the finalizer after this sync's releases. */
  stillHeld: Set<string>;
  /** Whether the status must be written before the finalizers go. */
  changed: boolean;
  /** A pod matched a FailJob rule of the pod failure policy. */
  failJob?: Verdict;
}

/**
 * Tallies the Job's pods. `pending` holds uids whose finalizer this controller
 * removed already (its cache may still show it); `ending` means the Job is
 * going to end, so every pod that has not succeeded counts as failed.
 */
export function countFinishedPods(
  job: Job,
  pods: readonly Pod[],
  pending: ReadonlySet<string>,
  ending: boolean,
): Tally {
  const spec = job.spec;
  const indexed = isIndexed(job);
  const completions = spec?.completions ?? 1;
  const perIndexLimit = spec?.backoffLimitPerIndex;
  const uncounted = job.status?.uncountedTerminatedPods;
  const tally: Tally = {
    uncountedSucceeded: new Set(uncounted?.succeeded ?? []),
    uncountedFailed: new Set(uncounted?.failed ?? []),
    completedIndexes: indexed ? parseIndexes(job.status?.completedIndexes, completions) : [],
    failedIndexes: indexed ? parseIndexes(job.status?.failedIndexes, completions) : [],
    toRelease: [],
    stillHeld: new Set(),
    changed: false,
  };
  const newCompleted: number[] = [];
  const newFailed: number[] = [];
  for (const p of pods) {
    const uid = p.metadata?.uid ?? '';
    if (!hasTrackingFinalizer(p) || pending.has(uid)) continue;
    let outcome = podOutcome(p, job);
    if (outcome === undefined && ending) outcome = 'Failed';
    if (outcome === undefined) {
      tally.stillHeld.add(uid);
      continue;
    }
    tally.toRelease.push(p);
    if (tally.uncountedSucceeded.has(uid) || tally.uncountedFailed.has(uid)) continue;
    const ix = podIndex(p);
    const validIx = indexed && ix !== undefined && ix < completions ? ix : undefined;
    if (outcome === 'Succeeded') {
      if (!indexed) {
        tally.uncountedSucceeded.add(uid);
        tally.changed = true;
      } else if (validIx !== undefined && !tally.completedIndexes.includes(validIx)) {
        newCompleted.push(validIx);
        tally.changed = true;
      }
      continue;
    }
    // The policy judges pods that reached their end, not ones cut short by the Job ending.
    const match: FailurePolicyMatch =
      p.status?.phase === 'Failed'
        ? matchPodFailurePolicy(spec?.podFailurePolicy, p)
        : { action: 'Count', counts: true };
    if (match.action === 'FailJob' && !tally.failJob)
      tally.failJob = { reason: REASON_POD_FAILURE_POLICY, message: match.message ?? '' };
    if (!match.counts) continue; // Ignore: released without being counted.
    tally.uncountedFailed.add(uid);
    tally.changed = true;
    if (validIx !== undefined && perIndexLimit !== undefined) {
      const failures = podIndexFailureCount(p) + 1;
      if (match.action === 'FailIndex' || failures > perIndexLimit) newFailed.push(validIx);
    }
  }
  tally.completedIndexes = unionIndexes(tally.completedIndexes, newCompleted);
  tally.failedIndexes = unionIndexes(
    tally.failedIndexes,
    newFailed.filter((ix) => !tally.completedIndexes.includes(ix)),
  );
  return tally;
}

/**
 * The failure back-off, from the Job's pods themselves (a finished pod stays
 * until the Job goes), so a restarted controller keeps waiting where it was:
 * the pods that failed since the last success, and when the latest did. Only
 * pods that reached the Failed phase count: the ones the controller deleted
 * (suspend, fewer in parallel) say nothing about the workload, and neither do
 * those a podFailurePolicy ignores.
 */
export function backoffFromPods(job: Job, pods: readonly Pod[], now: number): BackoffRecord {
  const finished: FinishedPod[] = [];
  for (const p of pods) {
    const phase = p.status?.phase;
    if (phase === 'Succeeded') finished.push({ succeeded: true, finishedAt: podFinishTime(p, now) });
    else if (phase === 'Failed' && matchPodFailurePolicy(job.spec?.podFailurePolicy, p).counts)
      finished.push({ succeeded: false, finishedAt: podFinishTime(p, now) });
  }
  return nextBackoffRecord(NO_BACKOFF, finished);
}
