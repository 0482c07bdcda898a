// The last-change-trigger-time of a Service's endpoints, as Kubernetes'
// TriggerTimeTracker computes it: the earliest of the changes (a pod's Ready
// transition, the Service's creation) not yet reflected by a previous sync.
// kubit-proxy subtracts it from the time its rules are in the kernel, so it
// measures from the oldest change this write carries. One tracker per
// controller; a key is never synced by two workers at once (the work queue).
import type { Pod, Service } from '@kubit/api';
import { podReadyCondition, timeOf } from '../objects.js';

interface State {
  service: number;
  pods: Map<string, number>;
}

export class TriggerTimeTracker {
  private readonly states = new Map<string, State>();

  /** Milliseconds since the epoch, or undefined when nothing changed that has a time. */
  compute(key: string, svc: Service, pods: readonly Pod[]): number | undefined {
    const prev = this.states.get(key);
    const service = timeOf(svc.metadata?.creationTimestamp);
    const times = new Map<string, number>();
    let min: number | undefined;
    for (const p of pods) {
      const t = timeOf(podReadyCondition(p)?.lastTransitionTime);
      if (!t) continue;
      const name = p.metadata?.name ?? '';
      times.set(name, t);
      if (t > (prev?.pods.get(name) ?? 0)) min = min === undefined ? t : Math.min(min, t);
    }
    if (service > (prev?.service ?? 0)) min = min === undefined ? service : Math.min(min, service);
    this.states.set(key, { service, pods: times });
    // A Service seen for the first time: its creation is what triggered the first write.
    if (!prev) return service || undefined;
    return min;
  }

  forget(key: string): void {
    this.states.delete(key);
  }
}
