// The endpoint controller: keeps the core/v1 Endpoints object named after
// every Service with a selector (see subsets.ts), labelled like the Service
// (plus the headless label, and skip-mirror so the mirroring controller leaves
// it alone), and deletes it with the Service. Unchanged endpoints are not
// written again, whatever the trigger time says.

import type { Endpoints, Pod, Service } from '@kubit/api';
import { HEADLESS_LABEL, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import {
  canonical,
  endpointRelevant,
  formatTime,
  isHeadless,
  LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
  managesEndpoints,
  OVER_CAPACITY_ANNOTATION,
  SKIP_MIRROR_LABEL,
  selectedPods,
  serviceSelects,
} from './shared.js';
import { desiredEndpoints } from './subsets.js';
import { TriggerTimeTracker } from './trigger-time.js';

export interface EndpointsControllerOptions {
  events?: EventSink;
  log?: Logger;
}

/** The labels of a Service's Endpoints: the Service's, skip-mirror, and headless when it is. */
export function endpointsLabels(svc: Service): Record<string, string> {
  const labels: Record<string, string> = { ...(svc.metadata?.labels ?? {}) };
  labels[SKIP_MIRROR_LABEL] = 'true';
  if (isHeadless(svc)) labels[HEADLESS_LABEL] = '';
  else delete labels[HEADLESS_LABEL];
  return labels;
}

export class EndpointsController implements Controller {
  readonly name = 'endpoint';
  readonly queue = new RateLimitingQueue<string>();
  private readonly services: Informer<Service>;
  private readonly pods: Informer<Pod>;
  private readonly endpoints: Informer<Endpoints>;
  private readonly triggerTimes = new TriggerTimeTracker();
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: EndpointsControllerOptions = {},
  ) {
    this.events = opts.events ?? noEvents;
    this.services = informers.forResource<Service>(resources.services);
    this.pods = informers.forResource<Pod>(resources.pods);
    this.endpoints = informers.forResource<Endpoints>(resources.endpoints);
    this.services.addEventHandler({
      onAdd: (s) => this.queue.add(keyOf(s)),
      onUpdate: (_o, s) => this.queue.add(keyOf(s)),
      onDelete: (s) => this.queue.add(keyOf(s)),
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.enqueueFor(p),
      onUpdate: (old, p) => {
        if (endpointRelevant(old) !== endpointRelevant(p)) this.enqueueFor(p, old);
      },
      onDelete: (p) => this.enqueueFor(p),
    });
    // Someone deleted or rewrote an Endpoints object of a Service: put it back.
    this.endpoints.addEventHandler({
      onUpdate: (_o, ep) => this.queue.add(keyOf(ep)),
      onDelete: (ep) => this.queue.add(keyOf(ep)),
    });
  }

  private enqueueFor(p: Pod, old?: Pod): void {
    for (const svc of this.services.store.listInNamespace(p.metadata?.namespace ?? '')) {
      if (serviceSelects(svc, p.metadata?.labels) || (old && serviceSelects(svc, old.metadata?.labels))) {
        this.queue.add(keyOf(svc));
      }
    }
  }

  async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const svc = this.services.store.getByKey(key);
    if (!svc) {
      this.triggerTimes.forget(key);
      // The Service is gone: so are its endpoints (only when there is something to delete).
      if (!this.endpoints.store.getByKey(key)) return;
      try {
        await this.cluster.delete(resources.endpoints, namespace, name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return;
    }
    if (svc.metadata?.deletionTimestamp || !managesEndpoints(svc)) return;
    const pods = selectedPods(svc, this.pods.store.listInNamespace(namespace ?? ''));
    const { subsets, truncated } = desiredEndpoints(svc, pods);
    const triggerTime = this.triggerTimes.compute(key, svc, pods);
    const current = this.endpoints.store.getByKey(key);
    const labels = endpointsLabels(svc);
    const capacityRight =
      (current?.metadata?.annotations?.[OVER_CAPACITY_ANNOTATION] === 'truncated') === truncated;
    if (
      current &&
      canonical(current.subsets ?? []) === canonical(subsets) &&
      canonical(current.metadata?.labels ?? {}) === canonical(labels) &&
      capacityRight
    ) {
      return;
    }
    const annotations = { ...(current?.metadata?.annotations ?? {}) };
    if (triggerTime) annotations[LAST_CHANGE_TRIGGER_TIME_ANNOTATION] = formatTime(triggerTime);
    else delete annotations[LAST_CHANGE_TRIGGER_TIME_ANNOTATION];
    if (truncated) annotations[OVER_CAPACITY_ANNOTATION] = 'truncated';
    else delete annotations[OVER_CAPACITY_ANNOTATION];
    const next: Endpoints = {
      apiVersion: 'v1',
      kind: 'Endpoints',
      ...current,
      metadata: {
        ...(current?.metadata ?? { name, namespace }),
        labels,
        annotations: Object.keys(annotations).length ? annotations : undefined,
      },
      subsets: subsets.length ? subsets : undefined,
    };
    try {
      if (current) await this.cluster.update(resources.endpoints, next);
      else await this.cluster.create(resources.endpoints, namespace, next);
    } catch (err) {
      this.events.event(
        svc,
        'Warning',
        'FailedToUpdateEndpoint',
        `Failed to update endpoint ${key}: ${(err as Error).message}`,
      );
      throw err;
    }
  }
}
