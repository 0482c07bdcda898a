// The Cluster port over @kubit/client: the real apiserver's REST API and watch.
import { type Status, StatusError } from '@kubit/api';
import type { KubeClient, ResourceRef } from '@kubit/client';
import type { Cluster, ListResult, WatchHandle, WatchOptions } from './cluster.js';
import type { DeleteOptions, KubeObject } from './types.js';

// kubernetes-types marks server-set fields read-only; on the wire they are the same objects.
const wire = <T>(o: T): KubeObject => o as unknown as KubeObject;
const typed = <T>(o: unknown): T => o as T;

export class RestCluster implements Cluster {
  constructor(private readonly client: KubeClient) {}

  async list<T extends KubeObject>(r: ResourceRef, namespace?: string): Promise<ListResult<T>> {
    const l = await this.client.listAll(r, { namespace });
    return { items: typed<T[]>(l.items), resourceVersion: l.metadata?.resourceVersion ?? '' };
  }

  watch(r: ResourceRef, opts: WatchOptions): WatchHandle {
    let failure: Error | undefined;
    // Servers end watches after a while; a random timeout spreads the re-watches.
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    const w = this.client.watch(r, {
      namespace: opts.namespace,
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
      onEvent: (ev) => {
        if (ev.type === 'ERROR') {
          // e.g. 410 Expired: the resourceVersion is too old and the informer must relist.
          failure = StatusError.fromStatus(typed<Status>(ev.object));
          w.stop();
          return;
        }
        opts.onEvent({ type: ev.type, object: typed<KubeObject>(ev.object) });
      },
      onClose: (err) => opts.onClose(failure ?? err),
    });
    return { stop: () => w.stop() };
  }

  async get<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, name: string): Promise<T> {
    return typed<T>(await this.client.get(r, name, { namespace }));
  }

  async create<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, obj: T): Promise<T> {
    return typed<T>(await this.client.create(r, wire(obj), { namespace }));
  }

  async update<T extends KubeObject>(
    r: ResourceRef,
    obj: T,
    subresource?: 'status' | 'finalize',
  ): Promise<T> {
    return typed<T>(await this.client.update(r, wire(obj), { subresource }));
  }

  async delete(
    r: ResourceRef,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    await this.client.delete(r, name, {
      namespace,
      propagationPolicy: opts.propagationPolicy as 'Orphan' | 'Background' | 'Foreground' | undefined,
      preconditions: opts.preconditions
        ? {
            uid: opts.preconditions.uid ?? undefined,
            resourceVersion: opts.preconditions.resourceVersion ?? undefined,
          }
        : undefined,
      gracePeriodSeconds: opts.gracePeriodSeconds,
    });
  }
}
