// Start-up against a store that may not be there yet: the apiserver listens at
// once (liveness true, readiness false with the reason) and keeps trying to
// reach the store, bootstrap and fill its caches, logging every failed attempt,
// until it succeeds. Start order between the store and the apiserver then does
// not matter, as in Kubernetes, where the apiserver waits for etcd.
import type { Logger } from '@kubit/daemon';
import type { Store } from './storage.js';

/** How long one attempt may take to read the store's revision (a store without a leader hangs). */
const PROBE_TIMEOUT_MS = 5000;
const PREPARE_TIMEOUT_MS = 60_000;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;

export class StoreStartup {
  /** True once the store answered and the caches are filled. */
  done = false;
  /** Why the apiserver is not serving yet (for /readyz and 503 answers). */
  reason = 'connecting to the store';
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private attempts = 0;

  constructor(
    private readonly store: Store,
    private readonly endpoints: string[],
    private readonly log: Logger,
    /** Runs once the store answers: bootstrap and cache fill. Retried as a whole on failure. */
    private readonly prepare: () => Promise<void>,
  ) {}

  /** Throws the reason while the apiserver cannot serve. */
  check(): void {
    if (!this.done) throw new Error(this.reason);
  }

  run(): void {
    void this.attempt(FIRST_RETRY_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private async attempt(delayMs: number): Promise<void> {
    if (this.stopped) return;
    this.attempts++;
    const store = this.endpoints.join(',');
    try {
      await withTimeout(this.store.currentRevision(), PROBE_TIMEOUT_MS, 'reading the store revision');
    } catch (err) {
      this.retry(`cannot reach the store at ${store}: ${message(err)}`, delayMs);
      return;
    }
    try {
      // Bounded, so a store that loses its leader mid-way cannot stall start-up for good;
      // what a timed-out attempt left half done is redone idempotently by the next.
      await withTimeout(this.prepare(), PREPARE_TIMEOUT_MS, 'bootstrap and cache fill');
    } catch (err) {
      this.retry(`the store at ${store} answered but preparing failed: ${message(err)}`, delayMs);
      return;
    }
    if (this.stopped) return;
    this.done = true;
    this.reason = '';
    this.log.info({ store, attempts: this.attempts }, 'store reachable; kubit-apiserver serving');
  }

  private retry(reason: string, delayMs: number): void {
    if (this.stopped) return;
    this.reason = reason;
    this.log.error({ attempt: this.attempts, retryInMs: delayMs }, `start-up: ${reason}; retrying`);
    this.timer = setTimeout(() => void this.attempt(Math.min(delayMs * 2, MAX_RETRY_MS)), delayMs);
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Rejects when `p` has not settled within `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, rej) => {
        timer = setTimeout(() => rej(new Error(`${what} timed out after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
