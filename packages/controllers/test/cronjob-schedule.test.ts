// The CronJob controller's schedule arithmetic (pure): the most recent start time,
// missed start times, the starting deadline, time zones, the requeue delay, and the
// history and annotation helpers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Job, parseCronSchedule } from '@kubit/api';
import { finishedCondition, jobsToPrune, rfc3339In } from '../src/cronjob/jobs.js';
import {
  jobNameFor,
  mostRecentScheduleTime,
  NEXT_SCHEDULE_DELTA_MS,
  nextStartTime,
  requeueAfterMs,
  tooLate,
} from '../src/cronjob/schedule.js';

const at = (iso: string) => Date.parse(iso);
const everyMinute = parseCronSchedule('*/1 * * * *', 'UTC');
const hourly = parseCronSchedule('@hourly', 'UTC');

describe('CronJob schedule', () => {
  test('no start time has come yet: none to start, wake at the first one', () => {
    const state = { createdAt: at('2026-01-01T10:00:30Z') };
    const now = at('2026-01-01T10:00:40Z');
    assert.deepEqual(nextStartTime(state, now, everyMinute), { tooManyMissed: false });
    assert.equal(requeueAfterMs(state, now, everyMinute), 20_000 + NEXT_SCHEDULE_DELTA_MS);
  });

  test('one start time came: it is the one to start; after it, the next is a minute on', () => {
    const state = { createdAt: at('2026-01-01T10:00:30Z') };
    const now = at('2026-01-01T10:01:05Z');
    assert.deepEqual(nextStartTime(state, now, everyMinute), {
      time: at('2026-01-01T10:01:00Z'),
      tooManyMissed: false,
    });
    const started = { ...state, lastScheduleTime: at('2026-01-01T10:01:00Z') };
    assert.deepEqual(nextStartTime(started, now, everyMinute), { tooManyMissed: false });
    assert.equal(requeueAfterMs(started, now, everyMinute), 55_000 + NEXT_SCHEDULE_DELTA_MS);
  });

  test('several missed start times: only the most recent is started', () => {
    const state = { createdAt: at('2026-01-01T10:00:00Z'), lastScheduleTime: at('2026-01-01T10:00:00Z') };
    const r = mostRecentScheduleTime(state, at('2026-01-01T10:07:30Z'), everyMinute, true);
    assert.equal(r.mostRecent, at('2026-01-01T10:07:00Z'));
    assert.equal(r.missed, 'few');
    assert.equal(nextStartTime(state, at('2026-01-01T10:07:30Z'), everyMinute).tooManyMissed, false);
  });

  test('more than 100 missed start times: the latest, flagged as too many', () => {
    const state = { createdAt: at('2026-01-01T00:00:00Z') };
    const now = at('2026-01-08T00:30:00Z'); // a week of hourly starts
    const start = nextStartTime(state, now, hourly);
    assert.equal(start.time, at('2026-01-08T00:00:00Z'));
    assert.equal(start.tooManyMissed, true);
    // Exactly 100 missed is not too many.
    const hundred = nextStartTime(state, at('2026-01-05T04:30:00Z'), hourly);
    assert.equal(hundred.tooManyMissed, false);
  });

  test('startingDeadlineSeconds: the search starts no earlier than the deadline, so old misses do not count', () => {
    const state = { createdAt: at('2026-01-01T00:00:00Z'), startingDeadlineSeconds: 600 };
    const now = at('2026-01-08T00:30:00Z');
    // Within the last 10 minutes no hourly start came.
    assert.deepEqual(nextStartTime(state, now, hourly), { tooManyMissed: false });
    const soon = at('2026-01-08T00:05:00Z');
    assert.deepEqual(nextStartTime(state, soon, hourly), {
      time: at('2026-01-08T00:00:00Z'),
      tooManyMissed: false,
    });
    assert.equal(tooLate(at('2026-01-08T00:00:00Z'), soon, 600), false);
    assert.equal(tooLate(at('2026-01-08T00:00:00Z'), soon, 60), true);
    assert.equal(tooLate(at('2026-01-08T00:00:00Z'), soon, undefined), false);
  });

  test('time zones: 09:00 in Berlin is 08:00 UTC in winter and 07:00 in summer', () => {
    const nine = parseCronSchedule('0 9 * * *', 'Europe/Berlin');
    const winter = nextStartTime({ createdAt: at('2026-01-15T00:00:00Z') }, at('2026-01-15T08:30:00Z'), nine);
    assert.equal(winter.time, at('2026-01-15T08:00:00Z'));
    const summer = nextStartTime({ createdAt: at('2026-07-15T00:00:00Z') }, at('2026-07-15T07:30:00Z'), nine);
    assert.equal(summer.time, at('2026-07-15T07:00:00Z'));
    // In UTC it has not come yet.
    const utc = nextStartTime(
      { createdAt: at('2026-07-15T00:00:00Z') },
      at('2026-07-15T07:30:00Z'),
      parseCronSchedule('0 9 * * *', 'UTC'),
    );
    assert.equal(utc.time, undefined);
  });

  test('Job names are the CronJob name and the scheduled minute', () => {
    assert.equal(
      jobNameFor('tick', at('2026-01-01T10:01:00Z')),
      `tick-${at('2026-01-01T10:01:00Z') / 60_000}`,
    );
    assert.equal(jobNameFor('tick', at('2026-01-01T10:01:00Z')), 'tick-29454361');
  });

  test('scheduled timestamps are RFC 3339 in the CronJob time zone', () => {
    assert.equal(rfc3339In(at('2026-01-15T08:00:00Z'), 'Europe/Berlin'), '2026-01-15T09:00:00+01:00');
    assert.equal(rfc3339In(at('2026-01-15T08:00:00Z')), '2026-01-15T08:00:00Z');
    assert.equal(rfc3339In(at('2026-01-15T08:00:00Z'), 'America/New_York'), '2026-01-15T03:00:00-05:00');
  });
});

function finished(name: string, type: 'Complete' | 'Failed', startTime?: string): Job {
  return {
    metadata: { name },
    status: { ...(startTime ? { startTime } : {}), conditions: [{ type, status: 'True' }] },
  } as Job;
}

describe('CronJob history', () => {
  test('finished Jobs are Complete or Failed with status True', () => {
    assert.equal(finishedCondition(finished('a', 'Complete')), 'Complete');
    assert.equal(finishedCondition(finished('a', 'Failed')), 'Failed');
    assert.equal(
      finishedCondition({ status: { conditions: [{ type: 'Complete', status: 'False' }] } } as Job),
      undefined,
    );
    assert.equal(finishedCondition({} as Job), undefined);
  });

  test('the oldest finished Jobs beyond each limit are pruned; running ones never', () => {
    const jobs = [
      finished('s3', 'Complete', '2026-01-01T03:00:00Z'),
      finished('s1', 'Complete', '2026-01-01T01:00:00Z'),
      finished('s2', 'Complete', '2026-01-01T02:00:00Z'),
      finished('f1', 'Failed', '2026-01-01T01:30:00Z'),
      finished('f2', 'Failed', '2026-01-01T02:30:00Z'),
      { metadata: { name: 'running' }, status: { startTime: '2026-01-01T00:00:00Z' } } as Job,
    ];
    const names = (js: Job[]) => js.map((j) => j.metadata?.name);
    assert.deepEqual(names(jobsToPrune(jobs, 1, 1)), ['s1', 's2', 'f1']);
    assert.deepEqual(names(jobsToPrune(jobs, 3, 0)), ['f1', 'f2']);
    assert.deepEqual(names(jobsToPrune(jobs, undefined, undefined)), []);
    // A Job never started sorts last, so it is kept over started ones.
    const unstarted = [finished('late', 'Complete'), finished('early', 'Complete', '2026-01-01T00:00:00Z')];
    assert.deepEqual(names(jobsToPrune(unstarted, 1, 1)), ['early']);
  });
});
