// Two things the controllers need from @kubit/client's shared informers and
// work queue that the client does not offer directly. First, several
// controllers ask for the same secondary index on a shared informer, and
// IndexedStore.addIndexers throws on a second registration of a name, so each
// controller ensures its index instead. Second, an unref()'d delayed requeue.
import type { IndexFunc, Informer, KubeObject, RateLimitingQueue } from '@kubit/client';

/** Adds the index to the informer's store unless an index of that name is there already. */
export function ensureIndex<T extends KubeObject>(inf: Informer<T>, name: string, fn: IndexFunc<T>): void {
  try {
    inf.store.indexValues(name);
  } catch {
    inf.addIndexers({ [name]: fn });
  }
}

/**
 * Adds `key` to the queue after `ms`. RateLimitingQueue.addAfter holds a timer
 * that is not unref()'d, so a long delay (a progress deadline of 600 s, a node
 * grace period) would keep a process alive that has nothing else to do; this
 * timer does not. The queue still de-duplicates the key when it fires.
 */
export function requeueAfter(queue: RateLimitingQueue<string>, key: string, ms: number): void {
  if (ms <= 0) {
    queue.add(key);
    return;
  }
  setTimeout(() => queue.add(key), ms).unref();
}
