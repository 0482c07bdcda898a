// A pod's events as its worker sends them: some at every occurrence, others
// (a waiting reason that every sync finds again) only when they change.
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { EventSink, EventType } from './sinks.js';

export class PodEvents {
  /** The last (reason, message) sent per key (a container name, 'sandbox', 'volumes'). */
  private readonly last = new Map<string, string>();

  constructor(
    private readonly sink: EventSink,
    private readonly pod: () => Pod,
  ) {}

  event(type: EventType, reason: string, message: string): void {
    this.sink.event(this.pod(), type, reason, message);
  }

  /** Sends an event only when (reason, message) differs from the last one for `key`. */
  once(key: string, type: EventType, reason: string, message: string): void {
    const sig = `${reason}\u0000${message}`;
    if (this.last.get(key) === sig) return;
    this.last.set(key, sig);
    this.event(type, reason, message);
  }

  /** Records that `reason` was sent for `key` another way, so the next `once` for it is sent. */
  note(key: string, reason: string): void {
    this.last.set(key, reason);
  }

  /** The trouble behind `key` is over: its next event is sent even if it repeats the last. */
  clear(key: string): void {
    this.last.delete(key);
  }
}
