// The endpointslicemirroring controller: the Endpoints a user (or another
// controller) writes for a Service without a selector are mirrored into
// EndpointSlices managed by endpointslicemirroring-controller.k8s.io, owned by
// the Endpoints, so kubit-proxy and kubit-dns, which read only slices, serve
// them. The endpoint controller's own Endpoints carry skip-mirror and are left
// out (their Service's slices come from the endpointslice controller).

import type { EndpointSlice, Endpoints, Service } from '@kubit/api';
import { isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { controllerOf } from '../objects.js';
import { ensureIndex } from '../shared-informers.js';
import {
  DEFAULT_MIRRORING_MAX_ENDPOINTS_PER_SUBSET,
  MIRRORING_CONTROLLER_NAME,
  mirroredPortGroups,
  mirroredSliceMeta,
  mirroredTriggerTime,
  shouldMirror,
} from './mirroring.js';
import { endpointSliceResource, sliceOwnerKey } from './shared.js';
import { SliceTracker } from './slice-tracker.js';
import { planSlices } from './slices.js';

const MIRROR_INDEX = 'endpointslicemirroring:endpoints';

export interface MirroringControllerOptions {
  /** The most addresses of one subset mirrored, and so of one slice (--mirroring-max-endpoints-per-subset). */
  maxEndpointsPerSubset?: number;
  log?: Logger;
}

const endpointsKeyOfSlice = (s: EndpointSlice) => sliceOwnerKey(s, MIRRORING_CONTROLLER_NAME);

export class EndpointSliceMirroringController implements Controller {
  readonly name = 'endpointslicemirroring';
  readonly queue = new RateLimitingQueue<string>();
  private readonly services: Informer<Service>;
  private readonly endpoints: Informer<Endpoints>;
  private readonly slices: Informer<EndpointSlice>;
  private readonly tracker = new SliceTracker();
  private readonly max: number;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: MirroringControllerOptions = {},
  ) {
    this.max = opts.maxEndpointsPerSubset ?? DEFAULT_MIRRORING_MAX_ENDPOINTS_PER_SUBSET;
    this.services = informers.forResource<Service>(resources.services);
    this.endpoints = informers.forResource<Endpoints>(resources.endpoints);
    this.slices = informers.forResource<EndpointSlice>(endpointSliceResource);
    ensureIndex(this.slices, MIRROR_INDEX, (s) => {
      const k = endpointsKeyOfSlice(s);
      return k ? [k] : [];
    });
    const enqueue = (o: { metadata?: { namespace?: string; name?: string } }) => this.queue.add(keyOf(o));
    this.services.addEventHandler({ onAdd: enqueue, onUpdate: (_o, s) => enqueue(s), onDelete: enqueue });
    this.endpoints.addEventHandler({ onAdd: enqueue, onUpdate: (_o, e) => enqueue(e), onDelete: enqueue });
    this.slices.addEventHandler({
      onAdd: (s) => this.sliceChanged(s, false),
      onUpdate: (_o, s) => this.sliceChanged(s, false),
      onDelete: (s) => this.sliceChanged(s, true),
    });
  }

  private sliceChanged(s: EndpointSlice, deleted: boolean): void {
    const key = endpointsKeyOfSlice(s);
    if (!key) return;
    const uid = controllerOf(s)?.uid ?? '';
    const own = this.tracker.isOwnWrite(uid, s, deleted);
    if (deleted) this.tracker.observedDeletion(uid, s.metadata?.name ?? '');
    if (!own) this.queue.add(key);
  }

  async reconcile(key: string): Promise<void> {
    const { namespace } = splitKey(key);
    const ep = this.endpoints.store.getByKey(key);
    const svc = this.services.store.getByKey(key);
    const mirrored = this.slices.store.byIndex(MIRROR_INDEX, key);
    if (!ep || !shouldMirror(ep, svc)) {
      // Nothing (any more) to mirror: remove what was mirrored.
      for (const s of mirrored) await this.deleteSlice(namespace, s, controllerOf(s)?.uid ?? '');
      return;
    }
    const uid = ep.metadata?.uid ?? '';
    const existing = mirrored.filter((s) => controllerOf(s)?.uid === uid && s.addressType === 'IPv4');
    // Slices of an earlier Endpoints object of the same name.
    for (const s of mirrored)
      if (!existing.includes(s)) await this.deleteSlice(namespace, s, controllerOf(s)?.uid ?? '');
    if (this.tracker.stale(uid, existing)) {
      throw new RetryLater(
        `the EndpointSlice cache for Endpoints ${key} is older than this controller's writes`,
      );
    }
    const plan = planSlices({
      meta: mirroredSliceMeta(ep),
      placeholder: false,
      existing,
      desired: mirroredPortGroups(ep, this.max),
      maxEndpointsPerSlice: this.max,
      triggerTime: mirroredTriggerTime(ep),
    });
    for (const s of plan.create)
      this.tracker.wrote(uid, await this.cluster.create(endpointSliceResource, namespace, s));
    for (const s of plan.update) this.tracker.wrote(uid, await this.cluster.update(endpointSliceResource, s));
    for (const s of plan.delete) await this.deleteSlice(namespace, s, uid);
  }

  private async deleteSlice(
    namespace: string | undefined,
    s: EndpointSlice,
    ownerUid: string,
  ): Promise<void> {
    const name = s.metadata?.name ?? '';
    this.tracker.deleted(ownerUid, name);
    try {
      await this.cluster.delete(endpointSliceResource, namespace, name, {
        preconditions: { uid: s.metadata?.uid },
      });
    } catch (err) {
      if (isNotFound(err)) return;
      this.tracker.observedDeletion(ownerUid, name);
      throw err;
    }
  }
}
