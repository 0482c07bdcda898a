// What a controller has asked for but not yet seen through its watch, as
// client-go's ControllerExpectations: after creating n pods, the controller does
// not act on its (stale) cache again until it has observed n pod creations (or
// the record expires), so a slow watch never makes it create or delete twice.
// Deletions are tracked by pod key so an observed deletion is counted once.

const DEFAULT_TTL_MS = 5 * 60_000;

interface Record {
  adds: number;
  deletes: Set<string>;
  at: number;
}

export class Expectations {
  private readonly records = new Map<string, Record>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = DEFAULT_TTL_MS,
  ) {}

  /** True when the controller may trust its cache for `key` again. */
  satisfied(key: string): boolean {
    const r = this.records.get(key);
    if (!r) return true;
    if (r.adds <= 0 && r.deletes.size === 0) return true;
    return this.now() - r.at > this.ttlMs;
  }

  expectCreations(key: string, n: number): void {
    this.records.set(key, { adds: n, deletes: new Set(), at: this.now() });
  }

  expectDeletions(key: string, podKeys: readonly string[]): void {
    this.records.set(key, { adds: 0, deletes: new Set(podKeys), at: this.now() });
  }

  /** Creates and deletes expected together (a DaemonSet sync does both at once). */
  expect(key: string, adds: number, podKeys: readonly string[]): void {
    this.records.set(key, { adds, deletes: new Set(podKeys), at: this.now() });
  }

  creationObserved(key: string): void {
    const r = this.records.get(key);
    if (r) r.adds--;
  }

  /** A create that failed will never be observed: stop waiting for it. */
  lowerCreations(key: string, n = 1): void {
    const r = this.records.get(key);
    if (r) r.adds -= n;
  }

  deletionObserved(key: string, podKey: string): void {
    this.records.get(key)?.deletes.delete(podKey);
  }

  /**
   * True while the controller has deleted this pod but not yet seen it go:
   * the cache still shows it, but it is no longer one of the owner's pods.
   */
  deletionPending(key: string, podKey: string): boolean {
    const r = this.records.get(key);
    return r?.deletes.has(podKey) === true && this.now() - r.at <= this.ttlMs;
  }

  delete(key: string): void {
    this.records.delete(key);
  }

  pending(key: string): { adds: number; deletes: number } | undefined {
    const r = this.records.get(key);
    return r && { adds: r.adds, deletes: r.deletes.size };
  }
}
