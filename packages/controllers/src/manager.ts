// Which controllers run (Kubernetes' --controllers syntax) and how they are
// built and started on shared informers.
import type { Logger } from '@kubit/daemon';
import type { Cluster } from './cluster.js';
import { type Controller, runWorkers } from './controller.js';
import type { ControllerName } from './controller-names.js';
import { DeploymentController } from './deployment/controller.js';
import { type EventSink, noEvents } from './events.js';
import { GarbageCollector } from './garbagecollector.js';
import { InformerFactory } from './informer.js';
import { NamespaceController } from './namespace.js';
import { NodeIpamController } from './nodeipam.js';
import { NodeLifecycleController } from './nodelifecycle.js';
import { PodGarbageCollector } from './podgc.js';
import { ReplicaSetController } from './replicaset.js';
import { namespacedForCleanup, type ResourceRef, res } from './resources.js';

export interface ManagerOptions {
  controllers: Set<ControllerName>;
  allocateNodeCIDRs: boolean;
  clusterCIDR?: string;
  nodeCIDRMaskSize: number;
  nodeMonitorGracePeriodMs: number;
  nodeMonitorPeriodMs?: number;
  /** Workers per controller. */
  workers?: number;
  /** An event sink per reporting component ("replicaset-controller", ...). */
  events?: (component: string) => EventSink;
  log: Logger;
}

/** Resources the garbage collector watches for owners and dependents. */
export const GC_RESOURCES: readonly ResourceRef[] = [
  res.deployments,
  res.replicasets,
  res.pods,
  res.services,
  res.endpoints,
  res.configmaps,
  res.secrets,
  res.serviceaccounts,
  res.nodes,
  res.namespaces,
];

export class ControllerManager {
  readonly informers: InformerFactory;
  readonly controllers: Controller[] = [];
  private running: Promise<void>[] = [];

  constructor(
    cluster: Cluster,
    private readonly opts: ManagerOptions,
  ) {
    const log = opts.log;
    this.informers = new InformerFactory(cluster, { log });
    const on = opts.controllers;
    const events = opts.events ?? (() => noEvents);
    if (on.has('replicaset')) {
      this.controllers.push(
        new ReplicaSetController(cluster, this.informers, { log, events: events('replicaset-controller') }),
      );
    }
    if (on.has('deployment')) {
      this.controllers.push(
        new DeploymentController(cluster, this.informers, { log, events: events('deployment-controller') }),
      );
    }
    if (on.has('nodeipam') && opts.allocateNodeCIDRs) {
      if (!opts.clusterCIDR)
        throw new Error('--allocate-node-cidrs needs --cluster-cidr (e.g. 10.244.0.0/16)');
      this.controllers.push(
        new NodeIpamController(cluster, this.informers, {
          clusterCIDR: opts.clusterCIDR,
          nodeCIDRMaskSize: opts.nodeCIDRMaskSize,
          log,
        }),
      );
    }
    if (on.has('nodelifecycle')) {
      this.controllers.push(
        new NodeLifecycleController(cluster, this.informers, {
          gracePeriodMs: opts.nodeMonitorGracePeriodMs,
          monitorPeriodMs: opts.nodeMonitorPeriodMs,
          events: events('node-controller'),
          log,
        }),
      );
    }
    if (on.has('garbagecollector')) {
      this.controllers.push(new GarbageCollector(cluster, this.informers, { resources: GC_RESOURCES, log }));
    }
    if (on.has('namespace')) {
      this.controllers.push(
        new NamespaceController(cluster, this.informers, { resources: namespacedForCleanup, log }),
      );
    }
    if (on.has('podgc')) this.controllers.push(new PodGarbageCollector(cluster, this.informers, { log }));
  }

  get names(): string[] {
    return this.controllers.map((c) => c.name);
  }

  /** Starts informers, waits for their caches, then the controllers' workers. */
  async start(signal?: AbortSignal): Promise<void> {
    this.informers.start();
    await Promise.race([
      this.informers.waitForSync(),
      new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true })),
    ]);
    if (signal?.aborted) return;
    this.opts.log.info({ controllers: this.names }, 'caches synced; starting controllers');
    for (const c of this.controllers) {
      c.start?.();
      this.running.push(runWorkers(c, this.opts.workers ?? 2, this.opts.log));
    }
  }

  async stop(): Promise<void> {
    for (const c of this.controllers) {
      c.stop?.();
      c.queue.shutDown();
    }
    this.informers.stop();
    await Promise.allSettled(this.running);
    this.running = [];
  }
}
