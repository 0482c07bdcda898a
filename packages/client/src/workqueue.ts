// A work queue in the manner of client-go's: an item queued several times
// before a worker takes it is processed once; an item being processed is not
// handed to a second worker, and if re-added meanwhile it is queued again when
// the first worker calls done(). The rate-limited variant delays re-adds of a
// failing item exponentially (per item) and overall (token bucket).

export interface RateLimiter<T> {
  /** How long to wait before the item may be processed again. */
  when(item: T): number;
  forget(item: T): void;
  numRequeues(item: T): number;
}

/** base·2^failures per item, capped at max. */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();
  constructor(
    private readonly baseDelayMs = 5,
    private readonly maxDelayMs = 1000_000,
  ) {}

  when(item: T): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    return Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
  }
  forget(item: T): void {
    this.failures.delete(item);
  }
  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/** An overall token bucket: `qps` sustained, `burst` at once. */
export class BucketRateLimiter<T> implements RateLimiter<T> {
  private tokens: number;
  private last: number;
  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  when(_item: T): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    return Math.ceil((-this.tokens / this.qps) * 1000);
  }
  forget(_item: T): void {}
  numRequeues(_item: T): number {
    return 0;
  }
}

/** The longest delay any of the limiters asks for. */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  private readonly limiters: RateLimiter<T>[];
  constructor(...limiters: RateLimiter<T>[]) {
    this.limiters = limiters;
  }
  when(item: T): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.when(item));
    return max;
  }
  forget(item: T): void {
    for (const l of this.limiters) l.forget(item);
  }
  numRequeues(item: T): number {
    let max = 0;
    for (const l of this.limiters) max = Math.max(max, l.numRequeues(item));
    return max;
  }
}

/** client-go's default: 5 ms·2^n up to 1000 s per item, and 10 qps / 100 burst overall. */
export function defaultControllerRateLimiter<T>(): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(
    new ItemExponentialFailureRateLimiter<T>(5, 1000_000),
    new BucketRateLimiter<T>(10, 100),
  );
}

export class WorkQueue<T> {
  private readonly queue: T[] = [];
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly getters: ((item: T | undefined) => void)[] = [];
  private shuttingDown = false;
  private drainWaiters: (() => void)[] = [];

  /** Queues an item unless it is already waiting. */
  add(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.dirty.add(item);
    if (this.processing.has(item)) return;
    const getter = this.getters.shift();
    if (getter) {
      this.dirty.delete(item);
      this.processing.add(item);
      getter(item);
    } else {
      this.queue.push(item);
    }
  }

  /** Number of items waiting (not counting those being processed). */
  len(): number {
    return this.queue.length;
  }

  /**
   * The next item, waiting for one if needed; `undefined` once the queue is shut
   * down (and, for shutDownWithDrain, emptied). Call done(item) when finished.
   */
  get(): Promise<T | undefined> {
    const item = this.queue.shift();
    if (item !== undefined) {
      this.dirty.delete(item);
      this.processing.add(item);
      return Promise.resolve(item);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks an item finished; if it was re-added meanwhile it is queued again. */
  done(item: T): void {
    this.processing.delete(item);
    if (this.dirty.has(item)) {
      this.dirty.delete(item);
      if (!this.shuttingDown) this.add(item);
    }
    if (this.processing.size === 0) {
      const w = this.drainWaiters;
      this.drainWaiters = [];
      for (const f of w) f();
    }
  }

  /** Stops accepting items; waiting getters receive undefined. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const g of this.getters.splice(0)) g(undefined);
  }

  /** Like shutDown, then waits until items in progress are done. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return;
    await new Promise<void>((r) => this.drainWaiters.push(r));
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }
}

/** A work queue with delayed and rate-limited adds. */
export class RateLimitingQueue<T> extends WorkQueue<T> {
  private readonly timers = new Map<T, { at: number; timer: NodeJS.Timeout }>();

  constructor(private readonly limiter: RateLimiter<T> = defaultControllerRateLimiter<T>()) {
    super();
  }

  /** Adds the item after `delayMs`; a pending earlier add of the same item wins. */
  addAfter(item: T, delayMs: number): void {
    if (this.isShuttingDown) return;
    if (delayMs <= 0) {
      this.add(item);
      return;
    }
    const at = Date.now() + delayMs;
    const existing = this.timers.get(item);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(item);
      this.add(item);
    }, delayMs);
    // A delayed requeue (a 600 s progress deadline, a node grace period) must
    // not by itself keep a process alive that has nothing else left to do.
    timer.unref();
    this.timers.set(item, { at, timer });
  }

  /** Number of items waiting for their addAfter delay to pass (0 after shutDown). */
  delayedLen(): number {
    return this.timers.size;
  }

  /** Re-adds a failed item after the limiter's backoff for it. */
  addRateLimited(item: T): void {
    this.addAfter(item, this.limiter.when(item));
  }

  /** Clears the item's failure history (call after it succeeded). */
  forget(item: T): void {
    this.limiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.limiter.numRequeues(item);
  }

  /** Also drops every pending delayed add: nothing is queued after shutdown. */
  override shutDown(): void {
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    super.shutDown();
  }
}
