// ResourceQuota admission, as Kubernetes' plugin/pkg/admission/resourcequota, the
// last validating step (after the validating webhooks): a create (or an update,
// by what it adds) that would take a namespace's use of a resource past a quota's
// hard limit is refused (403 "exceeded quota: ..."), and a pod that leaves unset
// a compute resource a quota tracks is refused ("must specify"). The use is summed
// from the store (only in namespaces with a quota that tracks what the object
// counts), plus what this apiserver admitted that the store does not show yet:
// Kubernetes charges the quota's status in the store for the same reason, so that
// two creates at once cannot both take the last place.
import {
  addUsage,
  forbiddenWithMessage,
  formatResourceList,
  podMissingResources,
  type Quantity,
  quotaScopesMatch,
  quotaUsage,
  tryParseQuantity,
} from '@kubit/api';
import type { KindRegistry } from '../kinds/index.js';
import { type KindDef, obj, str } from '../kinds/types.js';
import type { KObject, Store } from '../storage.js';
import type { WatchCache } from '../watchcache.js';
import type { AdmissionAttributes } from './webhooks.js';

/** How long an admitted write counts before the store shows it (a failed write stops counting then). */
const RESERVATION_MS = 10_000;

interface Reservation {
  /** The store key of the object written. */
  key: string;
  /** The object as admitted, counted until the store has this key at this (or a later) state. */
  object: KObject;
  /** What the stored object used before (an update), taken off while the reservation counts. */
  previous?: KObject;
  expires: number;
}

export class QuotaAdmission {
  /** Admitted writes by store prefix (kind and namespace). */
  private readonly reserved = new Map<string, Reservation[]>();

  constructor(
    private readonly kinds: KindRegistry,
    private readonly quotas: WatchCache,
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  async validate(a: AdmissionAttributes): Promise<void> {
    const def = a.def;
    if (!def.namespaced || !a.object) return;
    if (a.operation === 'CREATE' && a.subresource === '') {
      await this.check(
        def,
        a.object,
        undefined,
        a.namespace,
        quotaUsage(def.group, def.resource, a.object),
        a.dryRun,
      );
    } else if (a.operation === 'UPDATE' && a.subresource !== 'status' && a.oldObject) {
      const before = quotaUsage(def.group, def.resource, a.oldObject);
      const grown = new Map<string, Quantity>();
      for (const [k, q] of quotaUsage(def.group, def.resource, a.object)) {
        const was = before.get(k);
        const delta = was ? q.sub(was) : q;
        if (delta.sign() > 0) grown.set(k, delta);
      }
      if (grown.size > 0) await this.check(def, a.object, a.oldObject, a.namespace, grown, a.dryRun);
    }
  }

  /**
   * Refuses `requested` (what the write adds to the namespace's use) when it takes a quota
   * past its hard limit; else, unless a dry run, counts the write until the store shows it.
   */
  private async check(
    def: KindDef,
    o: KObject,
    previous: KObject | undefined,
    namespace: string,
    requested: Map<string, Quantity>,
    dryRun: boolean,
  ): Promise<void> {
    const inNamespace = this.quotas.list((q) => str(q.metadata?.namespace) === namespace);
    if (inNamespace.length === 0) return;
    const gr = { group: def.group, resource: def.resource };
    const name = str(o.metadata?.name);
    const prefix = `/registry/${this.kinds.storageResource(def)}/${namespace}/`;
    const sorted = inNamespace.sort((x, y) => str(x.metadata?.name).localeCompare(str(y.metadata?.name)));
    let stored: { key: string; obj: KObject; rev: number }[] | undefined;
    let tracksAny = false;
    for (const quota of sorted) {
      const qname = str(quota.metadata?.name);
      const spec = obj(quota.spec);
      if (!quotaScopesMatch(spec, def.group, def.resource, o)) continue;
      const hard = obj(spec.hard);
      if (!previous && def.group === '' && def.resource === 'pods') {
        const missing = podMissingResources(o, Object.keys(hard));
        if (missing.length > 0) {
          throw forbiddenWithMessage(gr, name, `failed quota: ${qname}: must specify ${missing.join(',')}`);
        }
      }
      const tracked = [...requested.keys()].filter((k) => hard[k] !== undefined);
      if (tracked.length === 0) continue;
      tracksAny = true;
      stored ??= (await this.store.range(prefix, {})).items;
      const used = this.usage(def, prefix, stored, spec, `${prefix}${name}`);
      const req = new Map<string, Quantity>();
      const now = new Map<string, Quantity | string>();
      const limited = new Map<string, Quantity | string>();
      for (const k of tracked) {
        const limit = tryParseQuantity(String(hard[k]));
        const r = requested.get(k);
        if (!limit || !r) continue;
        const u = used.get(k);
        const total = u ? u.add(r) : r;
        if (total.cmp(limit) > 0) {
          req.set(k, r);
          now.set(k, u ?? '0');
          limited.set(k, limit);
        }
      }
      if (req.size > 0) {
        throw forbiddenWithMessage(
          gr,
          name,
          `exceeded quota: ${qname}, requested: ${formatResourceList(req)}, used: ${formatResourceList(now)}, limited: ${formatResourceList(limited)}`,
        );
      }
    }
    // Nothing awaited since the use was summed: no other write's check ran in between.
    if (tracksAny && !dryRun) {
      const list = this.reserved.get(prefix) ?? [];
      list.push({ key: `${prefix}${name}`, object: o, previous, expires: this.now() + RESERVATION_MS });
      this.reserved.set(prefix, list);
    }
  }

  /**
   * What the stored objects the quota's scopes take in use, with the writes admitted here that
   * the read did not show yet (an earlier admission of the object being written left out).
   */
  private usage(
    def: KindDef,
    prefix: string,
    stored: { key: string; obj: KObject }[],
    quotaSpec: Record<string, unknown>,
    self: string,
  ): Map<string, Quantity> {
    const used = new Map<string, Quantity>();
    const counts = (x: KObject) => quotaScopesMatch(quotaSpec, def.group, def.resource, x);
    const byKey = new Map<string, KObject>();
    // An update's own stored object counts too: the request is only what the update adds.
    for (const it of stored) {
      byKey.set(it.key, it.obj);
      if (counts(it.obj)) addUsage(used, quotaUsage(def.group, def.resource, it.obj));
    }
    const now = this.now();
    const live: Reservation[] = [];
    for (const r of this.reserved.get(prefix) ?? []) {
      if (r.expires < now) continue;
      const inStore = byKey.get(r.key);
      // The store shows the write (its uid for a create, its new state for an update): it counts there.
      if (inStore && (r.previous ? sameState(inStore, r.object) : sameUid(inStore, r.object))) continue;
      live.push(r);
      if (r.key === self) continue;
      if (counts(r.object)) addUsage(used, quotaUsage(def.group, def.resource, r.object));
      if (r.previous && inStore && counts(inStore))
        subtractUsage(used, quotaUsage(def.group, def.resource, inStore));
    }
    if (live.length > 0) this.reserved.set(prefix, live);
    else this.reserved.delete(prefix);
    return used;
  }
}

const sameUid = (a: KObject, b: KObject) =>
  str(a.metadata?.uid) !== '' && a.metadata?.uid === b.metadata?.uid;
const sameState = (a: KObject, b: KObject) => JSON.stringify(a.spec) === JSON.stringify(b.spec);

function subtractUsage(from: Map<string, Quantity>, less: Map<string, Quantity>): void {
  for (const [k, q] of less) {
    const prev = from.get(k);
    if (prev) from.set(k, prev.sub(q));
  }
}
