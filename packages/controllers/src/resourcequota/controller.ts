// The resourcequota controller (Kubernetes' pkg/controller/resourcequota): each
// ResourceQuota's status.hard mirrors spec.hard and status.used sums what the
// namespace's objects use of each resource it limits (counted as the apiserver's
// quota admission counts them, @kubit/api's quotaUsage). Quotas are looked at
// again when an object of a kind they count changes in their namespace (the core
// kinds, through informers) and every resync period (any other count/<resource>,
// listed from the apiserver).
import {
  addUsage,
  formatResourceList,
  type Quantity,
  quotaResourceOf,
  quotaScopesMatch,
  quotaUsage,
} from '@kubit/api';
import {
  type Informer,
  RateLimitingQueue,
  type ResourceRef,
  resources,
  type SharedInformerFactory,
} from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import type { KubeObject } from '../types.js';

interface ResourceQuota extends KubeObject {
  spec?: { hard?: Record<string, string>; scopes?: string[]; scopeSelector?: unknown };
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

/** The kinds whose changes are watched, so a quota's use follows them at once. */
const WATCHED: ResourceRef[] = [
  resources.pods,
  resources.services,
  resources.configmaps,
  resources.secrets,
  resources.persistentvolumeclaims,
  resources.replicationcontrollers,
];

const refKey = (group: string, resource: string) => `${group}/${resource}`;
const KNOWN = new Map<string, ResourceRef>(
  Object.values(resources as Record<string, ResourceRef>).map((r) => [refKey(r.group, r.resource), r]),
);

export interface ResourceQuotaOptions {
  log?: Logger;
  /** How often every quota is recounted (Kubernetes' --resource-quota-sync-period, 5m). */
  resyncMs?: number;
  /** Which resources the apiserver serves: others are not counted. */
  served?: (r: ResourceRef) => boolean;
}

export class ResourceQuotaController implements Controller {
  readonly name = 'resourcequota';
  readonly queue = new RateLimitingQueue<string>();
  private readonly quotas: Informer<ResourceQuota>;
  private readonly watched = new Map<string, Informer<KubeObject>>();
  private readonly log?: Logger;
  private readonly served: (r: ResourceRef) => boolean;
  private resync?: NodeJS.Timeout;
  private readonly resyncMs: number;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: ResourceQuotaOptions = {},
  ) {
    this.log = opts.log;
    this.served = opts.served ?? (() => true);
    this.quotas = informers.forResource<ResourceQuota>(resources.resourcequotas);
    const enqueue = (q: ResourceQuota) => this.queue.add(keyOf(q));
    this.quotas.addEventHandler({ onAdd: enqueue, onUpdate: (_o, q) => enqueue(q) });
    for (const r of WATCHED.filter(this.served)) {
      const inf = informers.forResource<KubeObject>(r);
      this.watched.set(refKey(r.group, r.resource), inf);
      const touched = (o: KubeObject) => this.enqueueNamespace(o.metadata?.namespace ?? '');
      inf.addEventHandler({ onAdd: touched, onUpdate: (_o, n) => touched(n), onDelete: touched });
    }
    this.resyncMs = opts.resyncMs ?? 5 * 60_000;
  }

  start(): void {
    this.resync = setInterval(() => {
      for (const q of this.quotas.store.list()) this.queue.add(keyOf(q));
    }, this.resyncMs);
    this.resync.unref();
  }

  private enqueueNamespace(ns: string): void {
    for (const q of this.quotas.store.listInNamespace(ns)) this.queue.add(keyOf(q));
  }

  stop(): void {
    if (this.resync) clearInterval(this.resync);
  }

  async reconcile(key: string): Promise<void> {
    const quota = this.quotas.store.getByKey(key);
    if (!quota) return;
    const { namespace } = splitKey(key);
    const ns = namespace ?? '';
    const hard = quota.spec?.hard ?? {};
    // One count per kind the quota's resources name, from the informer when there is one.
    const byKind = new Map<string, Map<string, Quantity>>();
    for (const name of Object.keys(hard)) {
      const gr = quotaResourceOf(name);
      if (!gr) continue;
      const k = refKey(gr.group, gr.resource);
      if (byKind.has(k)) continue;
      const objects = await this.objectsOf(gr.group, gr.resource, ns);
      if (!objects) continue;
      const usage = new Map<string, Quantity>();
      const spec = (quota.spec ?? {}) as Record<string, unknown>;
      for (const o of objects) {
        const x = o as Record<string, unknown>;
        // A quota with scopes counts only the pods they take in.
        if (quotaScopesMatch(spec, gr.group, gr.resource, x))
          addUsage(usage, quotaUsage(gr.group, gr.resource, x));
      }
      byKind.set(k, usage);
    }
    const used: Record<string, string> = {};
    for (const name of Object.keys(hard)) {
      const gr = quotaResourceOf(name);
      const usage = gr && byKind.get(refKey(gr.group, gr.resource));
      if (usage) used[name] = String(usage.get(name) ?? '0');
    }
    const status = { hard: { ...hard }, used };
    if (sameStatus(quota.status, status)) return;
    this.log?.debug({ quota: key, used: formatResourceList(new Map(Object.entries(used))) }, 'quota usage');
    await this.cluster.update<ResourceQuota>(resources.resourcequotas, { ...quota, status }, 'status');
  }

  private async objectsOf(group: string, resource: string, ns: string): Promise<KubeObject[] | undefined> {
    const k = refKey(group, resource);
    const inf = this.watched.get(k);
    if (inf) return inf.store.listInNamespace(ns);
    const ref = KNOWN.get(k);
    if (!ref?.namespaced || !this.served(ref)) return undefined;
    return (await this.cluster.list<KubeObject>(ref, ns)).items;
  }
}

function sameStatus(
  a: ResourceQuota['status'],
  b: { hard: Record<string, string>; used: Record<string, string> },
): boolean {
  const norm = (m: Record<string, string> | undefined) =>
    JSON.stringify(Object.entries(m ?? {}).sort(([x], [y]) => x.localeCompare(y)));
  return norm(a?.hard) === norm(b.hard) && norm(a?.used) === norm(b.used);
}
