// The core/v1 Endpoints of a Service, computed from its pods: each pod's
// address under `addresses` (ready, or any with publishNotReadyAddresses) or
// `notReadyAddresses`, grouped into subsets of addresses that share the same
// resolved ports (pods resolving a named target port differently land in
// different subsets), sorted, and cut to 1000 addresses as Kubernetes does.

import type { EndpointAddress, EndpointSubset, Pod, Service } from '@kubit/api';
import { parseIPv4 } from '@kubit/api';
import { isPodReady } from '../objects.js';
import { findPort, isHeadless, podIPv4, shouldPodBeInEndpoints, shouldSetHostname } from './shared.js';

/** Kubernetes' limit on one Endpoints object (the rest is only in EndpointSlices). */
export const MAX_ENDPOINTS_ADDRESSES = 1000;

type EndpointPort = NonNullable<EndpointSubset['ports']>[number];

export interface DesiredEndpoints {
  subsets: EndpointSubset[];
  /** More addresses than MAX_ENDPOINTS_ADDRESSES: some were left out. */
  truncated: boolean;
}

export function podEndpointAddress(pod: Pod, svc: Service): EndpointAddress | undefined {
  const ip = podIPv4(pod);
  if (!ip) return undefined;
  const a: EndpointAddress = { ip };
  if (shouldSetHostname(pod, svc)) a.hostname = pod.spec?.hostname;
  if (pod.spec?.nodeName) a.nodeName = pod.spec.nodeName;
  a.targetRef = {
    kind: 'Pod',
    namespace: pod.metadata?.namespace,
    name: pod.metadata?.name,
    uid: pod.metadata?.uid,
  };
  return a;
}

/** The Service's ports as this pod serves them (those that resolve). */
export function endpointPortsFor(pod: Pod, svc: Service): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of svc.spec?.ports ?? []) {
    const port = findPort(pod, sp);
    if (port === undefined) continue;
    const ep: EndpointPort = { port, protocol: sp.protocol ?? 'TCP' };
    if (sp.name) ep.name = sp.name;
    if (sp.appProtocol) ep.appProtocol = sp.appProtocol;
    out.push(ep);
  }
  return out;
}

const portKey = (p: EndpointPort) =>
  `${p.name ?? ''}|${p.port}|${p.protocol ?? 'TCP'}|${p.appProtocol ?? ''}`;
const ipOrder = (a: EndpointAddress, b: EndpointAddress) =>
  (parseIPv4(a.ip) ?? 0) - (parseIPv4(b.ip) ?? 0) ||
  (a.targetRef?.uid ?? '').localeCompare(b.targetRef?.uid ?? '');

export function desiredEndpoints(svc: Service, pods: readonly Pod[]): DesiredEndpoints {
  const tolerateUnready = svc.spec?.publishNotReadyAddresses === true;
  const headless = isHeadless(svc);
  const hasPorts = (svc.spec?.ports?.length ?? 0) > 0;
  // Addresses grouped by the exact set of ports they serve (Kubernetes' RepackSubsets).
  const groups = new Map<
    string,
    { ports: EndpointPort[]; ready: EndpointAddress[]; notReady: EndpointAddress[] }
  >();
  for (const pod of pods) {
    if (!shouldPodBeInEndpoints(pod, tolerateUnready)) continue;
    const address = podEndpointAddress(pod, svc);
    if (!address) continue;
    let ports: EndpointPort[];
    if (hasPorts) {
      ports = endpointPortsFor(pod, svc);
      if (ports.length === 0) continue;
    } else if (headless) {
      // A headless Service may have no ports: its endpoints are just addresses.
      ports = [];
    } else {
      continue;
    }
    ports.sort((a, b) => portKey(a).localeCompare(portKey(b)));
    const key = ports.map(portKey).join(',');
    let g = groups.get(key);
    if (!g) {
      g = { ports, ready: [], notReady: [] };
      groups.set(key, g);
    }
    (tolerateUnready || isPodReady(pod) ? g.ready : g.notReady).push(address);
  }
  const subsets: EndpointSubset[] = [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, g]) => {
      const s: EndpointSubset = {};
      if (g.ready.length) s.addresses = g.ready.sort(ipOrder);
      if (g.notReady.length) s.notReadyAddresses = g.notReady.sort(ipOrder);
      if (g.ports.length) s.ports = g.ports;
      return s;
    });
  const truncated = truncateSubsets(subsets, MAX_ENDPOINTS_ADDRESSES);
  return { subsets, truncated };
}

/**
 * Cuts the subsets to `max` addresses in place, as Kubernetes does: not-ready
 * addresses go first; when the ready ones alone are too many, every not-ready
 * one goes and each subset keeps a share of ready ones proportional to its size.
 */
export function truncateSubsets(subsets: EndpointSubset[], max: number): boolean {
  const ready = subsets.reduce((n, s) => n + (s.addresses?.length ?? 0), 0);
  const notReady = subsets.reduce((n, s) => n + (s.notReadyAddresses?.length ?? 0), 0);
  if (ready + notReady <= max) return false;
  const cutReady = ready > max;
  const room = cutReady ? max : max - ready;
  const total = cutReady ? ready : notReady;
  let left = room;
  for (const s of subsets) {
    const list = (cutReady ? s.addresses : s.notReadyAddresses) ?? [];
    const share = Math.min(Math.ceil((list.length / total) * room), left);
    const kept = list.slice(0, share);
    left -= kept.length;
    if (cutReady) {
      s.addresses = kept;
      delete s.notReadyAddresses;
    } else if (kept.length) s.notReadyAddresses = kept;
    else delete s.notReadyAddresses;
    if (s.addresses?.length === 0) delete s.addresses;
  }
  // A subset left with no address says nothing.
  for (let i = subsets.length - 1; i >= 0; i--) {
    if (!subsets[i].addresses?.length && !subsets[i].notReadyAddresses?.length) subsets.splice(i, 1);
  }
  return true;
}
