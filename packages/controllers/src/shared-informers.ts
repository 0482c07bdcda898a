// Several controllers ask for the same secondary index on a shared informer,
// and IndexedStore.addIndexers refuses a second registration of a name
// ("indexer conflict"), so each controller ensures its index instead.
import type { IndexFunc, Informer, KubeObject } from '@kubit/client';

/** Adds the index to the informer's store unless an index of that name is there already. */
export function ensureIndex<T extends KubeObject>(inf: Informer<T>, name: string, fn: IndexFunc<T>): void {
  if (!inf.store.hasIndex(name)) inf.addIndexers({ [name]: fn });
}
