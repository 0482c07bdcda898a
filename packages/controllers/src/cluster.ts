// The port every controller talks through: the verbs of the Kubernetes REST API
// the controllers need. The daemon implements it over @kubit/client; unit tests
// use the in-memory FakeCluster (@kubit/controllers/testing).
import type { ResourceRef } from '@kubit/client';
import type { DeleteOptions, KubeObject } from './types.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

export interface ListResult<T extends KubeObject = KubeObject> {
  items: T[];
  resourceVersion: string;
}

export interface WatchHandle {
  stop(): void;
}

export interface WatchOptions {
  resourceVersion: string;
  namespace?: string;
  onEvent(ev: WatchEvent): void;
  /** The watch ended: `err` is a StatusError (410 Gone → relist) or a connection error; undefined is a clean end. */
  onClose(err?: unknown): void;
}

export interface Cluster {
  list<T extends KubeObject>(r: ResourceRef, namespace?: string): Promise<ListResult<T>>;
  watch(r: ResourceRef, opts: WatchOptions): WatchHandle;
  get<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, name: string): Promise<T>;
  create<T extends KubeObject>(r: ResourceRef, namespace: string | undefined, obj: T): Promise<T>;
  /** PUT of the object (or of its subresource: 'status', 'finalize' for namespaces). */
  update<T extends KubeObject>(r: ResourceRef, obj: T, subresource?: 'status' | 'finalize'): Promise<T>;
  delete(r: ResourceRef, namespace: string | undefined, name: string, opts?: DeleteOptions): Promise<void>;
}

/** namespace/name, or name for cluster-scoped objects: the work-queue key. */
export function keyOf(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
