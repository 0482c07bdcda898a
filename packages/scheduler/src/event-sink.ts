// The "Successfully assigned" events, written off the scheduling path: a bounded
// queue drained by a few concurrent writers. Events are best effort, as in
// Kubernetes (whose event broadcaster drops on overflow): when the queue is full
// a new event is dropped and counted, so a slow apiserver or store never holds up
// bindings nor grows the scheduler's memory. One pod gets one such event, so there
// is nothing to aggregate and each is a plain create.
import { type CoreEvent, eventTimestamp, newEvent } from '@kubit/client';
import type { Pod } from './types.js';

export interface EventSinkOptions {
  /** Writes one event (POST namespaces/<ns>/events). */
  write: (namespace: string, event: CoreEvent) => Promise<unknown>;
  component: string;
  host?: string;
  /** Events waiting at most; more are dropped (default 1000). */
  maxQueued?: number;
  /** Writes in flight at once (default 4). */
  concurrency?: number;
  /** Told once per dropped event (for a counter). */
  onDrop?: () => void;
  /** Told once per failed write. */
  onError?: (err: unknown) => void;
  now?: () => Date;
}

interface Pending {
  namespace: string;
  event: CoreEvent;
}

export class EventSink {
  private readonly queue: Pending[] = [];
  /** Index of the queue's head: shifting a long array on every write would be quadratic. */
  private head = 0;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly maxQueued: number;
  private readonly concurrency: number;
  private seq = 0;
  dropped = 0;
  written = 0;
  failed = 0;

  constructor(private readonly opts: EventSinkOptions) {
    this.maxQueued = opts.maxQueued ?? 1000;
    this.concurrency = Math.max(1, opts.concurrency ?? 4);
  }

  /** Events waiting or being written. */
  get pending(): number {
    return this.queue.length - this.head + this.inFlight;
  }

  /** Queues an event about `pod`; never blocks, never throws. */
  record(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (this.queue.length - this.head >= this.maxQueued) {
      this.dropped++;
      this.opts.onDrop?.();
      return;
    }
    const meta = pod.metadata ?? {};
    // A name unique per event without a random source: the pod's name, the time and a counter.
    const name = `${meta.name ?? 'unknown'}.${Date.now().toString(16)}${(this.seq++ & 0xfff).toString(16)}`;
    const event = newEvent({ apiVersion: 'v1', kind: 'Pod', metadata: meta }, type, reason, message, {
      name,
      component: this.opts.component,
      host: this.opts.host,
      now: eventTimestamp((this.opts.now ?? (() => new Date()))()),
    });
    this.queue.push({ namespace: meta.namespace || 'default', event });
    this.pump();
  }

  /** Resolves when everything queued has been written (or failed), or after `timeoutMs`. */
  async flush(timeoutMs = 2000): Promise<void> {
    if (this.pending === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((res) => this.idleWaiters.push(res)),
      new Promise<void>((res) => {
        timer = setTimeout(res, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.head < this.queue.length) {
      const next = this.queue[this.head++];
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.inFlight++;
      this.opts
        .write(next.namespace, next.event)
        .then(
          () => {
            this.written++;
          },
          (err: unknown) => {
            this.failed++;
            this.opts.onError?.(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          this.pump();
          if (this.pending === 0) for (const w of this.idleWaiters.splice(0)) w();
        });
    }
  }
}
