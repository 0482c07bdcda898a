// Small facts about a CronJob's Jobs: whether one finished and how, which finished
// ones fall out of the history, and a start time written as Kubernetes writes it in
// the scheduled-timestamp annotation.
import type { Job } from '@kubit/api';
import { timeOf } from '../objects.js';

/** 'Complete' or 'Failed' once a Job has finished (that condition True), else undefined. */
export function finishedCondition(j: Job): 'Complete' | 'Failed' | undefined {
  for (const c of j.status?.conditions ?? []) {
    if ((c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') return c.type;
  }
  return undefined;
}

/** Kubernetes' byJobStartTime: earliest start first, unstarted last, then by name. */
function byStartTime(a: Job, b: Job): number {
  const sa = a.status?.startTime;
  const sb = b.status?.startTime;
  if (!sa && sb) return 1;
  if (sa && !sb) return -1;
  const d = timeOf(sa) - timeOf(sb);
  if (d !== 0) return d;
  return (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

/** The oldest finished Jobs beyond each history limit (an unset limit keeps all of that kind). */
export function jobsToPrune(jobs: Job[], successfulLimit?: number, failedLimit?: number): Job[] {
  const oldest = (kind: 'Complete' | 'Failed', limit: number | undefined): Job[] => {
    if (limit === undefined) return [];
    const finished = jobs
      .filter((j) => finishedCondition(j) === kind && !j.metadata?.deletionTimestamp)
      .sort(byStartTime);
    return finished.slice(0, Math.max(finished.length - limit, 0));
  };
  return [...oldest('Complete', successfulLimit), ...oldest('Failed', failedLimit)];
}

/** A time as Go's RFC 3339 in a zone: `2026-01-02T09:00:00+01:00`, or `...Z` in UTC (no zone). */
export function rfc3339In(ms: number, timeZone?: string): string {
  const zone = timeZone || 'UTC';
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  // longOffset is "GMT+01:00" (or "GMT" / "GMT+00:00" for no offset); Go writes a zero offset as Z.
  const raw = String(parts.timeZoneName).replace('GMT', '');
  const offset = raw === '' || /^[+-]00:00$/.test(raw) ? 'Z' : raw;
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}
