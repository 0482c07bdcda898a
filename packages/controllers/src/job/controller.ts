// The Job controller: runs a Job's pods to completion (Kubernetes'
// job_controller.go semantics). Each sync
//   1. claims the Job's pods (adopting orphans, releasing pods that stopped
//      matching, as the ReplicaSet controller does);
//   2. counts finished pods: their uids (an Indexed Job's: their indexes) are
//      written to the status first, then their tracking finalizers removed,
//      then they are moved into succeeded/failed (tracking.ts), so a restart
//      in between neither loses nor double-counts a pod;
//   3. decides whether the Job is ending (FailureTarget or SuccessCriteriaMet),
//      deletes its running pods and, once none is left, marks it Failed or
//      Complete; or suspends it; or creates and deletes pods to keep
//      `parallelism` running, waiting out the failure back-off first.
// Expectations keep it from creating or deleting twice on a cache that has not
// seen its own writes, and its own status writes are read back through a
// mutation cache.
import { isNotFound, type Job, type JobStatus, type Pod } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { Expectations } from '../expectations.js';
import { compileSelector } from '../labels.js';
import { MutationCache } from '../mutation-cache.js';
import { controllerOf, isoNow, isPodReady } from '../objects.js';
import { podsToDelete } from '../pod-ranking.js';
import type { OwnerReference } from '../types.js';
import { remainingBackoffMs } from './backoff.js';
import { findCondition, isJobFinished, type Verdict, withCondition } from './conditions.js';
import { firstPendingIndexes, formatIndexes, podIndex } from './indexes.js';
import { JobPodControl } from './pod-control.js';
import {
  hasTrackingFinalizer,
  isIndexed,
  isPodTerminal,
  jobSelector,
  onlyReplaceFailedPods,
  podForJob,
} from './pods.js';
import {
  canonical,
  deadlineRemainingMs,
  failureVerdict,
  indexFailures,
  moveCounted,
  successVerdict,
} from './status.js';
import { backoffFromPods, countFinishedPods, type Tally } from './tracking.js';

/** At most this many creates or deletes per sync (Kubernetes' burstReplicas for Jobs). */
export const JOB_BURST = 500;
/** The manager Kubernetes' own Job controller answers to (spec.managedBy). */
export const JOB_CONTROLLER_MANAGER = 'kubernetes.io/job-controller';

export interface JobControllerOptions {
  now?: () => number;
  burst?: number;
  events?: EventSink;
  log?: Logger;
}

const isActive = (p: Pod) => !isPodTerminal(p) && !p.metadata?.deletionTimestamp;

export class JobController implements Controller {
  readonly name = 'job';
  readonly queue = new RateLimitingQueue<string>();
  readonly expectations: Expectations;
  private readonly jobWrites: MutationCache<Job>;
  private readonly jobInformer: Informer<Job>;
  private readonly podInformer: Informer<Pod>;
  private readonly now: () => number;
  private readonly burst: number;
  private readonly events: EventSink;
  private readonly podControl: JobPodControl;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: JobControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.burst = opts.burst ?? JOB_BURST;
    this.events = opts.events ?? noEvents;
    this.expectations = new Expectations(this.now);
    this.podControl = new JobPodControl(cluster, this.events, this.expectations);
    this.jobWrites = new MutationCache<Job>(this.now);
    this.jobInformer = informers.forResource<Job>(resources.jobs);
    this.podInformer = informers.forResource<Pod>(resources.pods);
    this.jobInformer.addEventHandler({
      onAdd: (j) => this.queue.add(keyOf(j)),
      onUpdate: (_old, j) => this.queue.add(keyOf(j)),
      onDelete: (j) => this.queue.add(keyOf(j)),
    });
    this.podInformer.addEventHandler({
      onAdd: (p) => this.podAdded(p),
      onUpdate: (old, p) => this.podUpdated(old, p),
      onDelete: (p) => this.podDeleted(p),
    });
  }

  // ---- event handlers: pod events become Job keys ----

  /** The key of the Job a controller reference names (whether or not that Job still exists). */
  private refKey(p: Pod, ref: OwnerReference | undefined = controllerOf(p)): string | undefined {
    if (ref?.kind !== 'Job' || ref.apiVersion !== 'batch/v1') return undefined;
    return `${p.metadata?.namespace}/${ref.name}`;
  }

  /** The key of the cached Job that controls the pod. */
  private ownerKey(p: Pod, ref: OwnerReference | undefined = controllerOf(p)): string | undefined {
    const key = this.refKey(p, ref);
    const job = key ? this.jobInformer.store.getByKey(key) : undefined;
    return job && job.metadata?.uid === ref?.uid ? key : undefined;
  }

  private enqueueMatching(p: Pod): void {
    for (const j of this.jobInformer.store.listInNamespace(p.metadata?.namespace ?? '')) {
      if (compileSelector(jobSelector(j))(p.metadata?.labels)) this.queue.add(keyOf(j));
    }
  }

  private podAdded(p: Pod): void {
    if (p.metadata?.deletionTimestamp) {
      this.podDeleted(p);
      return;
    }
    const ref = controllerOf(p);
    if (!ref) {
      this.enqueueMatching(p);
      return;
    }
    const key = this.ownerKey(p, ref);
    if (key) this.expectations.creationObserved(key);
    // A pod of a Job that is gone still holds its finalizer: its key lets the sync release it.
    const k = key ?? (hasTrackingFinalizer(p) ? this.refKey(p, ref) : undefined);
    if (k) this.queue.add(k);
  }

  private podUpdated(old: Pod, p: Pod): void {
    const ref = controllerOf(p);
    const key = this.ownerKey(p, ref) ?? (hasTrackingFinalizer(p) ? this.refKey(p, ref) : undefined);
    if (key) {
      if (p.metadata?.deletionTimestamp && !old.metadata?.deletionTimestamp)
        this.expectations.deletionObserved(key, keyOf(p));
      if (!hasTrackingFinalizer(p)) this.podControl.removalObserved(key, p.metadata?.uid ?? '');
      this.queue.add(key);
    }
    const oldRef = controllerOf(old);
    if (oldRef && oldRef.uid !== ref?.uid) {
      const k = this.ownerKey(old, oldRef);
      if (k) this.queue.add(k);
    }
    if (!ref && JSON.stringify(old.metadata?.labels) !== JSON.stringify(p.metadata?.labels))
      this.enqueueMatching(p);
  }

  private podDeleted(p: Pod): void {
    const key = this.refKey(p);
    if (!key) return;
    this.expectations.deletionObserved(key, keyOf(p));
    this.podControl.removalObserved(key, p.metadata?.uid ?? '');
    this.queue.add(key);
  }

  // ---- reconcile ----

  async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const cached = this.jobInformer.store.getByKey(key);
    const nsPods = this.podInformer.store.listInNamespace(namespace ?? '');
    if (!cached) {
      this.expectations.delete(key);
      this.podControl.forget(key);
      // Pods of a deleted Job must not keep their finalizer for ever.
      await this.podControl.removeFinalizers(
        key,
        nsPods.filter((p) => hasTrackingFinalizer(p) && this.refKey(p) === `${namespace}/${name}`),
      );
      return;
    }
    // A copy: the status writes below replace its metadata and status, never the cache's.
    const job = { ...this.freshest(cached) };
    const managedBy = job.spec?.managedBy;
    if (managedBy !== undefined && managedBy !== JOB_CONTROLLER_MANAGER) return;
    const uid = job.metadata?.uid;
    if (isJobFinished(job) || job.metadata?.deletionTimestamp) {
      // Nothing more to count: let the pods go (the garbage collector or the TTL controller deletes them).
      await this.podControl.removeFinalizers(
        key,
        nsPods.filter((p) => hasTrackingFinalizer(p) && controllerOf(p)?.uid === uid),
      );
      return;
    }
    // Pods of an earlier Job of the same name hold their finalizer for nobody now.
    await this.podControl.removeFinalizers(
      key,
      nsPods.filter((p) => hasTrackingFinalizer(p) && this.refKey(p) === key && controllerOf(p)?.uid !== uid),
    );
    const needsSync = this.expectations.satisfied(key);
    const pods = await this.podControl.claimPods(job, nsPods);
    await this.sync(key, job, pods, needsSync);
  }

  private async sync(key: string, job: Job, pods: Pod[], needsSync: boolean): Promise<void> {
    const now = this.now();
    const spec = job.spec!;
    const suspended = spec.suspend === true;
    let status: JobStatus = structuredClone(job.status ?? {});
    const pending = this.podControl.pendingRemovals(key);

    // 1. Count finished pods, flushing them into the status before their finalizers go.
    const ending =
      findCondition(job, 'FailureTarget')?.status === 'True' ||
      findCondition(job, 'SuccessCriteriaMet')?.status === 'True';
    const tally: Tally = countFinishedPods(job, pods, pending, ending);
    status = await this.flush(key, job, status, tally);

    // 2. Where the Job stands.
    // Pods it has deleted but whose deletion the cache has yet to show are as good as gone.
    const leaving = pods.filter((p) => isActive(p) && this.expectations.deletionPending(key, keyOf(p)));
    const active = pods.filter((p) => isActive(p) && !leaving.includes(p));
    const succeeded = status.succeeded ?? 0;
    const failed = (status.failed ?? 0) + (status.uncountedTerminatedPods?.failed?.length ?? 0);
    const completedIdx = tally.completedIndexes;
    const failedIdx = tally.failedIndexes;
    if (!suspended && !status.startTime) status.startTime = isoNow(now);

    let conditions = status.conditions;
    const target = findCondition(job, 'FailureTarget');
    const met = findCondition(job, 'SuccessCriteriaMet');
    let failure: Verdict | undefined =
      target?.status === 'True' ? { reason: target.reason ?? '', message: target.message ?? '' } : undefined;
    let success: Verdict | undefined =
      met?.status === 'True' ? { reason: met.reason ?? '', message: met.message ?? '' } : undefined;
    const deadlineMs = deadlineRemainingMs(job, status, now);
    if (!failure && !success) {
      failure = tally.failJob ?? failureVerdict(job, failed, deadlineMs, completedIdx, failedIdx, active);
      if (!failure) success = successVerdict(job, succeeded, completedIdx, active);
      if (failure)
        conditions = withCondition(conditions, 'FailureTarget', 'True', failure.reason, failure.message, now);
      else if (success)
        conditions = withCondition(
          conditions,
          'SuccessCriteriaMet',
          'True',
          success.reason,
          success.message,
          now,
        );
    }

    // 3. Act.
    let deleted: Pod[] = [];
    let manageError: unknown;
    let requeueMs: number | undefined;
    if (failure || success) {
      if (active.length > 0) deleted = await this.podControl.deletePods(key, job, active);
    } else if (suspended) {
      if (active.length > 0) deleted = await this.podControl.deletePods(key, job, active);
      if (findCondition(job, 'Suspended')?.status !== 'True') {
        conditions = withCondition(conditions, 'Suspended', 'True', 'JobSuspended', 'Job suspended', now);
        this.events.event(job, 'Normal', 'Suspended', 'Job suspended');
      }
    } else {
      if (findCondition(job, 'Suspended')?.status === 'True') {
        conditions = withCondition(conditions, 'Suspended', 'False', 'JobResumed', 'Job resumed', now);
        // The deadline counts from the resume.
        status.startTime = isoNow(now);
        this.events.event(job, 'Normal', 'Resumed', 'Job resumed');
      }
      if (needsSync) {
        try {
          const r = await this.manage(key, job, pods, active, succeeded, completedIdx, failedIdx, now);
          deleted = r.deleted;
          requeueMs = r.requeueMs;
        } catch (err) {
          manageError = err;
        }
      }
      if (deadlineMs !== undefined) requeueMs = Math.min(requeueMs ?? deadlineMs, deadlineMs);
    }

    // 4. Status.
    const gone = new Set(deleted.map((p) => p.metadata?.uid));
    const staying = active.filter((p) => !gone.has(p.metadata?.uid));
    status.active = staying.length;
    status.ready = staying.filter(isPodReady).length;
    status.terminating =
      pods.filter((p) => !isPodTerminal(p) && p.metadata?.deletionTimestamp).length +
      leaving.length +
      gone.size;
    const uncountedLeft =
      (status.uncountedTerminatedPods?.succeeded?.length ?? 0) +
      (status.uncountedTerminatedPods?.failed?.length ?? 0);
    if ((failure || success) && staying.length === 0 && status.terminating === 0 && uncountedLeft === 0) {
      if (failure) {
        conditions = withCondition(conditions, 'Failed', 'True', failure.reason, failure.message, now);
        this.events.event(job, 'Warning', failure.reason, failure.message);
      } else if (success) {
        conditions = withCondition(conditions, 'Complete', 'True', success.reason, success.message, now);
        status.completionTime = isoNow(now);
        this.events.event(job, 'Normal', 'Completed', 'Job completed');
      }
    }
    if (conditions) status.conditions = conditions;
    await this.writeStatus(job, status);
    if (requeueMs !== undefined) this.queue.addAfter(key, Math.max(requeueMs, 0) + 100);
    if (manageError !== undefined) throw manageError;
  }

  /**
   * Writes newly finished pods to the status, removes their finalizers, then
   * moves every uid whose pod no longer holds a finalizer from
   * uncountedTerminatedPods into succeeded/failed. Returns the status so far.
   */
  private async flush(key: string, job: Job, status: JobStatus, tally: Tally): Promise<JobStatus> {
    let next: JobStatus = {
      ...status,
      uncountedTerminatedPods: {
        succeeded: [...tally.uncountedSucceeded],
        failed: [...tally.uncountedFailed],
      },
    };
    if (isIndexed(job)) {
      next.completedIndexes = formatIndexes(tally.completedIndexes);
      next.succeeded = tally.completedIndexes.length;
      if (job.spec?.backoffLimitPerIndex !== undefined)
        next.failedIndexes = formatIndexes(tally.failedIndexes);
    }
    const indexed = isIndexed(job);
    if (tally.toRelease.length === 0) return moveCounted(next, tally.stillHeld, indexed);
    // Recorded before any finalizer goes, so a crash after it loses nothing.
    if (tally.changed) next = await this.writeStatus(job, next);
    await this.podControl.removeFinalizers(key, tally.toRelease);
    return moveCounted(next, tally.stillHeld, indexed);
  }

  /** Creates or deletes pods so `parallelism` of them run (at most what is left to do). */
  private async manage(
    key: string,
    job: Job,
    pods: readonly Pod[],
    active: Pod[],
    succeeded: number,
    completedIdx: readonly number[],
    failedIdx: readonly number[],
    now: number,
  ): Promise<{ deleted: Pod[]; requeueMs?: number }> {
    const spec = job.spec!;
    const parallelism = Math.max(0, spec.parallelism ?? 1);
    const completions = spec.completions;
    const deleted: Pod[] = [];
    let extra: Pod[] = [];
    let keep = active;
    if (isIndexed(job)) {
      // One running pod per index, and none for an index that is done or out of range.
      const done = new Set([...completedIdx, ...failedIdx]);
      const seen = new Set<number>();
      keep = [];
      for (const p of active) {
        const ix = podIndex(p);
        if (ix === undefined || ix >= (completions ?? 1) || done.has(ix) || seen.has(ix)) extra.push(p);
        else {
          seen.add(ix);
          keep.push(p);
        }
      }
    }
    let want: number;
    if (isIndexed(job))
      want = Math.min(parallelism, (completions ?? 1) - completedIdx.length - failedIdx.length);
    else if (completions === undefined || completions === null)
      want = succeeded > 0 ? keep.length : parallelism;
    else want = Math.min(parallelism, completions - succeeded);
    want = Math.max(0, want);
    if (keep.length > want) extra = [...extra, ...podsToDelete(keep, keep.length - want)];
    if (extra.length > 0) {
      deleted.push(...(await this.podControl.deletePods(key, job, extra.slice(0, this.burst))));
      return { deleted };
    }
    // With podReplacementPolicy Failed (a podFailurePolicy implies it) a pod
    // being deleted still holds its place until it has really ended.
    const terminating = onlyReplaceFailedPods(job)
      ? pods.filter((p) => !isPodTerminal(p) && p.metadata?.deletionTimestamp)
      : [];
    const missing = Math.min(want - keep.length - terminating.length, this.burst);
    if (missing <= 0) return { deleted };
    const templates: Pod[] = [];
    let requeueMs: number | undefined;
    if (isIndexed(job)) {
      const taken = new Set([
        ...completedIdx,
        ...failedIdx,
        ...[...keep, ...terminating].map((p) => podIndex(p) ?? -1),
      ]);
      const perIndex = spec.backoffLimitPerIndex !== undefined;
      // With backoffLimitPerIndex each index waits out its own failures; otherwise the Job's.
      const jobWait = perIndex ? 0 : remainingBackoffMs(backoffFromPods(job, pods, now), now);
      if (jobWait > 0) return { deleted, requeueMs: jobWait };
      for (const ix of firstPendingIndexes(completions ?? 1, completions ?? 1, taken)) {
        if (templates.length >= missing) break;
        const ofIndex = pods.filter((p) => podIndex(p) === ix);
        const wait = perIndex ? remainingBackoffMs(backoffFromPods(job, ofIndex, now), now) : 0;
        if (wait > 0) requeueMs = Math.min(requeueMs ?? wait, wait);
        else templates.push(podForJob(job, ix, indexFailures(ofIndex, ix)));
      }
    } else {
      const wait = remainingBackoffMs(backoffFromPods(job, pods, now), now);
      if (wait > 0) return { deleted, requeueMs: wait };
      for (let i = 0; i < missing; i++) templates.push(podForJob(job));
    }
    if (templates.length === 0) return { deleted, requeueMs };
    await this.podControl.createPods(key, job, templates);
    return { deleted, requeueMs };
  }

  // ---- the Job's status ----

  /** The cached Job, or this controller's own newer write of it. */
  private freshest(cached: Job): Job {
    const uid = cached.metadata?.uid;
    return (
      this.jobWrites.view([cached], cached.metadata?.namespace).find((j) => j.metadata?.uid === uid) ?? cached
    );
  }

  private async writeStatus(job: Job, status: JobStatus): Promise<JobStatus> {
    if (canonical(job.status) === canonical(status)) return status;
    try {
      const written = await this.cluster.update(resources.jobs, { ...job, status }, 'status');
      this.jobWrites.wrote(written);
      // Later writes in this sync build on this one.
      job.metadata = written.metadata;
      job.status = written.status;
      return status;
    } catch (err) {
      if (isNotFound(err)) return status;
      throw err;
    }
  }
}
