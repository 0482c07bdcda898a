// The cluster's Services by namespace, kept by an informer, for the environment
// variables every container gets (pods/service-env.ts). A container start looks up
// one namespace, so the index is per namespace rather than a scan of every Service.
import { Informer, type KubeClient, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type { Service } from 'kubernetes-types/core/v1.js';
import type { ServiceSource } from '../pods/service-env.js';

/** How long the kubelet waits for the first list of Services before it starts pods anyway. */
const SYNC_WAIT_MS = 10_000;

export class ServiceIndex implements ServiceSource {
  private readonly byNamespace = new Map<string, Map<string, Service>>();
  private readonly informer: Informer<Service>;

  constructor(client: KubeClient, log: Logger) {
    this.informer = new Informer<Service>(client, resources.services, {
      backoff: { baseDelayMs: 200, maxDelayMs: 5000 },
      onError: (err) => log.warn({ err: (err as Error).message }, 'service watch failed, retrying'),
    });
    this.informer.addEventHandler({
      onAdd: (s) => this.put(s),
      onUpdate: (_old, s) => this.put(s),
      onDelete: (s) => this.byNamespace.get(s.metadata?.namespace ?? '')?.delete(s.metadata?.name ?? ''),
    });
  }

  private put(s: Service): void {
    const ns = s.metadata?.namespace ?? '';
    const names = this.byNamespace.get(ns) ?? new Map<string, Service>();
    this.byNamespace.set(ns, names);
    names.set(s.metadata?.name ?? '', s);
  }

  list(namespace: string): Service[] {
    return [...(this.byNamespace.get(namespace)?.values() ?? [])];
  }

  /**
   * Starts watching and waits (boundedly) for the first list, as Kubernetes' kubelet
   * waits for its Service informer: a pod started before it would miss its variables.
   */
  async start(log: Logger): Promise<void> {
    this.informer.start();
    const timeout = AbortSignal.timeout(SYNC_WAIT_MS);
    await this.informer.waitForSync(timeout).catch(() => {
      log.warn(`services not listed within ${SYNC_WAIT_MS / 1000} s; starting pods without waiting`);
    });
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }
}
