// The sync loop: informer events mark Services dirty (a Service event its own key,
// an EndpointSlice event its Service's); a sync re-plans only those Services
// (IncrementalPlan: the previous plan is kept for the rest), and applies what that
// changed as one nft transaction — nothing walks the whole ruleset. A full re-plan
// (every Service, diffed against what was last applied) runs on start, after a
// failure and every --sync-period, and when most Services are dirty anyway (a
// relist). Syncs are rate-limited like
// kube-proxy's (--min-sync-period): a burst of changes lands as one transaction,
// the first change after a quiet spell goes out at once. A failed transaction
// leaves us not knowing the kernel's state, so the next sync (after a backoff)
// replaces the whole table; so does the first one, which is also what makes a
// restart rebuild the same rules without a moment with none.
import type { EndpointSlice, Service } from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { staleUdpFlows } from './conntrack.js';
import { deltaScript, diffScript } from './differ.js';
import { IncrementalPlan } from './incremental.js';
import type { ProxyMetrics } from './metrics.js';
import { type NftRunner, runWithInput } from './nft.js';
import type { PlannerOptions } from './planner.js';
import { TABLE_FAMILY, TABLE_NAME, type UdpServicePort } from './ruleset.js';

export interface ProxierOptions {
  nft: NftRunner;
  planner: PlannerOptions;
  services: () => Service[];
  slices: () => EndpointSlice[];
  /** One Service by its key ("namespace/name"), for an incremental sync. */
  service: (key: string) => Service | undefined;
  /** The EndpointSlices of the Service with this key (by their kubernetes.io/service-name label). */
  slicesFor: (key: string) => EndpointSlice[];
  minSyncPeriodMs: number;
  /** Re-plan (and check the table is still there) this often even without changes. */
  syncPeriodMs: number;
  metrics: ProxyMetrics;
  log: Logger;
  now?: () => number;
}

const MAX_BACKOFF_MS = 30_000;

export class Proxier {
  /** What the kernel holds, as planned; undefined when we do not know (before the first sync, after a failure). */
  private plan: IncrementalPlan | undefined;
  /** Services changed since the last sync. */
  private dirty = new Set<string>();
  /** Something changed that no key names: the next sync re-plans everything. */
  private dirtyAll = true;
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
  /** The --sync-period timer fired: re-plan everything and look for the table. */
  private periodicDue = false;
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
      this.periodicDue = true;
      this.requestSync();
    }, this.o.syncPeriodMs);
    this.periodic.unref();
  }

  /**
   * Something changed: the Services with these keys ("namespace/name"; none given:
   * anything, so the next sync re-plans everything). `triggerTime` (ms) is when, for
   * the network programming latency.
   */
  onChange(triggerTime?: number, keys?: Iterable<string>): void {
    if (keys === undefined) this.dirtyAll = true;
    else for (const k of keys) this.dirty.add(k);
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
    const keys = this.dirty;
    this.dirty = new Set();
    const periodic = this.periodicDue;
    this.periodicDue = false;
    const { log, metrics } = this.o;
    const all = this.dirtyAll;
    this.dirtyAll = false;
    // Re-planning most of many Services one by one (a relist re-delivers them all) costs more than planning them all.
    const replan =
      this.plan === undefined || all || periodic || (keys.size >= 1000 && keys.size > this.plan.size / 2);
    try {
      if (periodic && this.plan) {
        // A canary: someone flushed the ruleset (or deleted our table) behind our back.
        const table = this.o.planner.tableName ?? TABLE_NAME;
        const present = await this.o.nft.chainExists(TABLE_FAMILY, table, 'nat-prerouting');
        if (!present) {
          log.warn('the kubit-proxy table is gone from the kernel; rebuilding it');
          this.plan = undefined;
        }
      }
      let script: string;
      let stale: [Map<string, UdpServicePort> | undefined, Map<string, UdpServicePort>];
      const previous = this.plan;
      // From here on the plan may be ahead of the kernel: a failure below forgets it.
      this.plan = undefined;
      let plan: IncrementalPlan;
      if (replan || !previous) {
        plan = IncrementalPlan.full(this.o.services(), this.o.slices(), this.o.planner);
        script = diffScript(previous?.ruleset, plan.ruleset);
        if (previous && script && periodic && keys.size === 0 && !all) {
          log.warn(
            { lines: script.split('\n').length - 1 },
            'the periodic full re-plan changed rules no event had',
          );
        }
        stale = [previous?.ruleset.udp, plan.ruleset.udp];
      } else {
        plan = previous;
        const change = plan.update(keys, this.o.service, this.o.slicesFor);
        script = deltaScript(change.delta, plan.ruleset);
        const was = new Map<string, UdpServicePort>();
        const now = new Map<string, UdpServicePort>();
        for (const [k, { before, after }] of change.udp) {
          if (before) was.set(k, before);
          if (after) now.set(k, after);
        }
        stale = [was, now];
      }
      if (script) await this.o.nft.apply(script);
      this.plan = plan;
      const desired = plan.ruleset;
      const done = this.now();
      this.failures = 0;
      this.lastSuccess = done;
      const seconds = (done - started) / 1000;
      metrics.syncDuration.observe(seconds);
      (replan ? metrics.fullSyncDuration : metrics.partialSyncDuration).observe(seconds);
      metrics.lastSync.set(done / 1000);
      metrics.servicePorts.set(desired.stats.servicePorts);
      metrics.endpoints.set(desired.stats.endpoints);
      for (const t of triggers) metrics.networkProgramming.observe(Math.max(0, done - t) / 1000);
      if (script) {
        log.debug(
          {
            full: replan,
            replace: previous === undefined,
            services: replan ? plan.size : keys.size,
            lines: script.split('\n').length - 1,
            ms: done - started,
            ...desired.stats,
          },
          'synced the proxy rules',
        );
      }
      await this.clearStaleUdp(...stale);
    } catch (err) {
      this.plan = undefined;
      this.dirtyAll = true;
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

  private async clearStaleUdp(
    previous: Map<string, UdpServicePort> | undefined,
    current: Map<string, UdpServicePort>,
  ): Promise<void> {
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
