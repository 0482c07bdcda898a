// ResourceQuota admission, as Kubernetes' plugin/pkg/admission/resourcequota: a
// create that would take a namespace's use of a resource past a quota's hard
// limit is refused (403 "exceeded quota: ..."), and a pod that leaves unset a
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
import { obj, str } from '../kinds/types.js';
import type { CreateAdmission } from '../rest.js';
import type { Store } from '../storage.js';
import type { WatchCache } from '../watchcache.js';

export function quotaAdmission(kinds: KindRegistry, quotas: WatchCache, store: Store): CreateAdmission {
  return async (def, o, namespace) => {
    if (!def.namespaced) return;
    const inNamespace = quotas.list((q) => str(q.metadata?.namespace) === namespace);
    if (inNamespace.length === 0) return;
    const requested = quotaUsage(def.group, def.resource, o);
    const gr = { group: def.group, resource: def.resource };
    const name = str(o.metadata?.name);
    const sorted = inNamespace.sort((a, b) => str(a.metadata?.name).localeCompare(str(b.metadata?.name)));
    for (const quota of sorted) {
      const qname = str(quota.metadata?.name);
      const spec = obj(quota.spec);
      if (!quotaScopesMatch(spec, def.group, def.resource, o)) continue;
      const hard = obj(spec.hard);
      if (def.group === '' && def.resource === 'pods') {
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
  };
}

/** What the namespace's stored objects of this kind that the quota's scopes take in use, by quota resource name. */
async function usageInNamespace(
  kinds: KindRegistry,
  def: Parameters<CreateAdmission>[0],
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
