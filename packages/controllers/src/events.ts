// Where controllers report what they did (kubectl describe shows it). The
// daemon connects this to @kubit/client's EventRecorder; tests record in memory.
import type { KubeObject } from './types.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
  event(obj: KubeObject, type: EventType, reason: string, message: string): void;
}

export const noEvents: EventSink = { event() {} };

export interface RecordedEvent {
  object: string;
  type: EventType;
  reason: string;
  message: string;
}

export class RecordingEvents implements EventSink {
  readonly events: RecordedEvent[] = [];

  event(obj: KubeObject, type: EventType, reason: string, message: string): void {
    const ns = obj.metadata?.namespace;
    this.events.push({
      object: `${obj.kind}/${ns ? `${ns}/` : ''}${obj.metadata?.name}`,
      type,
      reason,
      message,
    });
  }

  reasons(): string[] {
    return this.events.map((e) => e.reason);
  }
}
