// Adoption and release (client-go's ControllerRefManager), for a set's pods and
// revisions: an orphan that matches the selector is adopted, an owned object
// that stopped matching is released. Adoption first asks the apiserver whether
// the set still exists, so a stale cache never hands objects to a dead owner.
import { isNotFound } from '@kubit/api';
import { type ResourceRef, resources } from '@kubit/client';
import type { Cluster } from '../cluster.js';
import { controllerOf, ownerRefFor } from '../objects.js';
import type { KubeObject, StatefulSet } from '../types.js';

export class SetOwnership {
  private current: boolean | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly set: StatefulSet,
  ) {}

  /** The objects the set owns after adopting and releasing. */
  async claim<T extends KubeObject>(
    r: ResourceRef,
    objects: readonly T[],
    matches: (o: T) => boolean,
    mayAdopt: (o: T) => boolean = () => true,
  ): Promise<T[]> {
    const uid = this.set.metadata?.uid;
    const deleting = this.set.metadata?.deletionTimestamp !== undefined;
    const owned: T[] = [];
    for (const o of objects) {
      const ref = controllerOf(o);
      if (ref) {
        if (ref.uid !== uid) continue;
        if (matches(o)) owned.push(o);
        else if (!deleting) await this.update(r, o, (refs) => refs.filter((x) => x.uid !== uid));
        continue;
      }
      if (deleting || o.metadata?.deletionTimestamp || !matches(o) || !mayAdopt(o)) continue;
      this.current ??= await this.stillCurrent();
      if (!this.current) continue;
      const adopted = await this.update(r, o, (refs) => [...refs, ownerRefFor(this.set, 'StatefulSet')]);
      if (adopted) owned.push(adopted);
    }
    return owned;
  }

  private async stillCurrent(): Promise<boolean> {
    try {
      const fresh = await this.cluster.get<StatefulSet>(
        resources.statefulsets,
        this.set.metadata?.namespace,
        this.set.metadata?.name ?? '',
      );
      return fresh.metadata?.uid === this.set.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  private async update<T extends KubeObject>(
    r: ResourceRef,
    o: T,
    refs: (
      old: NonNullable<NonNullable<T['metadata']>['ownerReferences']>,
    ) => NonNullable<NonNullable<T['metadata']>['ownerReferences']>,
  ): Promise<T | undefined> {
    const next = structuredClone(o);
    const list = refs(o.metadata?.ownerReferences ?? []);
    next.metadata = { ...next.metadata, ownerReferences: list.length > 0 ? list : undefined };
    try {
      return await this.cluster.update(r, next);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
