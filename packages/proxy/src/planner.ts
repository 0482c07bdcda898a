// The rule planner: a pure function from what the apiserver says (Services and
// EndpointSlices) and who we are (node name, flags) to the ruleset this node's
// kernel should hold. No I/O, no clock: the same input always plans the same
// ruleset, which is what lets a restarted kubit-proxy rebuild exactly the rules
// it left. The layout follows kube-proxy's nftables mode (KEP-3866), one level
// flatter (no endpoint- chains, no anonymous sets; see the README for why):
//
//   nat-prerouting / nat-output → services:
//       ip daddr . proto . port  vmap @service-ips        (cluster IPs, LB ingress IPs)
//       <local address>  proto . port  vmap @service-nodeports
//   service-…   all usable endpoints: ClientIP affinity hits first, then a cascade
//               `numgen random mod (N-i) == 0 … dnat to ip:port` (uniform), each arm
//               updating the endpoint's affinity set when the Service has one
//   local-…     only this node's endpoints (internal/externalTrafficPolicy: Local)
//   external-…  node-port and LB traffic: masquerade unless Local, then service-/local-
//   filter hooks: @no-endpoint-services / @no-endpoint-nodeports reject (or drop) at once;
//   cluster-ips-check rejects other ports of a cluster IP.
//   nat-postrouting: a DNATed packet whose source is its new destination (@hairpin-ips,
//   an endpoint reaching itself) is marked; packets marked 0x4000 are masqueraded.
//
// The plan is the fixed skeleton plus one ServicePlan per Service (planService: what
// that Service adds, from it and its own EndpointSlices alone), merged in Service key
// order (planRuleset). That split is what lets the proxier re-plan only the Services
// that changed (incremental.ts) and still hold exactly what planRuleset would plan.
import type { EndpointSlice, Service, ServicePort } from '@kubit/api';
import { parseCidr, parseIPv4, SERVICE_NAME_LABEL, SERVICE_PROXY_NAME_LABEL } from '@kubit/api';
import { affinitySet, externalChain, localChain, type ServicePortId, serviceChain } from './names.js';
import { type ChainDef, emptyRuleset, type Ruleset, type SetDef, type UdpServicePort } from './ruleset.js';

export interface PlannerOptions {
  /** This node's name: endpoints with this nodeName are local. */
  nodeName: string;
  /** --cluster-cidr: traffic from outside these is masqueraded on its way to a cluster IP. */
  clusterCidrs: string[];
  /** --nodeport-addresses: node ports answer on local addresses in these; empty: every local address but 127/8. */
  nodePortAddresses: string[];
  /** --masquerade-all: masquerade every packet sent to a Service. */
  masqueradeAll: boolean;
  /** --nft-table: the table's name (default kubit-proxy). */
  tableName?: string;
}

/** The default sessionAffinityConfig.clientIP.timeoutSeconds (3 hours), as Kubernetes defaults it. */
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10_800;

/** The mark that tells nat-postrouting to masquerade (kube-proxy's 0x4000). */
const MASQ_MARK = '0x4000';

/** One endpoint of one service port, merged over the service's slices. */
export interface PlannedEndpoint {
  ip: string;
  port: number;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  nodeName?: string;
}

/**
 * What one Service adds to the ruleset: its own chains and sets, and its elements of
 * the skeleton's shared sets and maps.
 */
export interface ServicePlan {
  chains: Map<string, ChainDef>;
  /** Its own sets (ClientIP affinity). */
  sets: Map<string, SetDef>;
  /** Its elements of the skeleton's sets (cluster-ips, hairpin-ips). */
  setElements: Map<string, Set<string>>;
  /** Its elements of the skeleton's verdict maps (service-ips, service-nodeports, no-endpoint-…). */
  mapElements: Map<string, Map<string, string>>;
  udp: Map<string, UdpServicePort>;
  stats: { servicePorts: number; endpoints: number };
}

function emptyServicePlan(): ServicePlan {
  return {
    chains: new Map(),
    sets: new Map(),
    setElements: new Map(),
    mapElements: new Map(),
    udp: new Map(),
    stats: { servicePorts: 0, endpoints: 0 },
  };
}

function addElement(p: ServicePlan, set: string, element: string): void {
  const s = p.setElements.get(set);
  if (s) s.add(element);
  else p.setElements.set(set, new Set([element]));
}

function setMapElement(p: ServicePlan, map: string, key: string, value: string): void {
  const m = p.mapElements.get(map);
  if (m) m.set(key, value);
  else p.mapElements.set(map, new Map([[key, value]]));
}

// --- the fixed skeleton -------------------------------------------------------

/** The chains, sets and maps every plan has, whatever the Services: a function of the flags alone. */
export function skeleton(o: PlannerOptions): Ruleset {
  const r = emptyRuleset(o.tableName);
  const nodePortMatch =
    o.nodePortAddresses.length > 0
      ? 'ip daddr @nodeport-ips fib daddr type local'
      : 'fib daddr type local ip daddr != 127.0.0.0/8';
  const chain = (name: string, c: ChainDef) => r.chains.set(name, c);
  chain('filter-input', {
    base: { type: 'filter', hook: 'input', priority: -110 },
    rules: ['ct state new jump nodeport-endpoints-check', 'ct state new jump service-endpoints-check'],
  });
  chain('filter-forward', {
    base: { type: 'filter', hook: 'forward', priority: -110 },
    rules: ['ct state new jump service-endpoints-check', 'ct state new jump cluster-ips-check'],
  });
  chain('filter-output', {
    base: { type: 'filter', hook: 'output', priority: -110 },
    rules: ['ct state new jump service-endpoints-check'],
  });
  // After DNAT: what still goes to a cluster IP was not for one of its ports.
  chain('filter-output-post-dnat', {
    base: { type: 'filter', hook: 'output', priority: -90 },
    rules: ['ct state new jump cluster-ips-check'],
  });
  chain('nat-prerouting', {
    base: { type: 'nat', hook: 'prerouting', priority: -100 },
    rules: ['jump services'],
  });
  chain('nat-output', { base: { type: 'nat', hook: 'output', priority: -100 }, rules: ['jump services'] });
  // Hairpin: a connection DNATed back to its own source (an endpoint reaching itself
  // through its Service) is masqueraded, or the endpoint would answer itself directly.
  chain('nat-postrouting', {
    base: { type: 'nat', hook: 'postrouting', priority: 100 },
    rules: ['ct status dnat ip saddr . ip daddr @hairpin-ips jump mark-for-masquerade', 'jump masquerading'],
  });
  chain('masquerading', {
    rules: [
      `meta mark & ${MASQ_MARK} == 0 return`,
      `meta mark set meta mark ^ ${MASQ_MARK}`,
      'masquerade fully-random',
    ],
  });
  chain('mark-for-masquerade', { rules: [`meta mark set meta mark | ${MASQ_MARK}`] });
  chain('services', {
    rules: [
      'ip daddr . meta l4proto . th dport vmap @service-ips',
      `${nodePortMatch} meta l4proto . th dport vmap @service-nodeports`,
    ],
  });
  chain('service-endpoints-check', {
    rules: ['ip daddr . meta l4proto . th dport vmap @no-endpoint-services'],
  });
  chain('nodeport-endpoints-check', {
    rules: [`${nodePortMatch} meta l4proto . th dport vmap @no-endpoint-nodeports`],
  });
  // A TCP client gets a reset, anything else ICMP port unreachable: refused at once, no timeout.
  chain('reject-chain', {
    rules: ['meta l4proto tcp reject with tcp reset', 'reject with icmp type port-unreachable'],
  });
  chain('cluster-ips-check', { rules: ['ip daddr @cluster-ips reject with icmp type port-unreachable'] });

  r.sets.set('cluster-ips', { type: 'ipv4_addr', elements: new Set() });
  r.sets.set('hairpin-ips', { type: 'ipv4_addr . ipv4_addr', elements: new Set() });
  if (o.nodePortAddresses.length > 0) {
    r.sets.set('nodeport-ips', {
      type: 'ipv4_addr',
      flags: ['interval'],
      elements: new Set(o.nodePortAddresses.map(canonicalCidr)),
    });
  }
  // More than one --cluster-cidr: a named set (an anonymous `{ … }` in every service
  // chain would be one anonymous set per chain, each bound at the cost of a walk of the
  // whole transaction).
  if (o.clusterCidrs.length > 1) {
    r.sets.set('cluster-cidrs', {
      type: 'ipv4_addr',
      flags: ['interval'],
      elements: new Set(o.clusterCidrs.map(canonicalCidr)),
    });
  }
  const addrProtoPort = 'ipv4_addr . inet_proto . inet_service : verdict';
  const protoPort = 'inet_proto . inet_service : verdict';
  r.maps.set('service-ips', { type: addrProtoPort, elements: new Map() });
  r.maps.set('service-nodeports', { type: protoPort, elements: new Map() });
  r.maps.set('no-endpoint-services', { type: addrProtoPort, elements: new Map() });
  r.maps.set('no-endpoint-nodeports', { type: protoPort, elements: new Map() });
  return r;
}

function canonicalCidr(s: string): string {
  const c = parseCidr(s);
  const ip = `${c.base >>> 24}.${(c.base >>> 16) & 255}.${(c.base >>> 8) & 255}.${c.base & 255}`;
  return c.prefix === 32 ? ip : `${ip}/${c.prefix}`;
}

// --- which Services and endpoints count ------------------------------------------

/** Why a Service gets no rules at all, or undefined when it gets them. */
export function skipReason(svc: Service): string | undefined {
  const spec = svc.spec ?? {};
  if (spec.type === 'ExternalName') return 'ExternalName';
  if (!spec.clusterIP || spec.clusterIP === 'None') return 'headless';
  if (parseIPv4(spec.clusterIP) === undefined) return 'not IPv4';
  if (svc.metadata?.labels?.[SERVICE_PROXY_NAME_LABEL]) return 'left to another proxy';
  return undefined;
}

function protocolOf(p: { protocol?: string }): string {
  return (p.protocol ?? 'TCP').toLowerCase();
}

/** The endpoints of one service port over all of the service's IPv4 slices, deduplicated by ip:port. */
export function endpointsFor(port: ServicePort, slices: EndpointSlice[]): PlannedEndpoint[] {
  const byKey = new Map<string, PlannedEndpoint>();
  const name = port.name ?? '';
  const proto = protocolOf(port);
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4') continue;
    // A slice port is this service port when name and protocol match; named
    // target ports were resolved to numbers per pod by whoever wrote the slice.
    const sp = (slice.ports ?? []).find((p) => (p.name ?? '') === name && protocolOf(p) === proto);
    if (!sp || sp.port === undefined || sp.port === null) continue;
    for (const ep of slice.endpoints ?? []) {
      const ip = ep.addresses?.[0];
      if (!ip || parseIPv4(ip) === undefined) continue;
      const c = ep.conditions ?? {};
      // Kubernetes: an unknown (nil) ready or serving condition means true; terminating means false.
      const ready = c.ready !== false;
      const e: PlannedEndpoint = {
        ip,
        port: sp.port,
        ready,
        serving: c.serving ?? ready,
        terminating: c.terminating ?? false,
        nodeName: ep.nodeName,
      };
      const key = `${ip}:${sp.port}`;
      const prev = byKey.get(key);
      // The same address in two slices (a slice being replaced): the readier copy wins.
      if (!prev || (!prev.ready && e.ready)) byKey.set(key, e);
    }
  }
  // Sorted by address, then port (each address parsed once, not in every comparison).
  return [...byKey.values()]
    .map((e) => ({ e, n: parseIPv4(e.ip) ?? 0 }))
    .sort((a, b) => a.n - b.n || a.e.port - b.e.port)
    .map(({ e }) => e);
}

/** Ready endpoints; when none is ready, the serving ones that are terminating (kube-proxy's fallback). */
export function usable(eps: PlannedEndpoint[]): PlannedEndpoint[] {
  const ready = eps.filter((e) => e.ready);
  if (ready.length > 0) return ready;
  return eps.filter((e) => e.serving && e.terminating);
}

// --- the plan --------------------------------------------------------------------

export function planRuleset(services: Service[], slices: EndpointSlice[], o: PlannerOptions): Ruleset {
  const r = skeleton(o);
  const slicesBySvc = new Map<string, EndpointSlice[]>();
  for (const s of slices) {
    const key = sliceServiceKey(s);
    if (key === undefined) continue;
    const list = slicesBySvc.get(key);
    if (list) list.push(s);
    else slicesBySvc.set(key, [s]);
  }
  // Sorted, so that the same objects always give the same chain order (a restart lists the
  // same table), and so that when two Services claim one map key (the same external IP and
  // port) the last in key order has it, whatever order the caches list them in.
  const sorted = services
    .map((svc) => ({ svc, key: serviceKey(svc) }))
    .sort((a, b) => compareKeys(a.key, b.key));
  for (const { svc, key } of sorted) {
    const p = planService(svc, slicesBySvc.get(key) ?? [], o);
    if (p) mergeServicePlan(r, p);
  }
  return r;
}

/** A Service's key, "namespace/name". */
export function serviceKey(s: Service): string {
  return `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
}

/** The key of the Service an EndpointSlice belongs to (its kubernetes.io/service-name label), if any. */
export function sliceServiceKey(s: EndpointSlice): string | undefined {
  const svcName = s.metadata?.labels?.[SERVICE_NAME_LABEL];
  return svcName ? `${s.metadata?.namespace ?? ''}/${svcName}` : undefined;
}

/** The order Services are merged in: plain code-unit order of their keys (locale-free, never a tie). */
export function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Adds one Service's plan to a ruleset: what it shares with Services merged before it, it overwrites. */
export function mergeServicePlan(r: Ruleset, p: ServicePlan): void {
  for (const [name, c] of p.chains) r.chains.set(name, c);
  for (const [name, s] of p.sets) r.sets.set(name, s);
  for (const [name, els] of p.setElements) {
    const set = r.sets.get(name);
    if (set) for (const e of els) set.elements.add(e);
  }
  for (const [name, els] of p.mapElements) {
    const map = r.maps.get(name);
    if (map) for (const [k, v] of els) map.elements.set(k, v);
  }
  for (const [k, u] of p.udp) r.udp.set(k, u);
  r.stats.servicePorts += p.stats.servicePorts;
  r.stats.endpoints += p.stats.endpoints;
}

/**
 * What one Service adds to the ruleset, from the Service and its own EndpointSlices
 * alone (undefined: it gets no rules). Pure, like planRuleset.
 */
export function planService(
  svc: Service,
  slices: EndpointSlice[],
  o: PlannerOptions,
): ServicePlan | undefined {
  if (skipReason(svc)) return undefined;
  const p = emptyServicePlan();
  for (const port of svc.spec?.ports ?? []) planServicePort(p, svc, port, slices, o);
  return p;
}

function masqueradeSourceMatch(o: PlannerOptions): string | undefined {
  if (o.masqueradeAll) return '';
  const m = clusterCidrMatch(o);
  return m === undefined ? undefined : `ip saddr != ${m} `;
}

/** The --cluster-cidr ranges as a match operand: the range itself when there is one, else the skeleton's @cluster-cidrs. */
function clusterCidrMatch(o: PlannerOptions): string | undefined {
  if (o.clusterCidrs.length === 0) return undefined;
  return o.clusterCidrs.length === 1 ? canonicalCidr(o.clusterCidrs[0]) : '@cluster-cidrs';
}

function planServicePort(
  r: ServicePlan,
  svc: Service,
  port: ServicePort,
  slices: EndpointSlice[],
  o: PlannerOptions,
): void {
  const spec = svc.spec ?? {};
  const proto = protocolOf(port);
  if (proto !== 'tcp' && proto !== 'udp' && proto !== 'sctp') return;
  const id: ServicePortId = {
    namespace: svc.metadata?.namespace ?? '',
    name: svc.metadata?.name ?? '',
    protocol: proto,
    port: port.name || String(port.port),
  };
  const clusterIP = spec.clusterIP as string;
  const all = endpointsFor(port, slices);
  const clusterEps = usable(all);
  const localEps = usable(all.filter((e) => e.nodeName === o.nodeName));
  const affinityTimeout =
    spec.sessionAffinity === 'ClientIP'
      ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? DEFAULT_AFFINITY_TIMEOUT_SECONDS)
      : undefined;
  r.stats.servicePorts++;
  r.stats.endpoints += clusterEps.length;

  // ClientIP affinity: one timeout set per endpoint a service- or local- chain may pick.
  const eps = new Map<string, PlannedEndpoint>();
  for (const e of [...clusterEps, ...localEps]) eps.set(`${e.ip}:${e.port}`, e);
  for (const e of eps.values()) {
    // An endpoint that reaches itself through a Service is masqueraded (hairpin): nat-postrouting matches `ip . ip`.
    addElement(r, 'hairpin-ips', `${e.ip} . ${e.ip}`);
    if (affinityTimeout !== undefined) {
      r.sets.set(affinitySet(id, e.ip, e.port), {
        type: 'ipv4_addr',
        flags: ['dynamic', 'timeout'],
        timeoutSeconds: affinityTimeout,
        elements: new Set(),
      });
    }
  }

  const dst = `ip daddr ${clusterIP} ${proto} dport ${port.port}`;
  const masq = masqueradeSourceMatch(o);
  const clusterIpMasq = masq === undefined ? [] : [`${dst} ${masq}jump mark-for-masquerade`];
  // The DNAT itself, with the affinity set's update (recording or refreshing the client) first.
  const dnat = (e: PlannedEndpoint): string =>
    `${affinityTimeout !== undefined ? `update @${affinitySet(id, e.ip, e.port)} { ip saddr } ` : ''}dnat to ${e.ip}:${e.port}`;
  // No per-service anonymous vmap (each one costs the kernel a walk of the whole
  // transaction when it is bound: quadratic in a cold start) and no per-endpoint
  // chain: a cascade that picks endpoint i with probability 1/(N-i) among those
  // left, which is 1/N each, as iptables' statistic cascade did.
  const pickRules = (list: PlannedEndpoint[]): string[] => {
    const rules: string[] = [];
    if (affinityTimeout !== undefined) {
      for (const e of list)
        rules.push(`ip saddr @${affinitySet(id, e.ip, e.port)} meta l4proto ${proto} ${dnat(e)}`);
    }
    list.forEach((e, i) => {
      const left = list.length - i;
      rules.push(`meta l4proto ${proto} ${left > 1 ? `numgen random mod ${left} == 0 ` : ''}${dnat(e)}`);
    });
    return rules;
  };
  const svcChainName = serviceChain(id);
  const localChainName = localChain(id);
  if (clusterEps.length > 0)
    r.chains.set(svcChainName, { rules: [...clusterIpMasq, ...pickRules(clusterEps)] });
  const internalLocal = spec.internalTrafficPolicy === 'Local';
  const externalLocal = spec.externalTrafficPolicy === 'Local';
  const externalAddrs = externalAddresses(svc);
  const nodePort = spec.type === 'NodePort' || spec.type === 'LoadBalancer' ? port.nodePort : undefined;
  const hasExternal = externalAddrs.length > 0 || nodePort !== undefined;
  if (localEps.length > 0 && (internalLocal || (externalLocal && hasExternal))) {
    r.chains.set(localChainName, { rules: [...clusterIpMasq, ...pickRules(localEps)] });
  }

  addElement(r, 'cluster-ips', clusterIP);
  if (proto === 'udp') {
    r.udp.set(`${id.namespace}/${id.name}/${id.port}`, {
      ips: [clusterIP, ...externalAddrs],
      nodePort,
      endpointIPs: [...new Set([...clusterEps, ...localEps].map((e) => e.ip))],
    });
  }
  const ipKey = (ip: string) => `${ip} . ${proto} . ${port.port}`;
  // Traffic to the cluster IP.
  if (internalLocal) {
    if (localEps.length > 0) setMapElement(r, 'service-ips', ipKey(clusterIP), `goto ${localChainName}`);
    else
      setMapElement(
        r,
        'no-endpoint-services',
        ipKey(clusterIP),
        clusterEps.length > 0 ? 'drop' : 'goto reject-chain',
      );
  } else if (clusterEps.length > 0) {
    setMapElement(r, 'service-ips', ipKey(clusterIP), `goto ${svcChainName}`);
  } else {
    setMapElement(r, 'no-endpoint-services', ipKey(clusterIP), 'goto reject-chain');
  }
  if (!hasExternal) return;

  // Traffic to a node port or a load-balancer address.
  const npKey = nodePort !== undefined ? `${proto} . ${nodePort}` : undefined;
  if (clusterEps.length === 0 && localEps.length === 0) {
    for (const ip of externalAddrs) setMapElement(r, 'no-endpoint-services', ipKey(ip), 'goto reject-chain');
    if (npKey) setMapElement(r, 'no-endpoint-nodeports', npKey, 'goto reject-chain');
    return;
  }
  const ext = externalChain(id);
  const extRules: string[] = [];
  if (!externalLocal) {
    extRules.push('jump mark-for-masquerade', `goto ${svcChainName}`);
  } else {
    // Local keeps the client's address, so only this node's endpoints can answer it. Pods
    // and the node itself are not "external": they may use every endpoint (masqueraded
    // when from the node, so the reply comes back through it), as kube-proxy does.
    if (clusterEps.length > 0) {
      const m = clusterCidrMatch(o);
      if (m !== undefined) extRules.push(`ip saddr ${m} goto ${svcChainName}`);
      extRules.push(
        'fib saddr type local jump mark-for-masquerade',
        `fib saddr type local goto ${svcChainName}`,
      );
    }
    extRules.push(localEps.length > 0 ? `goto ${localChainName}` : 'drop');
  }
  r.chains.set(ext, { rules: extRules });
  for (const ip of externalAddrs) setMapElement(r, 'service-ips', ipKey(ip), `goto ${ext}`);
  if (npKey) setMapElement(r, 'service-nodeports', npKey, `goto ${ext}`);
}

/** LoadBalancer ingress IPs (status.loadBalancer.ingress[].ip) and spec.externalIPs, IPv4 only. */
function externalAddresses(svc: Service): string[] {
  const out = new Set<string>();
  if (svc.spec?.type === 'LoadBalancer') {
    for (const ing of svc.status?.loadBalancer?.ingress ?? []) {
      if (ing.ip && parseIPv4(ing.ip) !== undefined) out.add(ing.ip);
    }
  }
  for (const ip of svc.spec?.externalIPs ?? []) if (parseIPv4(ip) !== undefined) out.add(ip);
  return [...out];
}
