// The TTL-after-finished controller (Kubernetes' ttlafterfinished): a Job with
// spec.ttlSecondsAfterFinished is deleted that many seconds after it finished
// (its Complete or Failed condition's time), in the foreground, so its pods go
// before it does. It looks again at the expiry, and asks the apiserver for the
// Job before deleting: the TTL may have changed since the cache saw it.
import { isConflict, isNotFound, type Job } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from './cluster.js';
import type { Controller } from './controller.js';
import { jobFinishTime } from './job/conditions.js';
import { timeOf } from './objects.js';

export interface TTLAfterFinishedOptions {
  now?: () => number;
  log?: Logger;
}

/** Milliseconds until the Job expires (≤ 0: expired); undefined when it has no TTL or has not finished. */
export function timeLeftMs(job: Job, now: number): number | undefined {
  const ttl = job.spec?.ttlSecondsAfterFinished;
  if (ttl === undefined || ttl === null || job.metadata?.deletionTimestamp) return undefined;
  const finished = jobFinishTime(job);
  if (!finished) return undefined;
  return timeOf(finished) + ttl * 1000 - now;
}

export class TTLAfterFinishedController implements Controller {
  readonly name = 'ttl-after-finished';
  readonly queue = new RateLimitingQueue<string>();
  private readonly jobs: Informer<Job>;
  private readonly now: () => number;
  private readonly log?: Logger;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: TTLAfterFinishedOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
    this.jobs = informers.forResource<Job>(resources.jobs);
    const enqueue = (j: Job) => {
      if (timeLeftMs(j, this.now()) !== undefined) this.queue.add(keyOf(j));
    };
    this.jobs.addEventHandler({ onAdd: enqueue, onUpdate: (_old, j) => enqueue(j) });
  }

  async reconcile(key: string): Promise<void> {
    const cached = this.jobs.store.getByKey(key);
    if (!cached) return;
    const left = timeLeftMs(cached, this.now());
    if (left === undefined) return;
    if (left > 0) {
      this.queue.addAfter(key, left);
      return;
    }
    const { namespace, name } = splitKey(key);
    let fresh: Job;
    try {
      fresh = await this.cluster.get<Job>(resources.jobs, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
    const freshLeft = timeLeftMs(fresh, this.now());
    if (freshLeft === undefined) return;
    if (freshLeft > 0) {
      this.queue.addAfter(key, freshLeft);
      return;
    }
    this.log?.info({ job: key }, 'cleaning up a finished Job past its ttlSecondsAfterFinished');
    try {
      await this.cluster.delete(resources.jobs, namespace, name, {
        propagationPolicy: 'Foreground',
        // The Job as checked, not a same-named successor or one whose TTL just changed.
        preconditions: { uid: fresh.metadata?.uid, resourceVersion: fresh.metadata?.resourceVersion },
      });
    } catch (err) {
      if (isNotFound(err)) return;
      if (isConflict(err)) {
        this.queue.add(key);
        return;
      }
      throw err;
    }
  }
}
