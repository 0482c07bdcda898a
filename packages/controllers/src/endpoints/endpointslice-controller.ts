// The endpointslice controller: keeps, for every Service with a selector, the
// discovery.k8s.io/v1 EndpointSlices holding the pods it selects (see slices.ts
// for how they are laid out). Services without a selector are left alone: their
// slices are the user's (or the mirroring controller's). A deleted Service's
// slices go with it through their owner reference (the garbage collector).

import type { EndpointSlice, Node, Pod, Service } from '@kubit/api';
import { ENDPOINTSLICE_CONTROLLER_NAME, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { controllerOf } from '../objects.js';
import { ensureIndex } from '../shared-informers.js';
import {
  endpointRelevant,
  endpointSliceResource,
  managesEndpoints,
  selectedPods,
  serviceSelects,
  sliceOwnerKey,
} from './shared.js';
import { SliceTracker } from './slice-tracker.js';
import {
  DEFAULT_MAX_ENDPOINTS_PER_SLICE,
  desiredPortGroups,
  planSlices,
  serviceSliceMeta,
} from './slices.js';
import { TriggerTimeTracker } from './trigger-time.js';

const SERVICE_INDEX = 'endpointslice:service';

export interface EndpointSliceControllerOptions {
  maxEndpointsPerSlice?: number;
  events?: EventSink;
  log?: Logger;
}

const serviceKeyOfSlice = (s: EndpointSlice) => sliceOwnerKey(s, ENDPOINTSLICE_CONTROLLER_NAME);

export class EndpointSliceController implements Controller {
  readonly name = 'endpointslice';
  readonly queue = new RateLimitingQueue<string>();
  private readonly services: Informer<Service>;
  private readonly pods: Informer<Pod>;
  private readonly nodes: Informer<Node>;
  private readonly slices: Informer<EndpointSlice>;
  private readonly tracker = new SliceTracker();
  private readonly triggerTimes = new TriggerTimeTracker();
  private readonly max: number;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: EndpointSliceControllerOptions = {},
  ) {
    this.max = opts.maxEndpointsPerSlice ?? DEFAULT_MAX_ENDPOINTS_PER_SLICE;
    this.events = opts.events ?? noEvents;
    this.services = informers.forResource<Service>(resources.services);
    this.pods = informers.forResource<Pod>(resources.pods);
    this.nodes = informers.forResource<Node>(resources.nodes);
    this.slices = informers.forResource<EndpointSlice>(endpointSliceResource);
    ensureIndex(this.slices, SERVICE_INDEX, (s) => {
      const k = serviceKeyOfSlice(s);
      return k ? [k] : [];
    });
    this.services.addEventHandler({
      onAdd: (s) => this.queue.add(keyOf(s)),
      onUpdate: (_o, s) => this.queue.add(keyOf(s)),
      onDelete: (s) => {
        this.triggerTimes.forget(keyOf(s));
        this.tracker.forget(s.metadata?.uid ?? '');
      },
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.enqueueFor(p),
      onUpdate: (old, p) => {
        if (endpointRelevant(old) === endpointRelevant(p)) return;
        this.enqueueFor(p, old);
      },
      onDelete: (p) => this.enqueueFor(p),
    });
    this.slices.addEventHandler({
      onAdd: (s) => this.sliceChanged(s, false),
      onUpdate: (_o, s) => this.sliceChanged(s, false),
      onDelete: (s) => this.sliceChanged(s, true),
    });
  }

  /** The Services selecting the pod (before or after a label change). */
  private enqueueFor(p: Pod, old?: Pod): void {
    for (const svc of this.services.store.listInNamespace(p.metadata?.namespace ?? '')) {
      if (serviceSelects(svc, p.metadata?.labels) || (old && serviceSelects(svc, old.metadata?.labels))) {
        this.queue.add(keyOf(svc));
      }
    }
  }

  /** Someone else changed or deleted one of our slices: put it right. Our own writes' echoes are ignored. */
  private sliceChanged(s: EndpointSlice, deleted: boolean): void {
    const key = serviceKeyOfSlice(s);
    if (!key) return;
    const uid = controllerOf(s)?.uid ?? '';
    const own = this.tracker.isOwnWrite(uid, s, deleted);
    if (deleted) this.tracker.observedDeletion(uid, s.metadata?.name ?? '');
    if (!own) this.queue.add(key);
  }

  async reconcile(key: string): Promise<void> {
    const svc = this.services.store.getByKey(key);
    // Gone or being deleted: the garbage collector removes its slices by owner reference.
    if (!svc || svc.metadata?.deletionTimestamp || !managesEndpoints(svc)) return;
    const uid = svc.metadata?.uid ?? '';
    const { namespace } = splitKey(key);
    const existing = this.slices.store
      .byIndex(SERVICE_INDEX, key)
      .filter((s) => controllerOf(s)?.uid === uid && s.addressType === 'IPv4');
    if (this.tracker.stale(uid, existing)) {
      // Retried with backoff once the cache has seen our last writes.
      throw new RetryLater(
        `the EndpointSlice cache for Service ${key} is older than this controller's writes`,
      );
    }
    const pods = selectedPods(svc, this.pods.store.listInNamespace(namespace ?? ''));
    const desired = desiredPortGroups(svc, pods, (n) => this.nodes.store.getByKey(n));
    const plan = planSlices({
      meta: serviceSliceMeta(svc),
      existing,
      desired,
      maxEndpointsPerSlice: this.max,
      triggerTime: this.triggerTimes.compute(key, svc, pods),
    });
    let firstError: unknown;
    const fail = (err: unknown, verb: string) => {
      if (isNotFound(err)) return;
      firstError ??= err;
      this.events.event(
        svc,
        'Warning',
        'FailedToUpdateEndpointSlices',
        `Error updating Endpoint Slices for Service ${key}: failed to ${verb}: ${(err as Error).message}`,
      );
    };
    // Creates and updates before deletes, so consumers never see the Service without endpoints in between.
    for (const s of plan.create) {
      try {
        this.tracker.wrote(uid, await this.cluster.create(endpointSliceResource, namespace, s));
      } catch (err) {
        fail(err, 'create EndpointSlice');
      }
    }
    for (const s of plan.update) {
      try {
        this.tracker.wrote(uid, await this.cluster.update(endpointSliceResource, s));
      } catch (err) {
        fail(err, `update EndpointSlice ${s.metadata?.name}`);
      }
    }
    for (const s of plan.delete) {
      const name = s.metadata?.name ?? '';
      try {
        this.tracker.deleted(uid, name);
        await this.cluster.delete(endpointSliceResource, namespace, name, {
          preconditions: { uid: s.metadata?.uid },
        });
      } catch (err) {
        if (isNotFound(err)) continue;
        this.tracker.observedDeletion(uid, name);
        fail(err, `delete EndpointSlice ${name}`);
      }
    }
    if (plan.create.length + plan.update.length + plan.delete.length > 0) {
      this.opts.log?.debug(
        {
          service: key,
          created: plan.create.length,
          updated: plan.update.length,
          deleted: plan.delete.length,
        },
        'endpoint slices synced',
      );
    }
    if (firstError !== undefined) throw firstError;
  }
}
