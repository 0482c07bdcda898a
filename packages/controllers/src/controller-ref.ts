// Adoption and release (client-go's ControllerRefManager), for the objects a
// controller owns (pods, ControllerRevisions): an orphan that matches the
// owner's selector is adopted, an owned object that stopped matching is
// released. Adoption first asks the apiserver whether the owner still exists,
// so a stale cache never hands objects to a dead owner; an owner being
// deleted neither adopts nor releases (its objects go with it).
import { isNotFound } from '@kubit/api';
import type { ResourceRef } from '@kubit/client';
import type { Cluster } from './cluster.js';
import { controllerOf, ownerRefFor } from './objects.js';
import type { KubeObject, OwnerReference } from './types.js';

/** What an owner is, for its controller references and the apiserver check before adopting. */
export interface OwnerKind {
  resource: ResourceRef;
  kind: string;
  apiVersion: string;
}

export interface ClaimOptions<T> {
  /** Orphans this returns false for are left alone even when they match. */
  mayAdopt?: (o: T) => boolean;
  /** More to change on an object being released (the Job drops its tracking finalizer). */
  onRelease?: (next: T) => void;
}

export class ControllerRefManager<O extends KubeObject> {
  private current: boolean | undefined;

  constructor(
    private readonly cluster: Cluster,
    private readonly owner: O,
    private readonly kind: OwnerKind,
  ) {}

  /** The objects the owner owns after adopting and releasing. */
  async claim<T extends KubeObject>(
    r: ResourceRef,
    objects: readonly T[],
    matches: (o: T) => boolean,
    opts: ClaimOptions<T> = {},
  ): Promise<T[]> {
    const uid = this.owner.metadata?.uid;
    const deleting = this.owner.metadata?.deletionTimestamp !== undefined;
    const owned: T[] = [];
    for (const o of objects) {
      const ref = controllerOf(o);
      if (ref) {
        if (ref.uid !== uid) continue;
        if (matches(o)) owned.push(o);
        else if (!deleting)
          await this.update(r, o, (refs) => refs.filter((x) => x.uid !== uid), opts.onRelease);
        continue;
      }
      if (deleting || o.metadata?.deletionTimestamp || !matches(o)) continue;
      if (opts.mayAdopt && !opts.mayAdopt(o)) continue;
      this.current ??= await this.stillCurrent();
      if (!this.current) continue;
      const adopted = await this.update(r, o, (refs) => [
        ...refs,
        ownerRefFor(this.owner, this.kind.kind, this.kind.apiVersion),
      ]);
      if (adopted) owned.push(adopted);
    }
    return owned;
  }

  private async stillCurrent(): Promise<boolean> {
    try {
      const fresh = await this.cluster.get<O>(
        this.kind.resource,
        this.owner.metadata?.namespace,
        this.owner.metadata?.name ?? '',
      );
      return fresh.metadata?.uid === this.owner.metadata?.uid && !fresh.metadata?.deletionTimestamp;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Writes the object with its owner references changed; undefined when it is gone. */
  private async update<T extends KubeObject>(
    r: ResourceRef,
    o: T,
    refs: (old: OwnerReference[]) => OwnerReference[],
    alsoChange?: (next: T) => void,
  ): Promise<T | undefined> {
    const next = structuredClone(o);
    const list = refs(o.metadata?.ownerReferences ?? []);
    next.metadata = { ...next.metadata, ownerReferences: list.length > 0 ? list : undefined };
    alsoChange?.(next);
    try {
      return await this.cluster.update(r, next);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
