// An in-memory SchedulerApi for unit tests: records bindings, conditions and events,
// and can be told to fail bindings.
import type { SchedulerApi } from '../src/scheduler.js';
import type { Pod, PodCondition } from '../src/types.js';

export class FakeApi implements SchedulerApi {
  readonly bindings = new Map<string, string>();
  readonly conditions = new Map<string, PodCondition>();
  readonly events: { pod: string; type: string; reason: string; message: string }[] = [];
  failBindings = false;
  /** Called after each successful bind, e.g. to echo the bound pod back like a watch would. */
  onBound: ((pod: Pod, node: string) => void) | null = null;

  async bind(pod: Pod, nodeName: string): Promise<void> {
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    if (this.failBindings) throw new Error(`pods "${pod.metadata?.name}" binding refused`);
    if (this.bindings.has(key)) throw new Error(`pod ${key} is already bound`);
    this.bindings.set(key, nodeName);
    this.onBound?.(pod, nodeName);
  }

  async updatePodCondition(pod: Pod, condition: PodCondition): Promise<void> {
    this.conditions.set(`${pod.metadata?.namespace}/${pod.metadata?.name}`, condition);
  }

  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.events.push({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, type, reason, message });
  }

  lastEvent(key: string) {
    return this.events.filter((e) => e.pod === key).at(-1);
  }
}
