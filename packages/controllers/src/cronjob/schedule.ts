// When a CronJob should start a Job, as Kubernetes' cronjob_controllerv2 works it out
// (pkg/controller/cronjob/utils.go): from the later of its creation and its last
// scheduled time (and, with startingDeadlineSeconds, no earlier than that many seconds
// ago), the most recent fire time that has come, how many were missed on the way, and
// how long to wait for the next one. Pure: times are ms since the epoch.
import type { CronSchedule } from '@kubit/api';

/** How many start times were missed since the earliest one still counted. */
export type Missed = 'none' | 'few' | 'many';

/** More missed start times than this and only the latest starts, with a warning (Kubernetes' 100). */
export const MAX_MISSED_START_TIMES = 100;

/** Wake this long after a fire time, so that the time has surely come (Kubernetes' nextScheduleDelta). */
export const NEXT_SCHEDULE_DELTA_MS = 100;

export interface ScheduleState {
  /** metadata.creationTimestamp. */
  createdAt: number;
  /** status.lastScheduleTime, when it has one. */
  lastScheduleTime?: number;
  /** spec.startingDeadlineSeconds, when set. */
  startingDeadlineSeconds?: number;
}

export interface RecentTime {
  /** Where the search started: the creation or last schedule time (or the deadline's start). */
  earliest: number;
  /** The most recent fire time at or before now, after `earliest`; undefined when none came. */
  mostRecent?: number;
  missed: Missed;
}

/** A schedule whose fire times are too close to tell apart (an impossible date such as Feb 31 has none at all). */
export class InvalidScheduleError extends Error {}

function next(schedule: CronSchedule, after: number): number | undefined {
  return schedule.next(new Date(after))?.getTime();
}

/** Kubernetes' mostRecentScheduleTime. */
export function mostRecentScheduleTime(
  state: ScheduleState,
  now: number,
  schedule: CronSchedule,
  includeStartingDeadline: boolean,
): RecentTime {
  let earliest = state.lastScheduleTime ?? state.createdAt;
  if (includeStartingDeadline && state.startingDeadlineSeconds !== undefined) {
    // Nothing before the deadline's window is started any more.
    const deadline = now - state.startingDeadlineSeconds * 1000;
    if (deadline > earliest) earliest = deadline;
  }
  const t1 = next(schedule, earliest);
  if (t1 === undefined || now < t1) return { earliest, missed: 'none' };
  const t2 = next(schedule, t1);
  if (t2 === undefined || now < t2) return { earliest, mostRecent: t1, missed: 'few' };
  const between = Math.round((t2 - t1) / 1000);
  if (between < 1)
    throw new InvalidScheduleError('time difference between two schedules is less than 1 second');
  // A rough count: how many intervals of the first two fit between t1 and now.
  const missedCount = Math.floor((now - t1) / 1000 / between) + 1;
  // Start one interval before the estimate and walk forward, so that uneven schedules
  // (30 6-16/4 * * 1-5) land on a real fire time.
  const from = t1 + (missedCount - 2) * between * 1000;
  let mostRecent: number | undefined;
  for (let t = next(schedule, from); t !== undefined && t <= now; t = next(schedule, t)) mostRecent = t;
  return { earliest, mostRecent, missed: missedCount > MAX_MISSED_START_TIMES ? 'many' : 'few' };
}

export interface NextStart {
  /** The start time to act on now, if one has come. */
  time?: number;
  /** More than MAX_MISSED_START_TIMES were missed: only the latest is started (TooManyMissedTimes). */
  tooManyMissed: boolean;
}

/** Kubernetes' nextScheduleTime: the unmet start time to act on, within the starting deadline. */
export function nextStartTime(state: ScheduleState, now: number, schedule: CronSchedule): NextStart {
  const r = mostRecentScheduleTime(state, now, schedule, true);
  if (r.mostRecent === undefined || r.mostRecent > now) return { tooManyMissed: false };
  return { time: r.mostRecent, tooManyMissed: r.missed === 'many' };
}

/**
 * Kubernetes' nextScheduleTimeDuration: how long until the next fire time after the
 * most recent one (or after the earliest, when none came), plus a small delta;
 * undefined when the schedule never fires again.
 */
export function requeueAfterMs(
  state: ScheduleState,
  now: number,
  schedule: CronSchedule,
): number | undefined {
  let r: RecentTime;
  try {
    r = mostRecentScheduleTime(state, now, schedule, false);
  } catch {
    return undefined;
  }
  const from = r.mostRecent ?? (r.missed === 'none' ? r.earliest : undefined);
  if (from === undefined) return undefined;
  const t = next(schedule, from);
  return t === undefined ? undefined : t + NEXT_SCHEDULE_DELTA_MS - now;
}

/** Whether a start time is past its starting deadline (the MissSchedule case). */
export function tooLate(
  scheduled: number,
  now: number,
  startingDeadlineSeconds: number | undefined,
): boolean {
  return startingDeadlineSeconds !== undefined && scheduled + startingDeadlineSeconds * 1000 < now;
}

/** The Job of one start time: `<cronjob>-<minutes since the epoch>`, so a retry cannot make a second. */
export function jobNameFor(cronJobName: string, scheduled: number): string {
  return `${cronJobName}-${Math.floor(scheduled / 60_000)}`;
}
