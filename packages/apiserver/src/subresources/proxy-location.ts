// Where pods/<id>/proxy and services/<id>/proxy lead. The id is Kubernetes'
// `[scheme:]name[:port]`: a pod is reached at its IP (the port given, else its
// first declared container port), a Service at one ready address of its
// Endpoints on the port whose name or number matches. Nothing is stored; a pod
// or Service that is not there is a 404, one that cannot be reached a 503.
import { isIP } from 'node:net';
import { badRequest, notFound, serviceUnavailable } from '@kubit/api';
import { arr, obj, str } from '../kinds/types.js';
import { type KubeletClientTls, kubeletAddress } from '../logs.js';
import type { Store } from '../storage.js';

export interface ProxyLocation {
  scheme: 'http' | 'https';
  host: string;
  /** The port as a number; undefined when the scheme's default is meant. */
  port?: number;
  /**
   * A kubelet's: the apiserver's kubelet client certificate, and its CA (the kubelet's
   * serving certificate is checked when one is given). Pods and Services are not verified.
   */
  tls?: KubeletClientTls;
}

export interface ProxyId {
  scheme: '' | 'http' | 'https';
  name: string;
  port: string;
}

/** Splits `[scheme:]name[:port]` as Kubernetes' SplitSchemeNamePort does; invalid ids are a 400. */
export function parseProxyId(id: string, resource: string): ProxyId {
  const parts = id.split(':');
  let scheme = '';
  let name = '';
  let port = '';
  if (parts.length === 1) [name] = parts;
  else if (parts.length === 2) [name, port] = parts;
  else if (parts.length === 3) [scheme, name, port] = parts;
  const valid =
    name !== '' && (scheme === '' || scheme === 'http' || scheme === 'https') && parts.length <= 3;
  if (!valid) throw badRequest(`invalid ${resource} request "${id}"`);
  return { scheme: scheme as ProxyId['scheme'], name, port };
}

/**
 * Loopback and link-local addresses are never proxied to (Kubernetes' IsProxyableIP): a
 * hostNetwork pod on a node that reports 127.0.0.1 would otherwise open the apiserver's
 * own host (its store, its health ports) to anyone allowed pods/proxy.
 */
export function assertProxyable(ip: string): void {
  const v = isIP(ip);
  const lower = ip.toLowerCase();
  const refused =
    v === 0 ||
    (v === 4 && (ip.startsWith('127.') || ip.startsWith('169.254.') || ip === '0.0.0.0')) ||
    (v === 6 &&
      (lower === '::1' ||
        lower === '::' ||
        /^fe[89ab][0-9a-f]:/.test(lower) ||
        lower.startsWith('::ffff:127.')));
  if (refused) throw badRequest('address not allowed');
}

function portNumber(port: string, what: string): number {
  const n = Number(port);
  if (!/^\d+$/.test(port) || n < 1 || n > 65535) throw badRequest(`invalid port "${port}" for ${what}`);
  return n;
}

/** The pod's IP and the port asked for (or its first declared container port). */
export async function podLocation(store: Store, namespace: string, id: string): Promise<ProxyLocation> {
  const { scheme, name, port } = parseProxyId(id, 'pod');
  const stored = await store.get(`/registry/pods/${namespace}/${name}`);
  if (!stored) throw notFound({ group: '', resource: 'pods' }, name);
  const pod = stored.obj;
  let chosen = port;
  if (chosen === '') {
    for (const c of arr(obj(pod.spec).containers).map(obj)) {
      const first = arr(c.ports).map(obj)[0];
      if (first?.containerPort !== undefined) {
        chosen = String(first.containerPort);
        break;
      }
    }
  }
  const status = obj(pod.status);
  const ip = str(status.podIP) || str(obj(arr(status.podIPs)[0]).ip);
  if (!ip) throw serviceUnavailable(`pod "${name}" has no IP address to proxy to yet`);
  assertProxyable(ip);
  return {
    scheme: scheme || 'http',
    host: ip,
    ...(chosen ? { port: portNumber(chosen, `pod "${name}"`) } : {}),
  };
}

/** One ready address of the Service's Endpoints, on the Service port named or numbered in the id. */
export async function serviceLocation(
  store: Store,
  namespace: string,
  id: string,
  pick: (n: number) => number = (n) => Math.floor(Math.random() * n),
): Promise<ProxyLocation> {
  const { scheme, name, port } = parseProxyId(id, 'service');
  const stored = await store.get(`/registry/services/${namespace}/${name}`);
  if (!stored) throw notFound({ group: '', resource: 'services' }, name);
  const spec = obj(stored.obj.spec);
  const servicePorts = arr(spec.ports).map(obj);
  const wanted = servicePorts.find(
    (p) => port === '' || str(p.name) === port || String(p.port ?? '') === port,
  );
  if (!wanted) throw serviceUnavailable(`no endpoints available for service "${id}"`);
  const endpoints = await store.get(`/registry/endpoints/${namespace}/${name}`);
  for (const subset of arr(endpoints?.obj.subsets).map(obj)) {
    const addresses = arr(subset.addresses).map(obj);
    const match = arr(subset.ports)
      .map(obj)
      .find((p) => str(p.name) === str(wanted.name));
    if (!match || addresses.length === 0) continue;
    const address = addresses[pick(addresses.length)];
    assertProxyable(str(address.ip));
    return { scheme: scheme || 'http', host: str(address.ip), port: Number(match.port) };
  }
  throw serviceUnavailable(`no endpoints available for service "${id}"`);
}

/** A node's kubelet (or another port of the node), over HTTPS with the kubelet client certificate by default. */
export async function nodeLocation(store: Store, id: string, tls: KubeletClientTls): Promise<ProxyLocation> {
  const { scheme, name, port } = parseProxyId(id, 'node');
  const node = await store.get(`/registry/nodes/${name}`);
  if (!node) throw notFound({ group: '', resource: 'nodes' }, name);
  const addr = kubeletAddress(node.obj);
  if (!addr) throw serviceUnavailable(`no address known for node "${name}" to proxy to`);
  const chosen = scheme || 'https';
  return {
    scheme: chosen,
    host: addr.host,
    port: port ? portNumber(port, `node "${name}"`) : addr.port,
    ...(chosen === 'https' ? { tls } : {}),
  };
}

/** host[:port] as it goes in a URL or a Host header (IPv6 in brackets). */
export function hostPort(loc: ProxyLocation): string {
  const host = loc.host.includes(':') ? `[${loc.host}]` : loc.host;
  return loc.port === undefined ? host : `${host}:${loc.port}`;
}
