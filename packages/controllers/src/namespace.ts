// The namespace controller: when a namespace is deleted (the apiserver marks it
// Terminating and it keeps the `kubernetes` finalizer in spec.finalizers), it
// deletes everything in the namespace and, once nothing is left, removes the
// finalizer through the finalize subresource so the namespace itself goes.
import { isConflict, isNotFound } from '@kubit/api';
import {
  type Informer,
  RateLimitingQueue,
  type ResourceRef,
  resources,
  type SharedInformerFactory,
} from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from './cluster.js';
import type { Controller } from './controller.js';
import { pdbResource } from './disruption/budget.js';

import type { Namespace } from './types.js';

export const FINALIZER_KUBERNETES = 'kubernetes';

export interface NamespaceControllerOptions {
  /** Namespaced resources to empty. */
  resources: readonly ResourceRef[];
  /**
   * Namespaced resources known only at run time (custom resources), asked for at
   * each namespace deletion, as Kubernetes' namespace controller asks discovery.
   */
  discover?: () => Promise<readonly ResourceRef[]>;
  /** How long to wait before looking again while objects are still going (ms). */
  recheckMs?: number;
  log?: Logger;
}

/** Namespaced resources a namespace deletion empties, in an order that lets owners go first. */
export const namespacedForCleanup: readonly ResourceRef[] = [
  resources.deployments,
  resources.replicasets,
  resources.replicationcontrollers,
  resources.statefulsets,
  resources.controllerrevisions,
  resources.jobs,
  resources.pods,
  resources.services,
  resources.endpoints,
  resources.configmaps,
  resources.secrets,
  resources.serviceaccounts,
  resources.leases,
  resources.events,
  pdbResource,
  resources.persistentvolumeclaims,
  resources.csistoragecapacities,
  resources.resourcequotas,
  resources.limitranges,
  resources.jobs,
  resources.cronjobs,
];

export class NamespaceController implements Controller {
  readonly name = 'namespace';
  readonly queue = new RateLimitingQueue<string>();
  private readonly namespaces: Informer<Namespace>;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: NamespaceControllerOptions,
  ) {
    this.namespaces = informers.forResource<Namespace>(resources.namespaces);
    this.namespaces.addEventHandler({
      onAdd: (ns) => ns.metadata?.deletionTimestamp && this.queue.add(keyOf(ns)),
      onUpdate: (_o, ns) => ns.metadata?.deletionTimestamp && this.queue.add(keyOf(ns)),
    });
  }

  async reconcile(name: string): Promise<void> {
    const ns = this.namespaces.store.getByKey(name);
    if (!ns?.metadata?.deletionTimestamp) return;
    if (!ns.spec?.finalizers?.includes(FINALIZER_KUBERNETES)) return;
    await this.deleteContent(name);
    // Objects with finalizers (or still terminating) remain for a while.
    const remaining = await this.deleteContent(name);
    if (remaining > 0) {
      this.opts.log?.info({ namespace: name, remaining }, 'waiting for namespace content to go');
      this.queue.addAfter(name, this.opts.recheckMs ?? 1000);
      return;
    }
    const next = structuredClone(ns);
    next.spec = { ...next.spec, finalizers: ns.spec.finalizers.filter((f) => f !== FINALIZER_KUBERNETES) };
    try {
      await this.cluster.update(resources.namespaces, next, 'finalize');
      this.opts.log?.info({ namespace: name }, 'namespace emptied; finalized');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Deletes every object in the namespace not already going; returns how many it found. */
  private async deleteContent(namespace: string): Promise<number> {
    let remaining = 0;
    const extra = this.opts.discover
      ? await this.opts.discover().catch((err: unknown) => {
          this.opts.log?.warn({ err }, 'discovery of custom resources failed; emptying the built-in ones');
          return [];
        })
      : [];
    for (const r of [...this.opts.resources, ...extra]) {
      let items: { metadata?: { name?: string; uid?: string; deletionTimestamp?: string } }[];
      try {
        items = (await this.cluster.list(r, namespace)).items;
      } catch (err) {
        // A resource this apiserver does not serve holds nothing.
        if (isNotFound(err)) continue;
        throw err;
      }
      for (const o of items) {
        remaining++;
        if (o.metadata?.deletionTimestamp) continue;
        try {
          await this.cluster.delete(r, namespace, o.metadata?.name ?? '', {
            propagationPolicy: 'Background',
            preconditions: { uid: o.metadata?.uid },
          });
        } catch (err) {
          if (!isNotFound(err) && !isConflict(err)) throw err;
        }
      }
    }
    return remaining;
  }
}
