// The back-off between replacing a DaemonSet's failed pods on one node
// (Kubernetes' failedPodsBackoff: 1 s doubling to 15 min): a pod that fails at
// once on its node must not be deleted and re-created in a tight loop.

const INITIAL_MS = 1000;
const MAX_MS = 15 * 60_000;

interface Entry {
  delayMs: number;
  until: number;
}

export class FailedPodBackoff {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  /** True (and the next back-off starts) if the failed pod on `node` may be replaced now. */
  mayReplace(owner: string, node: string): boolean {
    const key = `${owner}/${node}`;
    const now = this.now();
    const e = this.entries.get(key);
    if (e && now < e.until) return false;
    // A node that has been quiet for long starts again from the first delay.
    const delayMs = e && now - e.until < 2 * MAX_MS ? Math.min(e.delayMs * 2, MAX_MS) : INITIAL_MS;
    this.entries.set(key, { delayMs, until: now + delayMs });
    return true;
  }

  /** How long until the owner's next back-off ends (to look again then), if one is running. */
  nextRetryIn(owner: string): number | undefined {
    const now = this.now();
    let min: number | undefined;
    for (const [key, e] of this.entries) {
      if (!key.startsWith(`${owner}/`)) continue;
      if (e.until <= now) {
        if (now - e.until >= 2 * MAX_MS) this.entries.delete(key);
        continue;
      }
      min = min === undefined ? e.until - now : Math.min(min, e.until - now);
    }
    return min;
  }
}
