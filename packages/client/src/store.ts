// An indexed object cache keyed "namespace/name", with named secondary indexes
// (e.g. pods by spec.nodeName), as informers fill it.

import { type KubeObject, objectKey } from './types.js';

/** Returns the index values of an object (several values put it in several buckets). */
export type IndexFunc<T> = (obj: T) => string[];

export const NAMESPACE_INDEX = 'namespace';

/** Index by metadata.namespace (cluster-scoped objects are not indexed). */
export function namespaceIndexFunc(obj: KubeObject): string[] {
  const ns = obj.metadata?.namespace;
  return ns ? [ns] : [];
}

export class IndexedStore<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  /** index name → value → keys */
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    this.addIndexers({ [NAMESPACE_INDEX]: namespaceIndexFunc, ...indexers });
  }

  /**
   * Adds indexes; existing items are indexed at once. A name may be added only
   * once: a second registration fails with "indexer conflict" (as client-go's
   * does) and adds none of the batch, so callers can check hasIndex() and retry.
   */
  addIndexers(indexers: Record<string, IndexFunc<T>>): void {
    const conflicts = Object.keys(indexers).filter((name) => this.indexers.has(name));
    if (conflicts.length > 0) {
      const names = conflicts.map((n) => `"${n}"`).join(', ');
      throw new Error(`indexer conflict: an index named ${names} already exists in this store`);
    }
    for (const [name, fn] of Object.entries(indexers)) {
      this.indexers.set(name, fn);
      const index = new Map<string, Set<string>>();
      this.indices.set(name, index);
      for (const [key, obj] of this.items) this.indexOne(index, fn, key, obj);
    }
  }

  private indexOne(index: Map<string, Set<string>>, fn: IndexFunc<T>, key: string, obj: T): void {
    for (const v of fn(obj)) {
      let keys = index.get(v);
      if (!keys) {
        keys = new Set();
        index.set(v, keys);
      }
      keys.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      for (const v of fn(obj)) {
        const keys = index.get(v);
        if (!keys) continue;
        keys.delete(key);
        if (keys.size === 0) index.delete(v);
      }
    }
  }

  /** Adds or replaces an object; returns the previous one. */
  set(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    this.items.set(key, obj);
    for (const [name, fn] of this.indexers) {
      const index = this.indices.get(name)!;
      if (old) {
        // Most updates keep their index values (a pod keeps its namespace): leave those alone.
        const before = fn(old);
        const after = fn(obj);
        if (sameValues(before, after)) continue;
        for (const v of before) {
          const keys = index.get(v);
          if (!keys) continue;
          keys.delete(key);
          if (keys.size === 0) index.delete(v);
        }
      }
      this.indexOne(index, fn, key, obj);
    }
    return old;
  }

  /** Removes by key; returns what was there. */
  deleteKey(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  delete(obj: KubeObject): T | undefined {
    return this.deleteKey(objectKey(obj));
  }

  /** Whether an index of this name exists (byIndex and indexValues throw for one that does not). */
  hasIndex(indexName: string): boolean {
    return this.indexers.has(indexName);
  }

  /** Whether an object with this "namespace/name" (or "name") key is cached. */
  hasKey(key: string): boolean {
    return this.items.has(key);
  }

  /** The object with this "namespace/name" (or "name") key, or undefined; never throws. */
  getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  /** By name (and namespace for namespaced objects), or undefined; never throws. */
  get(name: string, namespace?: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  listKeys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  /** Objects whose index `indexName` has the value `value`. */
  byIndex(indexName: string, value: string): T[] {
    const index = this.indices.get(indexName);
    if (!index) throw new Error(`index "${indexName}" does not exist`);
    const keys = index.get(value);
    if (!keys) return [];
    return [...keys].map((k) => this.items.get(k)!);
  }

  /** Every object in one namespace. */
  listInNamespace(namespace: string): T[] {
    return this.byIndex(NAMESPACE_INDEX, namespace);
  }

  /** The values an index currently holds. */
  indexValues(indexName: string): string[] {
    const index = this.indices.get(indexName);
    if (!index) throw new Error(`index "${indexName}" does not exist`);
    return [...index.keys()];
  }

  /** Replaces every object; returns what was removed (not in `objs`). */
  replace(objs: readonly T[]): T[] {
    const keep = new Set(objs.map(objectKey));
    const removed: T[] = [];
    for (const [key, obj] of [...this.items]) {
      if (!keep.has(key)) {
        removed.push(obj);
        this.deleteKey(key);
      }
    }
    for (const o of objs) this.set(o);
    return removed;
  }
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
