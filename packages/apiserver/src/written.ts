// The objects this apiserver wrote, kept until the store's watch event for the
// write arrives. Every write comes back as a watch event carrying the bytes
// just written; decoding them again (JSON.parse of the whole object) was a
// large part of the apiserver's CPU per write. The watch cache takes the
// written object instead, but only when the event is provably the same write:
// same key, same mod revision and byte-for-byte the same value. Anything else
// (another writer, a lost entry) is decoded from the event as always.
import type { KObject, WriteResult } from './storage.js';

interface Written {
  rev: number;
  value: Buffer;
  obj: KObject;
  /** When it was written (ms): an entry whose event never came for it is dropped after a while. */
  at: number;
}

/**
 * An event normally comes within milliseconds of its write. It can come first (the
 * watch and the write use different connections, maybe to different members): then
 * the entry waits for the key's next event. Entries older than this, or beyond the
 * count, are dropped oldest first, so the map stays small whatever happens.
 */
const MAX_AGE_MS = 10_000;
const MAX_PENDING = 10_000;

export class WrittenObjects {
  /** In write order (an entry is re-inserted on each write), so the oldest come first. */
  private readonly byKey = new Map<string, Written>();

  constructor(private readonly clock: () => number = Date.now) {}

  /** How many events were served from here and how many had to be decoded (for tests). */
  hits = 0;

  get size(): number {
    return this.byKey.size;
  }

  /** Remembers a successful write of `obj` encoded as `value`; passes the result through. */
  noteWrite(key: string, obj: KObject, value: Buffer, result: WriteResult): WriteResult {
    if (!result.ok) return result;
    const now = this.clock();
    this.evict(now);
    this.byKey.delete(key);
    this.byKey.set(key, { rev: result.rev, value, obj, at: now });
    return result;
  }

  /**
   * The object for the watch event of `key` at `rev` holding `value`, when it is
   * exactly what this apiserver wrote; undefined otherwise. The result is a new
   * top-level object with its own metadata (carrying the resourceVersion), so the
   * cache never shares those with the request that wrote it; nested values are
   * shared and, like every cached object, never mutated.
   */
  take(key: string, rev: number, value: Buffer): KObject | undefined {
    const w = this.byKey.get(key);
    if (!w) return undefined;
    // An event for an older revision leaves a newer write waiting for its own event.
    if (w.rev > rev) return undefined;
    this.byKey.delete(key);
    if (w.rev !== rev || !w.value.equals(value)) return undefined;
    this.hits++;
    return withResourceVersion(w.obj, rev);
  }

  /**
   * The newest object this apiserver wrote under `key`, when it is newer than
   * `cachedRev` (its watch event has not reached the cache yet): a write right
   * after our own write then starts from what is in the store instead of from a
   * stale cached copy whose guard would fail. Same copy rules as take().
   */
  newerThan(key: string, cachedRev: number): { obj: KObject; rev: number } | undefined {
    const w = this.byKey.get(key);
    if (!w || w.rev <= cachedRev) return undefined;
    return { obj: withResourceVersion(w.obj, w.rev), rev: w.rev };
  }

  private evict(now: number): void {
    for (const [key, w] of this.byKey) {
      if (this.byKey.size < MAX_PENDING && w.at > now - MAX_AGE_MS) return;
      this.byKey.delete(key);
    }
  }

  /** Forgets the key (it was deleted): a stale entry must not outlive the object. */
  forget(key: string, rev: number): void {
    const w = this.byKey.get(key);
    if (w && w.rev <= rev) this.byKey.delete(key);
  }
}

/** A new top level and metadata with the revision, as decoding would give: resourceVersion last. */
function withResourceVersion(obj: KObject, rev: number): KObject {
  const meta: Record<string, unknown> = { ...(obj.metadata ?? {}) };
  delete meta.resourceVersion;
  meta.resourceVersion = String(rev);
  return { ...obj, metadata: meta };
}
