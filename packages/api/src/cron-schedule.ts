// CronJob schedules, read as Kubernetes reads them (robfig/cron's ParseStandard): five
// fields or a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly),
// evaluated in the CronJob's time zone (the process's own when it has none, as the
// kube-controller-manager does). croner does the parsing;
// what it accepts beyond the standard (seconds, years, L, W, #) is refused here, so a
// schedule Kubit stores is one Kubernetes would store too.

import { Cron } from 'croner';

/** A parsed schedule: the times it fires. */
export interface CronSchedule {
  /** The first fire time strictly after `after`, or undefined when there is none. */
  next(after: Date): Date | undefined;
}

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

/** robfig's TZ=<zone> / CRON_TZ=<zone> prefix, which Kubernetes refuses on new schedules. */
const TZ_PREFIX = /^(?:CRON_)?TZ=(\S*)\s+/;

/** Parses a schedule; throws an Error whose message is the reason it is not one. */
export function parseCronSchedule(schedule: string, timeZone?: string): CronSchedule {
  let text = schedule.trim();
  let zone = timeZone;
  const tz = TZ_PREFIX.exec(text);
  if (tz) {
    zone = tz[1];
    text = text.slice(tz[0].length);
  }
  if (text.startsWith('@')) {
    const expanded = Object.hasOwn(MACROS, text) ? MACROS[text] : undefined;
    if (!expanded) throw new Error(`unrecognized descriptor: ${text}`);
    text = expanded;
  }
  const fields = text.split(/\s+/).filter((f) => f !== '');
  if (fields.length !== 5) {
    throw new Error(`expected exactly 5 fields, found ${fields.length}: [${fields.join(' ')}]`);
  }
  const odd = fields.find((f) => /[LW#]/i.test(f.replace(/[A-Za-z]{3}/g, (m) => m.replace(/[LW]/gi, ''))));
  if (odd !== undefined) throw new Error(`failed to parse int from ${odd}`);
  if (zone !== undefined && !isTimeZone(zone)) throw new Error(`unknown time zone ${zone}`);
  let cron: Cron;
  try {
    cron = new Cron(fields.join(' '), { paused: true, mode: '5-part', ...(zone ? { timezone: zone } : {}) });
  } catch (e) {
    throw new Error(String(e instanceof Error ? e.message : e).replace(/^CronPattern: /, ''));
  }
  return {
    next(after: Date): Date | undefined {
      return cron.nextRun(after) ?? undefined;
    },
  };
}

/** Whether the runtime knows an IANA zone of this name. */
export function isTimeZone(zone: string): boolean {
  if (zone === '') return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
