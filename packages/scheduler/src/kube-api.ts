// The scheduler's SchedulerApi over the real apiserver: bindings through the
// pods/binding subresource, the PodScheduled condition through pods/status,
// and events through the client's recorder.
import { type EventRecorder, type KubeClient, resources } from '@kubit/client';
import type { SchedulerApi } from './scheduler.js';
import type { Pod, PodCondition } from './types.js';

export class KubeSchedulerApi implements SchedulerApi {
  constructor(
    private readonly client: KubeClient,
    private readonly recorder: EventRecorder,
    /** The latest copy of a pod (from the informer), so a status patch starts from fresh conditions. */
    private readonly latest: (pod: Pod) => Pod | undefined = () => undefined,
  ) {}

  async bind(pod: Pod, nodeName: string): Promise<void> {
    const namespace = pod.metadata?.namespace ?? 'default';
    await this.client.create(
      resources.pods,
      {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod.metadata?.name, namespace, uid: pod.metadata?.uid },
        target: { apiVersion: 'v1', kind: 'Node', name: nodeName },
      } as Parameters<KubeClient['create']>[1],
      { namespace, subresource: 'binding' },
    );
  }

  async updatePodCondition(pod: Pod, condition: PodCondition): Promise<void> {
    const current = this.latest(pod) ?? pod;
    const others = (current.status?.conditions ?? []).filter((c) => c.type !== condition.type);
    // A JSON merge patch replaces the list, so send it whole: the other conditions plus ours.
    await this.client.patch(
      resources.pods,
      pod.metadata?.name ?? '',
      { status: { conditions: [...others, condition] } },
      { namespace: pod.metadata?.namespace ?? 'default', subresource: 'status', type: 'merge' },
    );
  }

  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.recorder.event(pod, type, reason, message);
  }
}
