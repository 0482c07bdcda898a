// core/v1 Services and Endpoints, and discovery.k8s.io/v1 EndpointSlices: how
// they are stored, defaulted and printed. A Service's status (its load
// balancer's addresses) is written through /status only, as Kubernetes keeps it.
import { schemas } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, obj, str } from './types.js';

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

export const services: KindDef = {
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
  subresources: [statusSubresource],
  example: { spec: { selector: { app: 'example' }, ports: [{ port: 80 }] } },
  prepareForCreate(o) {
    o.status = { loadBalancer: {} };
  },
  prepareForUpdate(o, old) {
    o.status = old.status;
  },
  prepareForStatusUpdate(o, old) {
    o.spec = old.spec;
  },
  defaults(o) {
    const spec = obj(o.spec);
    o.spec = spec;
    spec.type ??= 'ClusterIP';
    if (spec.type !== 'ExternalName') spec.sessionAffinity ??= 'None';
    if (spec.sessionAffinity === 'ClientIP') {
      const config = obj(spec.sessionAffinityConfig);
      const clientIP = obj(config.clientIP);
      clientIP.timeoutSeconds ??= 10800;
      config.clientIP = clientIP;
      spec.sessionAffinityConfig = config;
    }
    for (const p of arr(spec.ports).map(obj)) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
    if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') spec.externalTrafficPolicy ??= 'Cluster';
    if (spec.type !== 'ExternalName') spec.internalTrafficPolicy ??= 'Cluster';
    if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
  },
  table: {
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
  },
};

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
    for (const p of arr(o.ports).map(obj)) p.protocol ??= 'TCP';
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
