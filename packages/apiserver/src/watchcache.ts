// The watch cache: ONE store watch per resource, the current objects and a
// window of recent events in memory, fanned out to every HTTP watcher. A
// watcher that falls too far behind is closed, so a slow client costs a
// bounded amount of memory and never slows the others.

import type { Logger } from '@kubit/daemon';
import type { Watcher } from 'etcd3';
import { decodeKv, type KObject, type KvLike, type Store, setResourceVersion } from './storage.js';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface CacheEvent {
  type: EventType;
  key: string;
  obj: KObject;
  /** The object before this event (undefined for ADDED). */
  prev?: KObject;
  rev: number;
}

export interface WatchEvent {
  type: EventType | 'BOOKMARK' | 'ERROR';
  object: KObject;
}

/** Decides whether an object is visible to a watcher (namespace + selectors). */
export type Filter = (obj: KObject) => boolean;

export class Subscription {
  private queue: WatchEvent[] = [];
  private wake: (() => void) | undefined;
  closed = false;
  /** Why the subscription ended, when the cache ended it. */
  reason = '';
  private resolveDone: () => void = () => undefined;
  /** Resolves when the subscription closes. */
  readonly done = new Promise<void>((res) => {
    this.resolveDone = res;
  });

  constructor(
    private readonly cache: WatchCache,
    readonly filter: Filter,
    readonly fromRev: number,
    private readonly maxQueue: number,
  ) {}

  /** Translates one store event into what this watcher sees, if anything. */
  offer(ev: CacheEvent): void {
    if (this.closed || ev.rev <= this.fromRev) return;
    const now = this.filter(ev.obj);
    const before = ev.prev ? this.filter(ev.prev) : false;
    let type: EventType;
    if (ev.type === 'DELETED') {
      if (!before) return;
      type = 'DELETED';
    } else if (now && before) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    else return;
    this.push({ type, object: ev.obj });
  }

  /** The newest revision this watcher has been told about (never goes backwards). */
  lastRev = 0;

  push(ev: WatchEvent): void {
    if (this.closed) return;
    const rv = Number(ev.object.metadata?.resourceVersion ?? 0);
    if (rv > this.lastRev) this.lastRev = rv;
    if (this.queue.length >= this.maxQueue) {
      this.close('watcher fell too far behind');
      return;
    }
    this.queue.push(ev);
    this.wake?.();
  }

  /** Takes everything queued; waits for at least one event or close. */
  async next(): Promise<WatchEvent[]> {
    while (this.queue.length === 0 && !this.closed) {
      await new Promise<void>((res) => {
        this.wake = res;
      });
      this.wake = undefined;
    }
    const out = this.queue;
    this.queue = [];
    return out;
  }

  close(reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.reason = reason;
    this.cache.unsubscribe(this);
    this.wake?.();
    this.resolveDone();
  }
}

export class TooOldError extends Error {
  constructor(
    readonly requested: number,
    readonly oldest: number,
  ) {
    super(`too old resource version: ${requested} (${oldest})`);
  }
}

export interface WatchCacheOptions {
  /** How many recent events are kept for watchers resuming from an older revision. */
  historySize?: number;
  /** How many undelivered events a watcher may have before it is closed. */
  maxQueue?: number;
}

export class WatchCache {
  readonly objects = new Map<string, KObject>();
  private history: CacheEvent[] = [];
  private readonly subscribers = new Set<Subscription>();
  /** Revisions older than this cannot be resumed from. */
  oldestRev = 0;
  /** The newest revision this cache knows it has seen everything up to. */
  rev = 0;
  private watcher: Watcher | undefined;
  private readonly historySize: number;
  private readonly maxQueue: number;
  private readyPromise: Promise<void> | undefined;
  private stopped = false;
  /** Called for every event after it is applied (used by RBAC and admission caches). */
  onEvent: ((ev: CacheEvent) => void) | undefined;

  constructor(
    private readonly store: Store,
    readonly prefix: string,
    private readonly log: Logger,
    opts: WatchCacheOptions = {},
  ) {
    this.historySize = opts.historySize ?? 5000;
    this.maxQueue = opts.maxQueue ?? 2000;
  }

  get watcherCount(): number {
    return this.subscribers.size;
  }

  /** Lists the prefix, then watches from the list's revision. */
  start(): Promise<void> {
    // A failed load (store down) is forgotten, so the next start() tries again.
    this.readyPromise ??= this.load().catch((err: unknown) => {
      this.readyPromise = undefined;
      throw err;
    });
    return this.readyPromise;
  }

  private async load(): Promise<void> {
    const { items, revision } = await this.store.range(this.prefix);
    this.objects.clear();
    for (const it of items) this.objects.set(it.key, it.obj);
    this.history = [];
    this.rev = revision;
    this.oldestRev = revision;
    const w = await this.store.client
      .watch()
      .prefix(this.prefix)
      .startRevision(String(revision + 1))
      .create();
    this.watcher = w;
    w.on('data', (res) => {
      for (const e of res.events) {
        if (e.type === 'Put') this.applyPut(e.kv);
        else this.applyDelete(e.kv.key.toString('utf8'), Number(e.kv.mod_revision));
      }
      const hdr = Number(res.header?.revision ?? 0);
      if (hdr > this.rev && res.events.length === 0) this.rev = hdr;
    });
    w.on('error', (err) => {
      // The store cancelled our watch (e.g. compaction): start over from a fresh list.
      this.log.warn({ err: String(err), prefix: this.prefix }, 'store watch ended; reloading cache');
      for (const s of [...this.subscribers]) s.close('cache reloaded');
      this.watcher = undefined;
      if (this.stopped) return;
      this.readyPromise = undefined;
      setTimeout(() => void this.start().catch(() => undefined), 500);
    });
  }

  private applyPut(kv: KvLike): void {
    let stored: ReturnType<typeof decodeKv>;
    const key = kv.key.toString('utf8');
    const rev = Number(kv.mod_revision);
    // This apiserver's own write comes back as this event: reuse the object it wrote.
    const own = this.store.written.take(key, rev, kv.value);
    if (own) stored = { key, obj: own, rev };
    else {
      try {
        stored = decodeKv(kv);
      } catch {
        this.log.warn({ key }, 'skipping a value that is not JSON');
        return;
      }
    }
    const prev = this.objects.get(stored.key);
    this.objects.set(stored.key, stored.obj);
    this.record({
      type: prev ? 'MODIFIED' : 'ADDED',
      key: stored.key,
      obj: stored.obj,
      prev,
      rev: stored.rev,
    });
  }

  private applyDelete(key: string, rev: number): void {
    this.store.written.forget(key, rev);
    const prev = this.objects.get(key);
    if (!prev) return;
    this.objects.delete(key);
    // A new top level and metadata carrying the deletion's revision; the rest is shared
    // with the cached object, which nothing mutates.
    const obj: KObject = { ...prev, metadata: { ...(prev.metadata ?? {}) } };
    setResourceVersion(obj, rev);
    this.record({ type: 'DELETED', key, obj, prev, rev });
  }

  /**
   * Resolves once the cache has applied revision `rev` (or after `timeoutMs`,
   * to never hold a request on a stalled watch): read-your-writes for what
   * this apiserver reads from the cache right after its own write.
   */
  waitForRevision(rev: number, timeoutMs = 2000): Promise<void> {
    if (this.rev >= rev) return Promise.resolve();
    return new Promise((resolve) => {
      const deadline = Date.now() + timeoutMs;
      const poll = () => {
        if (this.rev >= rev || Date.now() >= deadline || this.stopped) resolve();
        else setTimeout(poll, 5);
      };
      poll();
    });
  }

  private record(ev: CacheEvent): void {
    this.rev = Math.max(this.rev, ev.rev);
    this.history.push(ev);
    if (this.history.length > this.historySize) {
      const dropped = this.history.splice(0, this.history.length - this.historySize);
      this.oldestRev = dropped[dropped.length - 1].rev;
    }
    for (const s of this.subscribers) s.offer(ev);
    this.onEvent?.(ev);
  }

  /**
   * A subscription delivering, in order and without gaps, every change after
   * `fromRev`; with `initial`, first an ADDED for each current object.
   */
  subscribe(filter: Filter, fromRev: number | 'now', initial: boolean): Subscription {
    if (fromRev !== 'now' && fromRev < this.oldestRev) throw new TooOldError(fromRev, this.oldestRev);
    const from = fromRev === 'now' ? this.rev : fromRev;
    const sub = new Subscription(this, filter, from, this.maxQueue);
    sub.lastRev = from;
    if (initial) {
      for (const obj of this.objects.values()) if (filter(obj)) sub.push({ type: 'ADDED', object: obj });
    } else {
      for (const ev of this.history) if (ev.rev > from) sub.offer(ev);
    }
    this.subscribers.add(sub);
    return sub;
  }

  unsubscribe(sub: Subscription): void {
    this.subscribers.delete(sub);
  }

  list(filter: Filter): KObject[] {
    const out: KObject[] = [];
    for (const [, obj] of [...this.objects.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (filter(obj)) out.push(obj);
    }
    return out;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of [...this.subscribers]) s.close('server stopping');
    await this.watcher?.cancel().catch(() => undefined);
  }
}
