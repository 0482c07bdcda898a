// The pod logic's sinks, backed by the apiserver through @kubit/client.
import { isConflict, isNotFound } from '@kubit/api';
import { EventRecorder, type KubeClient, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type { ConfigMap, Pod, PodStatus, Secret } from 'kubernetes-types/core/v1.js';
import type { EventSink, EventType, ObjectSource, PodStatusSink } from '../pods/sinks.js';

/** PUT pods/{name}/status with the latest status (retried on conflicts); DELETE once terminated. */
export class ApiPodStatusSink implements PodStatusSink {
  /** Latest status per pod uid, written by one loop per pod so a slow write never piles up. */
  private readonly pending = new Map<string, { pod: Pod; status: PodStatus }>();
  private readonly writing = new Set<string>();

  constructor(
    private readonly client: KubeClient,
    private readonly log: Logger,
  ) {}

  setStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    this.pending.set(uid, { pod, status });
    if (!this.writing.has(uid)) void this.drain(uid);
  }

  private async drain(uid: string): Promise<void> {
    this.writing.add(uid);
    try {
      for (let next = this.pending.get(uid); next; next = this.pending.get(uid)) {
        this.pending.delete(uid);
        await this.write(next.pod, next.status);
      }
    } finally {
      this.writing.delete(uid);
    }
  }

  private async write(pod: Pod, status: PodStatus): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const current = await this.client.get<Pod>(resources.pods, name, { namespace });
        if (current.metadata?.uid !== pod.metadata?.uid) return; // a different pod by the same name
        await this.client.updateStatus<Pod>(resources.pods, { ...current, status }, { namespace });
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err)) {
          this.log.warn({ pod: `${namespace}/${name}`, err }, 'pod status update failed');
          await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
        }
      }
    }
  }

  async podTerminated(pod: Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    try {
      // Everything the pod ran is gone: finish the deletion the user started.
      await this.client.delete(resources.pods, name, {
        namespace,
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata?.uid },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err))
        this.log.warn({ pod: `${namespace}/${name}`, err }, 'final pod delete failed');
    }
  }
}

export class ApiEventSink implements EventSink {
  private readonly recorder: EventRecorder;
  constructor(client: KubeClient, nodeName: string, log: Logger) {
    this.recorder = new EventRecorder(client, {
      component: 'kubelet',
      host: nodeName,
      onError: (err) => log.debug({ err }, 'event write failed'),
    });
  }

  event(pod: Pod, type: EventType, reason: string, message: string): void {
    this.recorder.event({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata }, type, reason, message);
  }

  flush(): Promise<void> {
    return this.recorder.flush();
  }
}

export class ApiObjectSource implements ObjectSource {
  constructor(private readonly client: KubeClient) {}

  async configMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    try {
      return await this.client.get<ConfigMap>(resources.configmaps, name, { namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async secret(namespace: string, name: string): Promise<Secret | undefined> {
    try {
      return await this.client.get<Secret>(resources.secrets, name, { namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
