// core/v1 Services and Endpoints, and discovery.k8s.io/v1 EndpointSlices: how
// they are stored, defaulted and printed. A Service's status (its load
// balancer's addresses) is written through /status only, as Kubernetes keeps it.

import { schemas } from '../model/schema.js';
import { sameJson } from '../objects.js';
import {
  needsClusterIP,
  needsHealthCheckPort,
  needsNodePorts,
  ServiceClaims,
} from '../services/allocator.js';
import { type ServiceNetworking, serviceNetworking } from '../services/networking.js';
import type { KObject } from '../storage.js';
import { serviceProxySubresource } from '../subresources/proxy.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, type Obj, obj, str } from './types.js';

const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 };

/** How many endpoints a row lists before "+ N more...", as kubectl's printers do. */
const ENDPOINTS_SHOWN = 3;

function listWithMore(items: string[]): string {
  if (items.length === 0) return '<none>';
  const shown = items.slice(0, ENDPOINTS_SHOWN).join(',');
  return items.length > ENDPOINTS_SHOWN ? `${shown} + ${items.length - ENDPOINTS_SHOWN} more...` : shown;
}

/** "80:30080/TCP,53/UDP": each port, its node port when it has one, its protocol. */
function servicePorts(svc: KObject): string {
  const ports = arr(obj(svc.spec).ports).map(obj);
  if (ports.length === 0) return '<none>';
  return ports
    .map((p) => {
      const node = typeof p.nodePort === 'number' && p.nodePort > 0 ? `:${p.nodePort}` : '';
      return `${p.port}${node}/${str(p.protocol) || 'TCP'}`;
    })
    .join(',');
}

/** What `kubectl get svc` shows as EXTERNAL-IP for each type. */
function externalAddress(svc: KObject): string {
  const spec = obj(svc.spec);
  const external = arr(spec.externalIPs).map(str);
  switch (str(spec.type)) {
    case 'ExternalName':
      return str(spec.externalName);
    case 'LoadBalancer': {
      const ingress = arr(obj(obj(obj(svc.status).loadBalancer)).ingress)
        .map(obj)
        .map((i) => str(i.ip) || str(i.hostname))
        .filter(Boolean);
      const all = [...ingress, ...external];
      return all.length ? all.join(',') : '<pending>';
    }
    default:
      return external.length ? external.join(',') : '<none>';
  }
}

/** A Service's selector map as labels print: "app=web,tier=front", keys sorted. */
function mapSelectorText(selector: unknown): string {
  const entries = Object.entries(obj(selector)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${str(v)}`).join(',') : '<none>';
}

/** Reachable from outside: node ports, a load balancer, or external IPs on a ClusterIP Service. */
function externallyAccessible(spec: Obj): boolean {
  return needsNodePorts(spec) || (spec.type === 'ClusterIP' && arr(spec.externalIPs).length > 0);
}

/** Kubernetes' SetDefaults_Service. */
function defaultService(o: KObject): void {
  const spec = obj(o.spec);
  o.spec = spec;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.sessionAffinity === 'None') delete spec.sessionAffinityConfig;
  if (spec.sessionAffinity === 'ClientIP') {
    const config = obj(spec.sessionAffinityConfig);
    const clientIP = obj(config.clientIP);
    clientIP.timeoutSeconds ??= 10800;
    config.clientIP = clientIP;
    spec.sessionAffinityConfig = config;
  }
  for (const p of arr(spec.ports).map(obj)) {
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  if (externallyAccessible(spec)) spec.externalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'ClusterIP' || needsNodePorts(spec)) spec.internalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
}

const strings = (v: unknown): string[] => arr(v).map(str);
const nodePortsOf = (spec: Obj): unknown[] => arr(spec.ports).map((p) => obj(p).nodePort ?? 0);

/**
 * clusterIP and clusterIPs say one thing: a client that sets only the first (an older
 * one, or a patch of it) gets the second filled or cleared to match (NormalizeClusterIPs).
 */
function normalizeClusterIPs(spec: Obj, oldSpec: Obj | undefined): void {
  const ip = str(spec.clusterIP);
  if (!oldSpec) {
    if (ip && strings(spec.clusterIPs).length === 0) spec.clusterIPs = [ip];
    return;
  }
  const oldIP = str(oldSpec.clusterIP);
  if (strings(oldSpec.clusterIPs).length > 0 && strings(spec.clusterIPs).length === 0 && oldIP === ip) {
    spec.clusterIPs = oldSpec.clusterIPs;
  }
  if (oldIP !== ip) {
    const sameIPs = sameJson(spec.clusterIPs ?? [], oldSpec.clusterIPs ?? []);
    if (oldIP && !ip) {
      if (sameIPs) delete spec.clusterIPs;
    } else if (sameIPs) spec.clusterIPs = [ip];
  }
}

/**
 * An update that leaves out what was allocated (a `kubectl replace` of the original
 * manifest) keeps it: the cluster IPs, node ports by port name, the health check port
 * (patchAllocatedValues).
 */
function patchAllocatedValues(spec: Obj, oldSpec: Obj): void {
  if (needsClusterIP(oldSpec) && needsClusterIP(spec)) {
    if (!str(spec.clusterIP) && str(oldSpec.clusterIP)) spec.clusterIP = oldSpec.clusterIP;
    if (strings(spec.clusterIPs).length === 0 && strings(oldSpec.clusterIPs).length > 0) {
      spec.clusterIPs = oldSpec.clusterIPs;
    }
  }
  if (needsNodePorts(oldSpec) && needsNodePorts(spec)) {
    const used = new Set(nodePortsOf(spec));
    const byName = new Map(arr(oldSpec.ports).map((p) => [str(obj(p).name), obj(p).nodePort]));
    for (const p of arr(spec.ports).map(obj)) {
      if (p.nodePort !== undefined && p.nodePort !== 0) continue;
      const was = byName.get(str(p.name));
      if (typeof was === 'number' && was > 0 && !used.has(was)) p.nodePort = was;
    }
  }
  if (needsHealthCheckPort(oldSpec) && needsHealthCheckPort(spec) && !spec.healthCheckNodePort) {
    spec.healthCheckNodePort = oldSpec.healthCheckNodePort;
  }
}

/**
 * A type change drops what the new type has no use for, when the client left it as it
 * was (dropTypeDependentFields): ClusterIP to ExternalName frees the cluster IP,
 * NodePort to ClusterIP its node ports.
 */
function dropTypeDependentFields(spec: Obj, oldSpec: Obj): void {
  if (needsClusterIP(oldSpec) && !needsClusterIP(spec)) {
    if (
      str(spec.clusterIP) === str(oldSpec.clusterIP) &&
      sameJson(spec.clusterIPs ?? [], oldSpec.clusterIPs ?? [])
    ) {
      delete spec.clusterIP;
      delete spec.clusterIPs;
    }
    if (sameJson(spec.ipFamilies ?? [], oldSpec.ipFamilies ?? [])) delete spec.ipFamilies;
    if (spec.ipFamilyPolicy === oldSpec.ipFamilyPolicy) delete spec.ipFamilyPolicy;
  }
  if (needsNodePorts(oldSpec) && !needsNodePorts(spec) && sameJson(nodePortsOf(spec), nodePortsOf(oldSpec))) {
    for (const p of arr(spec.ports).map(obj)) delete p.nodePort;
  }
  if (needsHealthCheckPort(oldSpec) && !needsHealthCheckPort(spec)) {
    if (spec.healthCheckNodePort === oldSpec.healthCheckNodePort) delete spec.healthCheckNodePort;
  }
  if (oldSpec.type === 'LoadBalancer' && spec.type !== 'LoadBalancer') {
    if (spec.allocateLoadBalancerNodePorts === oldSpec.allocateLoadBalancerNodePorts) {
      delete spec.allocateLoadBalancerNodePorts;
    }
    if (spec.loadBalancerClass === oldSpec.loadBalancerClass) delete spec.loadBalancerClass;
  }
  if (externallyAccessible(oldSpec) && !externallyAccessible(spec)) {
    if (spec.externalTrafficPolicy === oldSpec.externalTrafficPolicy) delete spec.externalTrafficPolicy;
  }
}

/** The Service kind of a cluster whose cluster IPs and node ports come from `net`. */
export function serviceKind(net: ServiceNetworking): KindDef {
  return {
    group: '',
    version: 'v1',
    kind: 'Service',
    resource: 'services',
    singular: 'service',
    namespaced: true,
    shortNames: ['svc'],
    categories: ['all'],
    schema: schemas.service,
    nameRule: 'label',
    subresources: [statusSubresource, serviceProxySubresource],
    example: { spec: { selector: { app: 'example' }, ports: [{ port: 80 }] } },
    claims: new ServiceClaims(net),
    prepareForCreate(o) {
      o.status = { loadBalancer: {} };
      normalizeClusterIPs(obj(o.spec), undefined);
    },
    prepareForUpdate(o, old) {
      o.status = old.status;
      defaultService(o);
      const spec = obj(o.spec);
      const oldSpec = obj(old.spec);
      patchAllocatedValues(spec, oldSpec);
      normalizeClusterIPs(spec, oldSpec);
      dropTypeDependentFields(spec, oldSpec);
    },
    prepareForStatusUpdate(o, old) {
      o.spec = old.spec;
    },
    defaults: defaultService,
    table: serviceTable,
  };
}

const serviceTable: KindDef['table'] = {
  columns: [
    { name: 'Type', type: 'string', description: 'The type of the service.', priority: 0 },
    { name: 'Cluster-IP', type: 'string', description: 'The cluster IP of the service.', priority: 0 },
    { name: 'External-IP', type: 'string', description: 'The external IPs of the service.', priority: 0 },
    { name: 'Port(s)', type: 'string', description: 'The ports of the service.', priority: 0 },
    AGE,
    { name: 'Selector', type: 'string', description: 'The label selector of the service.', priority: 1 },
  ],
  cells: (svc, now) => {
    const spec = obj(svc.spec);
    return [
      str(spec.type) || 'ClusterIP',
      str(spec.clusterIP) || '<none>',
      externalAddress(svc),
      servicePorts(svc),
      age(svc, now),
      mapSelectorText(spec.selector),
    ];
  },
};

/** The Service kind on the default ranges (10.96.0.0/12, 30000-32767). */
export const services: KindDef = serviceKind(serviceNetworking());

export const endpoints: KindDef = {
  group: '',
  version: 'v1',
  kind: 'Endpoints',
  resource: 'endpoints',
  singular: 'endpoints',
  namespaced: true,
  shortNames: ['ep'],
  schema: schemas.endpoints,
  nameRule: 'subdomain',
  subresources: [],
  example: { subsets: [{ addresses: [{ ip: '10.244.0.5' }], ports: [{ port: 80, protocol: 'TCP' }] }] },
  defaults(o) {
    for (const subset of arr(o.subsets).map(obj)) {
      for (const p of arr(subset.ports).map(obj)) p.protocol ??= 'TCP';
    }
  },
  table: {
    columns: [
      { name: 'Endpoints', type: 'string', description: 'The ready addresses and ports.', priority: 0 },
      AGE,
    ],
    cells: (ep, now) => {
      const items: string[] = [];
      for (const subset of arr(ep.subsets).map(obj)) {
        const ports = arr(subset.ports).map(obj);
        for (const a of arr(subset.addresses).map(obj)) {
          if (ports.length === 0) items.push(str(a.ip));
          for (const p of ports) items.push(`${str(a.ip)}:${p.port}`);
        }
      }
      return [listWithMore(items), age(ep, now)];
    },
  },
};

export const endpointslices: KindDef = {
  group: 'discovery.k8s.io',
  version: 'v1',
  kind: 'EndpointSlice',
  resource: 'endpointslices',
  singular: 'endpointslice',
  namespaced: true,
  schema: schemas.endpointSlice,
  nameRule: 'subdomain',
  subresources: [],
  example: {
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.244.0.5'], conditions: { ready: true } }],
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  },
  defaults(o) {
    // Kubernetes' SetDefaults_EndpointPort: an unnamed port is named "".
    for (const p of arr(o.ports).map(obj)) {
      p.name ??= '';
      p.protocol ??= 'TCP';
    }
  },
  table: {
    columns: [
      { name: 'AddressType', type: 'string', description: 'The type of address held.', priority: 0 },
      { name: 'Ports', type: 'string', description: 'The ports of the endpoints.', priority: 0 },
      { name: 'Endpoints', type: 'string', description: 'The addresses of the endpoints.', priority: 0 },
      AGE,
    ],
    cells: (slice, now) => {
      const ports = arr(slice.ports).map(obj);
      const addresses = arr(slice.endpoints).flatMap((e) => arr(obj(e).addresses).map(str));
      return [
        str(slice.addressType),
        ports.length
          ? ports.map((p) => (typeof p.port === 'number' ? String(p.port) : '<unset>')).join(',')
          : '<unset>',
        listWithMore(addresses),
        age(slice, now),
      ];
    },
  },
};
