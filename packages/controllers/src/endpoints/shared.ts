// What the Endpoints and EndpointSlice controllers share: which pods back a
// Service, how a Service port resolves against a pod (named target ports are
// per pod), the names Kubernetes gives the annotations, and the pod and
// Service changes worth a resync. Pure functions.
import {
  type EndpointSlice,
  MANAGED_BY_LABEL,
  type Pod,
  SERVICE_NAME_LABEL,
  type Service,
  type ServicePort,
} from '@kubit/api';
import type { ResourceRef } from '@kubit/client';
import { compileSelector } from '../labels.js';
import { isPodReady } from '../objects.js';

/** discovery.k8s.io/v1 EndpointSlices (not among @kubit/client's well-known resources yet). */
export const endpointSliceResource: ResourceRef = {
  group: 'discovery.k8s.io',
  version: 'v1',
  resource: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};

/** When the change that led to this write happened (kubit-proxy measures programming latency from it). */
export const LAST_CHANGE_TRIGGER_TIME_ANNOTATION = 'endpoints.kubernetes.io/last-change-trigger-time';
/** Set on an Endpoints object that holds fewer addresses than the Service has. */
export const OVER_CAPACITY_ANNOTATION = 'endpoints.kubernetes.io/over-capacity';
/** Tells the mirroring controller to leave an Endpoints object alone (the endpoint controller wrote it). */
export const SKIP_MIRROR_LABEL = 'endpointslice.kubernetes.io/skip-mirror';
/** The node label an endpoint's zone comes from. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/**
 * Whether a pod belongs in a Service's endpoints at all: it has an IP and has
 * not finished (Succeeded/Failed); a terminating pod only when asked for
 * (EndpointSlices keep them, marked terminating; Endpoints keep them only for
 * publishNotReadyAddresses).
 */
export function shouldPodBeInEndpoints(pod: Pod, includeTerminating: boolean): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return false;
  if (!pod.status?.podIP && !pod.status?.podIPs?.length) return false;
  if (!includeTerminating && pod.metadata?.deletionTimestamp) return false;
  return true;
}

/** The pod's IPv4 address (the first of its IPs). */
export function podIPv4(pod: Pod): string | undefined {
  const ips = [pod.status?.podIP, ...(pod.status?.podIPs ?? []).map((p) => p.ip)];
  return ips.find((ip): ip is string => typeof ip === 'string' && ip.includes('.'));
}

/**
 * The port a Service port reaches on this pod: a number as is, a name looked
 * up among the pod's container ports of the same protocol. Undefined when the
 * name matches no port of the pod (the pod gets no endpoint for that port).
 */
export function findPort(pod: Pod, sp: ServicePort): number | undefined {
  const target = sp.targetPort ?? sp.port;
  if (typeof target === 'number') return target;
  if (/^\d+$/.test(target)) return Number(target);
  const protocol = sp.protocol ?? 'TCP';
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.name === target && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
    }
  }
  return undefined;
}

/** A pod with spec.hostname in the Service's subdomain gets a DNS name `<hostname>.<svc>`. */
export function shouldSetHostname(pod: Pod, svc: Service): boolean {
  return (
    Boolean(pod.spec?.hostname) &&
    pod.spec?.subdomain === svc.metadata?.name &&
    pod.metadata?.namespace === svc.metadata?.namespace
  );
}

export const isHeadless = (svc: Service) => svc.spec?.clusterIP === 'None';

/** The Services whose endpoints this controller keeps: with a selector, not ExternalName. */
export function managesEndpoints(svc: Service): boolean {
  return svc.spec?.type !== 'ExternalName' && svc.spec?.selector != null;
}

// A Service's selector is a plain label map; it is compiled once per map (cached objects are replaced, never mutated).
const selectors = new WeakMap<object, ReturnType<typeof compileSelector>>();

/** Whether the Service selects the pod's labels (a Service without a selector selects nothing). */
export function serviceSelects(svc: Service, labels: Record<string, string> | undefined): boolean {
  const sel = svc.spec?.selector;
  if (!sel) return false;
  let m = selectors.get(sel);
  if (!m) {
    m = compileSelector({ matchLabels: sel });
    selectors.set(sel, m);
  }
  return m(labels);
}

/** The pods of the Service's namespace it selects. */
export function selectedPods(svc: Service, podsInNamespace: readonly Pod[]): Pod[] {
  return podsInNamespace.filter((p) => serviceSelects(svc, p.metadata?.labels));
}

/** What of a pod the endpoints are made of: a change elsewhere needs no resync. */
export function endpointRelevant(pod: Pod): string {
  return JSON.stringify([
    pod.metadata?.labels,
    pod.metadata?.deletionTimestamp,
    pod.status?.podIP,
    pod.status?.podIPs,
    pod.status?.phase,
    isPodReady(pod),
    pod.spec?.nodeName,
    pod.spec?.hostname,
    pod.spec?.subdomain,
    pod.spec?.containers?.map((c) => c.ports),
  ]);
}

/** Kubernetes' RFC 3339 form: no fraction when there is none. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** JSON with object keys sorted: for comparing what is stored with what is wanted. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/**
 * ns/name of the Service (and its same-named Endpoints) a slice belongs to, when
 * `managedBy` (endpointslice.kubernetes.io/managed-by) keeps it; else undefined.
 */
export function sliceOwnerKey(s: EndpointSlice, managedBy: string): string | undefined {
  if (s.metadata?.labels?.[MANAGED_BY_LABEL] !== managedBy) return undefined;
  const svc = s.metadata?.labels?.[SERVICE_NAME_LABEL];
  return svc ? `${s.metadata?.namespace}/${svc}` : undefined;
}
