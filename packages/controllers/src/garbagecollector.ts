// The garbage collector: deletes objects whose owners are gone, and carries out
// the two deletion policies the apiserver records as finalizers on the owner:
//   foregroundDeletion: delete the dependents first; remove the finalizer (so the
//     owner goes) once no dependent with blockOwnerDeletion is left;
//   orphan: remove the owner's ownerReferences from its dependents, then the finalizer.
// Background deletion needs no finalizer: the owner goes at once and its
// dependents, now pointing at nothing, are collected here.
import { isConflict, isNotFound } from '@kubit/api';
import {
  apiVersionOf,
  type Informer,
  RateLimitingQueue,
  type ResourceRef,
  type SharedInformerFactory,
} from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from './cluster.js';
import type { Controller } from './controller.js';
import { ensureIndex } from './shared-informers.js';
import type { KubeObject, OwnerReference } from './types.js';

export const FINALIZER_FOREGROUND = 'foregroundDeletion';
export const FINALIZER_ORPHAN = 'orphan';
const OWNER_INDEX = 'ownerUID';

export interface GarbageCollectorOptions {
  /** Resources whose objects are owners or dependents. */
  resources: readonly ResourceRef[];
  /** Custom resources (CRDs') to watch too, asked for again every `rediscoverMs`. */
  discover?: () => Promise<readonly ResourceRef[]>;
  /** How often discovery is asked again (ms; default 10 s). */
  rediscoverMs?: number;
  log?: Logger;
}

interface Item {
  r: ResourceRef;
  obj: KubeObject;
}

const hasFinalizer = (o: KubeObject, f: string) => o.metadata?.finalizers?.includes(f) === true;

export class GarbageCollector implements Controller {
  readonly name = 'garbagecollector';
  readonly queue = new RateLimitingQueue<string>();
  private readonly informers = new Map<string, { r: ResourceRef; inf: Informer }>();
  /** The resources watched: the built-in ones, and custom ones added while running. */
  private readonly known: ResourceRef[] = [];

  constructor(
    private readonly cluster: Cluster,
    private readonly factory: SharedInformerFactory,
    private readonly opts: GarbageCollectorOptions,
  ) {
    for (const r of opts.resources) this.watch(r);
  }

  /** Watches one more resource for owners and dependents (a CRD's, found by discovery). */
  watch(r: ResourceRef): void {
    if (this.informers.has(resourceId(r))) return;
    const inf = this.factory.forResource(r);
    ensureIndex(inf, OWNER_INDEX, (o) => (o.metadata?.ownerReferences ?? []).map((ref) => ref.uid));
    this.informers.set(resourceId(r), { r, inf });
    this.known.push(r);
    inf.addEventHandler({
      onAdd: (o) => this.changed(r, o),
      onUpdate: (_old, o) => this.changed(r, o),
      onDelete: (o) => this.deleted(o),
    });
  }

  /** Stops watching a resource that is no longer served. */
  async unwatch(r: ResourceRef): Promise<void> {
    if (!this.informers.delete(resourceId(r))) return;
    const i = this.known.findIndex((k) => resourceId(k) === resourceId(r));
    if (i >= 0) this.known.splice(i, 1);
    await this.factory.remove(r);
  }

  private timer: NodeJS.Timeout | undefined;

  start(): void {
    if (!this.opts.discover || this.timer) return;
    const tick = () => {
      this.rediscover()
        .catch((err: unknown) => this.opts.log?.warn({ err }, 'discovery of custom resources failed'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.opts.rediscoverMs ?? 10_000).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Watches the custom resources discovery lists now, and stops watching those gone. */
  async rediscover(): Promise<void> {
    if (!this.opts.discover) return;
    const found = await this.opts.discover();
    const ids = new Set(found.map(resourceId));
    for (const r of found) this.watch(r);
    for (const r of this.customWatched()) if (!ids.has(resourceId(r))) await this.unwatch(r);
  }

  /** Custom resources watched now (those not in the options' list). */
  customWatched(): ResourceRef[] {
    const builtin = new Set(this.opts.resources.map(resourceId));
    return this.known.filter((r) => !builtin.has(resourceId(r)));
  }

  private enqueue(r: ResourceRef, o: KubeObject): void {
    this.queue.add(`${resourceId(r)}|${keyOf(o)}`);
  }

  private changed(r: ResourceRef, o: KubeObject): void {
    if (
      hasFinalizer(o, FINALIZER_FOREGROUND) ||
      hasFinalizer(o, FINALIZER_ORPHAN) ||
      o.metadata?.ownerReferences?.length
    ) {
      this.enqueue(r, o);
    }
    // A dependent changed: an owner waiting for its dependents may be free to go.
    if (o.metadata?.deletionTimestamp) this.wakeOwners(o);
  }

  private deleted(o: KubeObject): void {
    for (const d of this.dependentsOf(o.metadata?.uid ?? '')) this.enqueue(d.r, d.obj);
    this.wakeOwners(o);
  }

  private wakeOwners(o: KubeObject): void {
    for (const ref of o.metadata?.ownerReferences ?? []) {
      const owner = this.cachedOwner(o, ref);
      if (owner && hasFinalizer(owner.obj, FINALIZER_FOREGROUND)) this.enqueue(owner.r, owner.obj);
    }
  }

  private dependentsOf(uid: string): Item[] {
    const out: Item[] = [];
    if (!uid) return out;
    for (const { r, inf } of this.informers.values())
      for (const obj of inf.store.byIndex(OWNER_INDEX, uid)) out.push({ r, obj });
    return out;
  }

  private ownerResource(ref: OwnerReference): ResourceRef | undefined {
    return resourceForKind(ref.apiVersion, ref.kind, this.known);
  }

  private cachedOwner(dependent: KubeObject, ref: OwnerReference): Item | undefined {
    const r = this.ownerResource(ref);
    if (!r) return undefined;
    const key = r.namespaced ? `${dependent.metadata?.namespace}/${ref.name}` : ref.name;
    const obj = this.informers.get(resourceId(r))?.inf.store.getByKey(key);
    return obj && obj.metadata?.uid === ref.uid ? { r, obj } : undefined;
  }

  // ---- reconcile ----

  async reconcile(queueKey: string): Promise<void> {
    const bar = queueKey.indexOf('|');
    const entry = this.informers.get(queueKey.slice(0, bar));
    if (!entry) return;
    const obj = entry.inf.store.getByKey(queueKey.slice(bar + 1));
    if (!obj) return;
    const item = { r: entry.r, obj };
    if (obj.metadata?.deletionTimestamp) {
      if (hasFinalizer(obj, FINALIZER_ORPHAN)) return this.orphanDependents(item);
      if (hasFinalizer(obj, FINALIZER_FOREGROUND)) return this.deleteDependentsFirst(item);
    }
    if (obj.metadata?.ownerReferences?.length) await this.checkOwners(item);
  }

  /** orphan: strip the owner from every dependent, then let the owner go. */
  private async orphanDependents(owner: Item): Promise<void> {
    const uid = owner.obj.metadata?.uid ?? '';
    for (const d of this.dependentsOf(uid)) {
      await this.updateFresh(d, (o) => {
        const refs = o.metadata?.ownerReferences?.filter((ref) => ref.uid !== uid);
        o.metadata!.ownerReferences = refs?.length ? refs : undefined;
      });
    }
    await this.removeFinalizer(owner, FINALIZER_ORPHAN);
  }

  /** foregroundDeletion: delete dependents; remove the finalizer once none blocks. */
  private async deleteDependentsFirst(owner: Item): Promise<void> {
    const uid = owner.obj.metadata?.uid ?? '';
    let blocking = 0;
    for (const d of this.dependentsOf(uid)) {
      const ref = d.obj.metadata?.ownerReferences?.find((x) => x.uid === uid);
      if (ref?.blockOwnerDeletion) blocking++;
      if (d.obj.metadata?.deletionTimestamp) continue;
      // Only delete dependents with no other live owner.
      const others = (d.obj.metadata?.ownerReferences ?? []).filter((x) => x.uid !== uid);
      if (others.length > 0 && (await this.anyOwnerAlive(d.obj, others))) {
        await this.updateFresh(d, (o) => {
          o.metadata!.ownerReferences = o.metadata?.ownerReferences?.filter((x) => x.uid !== uid);
        });
        continue;
      }
      const policy =
        ref?.blockOwnerDeletion && this.dependentsOf(d.obj.metadata?.uid ?? '').length > 0
          ? 'Foreground'
          : 'Background';
      await this.deleteItem(d, policy);
    }
    if (blocking === 0) await this.removeFinalizer(owner, FINALIZER_FOREGROUND);
  }

  /** Deletes the object if every owner is gone (or is itself being deleted in the foreground). */
  private async checkOwners(item: Item): Promise<void> {
    const refs = item.obj.metadata?.ownerReferences ?? [];
    const dangling: OwnerReference[] = [];
    let waiting = 0;
    let solid = 0;
    for (const ref of refs) {
      const state = await this.ownerState(item.obj, ref);
      if (state === 'unknown') return; // an owner of a kind we do not know: never guess
      if (state === 'absent') dangling.push(ref);
      else if (state === 'waiting') waiting++;
      else solid++;
    }
    if (solid > 0) {
      if (dangling.length === 0) return;
      const gone = new Set(dangling.map((d) => d.uid));
      await this.updateFresh(item, (o) => {
        o.metadata!.ownerReferences = o.metadata?.ownerReferences?.filter((x) => !gone.has(x.uid));
      });
      return;
    }
    if (item.obj.metadata?.deletionTimestamp) return;
    const hasDependents = this.dependentsOf(item.obj.metadata?.uid ?? '').length > 0;
    const policy = waiting > 0 && hasDependents ? 'Foreground' : 'Background';
    this.opts.log?.info(
      { object: keyOf(item.obj), kind: item.r.kind, policy },
      'owner gone; deleting dependent',
    );
    await this.deleteItem(item, policy);
  }

  private async anyOwnerAlive(o: KubeObject, refs: OwnerReference[]): Promise<boolean> {
    for (const ref of refs) {
      const s = await this.ownerState(o, ref);
      if (s === 'solid' || s === 'unknown') return true;
    }
    return false;
  }

  /** solid: exists and is not being deleted foreground; waiting: deleting its dependents first. */
  private async ownerState(
    dependent: KubeObject,
    ref: OwnerReference,
  ): Promise<'solid' | 'waiting' | 'absent' | 'unknown'> {
    const r = this.ownerResource(ref);
    if (!r) return 'unknown';
    const ns = r.namespaced ? dependent.metadata?.namespace : undefined;
    let owner: KubeObject | undefined = this.cachedOwner(dependent, ref)?.obj;
    if (!owner) {
      // The cache may lag: ask the apiserver before deleting anything.
      try {
        owner = await this.cluster.get(r, ns, ref.name);
      } catch (err) {
        if (isNotFound(err)) return 'absent';
        throw err;
      }
      if (owner.metadata?.uid !== ref.uid) return 'absent';
    }
    if (owner.metadata?.deletionTimestamp && hasFinalizer(owner, FINALIZER_FOREGROUND)) return 'waiting';
    return 'solid';
  }

  private async deleteItem(item: Item, policy: 'Foreground' | 'Background'): Promise<void> {
    const { namespace, name } = splitKey(keyOf(item.obj));
    try {
      await this.cluster.delete(item.r, namespace, name, {
        propagationPolicy: policy,
        preconditions: { uid: item.obj.metadata?.uid },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }

  private async removeFinalizer(item: Item, finalizer: string): Promise<void> {
    await this.updateFresh(item, (o) => {
      const rest = o.metadata?.finalizers?.filter((f) => f !== finalizer);
      o.metadata!.finalizers = rest?.length ? rest : undefined;
    });
  }

  /** Applies a change to the latest version of the object, retrying once on conflict. */
  private async updateFresh(item: Item, change: (o: KubeObject) => void): Promise<void> {
    const { namespace, name } = splitKey(keyOf(item.obj));
    let current: KubeObject = structuredClone(item.obj);
    for (let attempt = 0; ; attempt++) {
      change(current);
      try {
        await this.cluster.update(item.r, current);
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= 2) throw err;
        current = await this.cluster.get(item.r, namespace, name);
        if (current.metadata?.uid !== item.obj.metadata?.uid) return;
      }
    }
  }
}

/** Finds the resource an ownerReference (apiVersion + kind) points at, among those watched. */
export function resourceForKind(
  apiVersion: string,
  kind: string,
  known: readonly ResourceRef[],
): ResourceRef | undefined {
  return known.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
}

function resourceId(r: ResourceRef): string {
  return `${apiVersionOf(r)}/${r.resource}`;
}
