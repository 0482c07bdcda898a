// The EndpointSlices of a Service, as Kubernetes' endpointslice reconciler
// plans them (pure: pods, nodes and the existing slices in, writes out):
// endpoints are grouped by port mapping (the Service's ports as each pod
// resolves them), each group is spread over slices of at most
// `maxEndpointsPerSlice`, and the plan changes as few slices as it can: an
// existing slice keeps its endpoints in place and is only rewritten when one of
// them changed, went or joined; new endpoints fill slices already being
// rewritten before a new slice is made; a slice that would be deleted is
// reused for one that would be created; nothing is written when nothing changed.
import type { Endpoint, EndpointPort, EndpointSlice, Node, OwnerReference, Pod, Service } from '@kubit/api';
import {
  ENDPOINTSLICE_CONTROLLER_NAME,
  HEADLESS_LABEL,
  MANAGED_BY_LABEL,
  SERVICE_NAME_LABEL,
} from '@kubit/api';
import { isPodReady, ownerRefFor } from '../objects.js';
import {
  canonical,
  findPort,
  formatTime,
  isHeadless,
  LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
  podIPv4,
  shouldPodBeInEndpoints,
  shouldSetHostname,
  ZONE_LABEL,
} from './shared.js';

export const DEFAULT_MAX_ENDPOINTS_PER_SLICE = 100;

/** Endpoints that share one port mapping. */
export interface PortGroup {
  ports: EndpointPort[];
  /** By endpointKey. */
  endpoints: Map<string, Endpoint>;
}

export interface SlicePlan {
  create: EndpointSlice[];
  update: EndpointSlice[];
  delete: EndpointSlice[];
}

export const portsKey = (ports: readonly EndpointPort[] | undefined | null) =>
  canonical((ports ?? []).map((p) => [p.name ?? '', p.port ?? 0, p.protocol ?? 'TCP', p.appProtocol ?? '']));

/** Which pod an endpoint stands for: its addresses and its target. */
export const endpointKey = (e: Endpoint) =>
  `${e.addresses.join(',')}|${e.targetRef?.namespace ?? ''}/${e.targetRef?.name ?? ''}`;

export function podToEndpoint(pod: Pod, svc: Service, node: Node | undefined): Endpoint | undefined {
  const ip = podIPv4(pod);
  if (!ip) return undefined;
  const ready = isPodReady(pod);
  const terminating = Boolean(pod.metadata?.deletionTimestamp);
  const publish = svc.spec?.publishNotReadyAddresses === true;
  const e: Endpoint = {
    addresses: [ip],
    conditions: {
      // Never ready while terminating (clients that only read `ready` must stop
      // sending), unless the Service asks for every address.
      ready: publish || (ready && !terminating),
      serving: publish || ready,
      terminating,
    },
  };
  if (shouldSetHostname(pod, svc)) e.hostname = pod.spec?.hostname;
  e.targetRef = {
    kind: 'Pod',
    namespace: pod.metadata?.namespace,
    name: pod.metadata?.name,
    uid: pod.metadata?.uid,
  };
  if (pod.spec?.nodeName) e.nodeName = pod.spec.nodeName;
  const zone = node?.metadata?.labels?.[ZONE_LABEL];
  if (zone) e.zone = zone;
  return e;
}

/** The Service's ports as this pod resolves them, in the Service's order. */
export function slicePortsFor(pod: Pod, svc: Service): EndpointPort[] {
  const out: EndpointPort[] = [];
  for (const sp of svc.spec?.ports ?? []) {
    const port = findPort(pod, sp);
    if (port === undefined) continue;
    const p: EndpointPort = { name: sp.name ?? '', port, protocol: sp.protocol ?? 'TCP' };
    if (sp.appProtocol) p.appProtocol = sp.appProtocol;
    out.push(p);
  }
  return out;
}

/** The endpoints the Service should have, by port mapping. */
export function desiredPortGroups(
  svc: Service,
  pods: readonly Pod[],
  nodeOf: (name: string) => Node | undefined,
): Map<string, PortGroup> {
  const groups = new Map<string, PortGroup>();
  for (const pod of pods) {
    if (!shouldPodBeInEndpoints(pod, true)) continue;
    const e = podToEndpoint(pod, svc, nodeOf(pod.spec?.nodeName ?? ''));
    if (!e) continue;
    const ports = slicePortsFor(pod, svc);
    const key = portsKey(ports);
    let g = groups.get(key);
    if (!g) {
      g = { ports, endpoints: new Map() };
      groups.set(key, g);
    }
    g.endpoints.set(endpointKey(e), e);
  }
  return groups;
}

/** The labels of the Service's slices: its own labels (less the reserved ones), the service name, who manages them. */
export function sliceLabels(svc: Service, managedBy = ENDPOINTSLICE_CONTROLLER_NAME): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(svc.metadata?.labels ?? {})) {
    if (k === SERVICE_NAME_LABEL || k === MANAGED_BY_LABEL || k === HEADLESS_LABEL) continue;
    labels[k] = v;
  }
  if (isHeadless(svc)) labels[HEADLESS_LABEL] = '';
  labels[SERVICE_NAME_LABEL] = svc.metadata?.name ?? '';
  labels[MANAGED_BY_LABEL] = managedBy;
  return labels;
}

/** Who the slices belong to: what every slice of the plan carries in its metadata. */
export interface SliceMeta {
  namespace: string;
  generateName: string;
  labels: Record<string, string>;
  owner: OwnerReference;
  /** Annotations every slice must carry exactly (besides the trigger time); undefined leaves them be. */
  annotations?: Record<string, string>;
}

/** The metadata of a Service's slices (the endpointslice controller's). */
export function serviceSliceMeta(svc: Service): SliceMeta {
  return {
    namespace: svc.metadata?.namespace ?? '',
    generateName: `${svc.metadata?.name}-`,
    labels: sliceLabels(svc),
    owner: ownerRefFor(svc, 'Service', 'v1'),
  };
}

export interface PlanInput {
  meta: SliceMeta;
  /** Keep one empty slice when there are no endpoints (the endpointslice controller does; mirroring does not). */
  placeholder?: boolean;
  /** The Service's existing slices managed by this controller. */
  existing: readonly EndpointSlice[];
  desired: Map<string, PortGroup>;
  maxEndpointsPerSlice: number;
  /** The last-change-trigger-time for the slices written (ms), if any. */
  triggerTime?: number;
}

interface Working {
  slice: EndpointSlice;
  endpoints: Endpoint[];
  /** Endpoints or ports differ from the stored slice. */
  changed: boolean;
}

/** Which slices to create, update and delete so the Service's slices hold exactly `desired`. */
export function planSlices(input: PlanInput): SlicePlan {
  const { meta, desired, maxEndpointsPerSlice: max } = input;
  const { labels, owner } = meta;
  const toUpdate: Working[] = [];
  const unchanged: Working[] = [];
  const toDelete: EndpointSlice[] = [];
  const toCreate: { ports: EndpointPort[]; endpoints: Endpoint[] }[] = [];
  // Endpoints not yet placed, by port mapping; consumed as existing slices claim them.
  const remaining = new Map([...desired].map(([k, g]) => [k, new Map(g.endpoints)]));

  const existingByGroup = new Map<string, EndpointSlice[]>();
  for (const s of input.existing) {
    const k = portsKey(s.ports);
    existingByGroup.set(k, [...(existingByGroup.get(k) ?? []), s]);
  }
  for (const [key, slices] of existingByGroup) {
    const left = remaining.get(key);
    for (const slice of slices) {
      const kept: Endpoint[] = [];
      let changed = false;
      for (const e of slice.endpoints ?? []) {
        const k = endpointKey(e);
        const want = left?.get(k);
        if (!want) {
          changed = true; // gone, or a duplicate of one placed already
          continue;
        }
        left?.delete(k);
        if (canonical(want) !== canonical(e)) changed = true;
        kept.push(want);
      }
      // Emptied, or empty with a port mapping nobody has any more (a placeholder is rescued below).
      if (kept.length === 0 && ((slice.endpoints?.length ?? 0) > 0 || !desired.has(key)))
        toDelete.push(slice);
      else (changed ? toUpdate : unchanged).push({ slice, endpoints: kept, changed });
    }
  }

  for (const [key, left] of remaining) {
    if (left.size === 0) continue;
    const ports = desired.get(key)?.ports ?? [];
    const pending = [...left.values()].sort((a, b) => endpointKey(a).localeCompare(endpointKey(b)));
    // First into slices of this mapping that are being rewritten anyway, fullest first.
    const sameGroup = (w: Working) => portsKey(w.slice.ports) === key;
    for (const w of toUpdate.filter(sameGroup).sort((a, b) => b.endpoints.length - a.endpoints.length)) {
      while (pending.length && w.endpoints.length < max) w.endpoints.push(pending.shift()!);
    }
    // Then, if what is left fits into one unchanged slice, rewrite that one instead of making a new one.
    if (pending.length && pending.length < max) {
      const fit = unchanged
        .filter((w) => sameGroup(w) && w.endpoints.length + pending.length <= max)
        .sort((a, b) => b.endpoints.length - a.endpoints.length)[0];
      if (fit) {
        unchanged.splice(unchanged.indexOf(fit), 1);
        fit.endpoints.push(...pending.splice(0));
        fit.changed = true;
        toUpdate.push(fit);
      }
    }
    for (let i = 0; i < pending.length; i += max)
      toCreate.push({ ports, endpoints: pending.slice(i, i + max) });
  }

  // A Service with no endpoints at all keeps one empty slice, as Kubernetes' placeholder.
  if (
    input.placeholder !== false &&
    toCreate.length === 0 &&
    toUpdate.length === 0 &&
    unchanged.length === 0
  ) {
    const placeholder = toDelete.findIndex((s) => !s.endpoints?.length && !s.ports?.length);
    if (placeholder >= 0)
      unchanged.push({ slice: toDelete.splice(placeholder, 1)[0], endpoints: [], changed: false });
    else toCreate.push({ ports: [], endpoints: [] });
  } else if (toCreate.length + toUpdate.length + unchanged.filter((w) => w.endpoints.length).length > 0) {
    // Empty slices (a placeholder among them) are not needed once there are endpoints.
    for (let i = unchanged.length - 1; i >= 0; i--) {
      if (unchanged[i].endpoints.length === 0) toDelete.push(...unchanged.splice(i, 1).map((w) => w.slice));
    }
  }

  const annotate = (s: EndpointSlice) => {
    const annotations = { ...(meta.annotations ?? s.metadata?.annotations ?? {}) };
    if (input.triggerTime) annotations[LAST_CHANGE_TRIGGER_TIME_ANNOTATION] = formatTime(input.triggerTime);
    else delete annotations[LAST_CHANGE_TRIGGER_TIME_ANNOTATION];
    return Object.keys(annotations).length ? annotations : undefined;
  };
  const ownedRight = (s: EndpointSlice) =>
    canonical(s.metadata?.ownerReferences ?? []) === canonical([owner]) &&
    canonical(s.metadata?.labels ?? {}) === canonical(labels) &&
    (meta.annotations === undefined ||
      canonical(annotate(s) ?? {}) === canonical(s.metadata?.annotations ?? {}));

  const plan: SlicePlan = { create: [], update: [], delete: [] };
  for (const w of unchanged) {
    // Only the labels or the owner differ (the Service's labels changed): rewrite the metadata.
    if (!ownedRight(w.slice)) toUpdate.push({ ...w, changed: false });
  }
  for (const w of toUpdate) {
    const s: EndpointSlice = {
      ...w.slice,
      metadata: { ...w.slice.metadata, labels, ownerReferences: [owner] },
      endpoints: w.endpoints,
    };
    if (w.changed || meta.annotations) s.metadata!.annotations = annotate(w.slice);
    plan.update.push(s);
  }
  for (const c of toCreate) {
    const fresh: EndpointSlice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        generateName: meta.generateName,
        namespace: meta.namespace,
        labels,
        ownerReferences: [owner],
      },
      addressType: 'IPv4',
      endpoints: c.endpoints,
      ports: c.ports,
    };
    fresh.metadata!.annotations = annotate(fresh);
    // Reuse a slice that would be deleted: one update instead of a delete and a create.
    const reuse = toDelete.shift();
    if (reuse) {
      plan.update.push({
        ...fresh,
        metadata: {
          ...fresh.metadata,
          generateName: undefined,
          name: reuse.metadata?.name,
          resourceVersion: reuse.metadata?.resourceVersion,
          uid: reuse.metadata?.uid,
          annotations: annotate(reuse),
        },
      });
    } else plan.create.push(fresh);
  }
  plan.delete.push(...toDelete);
  return plan;
}
