// The CronJob controller, as Kubernetes' cronjob_controllerv2: for each CronJob it
// keeps status.active true to the Jobs it owns (finished ones leave it, vanished ones
// too), records status.lastSuccessfulTime, and when a start time has come (within
// startingDeadlineSeconds, not suspended) creates the Job `<name>-<scheduled minutes>`
// from the jobTemplate, honouring concurrencyPolicy Allow / Forbid / Replace. It then
// prunes the oldest finished Jobs past the history limits and wakes again at the
// next fire time, never sooner. The clock is injectable, so tests need not wait.
import {
  type CronJob,
  type CronSchedule,
  isAlreadyExists,
  isNotFound,
  type Job,
  type ObjectReference,
  parseCronSchedule,
} from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { MutationCache } from '../mutation-cache.js';
import { controllerOf, isoNow, ownerRefFor, timeOf } from '../objects.js';
import { finishedCondition, jobsToPrune, rfc3339In } from './jobs.js';
import { InvalidScheduleError, jobNameFor, nextStartTime, requeueAfterMs, tooLate } from './schedule.js';

/** The annotation carrying a Job's scheduled start time, in the CronJob's time zone. */
export const SCHEDULED_TIMESTAMP_ANNOTATION = 'batch.kubernetes.io/cronjob-scheduled-timestamp';

/** A setTimeout cannot wait longer than about 24.8 days; a yearly schedule wakes daily instead. */
const MAX_REQUEUE_MS = 24 * 60 * 60 * 1000;

export interface CronJobControllerOptions {
  /** The clock schedules are read against (tests move it instead of waiting). */
  now?: () => number;
  events?: EventSink;
  log?: Logger;
}

/** What one sync decided: the status to write (if changed) and when to look again. */
interface SyncResult {
  status: NonNullable<CronJob['status']>;
  changed: boolean;
  requeueAfter?: number;
}

export class CronJobController implements Controller {
  readonly name = 'cronjob';
  readonly queue = new RateLimitingQueue<string>();
  private readonly cronJobs: Informer<CronJob>;
  private readonly jobs: Informer<Job>;
  private readonly now: () => number;
  private readonly events: EventSink;
  /** Jobs this controller created or deleted, and CronJob statuses it wrote, until the informers catch up. */
  private readonly ownJobs = new MutationCache<Job>();
  private readonly ownCronJobs = new MutationCache<CronJob>();

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: CronJobControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.events = opts.events ?? noEvents;
    this.cronJobs = informers.forResource<CronJob>(resources.cronjobs);
    this.jobs = informers.forResource<Job>(resources.jobs);
    this.cronJobs.addEventHandler({
      onAdd: (cj) => this.queue.add(keyOf(cj)),
      onUpdate: (_old, cj) => this.queue.add(keyOf(cj)),
      onDelete: (cj) => this.queue.add(keyOf(cj)),
    });
    // A Job's changes (finishing, going away) change its CronJob's status and what it may start.
    const jobChanged = (j: Job) => {
      const ref = controllerOf(j);
      if (ref?.kind !== 'CronJob' || !ref.apiVersion.startsWith('batch/')) return;
      const ns = j.metadata?.namespace;
      this.queue.add(ns ? `${ns}/${ref.name}` : ref.name);
    };
    this.jobs.addEventHandler({
      onAdd: jobChanged,
      onUpdate: (_old, j) => jobChanged(j),
      onDelete: jobChanged,
    });
  }

  /** The CronJob as this controller last knows it: its own status write, if the cache lags. */
  private cronJob(key: string): CronJob | undefined {
    const { namespace, name } = splitKey(key);
    const cached = this.cronJobs.store.getByKey(key);
    // A CronJob gone from the cache is gone: a status written before its delete must not revive it.
    if (!cached) return undefined;
    return this.ownCronJobs
      .view([cached], namespace)
      .find((c) => c.metadata?.name === name && c.metadata?.uid === cached.metadata?.uid);
  }

  private ownedJobs(cj: CronJob): Job[] {
    const ns = cj.metadata?.namespace;
    return this.ownJobs
      .view(this.jobs.store.listInNamespace(ns ?? ''), ns)
      .filter((j) => controllerOf(j)?.uid === cj.metadata?.uid);
  }

  async reconcile(key: string): Promise<void> {
    const cj = this.cronJob(key);
    if (!cj) return;
    const jobs = this.ownedJobs(cj);
    const r = await this.syncCronJob(cj, jobs);
    // Pruning reads the Jobs again: the sync may have created or replaced some.
    if (!cj.metadata?.deletionTimestamp && (await this.pruneHistory(cj, this.ownedJobs(cj), r.status))) {
      r.changed = true;
    }
    if (r.changed) {
      const written = await this.cluster.update(resources.cronjobs, { ...cj, status: r.status }, 'status');
      this.ownCronJobs.wrote(written);
    }
    if (r.requeueAfter !== undefined) {
      this.queue.addAfter(key, Math.min(Math.max(r.requeueAfter, 0), MAX_REQUEUE_MS));
    }
  }

  private async syncCronJob(cj: CronJob, jobs: Job[]): Promise<SyncResult> {
    const status: SyncResult['status'] = structuredClone(cj.status ?? {});
    const r: SyncResult = { status, changed: false };
    const owned = new Set<string>();
    for (const j of jobs) {
      const uid = j.metadata?.uid ?? '';
      owned.add(uid);
      const inActive = (status.active ?? []).some((a) => a.uid === uid);
      const finished = finishedCondition(j);
      if (!inActive && !finished) {
        this.events.event(
          cj,
          'Warning',
          'UnexpectedJob',
          `Saw a job that the controller did not create or forgot: ${j.metadata?.name}`,
        );
      } else if (inActive && finished) {
        status.active = (status.active ?? []).filter((a) => a.uid !== uid);
        this.events.event(
          cj,
          'Normal',
          'SawCompletedJob',
          `Saw completed job: ${j.metadata?.name}, condition: ${finished}`,
        );
        r.changed = true;
      }
      // A succeeded Job counts for lastSuccessfulTime whether or not it was active.
      if (finished === 'Complete' && j.status?.completionTime) {
        const last = status.lastSuccessfulTime;
        if (!last || timeOf(j.status.completionTime) > timeOf(last)) {
          status.lastSuccessfulTime = j.status.completionTime;
          r.changed = true;
        }
      }
    }
    // Active Jobs that no longer exist leave the list (asked of the apiserver, not a lagging cache).
    for (const a of [...(status.active ?? [])]) {
      if (owned.has(a.uid ?? '')) continue;
      if (await this.jobGone(a)) {
        this.events.event(cj, 'Normal', 'MissingJob', `Active job went missing: ${a.name}`);
        status.active = (status.active ?? []).filter((x) => x.uid !== a.uid);
        r.changed = true;
      }
    }
    if (cj.metadata?.deletionTimestamp) return r;
    if (cj.spec?.suspend === true) return r;
    let schedule: CronSchedule;
    try {
      schedule = parseCronSchedule(cj.spec?.schedule ?? '', cj.spec?.timeZone);
    } catch (err) {
      const unknownZone = (err as Error).message.startsWith('unknown time zone');
      if (unknownZone) {
        this.events.event(
          cj,
          'Warning',
          'UnknownTimeZone',
          `invalid timeZone: "${cj.spec?.timeZone}": ${(err as Error).message}`,
        );
      } else {
        this.events.event(
          cj,
          'Warning',
          'UnparseableSchedule',
          `unparseable schedule: "${cj.spec?.schedule}" : ${(err as Error).message}`,
        );
      }
      return r;
    }
    const now = this.now();
    const state = {
      createdAt: timeOf(cj.metadata?.creationTimestamp),
      lastScheduleTime: status.lastScheduleTime ? timeOf(status.lastScheduleTime) : undefined,
      startingDeadlineSeconds: cj.spec?.startingDeadlineSeconds,
    };
    const requeue = () => requeueAfterMs(state, now, schedule);
    let start: ReturnType<typeof nextStartTime>;
    try {
      start = nextStartTime(state, now, schedule);
    } catch (err) {
      if (!(err instanceof InvalidScheduleError)) throw err;
      this.events.event(
        cj,
        'Warning',
        'InvalidSchedule',
        `invalid schedule: ${cj.spec?.schedule} : ${err.message}`,
      );
      return r;
    }
    if (start.tooManyMissed) {
      this.events.event(
        cj,
        'Warning',
        'TooManyMissedTimes',
        'too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew',
      );
    }
    const scheduled = start.time;
    if (scheduled === undefined) return { ...r, requeueAfter: requeue() };
    if (tooLate(scheduled, now, cj.spec?.startingDeadlineSeconds)) {
      this.events.event(
        cj,
        'Warning',
        'MissSchedule',
        `Missed scheduled time to start a job: ${new Date(scheduled).toUTCString()}`,
      );
      return { ...r, requeueAfter: requeue() };
    }
    const name = jobNameFor(cj.metadata?.name ?? '', scheduled);
    const alreadyStarted =
      (status.active ?? []).some((a) => a.name === name) ||
      (status.lastScheduleTime !== undefined && timeOf(status.lastScheduleTime) === scheduled);
    if (alreadyStarted) return { ...r, requeueAfter: requeue() };
    const policy = cj.spec?.concurrencyPolicy ?? 'Allow';
    if (policy === 'Forbid' && (status.active ?? []).length > 0) {
      this.events.event(
        cj,
        'Normal',
        'JobAlreadyActive',
        'Not starting job because prior execution is running and concurrency policy is Forbid',
      );
      return { ...r, requeueAfter: requeue() };
    }
    if (policy === 'Replace') {
      for (const a of [...(status.active ?? [])]) {
        const j = jobs.find((x) => x.metadata?.uid === a.uid);
        if (j) await this.deleteJob(cj, j, status);
        else status.active = (status.active ?? []).filter((x) => x.uid !== a.uid);
        r.changed = true;
      }
    }
    const job = await this.createJob(cj, name, scheduled);
    if (!job) return r;
    status.active = [...(status.active ?? []), refTo(job)];
    status.lastScheduleTime = isoNow(scheduled);
    r.changed = true;
    return { ...r, requeueAfter: requeueAfterMs({ ...state, lastScheduleTime: scheduled }, now, schedule) };
  }

  private async jobGone(a: ObjectReference): Promise<boolean> {
    try {
      const j = await this.cluster.get<Job>(resources.jobs, a.namespace, a.name ?? '');
      return j.metadata?.uid !== a.uid;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }

  /** Creates the Job of one start time; an existing one of that name (made before a crash) is taken as it. */
  private async createJob(cj: CronJob, name: string, scheduled: number): Promise<Job | undefined> {
    const tmpl = cj.spec?.jobTemplate;
    const ns = cj.metadata?.namespace;
    const job: Job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name,
        namespace: ns,
        labels: { ...(tmpl?.metadata?.labels ?? {}) },
        annotations: {
          ...(tmpl?.metadata?.annotations ?? {}),
          [SCHEDULED_TIMESTAMP_ANNOTATION]: rfc3339In(scheduled, cj.spec?.timeZone),
        },
        ownerReferences: [ownerRefFor(cj, 'CronJob', 'batch/v1')],
      },
      spec: structuredClone(tmpl?.spec ?? { template: {} }),
    };
    try {
      const created = this.ownJobs.wrote(await this.cluster.create(resources.jobs, ns, job));
      this.events.event(cj, 'Normal', 'SuccessfulCreate', `Created job ${name}`);
      return created;
    } catch (err) {
      if (isAlreadyExists(err)) {
        const existing = await this.cluster.get<Job>(resources.jobs, ns, name);
        // Another's Job of that name is not ours to count.
        if (controllerOf(existing)?.uid !== cj.metadata?.uid) throw err;
        return existing;
      }
      if (String((err as Error).message).includes('is being terminated')) return undefined;
      this.events.event(cj, 'Warning', 'FailedCreate', `Error creating job: ${(err as Error).message}`);
      throw err;
    }
  }

  /** Deletes a Job in the background (its pods follow through the garbage collector). */
  private async deleteJob(cj: CronJob, j: Job, status: SyncResult['status']): Promise<void> {
    try {
      await this.cluster.delete(resources.jobs, j.metadata?.namespace, j.metadata?.name ?? '', {
        propagationPolicy: 'Background',
      });
    } catch (err) {
      if (!isNotFound(err)) {
        this.events.event(cj, 'Warning', 'FailedDelete', `Deleted job: ${(err as Error).message}`);
        throw err;
      }
    }
    this.ownJobs.deleted(j);
    status.active = (status.active ?? []).filter((a) => a.uid !== j.metadata?.uid);
    this.events.event(cj, 'Normal', 'SuccessfulDelete', `Deleted job ${j.metadata?.name}`);
  }

  /** Deletes the oldest finished Jobs beyond successfulJobsHistoryLimit and failedJobsHistoryLimit. */
  private async pruneHistory(cj: CronJob, jobs: Job[], status: SyncResult['status']): Promise<boolean> {
    const doomed = jobsToPrune(jobs, cj.spec?.successfulJobsHistoryLimit, cj.spec?.failedJobsHistoryLimit);
    const before = (status.active ?? []).length;
    for (const j of doomed) await this.deleteJob(cj, j, status);
    return (status.active ?? []).length !== before;
  }
}

function refTo(j: Job): ObjectReference {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    name: j.metadata?.name,
    namespace: j.metadata?.namespace,
    uid: j.metadata?.uid,
    resourceVersion: j.metadata?.resourceVersion,
  };
}
