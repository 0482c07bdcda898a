// What the endpointslicemirroring controller mirrors (pure): the Endpoints a
// user wrote for a Service without a selector, as EndpointSlices the proxies
// and DNS read like any other. Each subset becomes a port mapping; addresses
// are ready, notReadyAddresses are not; at most `maxPerSubset` addresses of a
// subset are mirrored (Kubernetes' --mirroring-max-endpoints-per-subset).
import type { Endpoint, EndpointPort, Endpoints, Service } from '@kubit/api';
import { MANAGED_BY_LABEL, parseIPv4, SERVICE_NAME_LABEL } from '@kubit/api';
import { ownerRefFor, timeOf } from '../objects.js';
import { LAST_CHANGE_TRIGGER_TIME_ANNOTATION, SKIP_MIRROR_LABEL } from './shared.js';
import { endpointKey, type PortGroup, portsKey, type SliceMeta } from './slices.js';

export const MIRRORING_CONTROLLER_NAME = 'endpointslicemirroring-controller.k8s.io';
export const DEFAULT_MIRRORING_MAX_ENDPOINTS_PER_SUBSET = 1000;
/** An Endpoints object used as a leader-election lock is not a set of endpoints. */
const LEADER_ANNOTATION = 'control-plane.alpha.kubernetes.io/leader';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Whether these Endpoints are to be mirrored: a selector-less Service of that name exists and nothing says no. */
export function shouldMirror(ep: Endpoints, svc: Service | undefined): boolean {
  if (!svc || svc.spec?.selector != null) return false;
  if (ep.metadata?.labels?.[SKIP_MIRROR_LABEL] === 'true') return false;
  if (ep.metadata?.annotations?.[LEADER_ANNOTATION] !== undefined) return false;
  return true;
}

export function mirroredSliceMeta(ep: Endpoints): SliceMeta {
  const labels: Record<string, string> = { ...(ep.metadata?.labels ?? {}) };
  labels[SERVICE_NAME_LABEL] = ep.metadata?.name ?? '';
  labels[MANAGED_BY_LABEL] = MIRRORING_CONTROLLER_NAME;
  const annotations: Record<string, string> = { ...(ep.metadata?.annotations ?? {}) };
  delete annotations[LAST_CHANGE_TRIGGER_TIME_ANNOTATION];
  delete annotations[LAST_APPLIED];
  return {
    namespace: ep.metadata?.namespace ?? '',
    generateName: `${ep.metadata?.name}-`,
    labels,
    owner: ownerRefFor(ep, 'Endpoints', 'v1'),
    annotations,
  };
}

/** The Endpoints' own trigger time, carried over to the slices. */
export const mirroredTriggerTime = (ep: Endpoints) =>
  timeOf(ep.metadata?.annotations?.[LAST_CHANGE_TRIGGER_TIME_ANNOTATION]) || undefined;

export function mirroredPortGroups(
  ep: Endpoints,
  maxPerSubset = DEFAULT_MIRRORING_MAX_ENDPOINTS_PER_SUBSET,
): Map<string, PortGroup> {
  const groups = new Map<string, PortGroup>();
  for (const subset of ep.subsets ?? []) {
    const ports: EndpointPort[] = (subset.ports ?? []).map((p) => {
      const out: EndpointPort = { name: p.name ?? '', port: p.port, protocol: p.protocol ?? 'TCP' };
      if (p.appProtocol) out.appProtocol = p.appProtocol;
      return out;
    });
    const key = portsKey(ports);
    let g = groups.get(key);
    if (!g) {
      g = { ports, endpoints: new Map() };
      groups.set(key, g);
    }
    let taken = 0;
    const add = (addresses: typeof subset.addresses, ready: boolean) => {
      for (const a of addresses ?? []) {
        // IPv4 only (the slices are IPv4); an address that is not one is skipped, as Kubernetes skips invalid ones.
        const n = parseIPv4(a.ip);
        if (n === undefined || taken >= maxPerSubset) continue;
        const e: Endpoint = { addresses: [a.ip], conditions: { ready } };
        if (a.hostname) e.hostname = a.hostname;
        if (a.targetRef) e.targetRef = a.targetRef;
        if (a.nodeName) e.nodeName = a.nodeName;
        const k = endpointKey(e);
        if (g!.endpoints.has(k)) continue;
        g!.endpoints.set(k, e);
        taken++;
      }
    };
    add(subset.addresses, true);
    add(subset.notReadyAddresses, false);
  }
  return groups;
}
