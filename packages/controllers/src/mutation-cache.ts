// A controller's own writes, seen before its informer delivers them (as
// client-go's MutationCache). An informer's cache can lag the controller's own
// creates, updates and deletes by a few events; a controller that syncs again
// in that window would plan with objects as they were before it changed them
// (a Deployment that cannot see the ReplicaSet it just created scales another
// one up past maxSurge). Reads go through view(), which puts each object this
// controller wrote in place of an older cached copy, until the cache catches up.
import type { KubeObject } from './types.js';

const DEFAULT_TTL_MS = 60_000;

interface Written<T> {
  /** What the apiserver returned from the write; undefined for a delete. */
  obj: T | undefined;
  namespace: string | undefined;
  resourceVersion: string | undefined;
  at: number;
}

export class MutationCache<T extends KubeObject> {
  /** By uid: names can be reused after a delete, uids cannot. */
  private readonly writes = new Map<string, Written<T>>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = DEFAULT_TTL_MS,
  ) {}

  /** Records an object as a create or update returned it; returns it. */
  wrote<O extends T | undefined>(obj: O): O {
    const uid = obj?.metadata?.uid;
    if (obj && uid) this.record(uid, obj, obj.metadata?.namespace, obj.metadata?.resourceVersion);
    return obj;
  }

  /** Records a delete: the object is gone even while the cache still shows it. */
  deleted(obj: T): void {
    const uid = obj.metadata?.uid;
    if (uid) this.record(uid, undefined, obj.metadata?.namespace, undefined);
  }

  /**
   * The cached objects of a namespace with this controller's writes applied:
   * newer written copies replace cached ones, deleted ones are left out, and
   * created ones the cache has not shown yet are added. A write the cache has
   * caught up with (or that expired) is forgotten.
   */
  view(cached: readonly T[], namespace: string | undefined): T[] {
    const out: T[] = [];
    const seen = new Set<string>();
    for (const o of cached) {
      const uid = o.metadata?.uid ?? '';
      seen.add(uid);
      const w = this.current(uid);
      if (w && w.obj === undefined) continue; // deleted: the cache has yet to drop it
      if (w?.obj && newer(w.resourceVersion, o.metadata?.resourceVersion)) {
        out.push(w.obj);
        continue;
      }
      this.writes.delete(uid);
      out.push(o);
    }
    for (const [uid, w] of this.writes) {
      if (w.namespace !== namespace || seen.has(uid) || !this.current(uid)) continue;
      if (w.obj)
        out.push(w.obj); // created: the cache has yet to show it
      else this.writes.delete(uid); // deleted, and the cache dropped it too
    }
    return out;
  }

  /** The write recorded for a uid, unless it is too old to trust (then forgotten). */
  private current(uid: string): Written<T> | undefined {
    const w = this.writes.get(uid);
    if (w && this.now() - w.at > this.ttlMs) {
      this.writes.delete(uid);
      return undefined;
    }
    return w;
  }

  private record(uid: string, obj: T | undefined, namespace: string | undefined, rv: string | undefined) {
    // Writes to namespaces nobody views again must not pile up.
    for (const old of this.writes.keys()) this.current(old);
    this.writes.set(uid, {
      obj: obj && structuredClone(obj),
      namespace,
      resourceVersion: rv,
      at: this.now(),
    });
  }
}

/**
 * Whether a written copy is newer than the cached one. Kubit's resource
 * versions are the store's revisions, so they order as numbers (client-go's
 * MutationCache compares etcd's the same way); anything else counts as not
 * newer, and the cache wins.
 */
function newer(written: string | undefined, cached: string | undefined): boolean {
  const w = Number(written);
  const c = Number(cached);
  return Number.isSafeInteger(w) && Number.isSafeInteger(c) && w > c;
}
