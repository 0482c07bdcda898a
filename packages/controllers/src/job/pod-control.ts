// What the Job controller does to pods: creates them (slow start), deletes
// them (guarded on their uid), claims them (adopting orphans, releasing pods
// that stopped matching) and removes their tracking finalizer, remembering
// which removals its cache has yet to show.
import { isConflict, isNotFound, type Job, type Pod } from '@kubit/api';
import { resources } from '@kubit/client';
import { type Cluster, keyOf } from '../cluster.js';
import { ControllerRefManager } from '../controller-ref.js';
import type { EventSink } from '../events.js';
import type { Expectations } from '../expectations.js';
import { compileSelector } from '../labels.js';
import { hasTrackingFinalizer, JOB_TRACKING_FINALIZER, jobSelector } from './pods.js';

export class JobPodControl {
  /** Per Job key: uids of pods whose finalizer it removed but whose update the cache has not shown. */
  private readonly finalizerRemovals = new Map<string, Set<string>>();

  constructor(
    private readonly cluster: Cluster,
    private readonly events: EventSink,
    private readonly expectations: Expectations,
  ) {}

  /** Uids whose finalizer removal the cache has yet to show. */
  pendingRemovals(key: string): ReadonlySet<string> {
    return this.finalizerRemovals.get(key) ?? new Set();
  }

  /** The cache showed the pod without its finalizer (or gone). */
  removalObserved(key: string, uid: string): void {
    this.finalizerRemovals.get(key)?.delete(uid);
  }

  forget(key: string): void {
    this.finalizerRemovals.delete(key);
  }

  async removeFinalizers(key: string, pods: readonly Pod[]): Promise<void> {
    if (pods.length === 0) return;
    let set = this.finalizerRemovals.get(key);
    if (!set) {
      set = new Set();
      this.finalizerRemovals.set(key, set);
    }
    const removals = set;
    const results = await Promise.allSettled(
      pods.map(async (p) => {
        await this.removeFinalizer(p);
        removals.add(p.metadata?.uid ?? '');
      }),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Removes the tracking finalizer from one pod (a gone pod has none). */
  async removeFinalizer(p: Pod): Promise<void> {
    let current = p;
    for (let attempt = 0; ; attempt++) {
      if (!hasTrackingFinalizer(current)) return;
      const next = structuredClone(current);
      next.metadata!.finalizers = current.metadata?.finalizers?.filter((f) => f !== JOB_TRACKING_FINALIZER);
      if (next.metadata!.finalizers?.length === 0) delete next.metadata!.finalizers;
      try {
        await this.cluster.update(resources.pods, next);
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= 3) throw err;
      }
      try {
        current = await this.cluster.get<Pod>(resources.pods, p.metadata?.namespace, p.metadata?.name ?? '');
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      if (current.metadata?.uid !== p.metadata?.uid) return;
    }
  }

  /** Creates pods in batches of 1, 2, 4, ... so a bad template fails once, not `parallelism` times. */
  async createPods(key: string, job: Job, templates: Pod[]): Promise<void> {
    this.expectations.expectCreations(key, templates.length);
    let next = 0;
    let batch = 1;
    while (next < templates.length) {
      const chunk = templates.slice(next, next + batch);
      next += chunk.length;
      const results = await Promise.allSettled(
        chunk.map((t) => this.cluster.create(resources.pods, job.metadata?.namespace, t)),
      );
      const failures: PromiseRejectedResult[] = [];
      for (const r of results) {
        if (r.status === 'fulfilled')
          this.events.event(job, 'Normal', 'SuccessfulCreate', `Created pod: ${r.value.metadata?.name}`);
        else {
          failures.push(r);
          this.events.event(job, 'Warning', 'FailedCreate', `Error creating: ${(r.reason as Error).message}`);
        }
      }
      if (failures.length > 0) {
        this.expectations.lowerCreations(key, failures.length + templates.length - next);
        throw failures[0].reason;
      }
      batch *= 2;
    }
  }

  /** Deletes pods (guarded on their uid); returns those deleted. */
  async deletePods(key: string, job: Job, victims: Pod[]): Promise<Pod[]> {
    this.expectations.expectDeletions(
      key,
      victims.map((p) => keyOf(p)),
    );
    const results = await Promise.allSettled(
      victims.map((p) =>
        this.cluster.delete(resources.pods, p.metadata?.namespace, p.metadata?.name ?? '', {
          preconditions: { uid: p.metadata?.uid },
        }),
      ),
    );
    const deleted: Pod[] = [];
    let firstError: unknown;
    results.forEach((r, i) => {
      const p = victims[i];
      if (r.status === 'fulfilled') {
        deleted.push(p);
        this.events.event(job, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata?.name}`);
        return;
      }
      this.expectations.deletionObserved(key, keyOf(p));
      if (isNotFound(r.reason)) return;
      this.events.event(job, 'Warning', 'FailedDelete', `Error deleting: ${(r.reason as Error).message}`);
      firstError ??= r.reason;
    });
    if (firstError !== undefined) throw firstError;
    return deleted;
  }

  /** Adopts matching orphans, releases owned pods that stopped matching; returns the pods it owns. */
  claimPods(job: Job, pods: readonly Pod[]): Promise<Pod[]> {
    const matches = compileSelector(jobSelector(job));
    const refs = new ControllerRefManager(this.cluster, job, {
      resource: resources.jobs,
      kind: 'Job',
      apiVersion: 'batch/v1',
    });
    return refs.claim(resources.pods, pods, (p) => matches(p.metadata?.labels), {
      // A pod that stopped matching is no longer the Job's: it loses the finalizer too.
      onRelease: (next) => {
        const finalizers = next.metadata?.finalizers?.filter((f) => f !== JOB_TRACKING_FINALIZER);
        next.metadata = { ...next.metadata, finalizers: finalizers?.length ? finalizers : undefined };
      },
    });
  }
}
