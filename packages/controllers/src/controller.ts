// What every controller is: informers that feed keys into a work queue, and a
// reconcile(key) that makes the world match the object named by the key.

import type { RateLimitingQueue } from '@kubit/client';
import type { Logger } from '@kubit/daemon';

export interface Controller {
  readonly name: string;
  readonly queue: RateLimitingQueue<string>;
  /** Brings the object named by `key` to its desired state. Throwing retries with backoff. */
  reconcile(key: string): Promise<void>;
  /** Periodic work outside the queue (node monitoring). */
  start?(): void;
  stop?(): void;
}

/**
 * Thrown by a reconcile that cannot act yet for an expected reason (its cache
 * has not caught up with its own writes): retried with backoff like any error,
 * but not logged as a failure.
 */
export class RetryLater extends Error {}

/** Runs `workers` loops that take keys from the queue and reconcile them. */
export async function runWorkers(c: Controller, workers: number, log: Logger): Promise<void> {
  const loop = async () => {
    for (;;) {
      const key = await c.queue.get();
      if (key === undefined) return;
      await processOne(c, key, log);
    }
  };
  await Promise.all(Array.from({ length: workers }, loop));
}

export async function processOne(c: Controller, key: string, log?: Logger): Promise<void> {
  try {
    await c.reconcile(key);
    c.queue.forget(key);
  } catch (err) {
    if (err instanceof RetryLater)
      log?.debug({ controller: c.name, key, why: err.message }, 'retrying later');
    else log?.warn({ err, controller: c.name, key }, 'reconcile failed; retrying');
    c.queue.addRateLimited(key);
  } finally {
    c.queue.done(key);
  }
}
