// A shared informer: list, then watch from the list's resourceVersion, resume a
// broken watch from the last event seen, relist on 410 Gone. Keeps a cache with
// indexes and tells handlers about adds, updates and deletes. One informer per
// resource is shared by every controller (InformerFactory).
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, type WatchHandle } from './cluster.js';
import type { ResourceRef } from './resources.js';
import type { KObject } from './types.js';

export interface Handlers<T> {
  add?(obj: T): void;
  update?(old: T, obj: T): void;
  delete?(obj: T): void;
}

export type IndexFunc<T> = (obj: T) => string[];

export interface InformerOptions {
  /** Delay before re-watching after a watch broke (ms). */
  retryMs?: number;
  log?: Logger;
}

export class Informer<T extends KObject = KObject> {
  private readonly items = new Map<string, T>();
  private readonly handlers: Handlers<T>[] = [];
  private readonly indexers = new Map<string, IndexFunc<T>>();
  private readonly indexes = new Map<string, Map<string, Set<string>>>();
  private watchHandle: WatchHandle | undefined;
  private lastRV = '';
  private synced = false;
  private stopped = false;
  private started = false;
  private syncWaiters: (() => void)[] = [];
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly cluster: Cluster,
    readonly resource: ResourceRef,
    private readonly opts: InformerOptions = {},
  ) {}

  addHandlers(h: Handlers<T>): void {
    this.handlers.push(h);
    // Late joiners see what is already cached, as client-go does.
    if (this.synced) for (const o of this.items.values()) h.add?.(o);
  }

  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexers.has(name)) return;
    this.indexers.set(name, fn);
    const idx = new Map<string, Set<string>>();
    this.indexes.set(name, idx);
    for (const [k, o] of this.items) for (const v of fn(o)) addTo(idx, v, k);
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  byIndex(name: string, value: string): T[] {
    const keys = this.indexes.get(name)?.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.items.get(k)!).filter((o) => o !== undefined);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.relist();
  }

  stop(): void {
    this.stopped = true;
    this.watchHandle?.stop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  private async relist(): Promise<void> {
    if (this.stopped) return;
    try {
      const { items, resourceVersion } = await this.cluster.list<T>(this.resource);
      if (this.stopped) return;
      this.replace(items);
      this.lastRV = resourceVersion;
      this.markSynced();
      this.startWatch();
    } catch (err) {
      if ((err as { code?: unknown })?.code === 404) {
        // The apiserver does not serve this resource (yet): an empty, synced cache,
        // so controllers that need other resources can still start.
        if (!this.synced) {
          this.opts.log?.warn({ resource: this.resource.resource }, 'resource not served; will look again');
          this.markSynced();
        }
        this.retry(() => this.relist(), 30_000);
        return;
      }
      this.opts.log?.warn({ err, resource: this.resource.resource }, 'list failed; retrying');
      this.retry(() => this.relist());
    }
  }

  private startWatch(): void {
    if (this.stopped) return;
    this.watchHandle = this.cluster.watch(this.resource, {
      resourceVersion: this.lastRV,
      onEvent: (ev) => {
        const rv = ev.object.metadata?.resourceVersion;
        if (rv) this.lastRV = rv;
        if (ev.type === 'ADDED' || ev.type === 'MODIFIED') this.upsert(ev.object as T);
        else if (ev.type === 'DELETED') this.remove(keyOf(ev.object));
      },
      onClose: (err) => {
        if (this.stopped) return;
        const code = (err as { code?: unknown } | undefined)?.code;
        if (code === 410) {
          this.opts.log?.info({ resource: this.resource.resource }, 'watch expired (410); relisting');
          void this.relist();
        } else if (err) {
          this.opts.log?.warn({ err, resource: this.resource.resource }, 'watch broke; resuming');
          this.retry(() => this.startWatch());
        } else {
          // The server ended the watch (its timeout): carry on from the last event.
          this.retry(() => this.startWatch(), 0);
        }
      },
    });
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private retry(f: () => unknown, ms = this.opts.retryMs ?? 1000): void {
    if (this.stopped) return;
    this.retryTimer = setTimeout(f, ms);
    this.retryTimer.unref();
  }

  /** Makes the cache equal a fresh list, telling handlers what changed meanwhile. */
  private replace(items: T[]): void {
    const seen = new Set<string>();
    for (const o of items) {
      seen.add(keyOf(o));
      this.upsert(o);
    }
    for (const k of [...this.items.keys()]) if (!seen.has(k)) this.remove(k);
  }

  private upsert(o: T): void {
    const k = keyOf(o);
    const old = this.items.get(k);
    if (old?.metadata?.resourceVersion === o.metadata?.resourceVersion && old) return;
    if (old) this.unindex(k, old);
    this.items.set(k, o);
    this.index(k, o);
    for (const h of this.handlers) {
      if (old) h.update?.(old, o);
      else h.add?.(o);
    }
  }

  private remove(k: string): void {
    const old = this.items.get(k);
    if (!old) return;
    this.items.delete(k);
    this.unindex(k, old);
    for (const h of this.handlers) h.delete?.(old);
  }

  private index(k: string, o: T): void {
    for (const [name, fn] of this.indexers) for (const v of fn(o)) addTo(this.indexes.get(name)!, v, k);
  }

  private unindex(k: string, o: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const v of fn(o)) {
        const s = idx.get(v);
        s?.delete(k);
        if (s?.size === 0) idx.delete(v);
      }
    }
  }
}

function addTo(idx: Map<string, Set<string>>, v: string, k: string): void {
  const s = idx.get(v);
  if (s) s.add(k);
  else idx.set(v, new Set([k]));
}

/** One informer per resource, shared by every controller that asks for it. */
export class InformerFactory {
  private readonly informers = new Map<ResourceRef, Informer>();

  constructor(
    private readonly cluster: Cluster,
    private readonly opts: InformerOptions = {},
  ) {}

  for<T extends KObject>(r: ResourceRef): Informer<T> {
    let inf = this.informers.get(r);
    if (!inf) {
      inf = new Informer(this.cluster, r, this.opts);
      this.informers.set(r, inf);
    }
    return inf as unknown as Informer<T>;
  }

  start(): void {
    for (const i of this.informers.values()) i.start();
  }

  async waitForSync(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
  }

  stop(): void {
    for (const i of this.informers.values()) i.stop();
  }
}

export const NAMESPACE_INDEX = 'namespace';
export const byNamespace = (o: KObject): string[] => [o.metadata?.namespace ?? ''];
