// The sync loop: informer events mark the state dirty; a sync plans the whole
// ruleset from the caches, diffs it against what was last applied and applies
// the difference as one nft transaction. Syncs are rate-limited like
// kube-proxy's (--min-sync-period): a burst of changes lands as one transaction,
// the first change after a quiet spell goes out at once. A failed transaction
// leaves us not knowing the kernel's state, so the next sync (after a backoff)
// replaces the whole table; so does the first one, which is also what makes a
// restart rebuild the same rules without a moment with none.
import type { EndpointSlice, Service } from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { staleUdpFlows } from './conntrack.js';
import { diffScript } from './differ.js';
import type { ProxyMetrics } from './metrics.js';
import { type NftRunner, runWithInput } from './nft.js';
import { type PlannerOptions, planRuleset } from './planner.js';
import { type Ruleset, TABLE_FAMILY, TABLE_NAME } from './ruleset.js';

export interface ProxierOptions {
  nft: NftRunner;
  planner: PlannerOptions;
  services: () => Service[];
  slices: () => EndpointSlice[];
  minSyncPeriodMs: number;
  /** Re-plan (and check the table is still there) this often even without changes. */
  syncPeriodMs: number;
  metrics: ProxyMetrics;
  log: Logger;
  now?: () => number;
}

const MAX_BACKOFF_MS = 30_000;

export class Proxier {
  private applied: Ruleset | undefined;
  private timer: NodeJS.Timeout | undefined;
  private periodic: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** No sync before start(): planning from half-filled caches would remove rules that are still wanted. */
  private started = false;
  private lastSyncStart = 0;
  private failures = 0;
  /** When each change not yet in the kernel happened (for the programming latency). */
  private pendingTriggers: number[] = [];
  /** Since when a change has been waiting to be applied (undefined: the kernel is up to date). */
  private pendingSince: number | undefined;
  private lastSuccess: number | undefined;
  private checkTable = false;
  private readonly now: () => number;

  constructor(private readonly o: ProxierOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Starts syncing: the first sync replaces the table. */
  start(): void {
    this.started = true;
    this.pendingSince = this.now();
    this.requestSync();
    this.periodic = setInterval(() => {
      this.checkTable = true;
      this.requestSync();
    }, this.o.syncPeriodMs);
    this.periodic.unref();
  }

  /** Something changed; `triggerTime` (ms) is when, for the network programming latency. */
  onChange(triggerTime?: number): void {
    if (triggerTime !== undefined) this.pendingTriggers.push(triggerTime);
    this.pendingSince ??= this.now();
    if (this.started) this.requestSync();
  }

  /** Healthy while nothing has waited longer than `timeoutMs` to be applied (kube-proxy's /healthz). */
  health(timeoutMs: number): { healthy: boolean; lastUpdated?: number; pendingSince?: number } {
    const waiting = this.pendingSince === undefined ? 0 : this.now() - this.pendingSince;
    return {
      healthy: this.lastSuccess !== undefined && waiting <= timeoutMs,
      lastUpdated: this.lastSuccess,
      pendingSince: this.pendingSince,
    };
  }

  get hasSynced(): boolean {
    return this.lastSuccess !== undefined;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.periodic) clearInterval(this.periodic);
    await this.running;
  }

  private requestSync(delayMs?: number): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    const wait = delayMs ?? Math.max(0, this.lastSyncStart + this.o.minSyncPeriodMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.syncOnce().finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.requestSync();
        }
      });
    }, wait);
  }

  private async syncOnce(): Promise<void> {
    const started = this.now();
    this.lastSyncStart = started;
    const triggers = this.pendingTriggers;
    this.pendingTriggers = [];
    const hadPending = this.pendingSince;
    this.pendingSince = undefined;
    const { log, metrics } = this.o;
    try {
      if (this.checkTable && this.applied) {
        this.checkTable = false;
        // A canary: someone flushed the ruleset (or deleted our table) behind our back.
        const present = await this.o.nft.chainExists(TABLE_FAMILY, TABLE_NAME, 'nat-prerouting');
        if (!present) {
          log.warn('the kubit-proxy table is gone from the kernel; rebuilding it');
          this.applied = undefined;
        }
      }
      const desired = planRuleset(this.o.services(), this.o.slices(), this.o.planner);
      const full = this.applied === undefined;
      const script = diffScript(this.applied, desired);
      if (script) await this.o.nft.apply(script);
      const previous = this.applied;
      this.applied = desired;
      const done = this.now();
      this.failures = 0;
      this.lastSuccess = done;
      const seconds = (done - started) / 1000;
      metrics.syncDuration.observe(seconds);
      (full ? metrics.fullSyncDuration : metrics.partialSyncDuration).observe(seconds);
      metrics.lastSync.set(done / 1000);
      metrics.servicePorts.set(desired.stats.servicePorts);
      metrics.endpoints.set(desired.stats.endpoints);
      for (const t of triggers) metrics.networkProgramming.observe(Math.max(0, done - t) / 1000);
      if (script) {
        log.debug(
          { full, lines: script.split('\n').length - 1, ms: done - started, ...desired.stats },
          'synced the proxy rules',
        );
      }
      await this.clearStaleUdp(previous, desired);
    } catch (err) {
      this.applied = undefined;
      this.failures++;
      metrics.syncFailures.inc();
      this.pendingTriggers.unshift(...triggers);
      this.pendingSince = hadPending ?? started;
      const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.failures - 1));
      log.error({ err: (err as Error).message, retryInMs: backoff }, 'sync of the proxy rules failed');
      // Not through `again`: the retry waits for its backoff.
      setTimeout(() => this.requestSync(0), backoff).unref();
    }
  }

  private async clearStaleUdp(previous: Ruleset | undefined, current: Ruleset): Promise<void> {
    for (const args of staleUdpFlows(previous, current)) {
      const [cmd, argv] = this.o.nft.command('conntrack', args);
      try {
        const r = await runWithInput(cmd, argv, '', 10_000);
        // conntrack exits 1 when nothing matched ("0 flow entries have been deleted").
        if (r.code !== 0 && !/0 flow entries/.test(r.stderr)) {
          this.o.log.warn({ args: args.join(' '), err: r.stderr.trim() }, 'conntrack clean-up failed');
        }
        this.o.metrics.udpFlowsCleared.inc();
      } catch (err) {
        this.o.log.warn({ err: (err as Error).message }, 'cannot run conntrack');
      }
    }
  }
}
