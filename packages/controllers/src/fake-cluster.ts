// An in-memory Cluster with the apiserver semantics the controllers rely on:
// resourceVersion preconditions (409), generateName, generation bumps on spec
// changes, status subresources, finalizers with deletionTimestamp, the
// propagationPolicy finalizers, namespace finalize, and watch streams that can
// be held back to play a slow watch. For unit tests of controller logic only.
import { randomUUID } from 'node:crypto';
import { alreadyExists, conflict, notFound } from '@kubit/api';
import { apiVersionOf, type ResourceRef } from '@kubit/client';
import type { Cluster, ListResult, WatchEvent, WatchHandle, WatchOptions } from './cluster.js';
import type { DeleteOptions, KubeObject, Namespace, ObjectMeta } from './types.js';

/** The server owns these fields; the types mark them read-only for clients. */
type ServerMeta = { -readonly [K in keyof ObjectMeta]: ObjectMeta[K] };
const mut = (m: ObjectMeta): ServerMeta => m as ServerMeta;

interface Watcher {
  r: ResourceRef;
  opts: WatchOptions;
  stopped: boolean;
}

export interface FakeClusterOptions {
  /** The clock for creationTimestamp/deletionTimestamp (ms since epoch). */
  now?: () => number;
}

/** Records one write, for assertions like "exactly 3 pods were created". */
export interface WriteRecord {
  verb: 'create' | 'update' | 'delete';
  resource: string;
  subresource?: string;
  namespace?: string;
  name: string;
}

const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const WITH_STATUS = new Set([
  'pods',
  'replicasets',
  'replicationcontrollers',
  'deployments',
  'statefulsets',
  'jobs',
  'nodes',
  'namespaces',
]);

export class FakeCluster implements Cluster {
  private readonly objects = new Map<string, KubeObject>();
  private readonly history: { rv: number; r: ResourceRef; ev: WatchEvent }[] = [];
  private readonly watchers = new Set<Watcher>();
  private rv = 1;
  private held = false;
  private pending: (() => void)[] = [];
  readonly writes: WriteRecord[] = [];
  /** Makes the next matching write fail with the given error (once). */
  failNext: { verb: WriteRecord['verb']; resource: string; error: Error }[] = [];
  now: () => number;

  constructor(opts: FakeClusterOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  // ---- test helpers ----

  /** Holds watch events back (a slow watch) until releaseWatches(). */
  holdWatches(): void {
    this.held = true;
  }

  releaseWatches(): void {
    this.held = false;
    const p = this.pending;
    this.pending = [];
    for (const f of p) f();
  }

  /** Objects of a resource straight from the store (not through a watch). */
  all<T extends KubeObject>(r: ResourceRef, namespace?: string): T[] {
    const prefix = `${r.group}/${r.resource}/`;
    const out: T[] = [];
    for (const [k, v] of this.objects) {
      if (!k.startsWith(prefix)) continue;
      if (namespace !== undefined && v.metadata?.namespace !== namespace) continue;
      out.push(structuredClone(v) as T);
    }
    return out;
  }

  writesOf(verb: WriteRecord['verb'], resource: string): WriteRecord[] {
    return this.writes.filter((w) => w.verb === verb && w.resource === resource && !w.subresource);
  }

  // ---- Cluster ----

  async list<T extends KubeObject>(r: ResourceRef, namespace?: string): Promise<ListResult<T>> {
    return { items: this.all<T>(r, namespace), resourceVersion: String(this.rv) };
  }

  watch(r: ResourceRef, opts: WatchOptions): WatchHandle {
    const w: Watcher = { r, opts, stopped: false };
    this.watchers.add(w);
    const from = Number(opts.resourceVersion);
    for (const h of this.history) {
      if (h.rv > from && sameResource(h.r, r)) this.deliver(w, h.ev);
    }
    return {
      stop: () => {
        w.stopped = true;
        this.watchers.delete(w);
      },
    };
  }

  async get<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, name: string): Promise<T> {
    const o = this.objects.get(this.key(r, namespace, name));
    if (!o) throw notFound({ group: r.group, resource: r.resource }, name);
    return structuredClone(o) as T;
  }

  async create<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, obj: T): Promise<T> {
    this.maybeFail('create', r);
    const o = structuredClone(obj) as T;
    o.metadata ??= {};
    const meta = mut(o.metadata);
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomSuffix();
    if (!meta.name) throw new Error('fake cluster: name or generateName is required');
    if (r.namespaced) meta.namespace = namespace ?? meta.namespace ?? 'default';
    const k = this.key(r, meta.namespace, meta.name);
    if (this.objects.has(k)) throw alreadyExists({ group: r.group, resource: r.resource }, meta.name);
    meta.uid = randomUUID();
    meta.creationTimestamp = new Date(this.now()).toISOString();
    meta.generation = 1;
    o.apiVersion = apiVersionOf(r);
    o.kind = r.kind;
    if (r.resource === 'namespaces') {
      const ns = o as Namespace;
      ns.spec = { finalizers: ['kubernetes'], ...ns.spec };
      ns.status = { phase: 'Active' };
    }
    this.store(r, k, o, 'ADDED');
    this.writes.push({ verb: 'create', resource: r.resource, namespace: meta.namespace, name: meta.name });
    return structuredClone(o);
  }

  async update<T extends KubeObject>(
    r: ResourceRef,
    obj: T,
    subresource?: 'status' | 'finalize',
  ): Promise<T> {
    this.maybeFail('update', r);
    const name = obj.metadata?.name ?? '';
    const k = this.key(r, obj.metadata?.namespace, name);
    const old = this.objects.get(k) as (KubeObject & { spec?: unknown; status?: unknown }) | undefined;
    if (!old) throw notFound({ group: r.group, resource: r.resource }, name);
    const want = obj.metadata?.resourceVersion;
    if (want && want !== old.metadata?.resourceVersion) {
      throw conflict(
        { group: r.group, resource: r.resource },
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    const incoming = structuredClone(obj) as T & { spec?: unknown; status?: unknown };
    let next: KubeObject & { spec?: unknown; status?: unknown };
    if (subresource === 'status') {
      next = { ...structuredClone(old), status: incoming.status };
    } else if (subresource === 'finalize') {
      next = { ...structuredClone(old), spec: incoming.spec };
    } else {
      next = { ...incoming, metadata: { ...incoming.metadata } };
      const m = mut(next.metadata!);
      m.uid = old.metadata?.uid;
      m.creationTimestamp = old.metadata?.creationTimestamp;
      m.deletionTimestamp = old.metadata?.deletionTimestamp;
      m.generation = old.metadata?.generation;
      if (WITH_STATUS.has(r.resource)) next.status = structuredClone(old.status);
      if (r.resource !== 'namespaces' && JSON.stringify(next.spec) !== JSON.stringify(old.spec)) {
        m.generation = (old.metadata?.generation ?? 0) + 1;
      }
    }
    this.writes.push({
      verb: 'update',
      resource: r.resource,
      subresource,
      namespace: obj.metadata?.namespace,
      name,
    });
    if (this.finished(r, next)) {
      this.remove(r, k, next);
      return structuredClone(next) as T;
    }
    this.store(r, k, next, 'MODIFIED');
    return structuredClone(next) as T;
  }

  async delete(
    r: ResourceRef,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<void> {
    this.maybeFail('delete', r);
    const k = this.key(r, namespace, name);
    const old = this.objects.get(k);
    if (!old) throw notFound({ group: r.group, resource: r.resource }, name);
    if (opts.preconditions?.uid && opts.preconditions.uid !== old.metadata?.uid) {
      throw conflict(
        { group: r.group, resource: r.resource },
        name,
        'Precondition failed: UID in precondition does not match the UID of the object',
      );
    }
    this.writes.push({ verb: 'delete', resource: r.resource, namespace, name });
    const o = structuredClone(old) as KubeObject & {
      spec?: { finalizers?: string[] };
      status?: { phase?: string };
    };
    const meta = mut(o.metadata!);
    const finalizers = new Set(meta.finalizers ?? []);
    if (meta.deletionTimestamp === undefined) {
      // The apiserver turns the propagation policy into a finalizer.
      if (opts.propagationPolicy === 'Foreground') finalizers.add('foregroundDeletion');
      if (opts.propagationPolicy === 'Orphan') finalizers.add('orphan');
    }
    meta.finalizers = finalizers.size ? [...finalizers] : undefined;
    const nsPending = r.resource === 'namespaces' && (o.spec?.finalizers?.length ?? 0) > 0;
    if (!finalizers.size && !nsPending) {
      this.remove(r, k, o);
      return;
    }
    if (meta.deletionTimestamp === undefined) {
      meta.deletionTimestamp = new Date(this.now()).toISOString();
      if (r.resource === 'namespaces') o.status = { ...o.status, phase: 'Terminating' };
      this.store(r, k, o, 'MODIFIED');
    }
  }

  // ---- internals ----

  private finished(r: ResourceRef, o: KubeObject & { spec?: unknown }): boolean {
    if (!o.metadata?.deletionTimestamp || (o.metadata.finalizers?.length ?? 0) > 0) return false;
    if (r.resource === 'namespaces')
      return ((o.spec as { finalizers?: string[] })?.finalizers?.length ?? 0) === 0;
    return true;
  }

  private maybeFail(verb: WriteRecord['verb'], r: ResourceRef): void {
    const i = this.failNext.findIndex((f) => f.verb === verb && f.resource === r.resource);
    if (i >= 0) {
      const [f] = this.failNext.splice(i, 1);
      throw f.error;
    }
  }

  private key(r: ResourceRef, namespace: string | undefined, name: string): string {
    return `${r.group}/${r.resource}/${r.namespaced ? (namespace ?? 'default') : ''}/${name}`;
  }

  private store(r: ResourceRef, k: string, o: KubeObject, type: 'ADDED' | 'MODIFIED'): void {
    mut(o.metadata!).resourceVersion = String(++this.rv);
    this.objects.set(k, o);
    this.emit(r, { type, object: structuredClone(o) });
  }

  private remove(r: ResourceRef, k: string, o: KubeObject): void {
    this.objects.delete(k);
    mut(o.metadata!).resourceVersion = String(++this.rv);
    this.emit(r, { type: 'DELETED', object: structuredClone(o) });
  }

  private emit(r: ResourceRef, ev: WatchEvent): void {
    this.history.push({ rv: this.rv, r, ev });
    for (const w of this.watchers) if (sameResource(w.r, r)) this.deliver(w, ev);
  }

  private deliver(w: Watcher, ev: WatchEvent): void {
    if (w.opts.namespace && ev.object.metadata?.namespace !== w.opts.namespace) return;
    const send = () => {
      if (!w.stopped) w.opts.onEvent(structuredClone(ev));
    };
    if (this.held) this.pending.push(send);
    else queueMicrotask(send);
  }
}

function sameResource(a: ResourceRef, b: ResourceRef): boolean {
  return a.group === b.group && a.resource === b.resource;
}

function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += SUFFIX_ALPHABET[Math.floor(Math.random() * SUFFIX_ALPHABET.length)];
  return s;
}
