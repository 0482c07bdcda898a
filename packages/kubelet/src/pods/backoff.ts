/** Kubernetes' defaults for restarting crashed containers and retrying failed pulls. */
export interface BackoffConfig {
  initialMs: number;
  maxMs: number;
  /** An entry untouched this long (or a container that ran this long) starts over at initialMs. */
  resetMs: number;
}

export const DEFAULT_BACKOFF: BackoffConfig = { initialMs: 10_000, maxMs: 300_000, resetMs: 600_000 };

interface Entry {
  delayMs: number;
  lastMs: number;
}

/**
 * Per-key exponential backoff (10 s doubling to 5 min by default). The first
 * retry is immediate and arms the delay; each later one doubles it, as the
 * kubelet does for CrashLoopBackOff and ImagePullBackOff.
 */
export class Backoff {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly config: BackoffConfig = DEFAULT_BACKOFF,
    private readonly now: () => number = Date.now,
  ) {}

  /** True while `sinceMs` (when the failure happened) is within the key's current delay. */
  inBackoff(key: string, sinceMs: number): boolean {
    const e = this.entries.get(key);
    if (!e) return false;
    return this.now() - sinceMs < e.delayMs;
  }

  /** Milliseconds until `inBackoff(key, sinceMs)` turns false (0 when not backing off). */
  remainingMs(key: string, sinceMs: number): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    return Math.max(0, sinceMs + e.delayMs - this.now());
  }

  delayMs(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  /** Records a retry: arms the initial delay, or doubles it up to the maximum. */
  next(key: string): void {
    const now = this.now();
    const e = this.entries.get(key);
    if (!e || now - e.lastMs > this.config.resetMs) {
      this.entries.set(key, { delayMs: this.config.initialMs, lastMs: now });
      return;
    }
    e.delayMs = Math.min(e.delayMs * 2, this.config.maxMs);
    e.lastMs = now;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  /** Forgets every key starting with `prefix` (a deleted pod's entries). */
  forgetPrefix(prefix: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }

  get resetAfterMs(): number {
    return this.config.resetMs;
  }
}
