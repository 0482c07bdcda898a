// Lease expiry. Only the leader decides that a lease expired; it then
// proposes the revoke, so every member deletes the attached keys at the same
// point of the log. Deadlines live in memory: a new leader restarts every
// lease's full TTL, as etcd does, so no lease expires early on failover.
import type { StateMachine } from '../mvcc/machine.js';

export class Lessor {
  private readonly deadlines = new Map<string, number>();
  private readonly revoking = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private leader = false;

  constructor(
    private readonly machine: StateMachine,
    private readonly revoke: (id: string) => Promise<unknown>,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.expire(), 250);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  granted(id: string, ttl: number): void {
    this.deadlines.set(id, Date.now() + ttl * 1000);
  }

  revoked(id: string): void {
    this.deadlines.delete(id);
    this.revoking.delete(id);
  }

  setLeader(isLeader: boolean): void {
    if (isLeader && !this.leader) {
      const now = Date.now();
      for (const l of this.machine.mvcc.leases.values()) this.deadlines.set(l.id, now + l.ttl * 1000);
    }
    this.leader = isLeader;
  }

  /** Leader only: restarts the lease's TTL. Returns the TTL, or 0 if there is no such lease. */
  renew(id: string): number {
    const l = this.machine.mvcc.leases.get(id);
    if (!l) return 0;
    this.deadlines.set(id, Date.now() + l.ttl * 1000);
    return l.ttl;
  }

  /** Seconds left (this member's view); -1 when the lease is unknown. */
  remaining(id: string): number {
    const l = this.machine.mvcc.leases.get(id);
    if (!l) return -1;
    const d = this.deadlines.get(id);
    if (d === undefined) return l.ttl;
    return Math.max(0, Math.ceil((d - Date.now()) / 1000));
  }

  private expire(): void {
    if (!this.leader) return;
    const now = Date.now();
    for (const [id, deadline] of this.deadlines) {
      if (deadline > now || this.revoking.has(id)) continue;
      if (!this.machine.mvcc.leases.has(id)) {
        this.deadlines.delete(id);
        continue;
      }
      this.revoking.add(id);
      void this.revoke(id).finally(() => this.revoking.delete(id));
    }
  }
}
