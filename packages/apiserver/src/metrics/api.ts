// metrics.k8s.io/v1beta1: NodeMetrics and PodMetrics, read-only and never stored, answered
// from the scraper's last two scrapes (what `kubectl top` and the HPA controller read).
// Lists leave out what has no usage (a node whose kubelet is unreachable, a pod not yet
// scraped twice); a get of a node whose kubelet is unreachable (or of a pod on it) is a 503.
import { methodNotSupported, notFound, serviceUnavailable } from '@kubit/api';
import { obj, str } from '../kinds/types.js';
import {
  type FieldSelector,
  parseFieldSelector,
  parseLabelSelector,
  type Selector,
} from '../model/selectors.js';
import { queryString, type ResourceRequest } from '../request.js';
import type { Ctx } from '../rest.js';
import type { KObject } from '../storage.js';
import type { WatchCache } from '../watchcache.js';
import { cpuQuantity, memoryQuantity, type Usage, windowText } from './samples.js';
import type { ResourceMetricsScraper } from './scraper.js';

export const METRICS_GROUP = 'metrics.k8s.io';
export const METRICS_VERSION = 'v1beta1';
const API_VERSION = `${METRICS_GROUP}/${METRICS_VERSION}`;

/** The resources discovery lists for metrics.k8s.io/v1beta1. */
export const METRICS_RESOURCES = [
  { resource: 'nodes', kind: 'NodeMetrics', singular: '', namespaced: false },
  { resource: 'pods', kind: 'PodMetrics', singular: '', namespaced: true },
] as const;
export const METRICS_VERBS = ['get', 'list'];

export interface MetricsApiDeps {
  scraper: ResourceMetricsScraper;
  nodes: WatchCache;
  pods: WatchCache;
}

// As metrics-server names them in errors ("podmetrics.metrics.k8s.io \"x\" not found").
const nodesGR = { group: METRICS_GROUP, resource: 'nodemetrics' };
const podsGR = { group: METRICS_GROUP, resource: 'podmetrics' };

function usageOf(u: Usage): { cpu: string; memory: string } {
  return { cpu: cpuQuantity(u.cpuCores), memory: memoryQuantity(u.memoryBytes) };
}

function metadataOf(o: KObject, withNamespace: boolean): Record<string, unknown> {
  const m = obj(o.metadata);
  return {
    name: str(m.name),
    ...(withNamespace ? { namespace: str(m.namespace) } : {}),
    creationTimestamp: new Date().toISOString(),
    ...(m.labels ? { labels: m.labels } : {}),
  };
}

function selectors(ctx: Ctx): { labels: Selector; fields?: FieldSelector } {
  const ls = queryString(ctx.query, 'labelSelector');
  const fs = queryString(ctx.query, 'fieldSelector');
  return { labels: parseLabelSelector(ls ?? ''), ...(fs ? { fields: parseFieldSelector(fs) } : {}) };
}

function selected(o: KObject, sel: { labels: Selector; fields?: FieldSelector }): boolean {
  const m = obj(o.metadata);
  if (!sel.labels.matches((m.labels ?? {}) as Record<string, string>)) return false;
  return (
    !sel.fields ||
    sel.fields.matches({ 'metadata.name': str(m.name), 'metadata.namespace': str(m.namespace) })
  );
}

function nodeMetrics(deps: MetricsApiDeps, node: KObject) {
  const r = deps.scraper.nodeUsage(str(obj(node.metadata).name));
  if (!r) return undefined;
  if ('unavailable' in r) return r;
  return {
    kind: 'NodeMetrics',
    apiVersion: API_VERSION,
    metadata: metadataOf(node, false),
    timestamp: new Date(r.usage.timeMs).toISOString(),
    window: windowText(r.usage.windowMs),
    usage: usageOf(r.usage),
  };
}

export function serveMetrics(
  info: ResourceRequest,
  ctx: Ctx,
  deps: MetricsApiDeps,
): { code: number; body: unknown } {
  const gr = info.resource === 'nodes' ? nodesGR : podsGR;
  if (info.version !== METRICS_VERSION || !['nodes', 'pods'].includes(info.resource) || info.subresource) {
    throw notFound(gr, info.name);
  }
  if (info.verb !== 'get' && info.verb !== 'list') throw methodNotSupported(gr, info.verb);
  return info.resource === 'nodes' ? serveNodes(info, ctx, deps) : servePods(info, ctx, deps);
}

function serveNodes(info: ResourceRequest, ctx: Ctx, deps: MetricsApiDeps) {
  if (info.namespace) throw notFound(nodesGR, info.name);
  if (info.name) {
    const node = deps.nodes.objects.get(`/registry/nodes/${info.name}`);
    const m = node ? nodeMetrics(deps, node) : undefined;
    if (m && 'unavailable' in m) throw serviceUnavailable(m.unavailable);
    if (!m) throw notFound(nodesGR, info.name);
    return { code: 200, body: m };
  }
  const sel = selectors(ctx);
  const items = [];
  for (const node of deps.nodes.objects.values()) {
    if (!selected(node, sel)) continue;
    const m = nodeMetrics(deps, node);
    if (m && !('unavailable' in m)) items.push(m);
  }
  items.sort((a, b) => (String(a.metadata.name) < String(b.metadata.name) ? -1 : 1));
  return { code: 200, body: { kind: 'NodeMetricsList', apiVersion: API_VERSION, metadata: {}, items } };
}

function servePods(info: ResourceRequest, ctx: Ctx, deps: MetricsApiDeps) {
  const usages = deps.scraper.podUsages();
  const podMetrics = (pod: KObject) => {
    const m = obj(pod.metadata);
    const u = usages.get(`${str(m.namespace)}/${str(m.name)}`);
    if (!u) return undefined;
    return {
      kind: 'PodMetrics',
      apiVersion: API_VERSION,
      metadata: metadataOf(pod, true),
      timestamp: new Date(u.usage.timeMs).toISOString(),
      window: windowText(u.usage.windowMs),
      containers: u.usage.containers.map((c) => ({ name: c.name, usage: usageOf(c.usage) })),
    };
  };
  if (info.name) {
    const pod = deps.pods.objects.get(`/registry/pods/${info.namespace}/${info.name}`);
    if (!pod) throw notFound(podsGR, info.name);
    const m = podMetrics(pod);
    if (m) return { code: 200, body: m };
    const nodeError = deps.scraper.nodeError(str(obj(pod.spec).nodeName));
    if (nodeError) throw serviceUnavailable(nodeError);
    throw notFound(podsGR, info.name);
  }
  const sel = selectors(ctx);
  const prefix = info.namespace ? `/registry/pods/${info.namespace}/` : '/registry/pods/';
  const items = [];
  for (const [key, pod] of deps.pods.objects) {
    if (!key.startsWith(prefix) || !selected(pod, sel)) continue;
    const m = podMetrics(pod);
    if (m) items.push(m);
  }
  const keyOf = (x: { metadata: Record<string, unknown> }) => `${x.metadata.namespace}/${x.metadata.name}`;
  items.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  return { code: 200, body: { kind: 'PodMetricsList', apiVersion: API_VERSION, metadata: {}, items } };
}
