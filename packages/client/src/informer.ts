// An informer keeps a local, indexed copy of one resource up to date the way
// client-go's does: list, then watch from the list's resourceVersion, resume
// each new watch from the last version seen (bookmarks included), relist when
// the server says 410 Expired/Gone, and back off on stream errors. A resource
// the server does not serve yet (404 on the list) is listed again with backoff
// until it appears, reported once per outage. Handlers see adds, updates and
// deletes; a periodic resync re-delivers every object as an update so
// controllers can re-check the world.

import { isExpiredOrGone, isNotFound, StatusError } from '@kubit/api';
import type { KubeClient } from './client.js';
import type { ResourceRef } from './resources.js';
import { backoff, sleep } from './retry.js';
import { IndexedStore, type IndexFunc } from './store.js';
import { type KubeObject, objectKey, type WatchEvent } from './types.js';

export interface EventHandlers<T> {
  onAdd?: (obj: T, isInInitialList: boolean) => void;
  /** `oldObj === newObj` content-wise on a resync. */
  onUpdate?: (oldObj: T, newObj: T) => void;
  /** `obj` is the last state known; `finalStateUnknown` when the delete was only seen through a relist. */
  onDelete?: (obj: T, finalStateUnknown: boolean) => void;
}

export interface InformerOptions<T> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Re-deliver every object as an update this often (0: never). */
  resyncPeriodMs?: number;
  indexers?: Record<string, IndexFunc<T>>;
  /** List page size (default 500). */
  pageSize?: number;
  /** Longest a single watch request stays open before it is renewed (default 5–10 min, randomised). */
  watchTimeoutSeconds?: number;
  /** Backoff after a failed list/watch. */
  backoff?: { baseDelayMs: number; maxDelayMs: number };
  /** Told about list/watch failures (they are retried regardless). */
  onError?: (err: unknown) => void;
  /**
   * List the first time with resourceVersion=0, as client-go does: the apiserver
   * answers from its watch cache (any recent state, in one response) instead of
   * reading every page from the store. Relists after 410 Gone always read the
   * latest state. Default true.
   */
  initialListFromCache?: boolean;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly store: IndexedStore<T>;
  private readonly handlers: EventHandlers<T>[] = [];
  private readonly controller = new AbortController();
  private started = false;
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private lastResourceVersion = '';
  private running: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private relists = 0;

  constructor(
    private readonly client: KubeClient,
    readonly resource: ResourceRef,
    private readonly opts: InformerOptions<T> = {},
  ) {
    this.store = new IndexedStore<T>(opts.indexers);
  }

  /** Registers handlers; if the informer already has objects, each is delivered as an add. */
  addEventHandler(h: EventHandlers<T>): void {
    this.handlers.push(h);
    if (this.synced) for (const obj of this.store.list()) this.safe(() => h.onAdd?.(obj, true));
  }

  addIndexers(indexers: Record<string, IndexFunc<T>>): void {
    this.store.addIndexers(indexers);
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** The resourceVersion the informer's view corresponds to. */
  get resourceVersion(): string {
    return this.lastResourceVersion;
  }

  /** How many times the informer listed (1 after start; more after 410s). */
  get listCount(): number {
    return this.relists;
  }

  /** Resolves once the first list has been delivered; rejects if `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal?.reason ?? new Error('aborted waiting for cache sync'));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.running = this.runLoop();
    const period = this.opts.resyncPeriodMs ?? 0;
    if (period > 0) {
      this.resyncTimer = setInterval(() => this.resync(), period);
      this.resyncTimer.unref();
    }
  }

  /** Stops listing/watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.controller.abort();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.running;
  }

  private safe(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.opts.onError?.(e);
    }
  }

  private resync(): void {
    if (!this.synced) return;
    for (const obj of this.store.list())
      for (const h of this.handlers) this.safe(() => h.onUpdate?.(obj, obj));
  }

  private async runLoop(): Promise<void> {
    const signal = this.controller.signal;
    const policy = this.opts.backoff ?? { baseDelayMs: 200, maxDelayMs: 30_000 };
    let failures = 0;
    let needList = true;
    let notServedReported = false;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.listAndReplace(signal);
          needList = false;
          notServedReported = false;
        }
        const began = Date.now();
        const progressed = await this.watchOnce(signal);
        if (progressed) failures = 0;
        else if (Date.now() - began < 1000) await sleep(backoff(failures++, policy), signal);
      } catch (e) {
        if (signal.aborted) break;
        if (isExpiredOrGone(e)) {
          // Our resourceVersion is gone from the server's history: start over.
          needList = true;
          continue;
        }
        if (needList && isNotFound(e)) {
          // The resource is not served (yet): a group whose definition comes
          // later, or a version the apiserver starts serving after us. Keep
          // listing with backoff until it appears, and say so once per outage
          // rather than at every attempt.
          if (!notServedReported) this.opts.onError?.(e);
          notServedReported = true;
        } else {
          this.opts.onError?.(e);
        }
        try {
          await sleep(backoff(failures++, policy), signal);
        } catch {
          break;
        }
      }
    }
  }

  private async listAndReplace(signal: AbortSignal): Promise<void> {
    const fromCache = this.relists === 0 && (this.opts.initialListFromCache ?? true);
    const list = await this.client.listAll<T>(this.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      limit: this.opts.pageSize ?? 500,
      resourceVersion: fromCache ? '0' : undefined,
      signal,
    });
    if (signal.aborted) return;
    this.relists++;
    // The list's items are fresh from JSON.parse and ours: fill in their kind in place.
    const items = list.items;
    for (const o of items) this.setKind(o);
    const previous = new Map(this.store.listKeys().map((k) => [k, this.store.getByKey(k)!]));
    const removed = this.store.replace(items);
    this.lastResourceVersion = list.metadata?.resourceVersion ?? '';
    const initial = !this.synced;
    for (const obj of items) {
      const old = previous.get(objectKey(obj));
      for (const h of this.handlers) {
        if (old) this.safe(() => h.onUpdate?.(old, obj));
        else this.safe(() => h.onAdd?.(obj, initial));
      }
    }
    for (const obj of removed) for (const h of this.handlers) this.safe(() => h.onDelete?.(obj, true));
    if (!this.synced) {
      this.synced = true;
      const waiters = this.syncWaiters;
      this.syncWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** List items come without kind/apiVersion; fill them in so handlers can rely on them. */
  private setKind(obj: T): T {
    if (obj.kind || !this.resource.kind) return obj;
    obj.kind = this.resource.kind;
    obj.apiVersion = this.resource.group
      ? `${this.resource.group}/${this.resource.version}`
      : this.resource.version;
    return obj;
  }

  /** One watch request; returns whether any event arrived. Throws on stream failure. */
  private async watchOnce(signal: AbortSignal): Promise<boolean> {
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
    const watch = this.client.watch<T>(this.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      resourceVersion: this.lastResourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
      signal,
    });
    let progressed = false;
    for await (const ev of watch) {
      progressed = true;
      this.apply(ev);
    }
    return progressed;
  }

  private apply(ev: WatchEvent<T>): void {
    if (ev.type === 'ERROR') {
      const status = ev.object as unknown as StatusError['status'];
      throw StatusError.fromStatus({
        ...status,
        kind: 'Status',
        apiVersion: 'v1',
        metadata: status.metadata ?? {},
      });
    }
    const rv = ev.object.metadata?.resourceVersion;
    if (ev.type === 'BOOKMARK') {
      if (rv) this.lastResourceVersion = rv;
      return;
    }
    const obj = this.setKind(ev.object);
    if (ev.type === 'ADDED' || ev.type === 'MODIFIED') {
      const old = this.store.set(obj);
      for (const h of this.handlers) {
        if (old) this.safe(() => h.onUpdate?.(old, obj));
        else this.safe(() => h.onAdd?.(obj, false));
      }
    } else if (ev.type === 'DELETED') {
      const old = this.store.delete(obj);
      for (const h of this.handlers) this.safe(() => h.onDelete?.(old ?? obj, false));
    }
    if (rv) this.lastResourceVersion = rv;
  }
}

/**
 * One informer per resource (and namespace/selector) for a whole process, so the
 * scheduler's and controllers' loops share a single list+watch.
 */
export class SharedInformerFactory {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private started = false;

  constructor(
    private readonly client: KubeClient,
    private readonly defaults: Pick<
      InformerOptions<KubeObject>,
      'namespace' | 'resyncPeriodMs' | 'onError'
    > = {},
  ) {}

  /** The shared informer for a resource; created (not started) on first use. */
  forResource<T extends KubeObject = KubeObject>(
    resource: ResourceRef,
    opts: Pick<
      InformerOptions<T>,
      'namespace' | 'labelSelector' | 'fieldSelector' | 'indexers' | 'resyncPeriodMs'
    > = {},
  ): Informer<T> {
    const namespace = opts.namespace ?? this.defaults.namespace;
    const key = [
      resource.group,
      resource.version,
      resource.resource,
      namespace ?? '',
      opts.labelSelector ?? '',
      opts.fieldSelector ?? '',
    ].join('|');
    let inf = this.informers.get(key) as Informer<T> | undefined;
    if (!inf) {
      inf = new Informer<T>(this.client, resource, {
        ...this.defaults,
        ...opts,
        namespace,
      } as InformerOptions<T>);
      this.informers.set(key, inf as unknown as Informer<KubeObject>);
      if (this.started) inf.start();
    } else if (opts.indexers) {
      // Indexers asked for by a later user are added to the shared store; a
      // name already there is kept (the first user's function wins).
      const store = inf.store;
      const missing = Object.fromEntries(Object.entries(opts.indexers).filter(([n]) => !store.hasIndex(n)));
      inf.addIndexers(missing);
    }
    return inf;
  }

  /** Stops and forgets every informer of a resource (one no longer served, a deleted CRD's). */
  async remove(resource: ResourceRef): Promise<void> {
    const prefix = `${resource.group}|${resource.version}|${resource.resource}|`;
    for (const [key, inf] of [...this.informers.entries()]) {
      if (!key.startsWith(prefix)) continue;
      this.informers.delete(key);
      await inf.stop();
    }
  }

  /** Starts every informer created so far and any created later. */
  start(): void {
    this.started = true;
    for (const inf of this.informers.values()) inf.start();
  }

  async waitForCacheSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}
