// ResourceQuota admission, as Kubernetes' plugin/pkg/admission/resourcequota: a
// create (or an update, by what it adds) that would take a namespace's use of a
// resource past a quota's hard limit is refused (403 "exceeded quota: ..."), and a pod that leaves unset a
// compute resource a quota tracks is refused ("must specify"). The use is summed
// from the store at admission (only in namespaces with a quota that tracks what
// the object counts), so a create just after another sees it.
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
import type { CreateAdmission, UpdateAdmission } from '../rest.js';
import type { KObject, Store } from '../storage.js';
import type { WatchCache } from '../watchcache.js';

/**
 * Refuses `requested` (what a write adds to the namespace's use) when it takes a quota of the
 * namespace past its hard limit. `o` is the object as it would be stored.
 */
async function checkQuotas(
  kinds: KindRegistry,
  quotas: WatchCache,
  store: Store,
  def: KindDef,
  o: KObject,
  namespace: string,
  requested: Map<string, Quantity>,
  isCreate: boolean,
): Promise<void> {
  const inNamespace = quotas.list((q) => str(q.metadata?.namespace) === namespace);
  if (inNamespace.length === 0) return;
  const gr = { group: def.group, resource: def.resource };
  const name = str(o.metadata?.name);
  const sorted = inNamespace.sort((a, b) => str(a.metadata?.name).localeCompare(str(b.metadata?.name)));
  for (const quota of sorted) {
    const qname = str(quota.metadata?.name);
    const spec = obj(quota.spec);
    if (!quotaScopesMatch(spec, def.group, def.resource, o)) continue;
    const hard = obj(spec.hard);
    if (isCreate && def.group === '' && def.resource === 'pods') {
      const missing = podMissingResources(o, Object.keys(hard));
      if (missing.length > 0) {
        throw forbiddenWithMessage(gr, name, `failed quota: ${qname}: must specify ${missing.join(',')}`);
      }
    }
    const tracked = [...requested.keys()].filter((k) => hard[k] !== undefined);
    if (tracked.length === 0) continue;
    const used = await usageInNamespace(kinds, def, namespace, store, spec);
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
}

/** ResourceQuota admission of creates: all the new object uses. */
export function quotaAdmission(kinds: KindRegistry, quotas: WatchCache, store: Store): CreateAdmission {
  return async (def, o, namespace) => {
    if (!def.namespaced) return;
    await checkQuotas(kinds, quotas, store, def, o, namespace, quotaUsage(def.group, def.resource, o), true);
  };
}

/** ResourceQuota admission of updates: what the change adds (a claim grown, a Service turned LoadBalancer). */
export function quotaUpdateAdmission(kinds: KindRegistry, quotas: WatchCache, store: Store): UpdateAdmission {
  return async (def, subresource, next, current) => {
    if (!def.namespaced || subresource === 'status') return;
    const before = quotaUsage(def.group, def.resource, current);
    const grown = new Map<string, Quantity>();
    for (const [k, q] of quotaUsage(def.group, def.resource, next)) {
      const was = before.get(k);
      const delta = was ? q.sub(was) : q;
      if (delta.sign() > 0) grown.set(k, delta);
    }
    if (grown.size === 0) return;
    const namespace = str(next.metadata?.namespace);
    await checkQuotas(kinds, quotas, store, def, next, namespace, grown, false);
  };
}

/** What the namespace's stored objects of this kind that the quota's scopes take in use, by quota resource name. */
async function usageInNamespace(
  kinds: KindRegistry,
  def: KindDef,
  namespace: string,
  store: Store,
  quotaSpec: Record<string, unknown>,
): Promise<Map<string, Quantity>> {
  const used = new Map<string, Quantity>();
  const r = await store.range(`/registry/${kinds.storageResource(def)}/${namespace}/`, {});
  for (const it of r.items) {
    if (quotaScopesMatch(quotaSpec, def.group, def.resource, it.obj)) {
      addUsage(used, quotaUsage(def.group, def.resource, it.obj));
    }
  }
  return used;
}
