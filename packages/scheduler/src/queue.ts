// The scheduling queue, after Kubernetes' PriorityQueue:
//  - activeQ: pods ready to be tried, highest priority first, then first come first served;
//  - backoffQ: pods that failed recently, each waiting 1 s, 2 s, 4 s … up to 10 s;
//  - unschedulable: pods no node could take. They return only when a cluster event
//    happens that one of the plugins that rejected them says could help (queueing
//    hints), or after sitting there for 5 minutes.
// Events that arrive while a pod is being scheduled are remembered, so a pod that
// fails just as the cluster changes in its favour goes to backoff, not to sleep.
import { type ClusterEvent, type ClusterEventRegistration, eventMatches } from './framework/types.js';
import { KeyedHeap } from './heap.js';
import type { PodInfo } from './pod-info.js';

export interface QueuedPodInfo {
  info: PodInfo;
  /** When the pod (re)entered the queue: FIFO order among equal priorities, and the base of its backoff. */
  timestamp: number;
  /** Breaks timestamp ties so pods added in the same millisecond keep their order. */
  seq: number;
  /** When the pod was first tried, for the end-to-end latency metric. */
  initialAttemptTimestamp: number | null;
  attempts: number;
  /** Plugins that rejected the pod in its last attempt. */
  unschedulablePlugins: Set<string>;
}

export interface QueueOptions {
  now?: () => number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Pods left unschedulable this long are retried even without an event. */
  maxUnschedulableMs?: number;
  /** Plugin name → the events it wants pods it rejected to be retried on. */
  registrations?: ReadonlyMap<string, readonly ClusterEventRegistration[]>;
}

export interface QueueSizes {
  active: number;
  backoff: number;
  unschedulable: number;
}

const maxRememberedEvents = 10_000;

export class SchedulingQueue {
  private readonly now: () => number;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxUnschedulableMs: number;
  private readonly registrations: ReadonlyMap<string, readonly ClusterEventRegistration[]>;
  private readonly activeQ = new KeyedHeap<QueuedPodInfo>(
    (q) => q.info.key,
    (a, b) =>
      a.info.priority > b.info.priority ||
      (a.info.priority === b.info.priority &&
        (a.timestamp < b.timestamp || (a.timestamp === b.timestamp && a.seq < b.seq))),
  );
  private readonly backoffQ = new KeyedHeap<QueuedPodInfo>(
    (q) => q.info.key,
    (a, b) => this.backoffExpiry(a) < this.backoffExpiry(b),
  );
  private readonly unschedulable = new Map<string, QueuedPodInfo>();
  /** Pods popped and not yet done, with the event sequence number at the time they were popped. */
  private readonly inFlight = new Map<string, number>();
  private events: { seq: number; ev: ClusterEvent }[] = [];
  /** Events before this index are older than every pod in flight: no one needs them. */
  private eventsHead = 0;
  private eventSeq = 0;
  private waiters: ((q: QueuedPodInfo | null) => void)[] = [];
  private closed = false;
  private timers: NodeJS.Timeout[] = [];
  private seq = 0;

  constructor(opts: QueueOptions = {}) {
    this.now = opts.now ?? Date.now;
    this.initialBackoffMs = opts.initialBackoffMs ?? 1000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 10_000;
    this.maxUnschedulableMs = opts.maxUnschedulableMs ?? 5 * 60_000;
    this.registrations = opts.registrations ?? new Map();
  }

  private stamp(q: { timestamp: number; seq: number }): void {
    q.timestamp = this.now();
    q.seq = ++this.seq;
  }

  /** Starts the periodic flushes (backoff every second, unschedulable leftovers every 30 s). */
  start(): void {
    this.timers.push(setInterval(() => this.flushBackoffCompleted(), 1000));
    this.timers.push(setInterval(() => this.flushUnschedulableLeftover(), 30_000));
    for (const t of this.timers) t.unref();
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const w of this.waiters) w(null);
    this.waiters = [];
  }

  sizes(): QueueSizes {
    return { active: this.activeQ.size, backoff: this.backoffQ.size, unschedulable: this.unschedulable.size };
  }

  has(key: string): boolean {
    return this.activeQ.has(key) || this.backoffQ.has(key) || this.unschedulable.has(key);
  }

  /** A new pending pod. */
  add(info: PodInfo): void {
    const existing = this.find(info.key);
    if (existing) {
      this.update(info);
      return;
    }
    const q: QueuedPodInfo = {
      info,
      timestamp: 0,
      seq: 0,
      initialAttemptTimestamp: null,
      attempts: 0,
      unschedulablePlugins: new Set(),
    };
    this.stamp(q);
    this.pushActive(q);
  }

  /** A pending pod changed. An unschedulable one gets another try: the change may be what it needed. */
  update(info: PodInfo): void {
    const a = this.activeQ.get(info.key);
    if (a) {
      a.info = info;
      this.activeQ.push(a);
      return;
    }
    const b = this.backoffQ.get(info.key);
    if (b) {
      b.info = info;
      return;
    }
    const u = this.unschedulable.get(info.key);
    if (u) {
      u.info = info;
      this.unschedulable.delete(info.key);
      this.requeue(u);
      return;
    }
    if (!this.inFlight.has(info.key)) this.add(info);
  }

  delete(key: string): void {
    this.activeQ.remove(key);
    this.backoffQ.remove(key);
    this.unschedulable.delete(key);
    this.inFlight.delete(key);
  }

  /** The next pod to schedule, waiting for one if the queue is empty; null once closed. */
  pop(): Promise<QueuedPodInfo | null> {
    const q = this.tryPop();
    if (q || this.closed) return Promise.resolve(q);
    return new Promise((res) => this.waiters.push(res));
  }

  tryPop(): QueuedPodInfo | null {
    const q = this.activeQ.pop();
    if (!q) return null;
    this.markPopped(q);
    return q;
  }

  private markPopped(q: QueuedPodInfo): void {
    q.attempts++;
    q.initialAttemptTimestamp ??= this.now();
    // Deleted first so the map stays in order of popping: its first entry is the oldest.
    this.inFlight.delete(q.info.key);
    this.inFlight.set(q.info.key, this.eventSeq);
  }

  /** The scheduling attempt for this pod is over (whatever happened to it). */
  done(key: string): void {
    this.inFlight.delete(key);
    if (this.inFlight.size === 0) {
      this.events = [];
      this.eventsHead = 0;
    }
  }

  /**
   * The pod fits nowhere. It sleeps in the unschedulable set unless an event that
   * could help it arrived while it was being scheduled, in which case it backs off.
   */
  addUnschedulable(q: QueuedPodInfo, rejectors: Set<string>): void {
    const since = this.inFlight.get(q.info.key);
    if (since === undefined) return; // deleted (or re-added) while in flight
    q.unschedulablePlugins = rejectors;
    this.stamp(q);
    let missed = false;
    for (let i = this.eventsHead; i < this.events.length && !missed; i++) {
      const e = this.events[i];
      missed = e.seq > since && this.helps(q, e.ev);
    }
    this.done(q.info.key);
    if (this.has(q.info.key)) return;
    if (missed) this.backoffQ.push(q);
    else this.unschedulable.set(q.info.key, q);
  }

  /** The attempt failed for another reason (an error, a failed binding): retry after the backoff. */
  requeueWithBackoff(q: QueuedPodInfo): void {
    const wasInFlight = this.inFlight.has(q.info.key);
    this.done(q.info.key);
    if (!wasInFlight || this.has(q.info.key)) return;
    this.stamp(q);
    this.backoffQ.push(q);
  }

  /** A cluster event: wakes the unschedulable pods it could help. */
  onEvent(ev: ClusterEvent): number {
    if (this.inFlight.size > 0) {
      this.events.push({ seq: ++this.eventSeq, ev });
      this.forgetOldEvents();
    }
    let moved = 0;
    for (const [key, q] of this.unschedulable) {
      if (!this.helps(q, ev)) continue;
      this.unschedulable.delete(key);
      this.requeue(q);
      moved++;
    }
    return moved;
  }

  /**
   * Drops the events every pod in flight was popped after (during a burst pods stay
   * in flight while their bindings run, so the list would otherwise grow to its cap
   * and be shifted on every event), and keeps at most maxRememberedEvents.
   */
  private forgetOldEvents(): void {
    const oldest = this.inFlight.values().next().value ?? this.eventSeq;
    const events = this.events;
    let head = this.eventsHead;
    while (head < events.length && events[head].seq <= oldest) head++;
    head = Math.max(head, events.length - maxRememberedEvents);
    // Compact now and then rather than shifting the array on every event.
    if (head > 1024 && head * 2 > events.length) {
      events.splice(0, head);
      head = 0;
    }
    this.eventsHead = head;
  }

  /** Whether `ev` could make `q` schedulable, per the plugins that rejected it. */
  private helps(q: QueuedPodInfo, ev: ClusterEvent): boolean {
    if (q.unschedulablePlugins.size === 0) return true;
    for (const name of q.unschedulablePlugins) {
      const regs = this.registrations.get(name);
      // A plugin that registered nothing is woken by anything, to be safe.
      if (!regs || regs.length === 0) return true;
      for (const r of regs) if (eventMatches(ev, r)) return true;
    }
    return false;
  }

  private requeue(q: QueuedPodInfo): void {
    if (this.backoffExpiry(q) > this.now()) this.backoffQ.push(q);
    else this.pushActive(q);
  }

  private pushActive(q: QueuedPodInfo): void {
    const w = this.waiters.shift();
    if (w) {
      this.markPopped(q);
      w(q);
      return;
    }
    this.activeQ.push(q);
  }

  backoffDuration(q: QueuedPodInfo): number {
    if (q.attempts === 0) return 0;
    let d = this.initialBackoffMs;
    for (let i = 1; i < q.attempts && d < this.maxBackoffMs; i++) d *= 2;
    return Math.min(d, this.maxBackoffMs);
  }

  backoffExpiry(q: QueuedPodInfo): number {
    return q.timestamp + this.backoffDuration(q);
  }

  /** Moves pods whose backoff is over to activeQ. */
  flushBackoffCompleted(): void {
    const now = this.now();
    for (let q = this.backoffQ.peek(); q && this.backoffExpiry(q) <= now; q = this.backoffQ.peek()) {
      this.backoffQ.pop();
      this.pushActive(q);
    }
  }

  /** Retries pods that have been unschedulable for longer than the limit, event or not. */
  flushUnschedulableLeftover(): void {
    const now = this.now();
    for (const [key, q] of this.unschedulable) {
      if (now - q.timestamp >= this.maxUnschedulableMs) {
        this.unschedulable.delete(key);
        this.requeue(q);
      }
    }
  }

  private find(key: string): QueuedPodInfo | undefined {
    return this.activeQ.get(key) ?? this.backoffQ.get(key) ?? this.unschedulable.get(key);
  }
}
