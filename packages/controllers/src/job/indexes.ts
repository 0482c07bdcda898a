// Completion indexes of an Indexed Job, and the compressed interval strings
// Kubernetes keeps them in (status.completedIndexes, status.failedIndexes:
// "1,3-5,7"). Sets of indexes are sorted arrays of distinct numbers.
import type { Pod } from '../types.js';

export const COMPLETION_INDEX_ANNOTATION = 'batch.kubernetes.io/job-completion-index';
/** The same index as a label (Kubernetes' PodIndexLabel), so pods can be selected by index. */
export const COMPLETION_INDEX_LABEL = 'batch.kubernetes.io/job-completion-index';
/** How many times this index failed before the pod was created (backoffLimitPerIndex). */
export const INDEX_FAILURE_COUNT_ANNOTATION = 'batch.kubernetes.io/job-index-failure-count';

/**
 * Parses "1,3-5,7" into [1,3,4,5,7], keeping only indexes below `completions`.
 * A malformed part is skipped: the string came from our own status, and a bad
 * part must not stop the Job.
 */
export function parseIndexes(s: string | undefined, completions: number): number[] {
  const out = new Set<number>();
  for (const part of (s ?? '').split(',')) {
    if (part === '') continue;
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const first = Number(m[1]);
    const last = Math.min(m[2] === undefined ? first : Number(m[2]), completions - 1);
    for (let i = first; i <= last; i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

/** Formats sorted distinct indexes as intervals: [1,3,4,5,7] → "1,3-5,7". */
export function formatIndexes(indexes: readonly number[]): string {
  const parts: string[] = [];
  let i = 0;
  while (i < indexes.length) {
    let j = i;
    while (j + 1 < indexes.length && indexes[j + 1] === indexes[j] + 1) j++;
    parts.push(i === j ? String(indexes[i]) : `${indexes[i]}-${indexes[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** The sorted union of two index sets. */
export function unionIndexes(a: readonly number[], b: Iterable<number>): number[] {
  return [...new Set([...a, ...b])].sort((x, y) => x - y);
}

/** A pod's completion index (annotation first, as Kubernetes reads it); undefined when missing or bad. */
export function podIndex(p: Pod): number | undefined {
  const raw =
    p.metadata?.annotations?.[COMPLETION_INDEX_ANNOTATION] ?? p.metadata?.labels?.[COMPLETION_INDEX_LABEL];
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
}

/** How many earlier pods of this pod's index failed. */
export function podIndexFailureCount(p: Pod): number {
  const raw = p.metadata?.annotations?.[INDEX_FAILURE_COUNT_ANNOTATION];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : 0;
}

/** The first `n` indexes in [0, completions) that are in none of the given sets. */
export function firstPendingIndexes(completions: number, n: number, taken: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < completions && out.length < n; i++) if (!taken.has(i)) out.push(i);
  return out;
}
