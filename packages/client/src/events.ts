// An event recorder: writes core/v1 Events about an object (involvedObject,
// reason, message, type, source) and folds repeats of the same event into one
// object whose count and lastTimestamp grow, as Kubernetes components do.
// Recording never blocks the caller and never throws: events are best effort.

import { isNotFound } from '@kubit/api';
import type { KubeClient } from './client.js';
import { resources } from './resources.js';
import type { KubeObject } from './types.js';

export type EventType = 'Normal' | 'Warning';

export interface CoreEvent extends KubeObject {
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    fieldPath?: string;
  };
  reason: string;
  message: string;
  type: EventType;
  source: { component: string; host?: string };
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  reportingComponent?: string;
  reportingInstance?: string;
}

export interface EventRecorderOptions {
  component: string;
  host?: string;
  /** Pending writes kept at most; more are dropped (default 1000). */
  maxPending?: number;
  /** Distinct events remembered for aggregation (default 4096). */
  cacheSize?: number;
  onError?: (err: unknown) => void;
  now?: () => Date;
}

/** An Event's timestamp: RFC 3339 in whole seconds, as Kubernetes writes them. */
export function eventTimestamp(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface NewEventOptions {
  /** The Event's own name (unique in its namespace). */
  name: string;
  component: string;
  host?: string;
  /** The first and last timestamp (eventTimestamp). */
  now: string;
  /** Where in the object (e.g. spec.containers{web}). */
  fieldPath?: string;
}

/** A new core/v1 Event (count 1) about `obj`, with the fields Kubernetes components set. */
export function newEvent(
  obj: KubeObject,
  type: EventType,
  reason: string,
  message: string,
  opts: NewEventOptions,
): CoreEvent {
  const meta = obj.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: opts.name, namespace: meta.namespace || 'default' },
    involvedObject: {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      ...(opts.fieldPath ? { fieldPath: opts.fieldPath } : {}),
    },
    reason,
    message,
    type,
    source: { component: opts.component, ...(opts.host ? { host: opts.host } : {}) },
    count: 1,
    firstTimestamp: opts.now,
    lastTimestamp: opts.now,
    reportingComponent: opts.component,
    reportingInstance: opts.host ?? '',
  };
}

export class EventRecorder {
  /** aggregation key → the event written for it */
  private readonly seen = new Map<
    string,
    { name: string; namespace: string; count: number; firstTimestamp: string }
  >();
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: EventRecorderOptions,
  ) {}

  /** Records an event about `obj`. `fieldPath` points into the object (e.g. spec.containers{web}). */
  event(obj: KubeObject, type: EventType, reason: string, message: string, fieldPath?: string): void {
    if (this.pending >= (this.opts.maxPending ?? 1000)) return;
    this.pending++;
    this.chain = this.chain
      .then(() => this.write(obj, type, reason, message, fieldPath))
      .catch((e) => this.opts.onError?.(e))
      .finally(() => {
        this.pending--;
      });
  }

  /** Resolves when every recorded event has been written (or failed). */
  flush(): Promise<void> {
    return this.chain;
  }

  private async write(
    obj: KubeObject,
    type: EventType,
    reason: string,
    message: string,
    fieldPath?: string,
  ): Promise<void> {
    const now = eventTimestamp((this.opts.now ?? (() => new Date()))());
    const meta = obj.metadata ?? {};
    const namespace = meta.namespace || 'default';
    const key = [
      this.opts.component,
      this.opts.host ?? '',
      obj.kind,
      namespace,
      meta.name,
      meta.uid,
      fieldPath ?? '',
      type,
      reason,
      message,
    ].join('\u0000');
    const prior = this.seen.get(key);
    if (prior) {
      prior.count++;
      try {
        await this.client.patch(
          resources.events,
          prior.name,
          { count: prior.count, lastTimestamp: now },
          { namespace: prior.namespace },
        );
        this.touch(key, prior);
        return;
      } catch (e) {
        if (!isNotFound(e)) throw e;
        this.seen.delete(key); // the event expired on the server: write a fresh one
      }
    }
    const name = `${meta.name ?? 'unknown'}.${Date.now().toString(16)}${Math.floor(Math.random() * 0xfff).toString(16)}`;
    const ev = newEvent(obj, type, reason, message, {
      name,
      component: this.opts.component,
      host: this.opts.host,
      now,
      fieldPath,
    });
    await this.client.create(resources.events, ev, { namespace });
    this.touch(key, { name, namespace, count: 1, firstTimestamp: now });
  }

  /** Keeps the aggregation cache bounded, dropping the least recently used entry. */
  private touch(
    key: string,
    entry: { name: string; namespace: string; count: number; firstTimestamp: string },
  ): void {
    this.seen.delete(key);
    this.seen.set(key, entry);
    const max = this.opts.cacheSize ?? 4096;
    while (this.seen.size > max) {
      const oldest = this.seen.keys().next().value;
      if (oldest === undefined) break;
      this.seen.delete(oldest);
    }
  }
}
