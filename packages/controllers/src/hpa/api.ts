// What the HPA controller asks of the apiserver beyond its informers: the scale
// subresource of whatever an HPA targets (found by its apiVersion and kind through
// discovery, so a custom resource with a scale subresource works), the pods' resource
// metrics (metrics.k8s.io/v1beta1, as the HPA controller's metrics client reads them)
// and its HPAs' status. The daemon's implementation is over @kubit/client; unit tests
// give their own.
import { toMilli } from '@kubit/api';
import { discoverResources, type KubeClient, type ResourceRef } from '@kubit/client';
import type { PodMetric } from './replica-calculator.js';

export interface Scale {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
  spec?: { replicas?: number };
  status?: { replicas?: number; selector?: string };
}

export interface TargetRef {
  apiVersion?: string;
  kind: string;
  name: string;
}

export interface HpaApi {
  getScale(namespace: string, ref: TargetRef): Promise<{ resource: ResourceRef; scale: Scale }>;
  updateScale(namespace: string, resource: ResourceRef, scale: Scale): Promise<Scale>;
  /** Each pod's usage of `resource` (milli-units), by pod name, for the pods the selector picks. */
  podMetrics(
    namespace: string,
    selector: string,
    resource: string,
    container?: string,
  ): Promise<Map<string, PodMetric>>;
}

export const hpaResource: ResourceRef = {
  group: 'autoscaling',
  version: 'v2',
  resource: 'horizontalpodautoscalers',
  namespaced: true,
  kind: 'HorizontalPodAutoscaler',
};

interface PodMetricsList {
  items?: {
    metadata?: { name?: string };
    timestamp?: string;
    window?: string;
    containers?: { name: string; usage?: Record<string, string> }[];
  }[];
}

/** A Go duration as metrics-server writes a window ("15.002s", "1m0s") in ms. */
export function parseWindow(text: string | undefined): number {
  if (!text) return 0;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9.]+)(h|ms|m|s)/g)) {
    ms += Number(n) * ({ h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as Record<string, number>)[unit];
  }
  return ms;
}

export class RestHpaApi implements HpaApi {
  /** `apiVersion/kind` → resource, from discovery; asked again on a miss (a CRD added later). */
  private kinds = new Map<string, ResourceRef>();

  constructor(private readonly client: KubeClient) {}

  private async resourceFor(ref: TargetRef): Promise<ResourceRef> {
    const key = `${ref.apiVersion ?? ''}/${ref.kind}`;
    const known = this.kinds.get(key);
    if (known) return known;
    const all = await discoverResources(this.client);
    this.kinds = new Map();
    for (const r of all) {
      if (r.subresource) continue;
      const gv = r.group ? `${r.group}/${r.version}` : r.version;
      this.kinds.set(`${gv}/${r.kind}`, {
        group: r.group,
        version: r.version,
        resource: r.resource,
        namespaced: r.namespaced,
        kind: r.kind,
      });
    }
    const found = this.kinds.get(key);
    if (!found)
      throw new Error(`no matches for kind "${ref.kind}" in group version "${ref.apiVersion ?? ''}"`);
    return found;
  }

  async getScale(namespace: string, ref: TargetRef) {
    const resource = await this.resourceFor(ref);
    const scale = await this.client.get<Scale & { metadata?: object }>(resource, ref.name, {
      namespace,
      subresource: 'scale',
    });
    return { resource, scale: scale as Scale };
  }

  async updateScale(namespace: string, resource: ResourceRef, scale: Scale): Promise<Scale> {
    return (await this.client.update(
      resource,
      { ...scale, metadata: { ...scale.metadata, namespace } } as never,
      {
        subresource: 'scale',
      },
    )) as Scale;
  }

  async podMetrics(namespace: string, selector: string, resource: string, container?: string) {
    const list = await this.client.request<PodMetricsList>({
      method: 'GET',
      path: `/apis/metrics.k8s.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/pods`,
      query: { labelSelector: selector },
    });
    const out = new Map<string, PodMetric>();
    for (const item of list.items ?? []) {
      let value = 0;
      let complete = true;
      for (const c of item.containers ?? []) {
        if (container && c.name !== container) continue;
        const usage = c.usage?.[resource];
        if (usage === undefined) complete = false;
        else value += toMilli(usage);
      }
      if (!complete || !item.metadata?.name) continue;
      out.set(item.metadata.name, {
        value,
        timestampMs: item.timestamp ? Date.parse(item.timestamp) : Date.now(),
        windowMs: parseWindow(item.window),
      });
    }
    return out;
  }
}
