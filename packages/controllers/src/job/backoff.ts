// How long a Job waits before replacing a failed pod (Kubernetes'
// backoff_utils.go): 10 s after the first failure since the last success,
// doubling with each further failure, at most 6 minutes.
export const POD_FAILURE_BACKOFF_BASE_MS = 10_000;
export const POD_FAILURE_BACKOFF_MAX_MS = 6 * 60_000;

/** The delay after `failures` consecutive failures (0 → none). */
export function backoffDelayMs(
  failures: number,
  baseMs = POD_FAILURE_BACKOFF_BASE_MS,
  maxMs = POD_FAILURE_BACKOFF_MAX_MS,
): number {
  if (failures <= 0) return 0;
  // 2^(failures-1) overflows to Infinity long before it matters; min() caps it.
  return Math.min(baseMs * 2 ** (failures - 1), maxMs);
}

/** Failures since the last success, and when the latest of them happened. */
export interface BackoffRecord {
  failuresAfterLastSuccess: number;
  lastFailureTime?: number;
}

export const NO_BACKOFF: BackoffRecord = { failuresAfterLastSuccess: 0 };

/** A pod that just finished: whether it succeeded, and when. */
export interface FinishedPod {
  succeeded: boolean;
  finishedAt: number;
}

/**
 * The record after newly finished pods, taken in the order they finished: a
 * success after the last failure forgives every failure before it.
 */
export function nextBackoffRecord(record: BackoffRecord, finished: readonly FinishedPod[]): BackoffRecord {
  let { failuresAfterLastSuccess, lastFailureTime } = record;
  for (const f of [...finished].sort((a, b) => a.finishedAt - b.finishedAt)) {
    if (f.succeeded) {
      if (lastFailureTime === undefined || f.finishedAt >= lastFailureTime) {
        failuresAfterLastSuccess = 0;
        lastFailureTime = undefined;
      }
    } else {
      failuresAfterLastSuccess++;
      lastFailureTime = Math.max(lastFailureTime ?? f.finishedAt, f.finishedAt);
    }
  }
  return { failuresAfterLastSuccess, lastFailureTime };
}

/** How long from `now` until a replacement pod may be created (0: now). */
export function remainingBackoffMs(record: BackoffRecord, now: number): number {
  if (record.failuresAfterLastSuccess === 0 || record.lastFailureTime === undefined) return 0;
  return Math.max(0, record.lastFailureTime + backoffDelayMs(record.failuresAfterLastSuccess) - now);
}
