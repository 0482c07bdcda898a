// Which controllers run (Kubernetes' --controllers syntax) and how they are
// built and started on shared informers.

import { type ResourceRef, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type { Cluster } from './cluster.js';
import { type Controller, runWorkers } from './controller.js';
import type { ControllerName } from './controller-names.js';
import { CronJobController } from './cronjob/controller.js';
import { DaemonSetController } from './daemonset/controller.js';
import { DeploymentController } from './deployment/controller.js';
import { pdbResource } from './disruption/budget.js';
import { DisruptionController } from './disruption/controller.js';
import { EndpointsController } from './endpoints/endpoints-controller.js';
import { EndpointSliceController } from './endpoints/endpointslice-controller.js';
import { EndpointSliceMirroringController } from './endpoints/mirroring-controller.js';
import { endpointSliceResource } from './endpoints/shared.js';
import { type EventSink, noEvents } from './events.js';
import { GarbageCollector } from './garbagecollector.js';
import { type HpaApi, hpaResource } from './hpa/api.js';
import { HorizontalPodAutoscalerController, type HpaControllerOptions } from './hpa/controller.js';
import { JobController } from './job/controller.js';
import { LoadBalancerIpamController } from './loadbalancer/controller.js';
import { parsePool } from './loadbalancer/pool.js';
import { NamespaceController, namespacedForCleanup } from './namespace.js';
import { NodeIpamController } from './nodeipam.js';
import { NodeLifecycleController } from './nodelifecycle.js';
import { PodGarbageCollector } from './podgc.js';
import { ReplicaSetController, ReplicationManager } from './replicaset.js';
import { ResourceQuotaController } from './resourcequota/controller.js';
import type { ServedFilter } from './served.js';
import { RootCAPublisher, ServiceAccountsController } from './serviceaccounts.js';
import { StatefulSetController } from './statefulset/controller.js';
import { TTLAfterFinishedController } from './ttlafterfinished.js';
import { PersistentVolumeBinder } from './volume/binder.js';
import { EphemeralVolumeController } from './volume/ephemeral.js';
import { PersistentVolumeExpander } from './volume/expander.js';
import { PvcProtectionController, PvProtectionController } from './volume/protection.js';

export interface ManagerOptions {
  controllers: Set<ControllerName>;
  allocateNodeCIDRs: boolean;
  clusterCIDR?: string;
  nodeCIDRMaskSize: number;
  nodeMonitorGracePeriodMs: number;
  nodeMonitorPeriodMs?: number;
  /** At most this many endpoints in one EndpointSlice (--max-endpoints-per-slice). */
  maxEndpointsPerSlice?: number;
  /** The most addresses of one Endpoints subset mirrored into a slice (--mirroring-max-endpoints-per-subset). */
  mirroringMaxEndpointsPerSubset?: number;
  /** The LoadBalancer address pool (--load-balancer-ip-range); service-lb-ipam is off without it. */
  loadBalancerIPRange?: string;
  /** Workers per controller. */
  workers?: number;
  /**
   * Which resources the apiserver serves (see served.ts); the garbage collector
   * and the namespace controller watch only those. Everything when absent.
   */
  served?: ServedFilter;
  /** Custom resources the namespace controller empties too, asked for at each namespace deletion. */
  customResources?: () => Promise<readonly ResourceRef[]>;
  /** The CA bundle (PEM) published as kube-root-ca.crt in every namespace; the publisher is off without it. */
  rootCA?: string;
  /** What the HPA controller reads beyond informers (scale subresources, metrics.k8s.io); it is off without it. */
  hpaApi?: HpaApi;
  /** The HPA controller's tuning (--horizontal-pod-autoscaler-* flags). */
  hpa?: Omit<HpaControllerOptions, 'api' | 'events' | 'log'>;
  /** An event sink per reporting component ("replicaset-controller", ...). */
  events?: (component: string) => EventSink;
  log: Logger;
}

/** Resources the garbage collector watches for owners and dependents. */
export const GC_RESOURCES: readonly ResourceRef[] = [
  resources.deployments,
  resources.replicasets,
  resources.replicationcontrollers,
  resources.daemonsets,
  resources.statefulsets,
  resources.controllerrevisions,
  resources.jobs,
  resources.pods,
  resources.services,
  resources.endpoints,
  endpointSliceResource,
  resources.configmaps,
  resources.secrets,
  resources.serviceaccounts,
  resources.nodes,
  resources.namespaces,
  resources.persistentvolumeclaims,
  resources.persistentvolumes,
  resources.jobs,
  resources.cronjobs,
];

export class ControllerManager {
  readonly informers: SharedInformerFactory;
  readonly controllers: Controller[] = [];
  private running: Promise<void>[] = [];

  /**
   * `informers` is the process's one SharedInformerFactory (over the same
   * apiserver as `cluster`): every controller takes its informers from it.
   */
  constructor(
    cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: ManagerOptions,
  ) {
    const log = opts.log;
    const served = opts.served ?? (() => true);
    this.informers = informers;
    const on = opts.controllers;
    const events = opts.events ?? (() => noEvents);
    if (on.has('replicaset')) {
      this.controllers.push(
        new ReplicaSetController(cluster, this.informers, { log, events: events('replicaset-controller') }),
      );
    }
    if (on.has('replicationcontroller')) {
      this.controllers.push(
        new ReplicationManager(cluster, this.informers, { log, events: events('replication-controller') }),
      );
    }
    if (on.has('deployment')) {
      this.controllers.push(
        new DeploymentController(cluster, this.informers, { log, events: events('deployment-controller') }),
      );
    }
    if (on.has('daemonset')) {
      // Its informers would wait for ever on an apiserver without DaemonSets.
      if (served(resources.daemonsets) && served(resources.controllerrevisions)) {
        this.controllers.push(
          new DaemonSetController(cluster, this.informers, { log, events: events('daemonset-controller') }),
        );
      } else log.warn('the apiserver serves no apps/v1 DaemonSets; daemonset controller not started');
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
      this.controllers.push(
        new GarbageCollector(cluster, this.informers, {
          resources: GC_RESOURCES.filter(served),
          discover: opts.customResources,
          log,
        }),
      );
    }
    if (on.has('namespace')) {
      this.controllers.push(
        new NamespaceController(cluster, this.informers, {
          resources: namespacedForCleanup.filter(served),
          discover: opts.customResources
            ? async () => (await opts.customResources!()).filter((r) => r.namespaced)
            : undefined,
          log,
        }),
      );
    }
    if (on.has('podgc')) this.controllers.push(new PodGarbageCollector(cluster, this.informers, { log }));
    if (on.has('serviceaccount'))
      this.controllers.push(new ServiceAccountsController(cluster, this.informers));
    if (on.has('root-ca-cert-publisher') && opts.rootCA) {
      this.controllers.push(new RootCAPublisher(cluster, this.informers, opts.rootCA, log));
    }
    if (on.has('endpoint')) {
      this.controllers.push(
        new EndpointsController(cluster, this.informers, { events: events('endpoint-controller'), log }),
      );
    }
    if (on.has('endpointslice')) {
      // Its informer would wait for ever on an apiserver without EndpointSlices.
      if (served(endpointSliceResource)) {
        this.controllers.push(
          new EndpointSliceController(cluster, this.informers, {
            maxEndpointsPerSlice: opts.maxEndpointsPerSlice,
            events: events('endpoint-slice-controller'),
            log,
          }),
        );
      } else
        log.warn(
          'the apiserver serves no discovery.k8s.io/v1 EndpointSlices; endpointslice controller not started',
        );
    }
    if (on.has('endpointslicemirroring') && served(endpointSliceResource)) {
      this.controllers.push(
        new EndpointSliceMirroringController(cluster, this.informers, {
          maxEndpointsPerSubset: opts.mirroringMaxEndpointsPerSubset,
          log,
        }),
      );
    }
    if (on.has('disruption')) {
      // Its informer would wait for ever on an apiserver without PodDisruptionBudgets.
      if (served(pdbResource)) {
        this.controllers.push(
          new DisruptionController(cluster, this.informers, { events: events('controllermanager'), log }),
        );
      } else
        log.warn('the apiserver serves no policy/v1 PodDisruptionBudgets; disruption controller not started');
    }
    if (on.has('statefulset')) {
      // Its informers would wait for ever on an apiserver without StatefulSets.
      if (served(resources.statefulsets) && served(resources.controllerrevisions)) {
        this.controllers.push(
          new StatefulSetController(cluster, this.informers, {
            claimsServed: served(resources.persistentvolumeclaims),
            events: events('statefulset-controller'),
            log,
          }),
        );
      } else log.warn('the apiserver serves no apps/v1 StatefulSets; statefulset controller not started');
    }
    // The volume controllers' informers would wait for ever on an apiserver without the storage kinds.
    const storageServed = [
      resources.persistentvolumes,
      resources.persistentvolumeclaims,
      resources.storageclasses,
    ].every(served);
    const volumeControllers = [
      'persistentvolume-binder',
      'persistentvolume-expander',
      'pvc-protection',
      'pv-protection',
      'ephemeral-volume',
    ] as const;
    if (volumeControllers.some((n) => on.has(n)) && !storageServed)
      log.warn(
        'the apiserver serves no PersistentVolumes, claims or StorageClasses; volume controllers not started',
      );
    else {
      if (on.has('persistentvolume-binder'))
        this.controllers.push(
          new PersistentVolumeBinder(cluster, this.informers, {
            events: events('persistentvolume-controller'),
            log,
          }),
        );
      if (on.has('persistentvolume-expander'))
        this.controllers.push(
          new PersistentVolumeExpander(cluster, this.informers, { events: events('volume_expand') }),
        );
      if (on.has('pvc-protection'))
        this.controllers.push(new PvcProtectionController(cluster, this.informers, { log }));
      if (on.has('pv-protection')) this.controllers.push(new PvProtectionController(cluster, this.informers));
      if (on.has('ephemeral-volume'))
        this.controllers.push(
          new EphemeralVolumeController(cluster, this.informers, { events: events('ephemeral_volume') }),
        );
    }
    if (on.has('job')) {
      // Its informer would wait for ever on an apiserver without Jobs.
      if (served(resources.jobs)) {
        this.controllers.push(
          new JobController(cluster, this.informers, { events: events('job-controller'), log }),
        );
      } else log.warn('the apiserver serves no batch/v1 Jobs; job controller not started');
    }
    if (on.has('resourcequota')) {
      // Its informer would wait for ever on an apiserver without ResourceQuotas.
      if (served(resources.resourcequotas)) {
        this.controllers.push(new ResourceQuotaController(cluster, this.informers, { log, served }));
      } else log.warn('the apiserver serves no ResourceQuotas; resourcequota controller not started');
    }
    if (on.has('ttl-after-finished') && served(resources.jobs)) {
      this.controllers.push(new TTLAfterFinishedController(cluster, this.informers, { log }));
    }
    if (on.has('cronjob')) {
      // Its informers would wait for ever on an apiserver without batch/v1.
      if (served(resources.cronjobs) && served(resources.jobs)) {
        this.controllers.push(
          new CronJobController(cluster, this.informers, { events: events('cronjob-controller'), log }),
        );
      } else log.warn('the apiserver serves no batch/v1 CronJobs; cronjob controller not started');
    }
    if (on.has('horizontalpodautoscaling')) {
      if (served(hpaResource) && opts.hpaApi) {
        this.controllers.push(
          new HorizontalPodAutoscalerController(cluster, this.informers, {
            ...opts.hpa,
            api: opts.hpaApi,
            events: events('horizontal-pod-autoscaler'),
            log,
          }),
        );
      } else
        log.warn(
          'no autoscaling/v2 HorizontalPodAutoscalers served (or no client for them); HPA controller not started',
        );
    }
    if (on.has('service-lb-ipam') && opts.loadBalancerIPRange) {
      this.controllers.push(
        new LoadBalancerIpamController(cluster, this.informers, {
          pool: parsePool(opts.loadBalancerIPRange),
          events: events('service-lb-ipam'),
          log,
        }),
      );
    }
  }

  get names(): string[] {
    return this.controllers.map((c) => c.name);
  }

  /** Starts informers, waits for their caches, then the controllers' workers. */
  async start(signal?: AbortSignal): Promise<void> {
    this.informers.start();
    try {
      await this.informers.waitForCacheSync(signal);
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
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
    await this.informers.stop();
    await Promise.allSettled(this.running);
    this.running = [];
  }
}
