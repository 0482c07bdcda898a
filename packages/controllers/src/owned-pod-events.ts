// Pod events turned into owner keys, for the controllers that keep a set of
// pods per owner through expectations (ReplicaSet/ReplicationController and
// DaemonSet), as Kubernetes' addPod/updatePod/deletePod handlers do: a pod
// with a controller reference wakes that owner (and settles one expected
// create or delete); an orphan wakes every owner whose selector matches it,
// so one of them can adopt it. Job and StatefulSet track their pods
// differently and keep their own handlers.
import type { Informer, RateLimitingQueue } from '@kubit/client';
import { keyOf } from './cluster.js';
import type { Expectations } from './expectations.js';
import { compileSelector } from './labels.js';
import { controllerOf, isPodReady } from './objects.js';
import type { KubeObject, LabelSelector, OwnerReference, Pod } from './types.js';

export interface PodOwnerKind<T extends KubeObject> {
  kind: string;
  apiVersion: string;
  /** The owners, from their informer's cache. */
  owners: Informer<T>;
  selector(owner: T): LabelSelector | undefined;
  /** Seconds a ready pod waits before it counts as available (spec.minReadySeconds). */
  minReadySeconds(owner: T): number;
}

export class OwnedPodEvents<T extends KubeObject> {
  constructor(
    private readonly owner: PodOwnerKind<T>,
    private readonly queue: RateLimitingQueue<string>,
    private readonly expectations: Expectations,
  ) {}

  /** Handlers for the pod informer. */
  handlers(): { onAdd(p: Pod): void; onUpdate(old: Pod, p: Pod): void; onDelete(p: Pod): void } {
    return {
      onAdd: (p) => this.podAdded(p),
      onUpdate: (old, p) => this.podUpdated(old, p),
      onDelete: (p) => this.podDeleted(p),
    };
  }

  /** The key of the live owner an object's controller reference names (same uid), if any. */
  ownerKey(o: KubeObject, ref: OwnerReference | undefined = controllerOf(o)): string | undefined {
    if (ref?.kind !== this.owner.kind || ref.apiVersion !== this.owner.apiVersion) return undefined;
    const key = `${o.metadata?.namespace}/${ref.name}`;
    const found = this.owner.owners.store.getByKey(key);
    return found && found.metadata?.uid === ref.uid ? key : undefined;
  }

  private enqueueMatching(p: Pod): void {
    for (const o of this.owner.owners.store.listInNamespace(p.metadata?.namespace ?? '')) {
      if (compileSelector(this.owner.selector(o))(p.metadata?.labels)) this.queue.add(keyOf(o));
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
    if (!key) return;
    this.expectations.creationObserved(key);
    this.queue.add(key);
  }

  private podUpdated(old: Pod, p: Pod): void {
    if (p.metadata?.deletionTimestamp && !old.metadata?.deletionTimestamp) {
      // A graceful delete: the pod is as good as gone for counting purposes.
      const key = this.ownerKey(p);
      if (key) this.expectations.deletionObserved(key, keyOf(p));
    }
    const oldRef = controllerOf(old);
    const ref = controllerOf(p);
    if (oldRef && oldRef.uid !== ref?.uid) {
      const k = this.ownerKey(old, oldRef);
      if (k) this.queue.add(k);
    }
    if (ref) {
      const key = this.ownerKey(p, ref);
      if (!key) return;
      this.queue.add(key);
      const found = this.owner.owners.store.getByKey(key);
      const minReady = found ? this.owner.minReadySeconds(found) : 0;
      // Availability changes with time, not with an event: look again then.
      if (minReady > 0 && !isPodReady(old) && isPodReady(p)) this.queue.addAfter(key, minReady * 1000 + 100);
      return;
    }
    const labelsChanged = JSON.stringify(old.metadata?.labels) !== JSON.stringify(p.metadata?.labels);
    if (labelsChanged || oldRef) this.enqueueMatching(p);
  }

  private podDeleted(p: Pod): void {
    const key = this.ownerKey(p);
    if (!key) return;
    this.expectations.deletionObserved(key, keyOf(p));
    this.queue.add(key);
  }
}
