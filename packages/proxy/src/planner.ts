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
import type { EndpointSlice, Service, ServicePort } from '@kubit/api';
import { parseCidr, parseIPv4, SERVICE_NAME_LABEL, SERVICE_PROXY_NAME_LABEL } from '@kubit/api';
import { affinitySet, externalChain, localChain, type ServicePortId, serviceChain } from './names.js';
import { type ChainDef, emptyRuleset, type Ruleset } from './ruleset.js';

export interface PlannerOptions {
  /** This node's name: endpoints with this nodeName are local. */
  nodeName: string;
  /** --cluster-cidr: traffic from outside these is masqueraded on its way to a cluster IP. */
  clusterCidrs: string[];
  /** --nodeport-addresses: node ports answer on local addresses in these; empty: every local address but 127/8. */
  nodePortAddresses: string[];
  /** --masquerade-all: masquerade every packet sent to a Service. */
  masqueradeAll: boolean;
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

// --- the fixed skeleton -------------------------------------------------------

function skeleton(o: PlannerOptions): Ruleset {
  const r = emptyRuleset();
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
    const svcName = s.metadata?.labels?.[SERVICE_NAME_LABEL];
    if (!svcName) continue;
    const key = `${s.metadata?.namespace ?? ''}/${svcName}`;
    const list = slicesBySvc.get(key);
    if (list) list.push(s);
    else slicesBySvc.set(key, [s]);
  }
  // Sorted, so that the same objects always give the same chain order (a restart lists the same table).
  const sorted = [...services].sort((a, b) => svcKey(a).localeCompare(svcKey(b)));
  for (const svc of sorted) {
    if (skipReason(svc)) continue;
    const svcSlices = slicesBySvc.get(svcKey(svc)) ?? [];
    for (const port of svc.spec?.ports ?? []) planServicePort(r, svc, port, svcSlices, o);
  }
  return r;
}

function svcKey(s: Service): string {
  return `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
}

function masqueradeSourceMatch(r: Ruleset, o: PlannerOptions): string | undefined {
  if (o.masqueradeAll) return '';
  const m = clusterCidrMatch(r, o);
  return m === undefined ? undefined : `ip saddr != ${m} `;
}

/**
 * The --cluster-cidr ranges as a match operand: the range itself when there is one,
 * else the named set `cluster-cidrs` (an anonymous `{ … }` in every service chain
 * would be one anonymous set per chain, each bound at the cost of a walk of the
 * whole transaction).
 */
function clusterCidrMatch(r: Ruleset, o: PlannerOptions): string | undefined {
  if (o.clusterCidrs.length === 0) return undefined;
  const cidrs = o.clusterCidrs.map(canonicalCidr);
  if (cidrs.length === 1) return cidrs[0];
  r.sets.set('cluster-cidrs', { type: 'ipv4_addr', flags: ['interval'], elements: new Set(cidrs) });
  return '@cluster-cidrs';
}

/** An endpoint that reaches itself through a Service is masqueraded (hairpin): nat-postrouting matches `ip . ip`. */
function hairpinElement(r: Ruleset, ip: string): void {
  r.sets.get('hairpin-ips')?.elements.add(`${ip} . ${ip}`);
}

function planServicePort(
  r: Ruleset,
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
    hairpinElement(r, e.ip);
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
  const masq = masqueradeSourceMatch(r, o);
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

  r.sets.get('cluster-ips')?.elements.add(clusterIP);
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
    if (localEps.length > 0)
      r.maps.get('service-ips')?.elements.set(ipKey(clusterIP), `goto ${localChainName}`);
    else
      r.maps
        .get('no-endpoint-services')
        ?.elements.set(ipKey(clusterIP), clusterEps.length > 0 ? 'drop' : 'goto reject-chain');
  } else if (clusterEps.length > 0) {
    r.maps.get('service-ips')?.elements.set(ipKey(clusterIP), `goto ${svcChainName}`);
  } else {
    r.maps.get('no-endpoint-services')?.elements.set(ipKey(clusterIP), 'goto reject-chain');
  }
  if (!hasExternal) return;

  // Traffic to a node port or a load-balancer address.
  const npKey = nodePort !== undefined ? `${proto} . ${nodePort}` : undefined;
  if (clusterEps.length === 0 && localEps.length === 0) {
    for (const ip of externalAddrs)
      r.maps.get('no-endpoint-services')?.elements.set(ipKey(ip), 'goto reject-chain');
    if (npKey) r.maps.get('no-endpoint-nodeports')?.elements.set(npKey, 'goto reject-chain');
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
      const m = clusterCidrMatch(r, o);
      if (m !== undefined) extRules.push(`ip saddr ${m} goto ${svcChainName}`);
      extRules.push(
        'fib saddr type local jump mark-for-masquerade',
        `fib saddr type local goto ${svcChainName}`,
      );
    }
    extRules.push(localEps.length > 0 ? `goto ${localChainName}` : 'drop');
  }
  r.chains.set(ext, { rules: extRules });
  for (const ip of externalAddrs) r.maps.get('service-ips')?.elements.set(ipKey(ip), `goto ${ext}`);
  if (npKey) r.maps.get('service-nodeports')?.elements.set(npKey, `goto ${ext}`);
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
