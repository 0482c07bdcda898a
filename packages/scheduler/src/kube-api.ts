// The scheduler's SchedulerApi over the real apiserver: bindings through the
// pods/binding subresource, the PodScheduled condition through pods/status,
// the "Scheduled" events through the scheduler's own bounded EventSink (one per
// pod, many per second), and the rarer warnings through the client's recorder,
// which folds repeats of the same FailedScheduling message into one Event.
import { isNotFound } from '@kubit/api';
import { type EventRecorder, type KubeClient, resources } from '@kubit/client';
import type { EventSink } from './event-sink.js';
import type { SchedulerApi } from './scheduler.js';
import type { Pod, PodCondition } from './types.js';

export class KubeSchedulerApi implements SchedulerApi {
  constructor(
    private readonly client: KubeClient,
    private readonly recorder: EventRecorder,
    /** The latest copy of a pod (from the informer), so a status patch starts from fresh conditions. */
    private readonly latest: (pod: Pod) => Pod | undefined = () => undefined,
    /** Where Normal events go; without one, every event goes through the recorder. */
    private readonly sink?: EventSink,
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

  async updatePodCondition(pod: Pod, condition: PodCondition, nominatedNodeName?: string): Promise<void> {
    const current = this.latest(pod) ?? pod;
    const others = (current.status?.conditions ?? []).filter((c) => c.type !== condition.type);
    // A JSON merge patch replaces the list, so send it whole: the other conditions plus ours.
    await this.client.patch(
      resources.pods,
      pod.metadata?.name ?? '',
      { status: { conditions: [...others, condition], ...(nominatedNodeName ? { nominatedNodeName } : {}) } },
      { namespace: pod.metadata?.namespace ?? 'default', subresource: 'status', type: 'merge' },
    );
  }

  /**
   * As Kubernetes' preemption evicts: the DisruptionTarget condition first (so the
   * pod's owner can tell why it went), then the delete, then the Preempted event.
   */
  async preemptVictim(victim: Pod, preemptor: Pod, node: string): Promise<void> {
    const namespace = victim.metadata?.namespace ?? 'default';
    const name = victim.metadata?.name ?? '';
    const schedulerName = preemptor.spec?.schedulerName ?? 'default-scheduler';
    const condition: PodCondition = {
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'PreemptionByScheduler',
      message: `${schedulerName}: preempting to accommodate a higher priority pod`,
      lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    const current = this.latest(victim) ?? victim;
    const others = (current.status?.conditions ?? []).filter((c) => c.type !== condition.type);
    try {
      await this.client.patch(
        resources.pods,
        name,
        { status: { conditions: [...others, condition] } },
        { namespace, subresource: 'status', type: 'merge' },
      );
      await this.client.delete(resources.pods, name, {
        namespace,
        preconditions: { uid: victim.metadata?.uid },
      });
    } catch (err) {
      // Already gone: what the preemption wanted.
      if (isNotFound(err)) return;
      throw err;
    }
    this.recorder.event(
      victim,
      'Normal',
      'Preempted',
      `Preempted by pod ${preemptor.metadata?.uid ?? ''} on node ${node}`,
    );
  }

  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (type === 'Normal' && this.sink) this.sink.record(pod, type, reason, message);
    else this.recorder.event(pod, type, reason, message);
  }
}
