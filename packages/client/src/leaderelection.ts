// Leader election over a coordination.k8s.io/v1 Lease, as client-go does it:
// candidates try to take the lease every retryPeriod; the holder renews it; a
// holder that cannot renew within renewDeadline steps down; others take over
// once the holder's renewTime (as they observed it) is older than
// leaseDuration. Updates are guarded by resourceVersion, so two candidates can
// never both win the same round.

import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import type { KubeClient } from './client.js';
import { resources } from './resources.js';
import { sleep } from './retry.js';
import type { KubeObject } from './types.js';

export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  lockName: string;
  lockNamespace: string;
  /** Unique per candidate, e.g. hostname + random suffix. */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Clear the lease on stop so a successor need not wait a lease duration. Default true. */
  releaseOnCancel?: boolean;
  /** Runs while leading; its signal aborts when leadership is lost or on stop. */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  onStoppedLeading?: () => void;
  /** Called when the observed leader changes (including to ourselves). */
  onNewLeader?: (identity: string) => void;
  onError?: (err: unknown) => void;
}

/** RFC 3339 with microseconds, as MicroTime is serialised. */
export function microTime(d = new Date()): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private observed: Lease | undefined;
  private observedAt = 0;
  private leading = false;
  private lastLeader = '';

  constructor(
    private readonly client: KubeClient,
    private readonly opts: LeaderElectionOptions,
  ) {
    this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseDurationMs)
      throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.retryPeriodMs >= this.renewDeadlineMs)
      throw new Error('renewDeadline must be greater than retryPeriod');
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The identity holding the lease as last observed ('' if none). */
  get leader(): string {
    return this.observed?.spec?.holderIdentity ?? '';
  }

  /**
   * Campaigns until leading, leads until the lease is lost or `signal` aborts,
   * then returns. Run it again to campaign anew after losing the lease.
   */
  async run(signal: AbortSignal): Promise<void> {
    // Acquire.
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await this.pause(this.jittered(this.retryPeriodMs), signal);
    }
    if (signal.aborted) return;
    this.leading = true;
    const leadership = new AbortController();
    const onOuterAbort = () => leadership.abort();
    signal.addEventListener('abort', onOuterAbort, { once: true });
    const work = Promise.resolve()
      .then(() => this.opts.onStartedLeading(leadership.signal))
      .catch((e) => this.opts.onError?.(e));
    // Renew until a renewal misses the deadline or we are stopped.
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await this.pause(this.retryPeriodMs, signal);
      if (signal.aborted) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = Date.now();
      } else if (
        Date.now() - lastRenew >= this.renewDeadlineMs ||
        (this.leader && this.leader !== this.opts.identity)
      ) {
        break;
      }
    }
    signal.removeEventListener('abort', onOuterAbort);
    leadership.abort();
    this.leading = false;
    if (signal.aborted && (this.opts.releaseOnCancel ?? true)) await this.release();
    await work;
    this.opts.onStoppedLeading?.();
  }

  private jittered(ms: number): number {
    return Math.round(ms * (1 + 0.2 * Math.random()));
  }

  private async pause(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await sleep(ms, signal);
    } catch {
      // aborted: the caller checks the signal
    }
  }

  private noteLeader(lease: Lease): void {
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.lastLeader) {
      this.lastLeader = holder;
      if (holder) this.opts.onNewLeader?.(holder);
    }
  }

  /** One round: take or renew the lease; true if we hold it afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { lockName: name, lockNamespace: namespace, identity } = this.opts;
    const now = microTime();
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    let current: Lease;
    try {
      current = await this.client.get<Lease>(resources.leases, name, {
        namespace,
        timeoutMs: this.renewDeadlineMs,
      });
    } catch (e) {
      if (!isNotFound(e)) {
        this.opts.onError?.(e);
        return false;
      }
      try {
        const created = await this.client.create<Lease>(
          resources.leases,
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
          { namespace, timeoutMs: this.renewDeadlineMs },
        );
        this.observe(created);
        return true;
      } catch (ce) {
        if (!isAlreadyExists(ce)) this.opts.onError?.(ce);
        return false;
      }
    }
    // Track when *we* saw the record change: clocks of other machines are not trusted.
    if (!this.observed || this.observed.metadata?.resourceVersion !== current.metadata?.resourceVersion)
      this.observe(current);
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const heldByOther = holder !== '' && holder !== identity;
    const leaseMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && this.observedAt + leaseMs > Date.now()) return false;

    const next: Lease = {
      ...current,
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        renewTime: now,
        acquireTime: holder === identity ? spec.acquireTime : now,
        leaseTransitions:
          holder === identity ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      const updated = await this.client.update<Lease>(resources.leases, next, {
        namespace,
        timeoutMs: this.renewDeadlineMs,
      });
      this.observe(updated);
      return true;
    } catch (e) {
      if (!isConflict(e)) this.opts.onError?.(e);
      return false;
    }
  }

  private observe(lease: Lease): void {
    this.observed = lease;
    this.observedAt = Date.now();
    this.noteLeader(lease);
  }

  /** Gives the lease up (if we hold it) so another candidate can take it at once. */
  async release(): Promise<void> {
    const lease = this.observed;
    if (!lease || lease.spec?.holderIdentity !== this.opts.identity) return;
    try {
      const released = await this.client.update<Lease>(
        resources.leases,
        {
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() },
        },
        { namespace: this.opts.lockNamespace, timeoutMs: this.renewDeadlineMs },
      );
      this.observed = released;
    } catch (e) {
      this.opts.onError?.(e);
    }
  }
}
