// The pure planner: NetworkPolicies, Pods and Namespaces → this node's nft
// ruleset. Kubernetes' semantics (the NetworkPolicy API reference):
//
// - a pod is isolated for ingress (egress) only when some policy that selects
//   it has Ingress (Egress) in its policyTypes; otherwise nothing is filtered;
// - an isolated pod's traffic is allowed when any rule of any policy selecting
//   it allows it (a union); a rule allows when one of its peers (`from`/`to`,
//   empty = everyone) and one of its ports (empty = every port) match;
// - a peer is a podSelector (this namespace), a namespaceSelector (all pods of
//   those namespaces), both (AND), or an ipBlock minus its excepts;
// - named ports are resolved against the destination pod's container ports;
// - replies of allowed connections pass (`ct state established,related`), and
//   the node's own traffic to its pods (kubelet probes) is never filtered.
//
// Shape (every name below is per table, and the table is per node):
//
//   forward-egress  (hook forward, priority 0): established → accept; ip saddr vmap @egress-pods
//   forward-ingress (hook forward, priority 1): established → accept; ip daddr vmap @ingress-pods
//   input-egress    (hook input,   priority 0): the egress check for pods talking to the node
//   egress-pods / ingress-pods: isolated local pod IP → jump ns-out-<ns> / ns-in-<ns>
//   ns-in-<ns>: per policy of the namespace `ip daddr @tgt-<p> jump in-<p>`, then drop
//   in-<p>: one rule per (rule, port): `ip saddr @in-<p>-<i> meta l4proto tcp th dport 80 accept`
//
// Both hooks run after kubit-proxy's DNAT (nat prerouting, -100), so Service
// traffic is judged by the real pod address. An accept in forward-egress ends
// only that base chain; forward-ingress still judges the destination. Chains
// and rule texts depend only on the policies; pods change set and map
// elements, so a pod that comes or goes is a few element updates.
import {
  type LabelSelector,
  labelSelectorAsSelector,
  type Namespace,
  type NetworkPolicy,
  type NetworkPolicyPeer,
  type NetworkPolicyPort,
  type Pod,
  parseAnyCidr,
  parseIPv4,
  type Selector,
} from '@kubit/api';
import { hashAndTruncate } from '@kubit/proxy';
import { cidrRange, merge, type Range, rangeText, subtract } from './intervals.js';
import { type NetpolRuleset, netpolTableName } from './ruleset.js';

export interface NetpolNode {
  name: string;
  /** This node's pod subnet: a pod whose IP is in it is local even before its nodeName is known here. */
  podCIDR?: string;
  /** Its nft table (default netpolTableName(name)). */
  table?: string;
}

const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** nft's protocol names for the API's. */
const PROTO: Record<string, string> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

const ESTABLISHED = 'ct state established,related accept';

interface PodInfo {
  pod: Pod;
  ip: string;
  /** The address as a number, parsed once: peers look at the same pods again and again. */
  n: number;
  namespace: string;
  labels: Record<string, string>;
}

type Direction = 'in' | 'out';

/** Pods that take part in the pod network: an address, not the host's network, not finished. */
function networkPods(pods: readonly Pod[]): PodInfo[] {
  const out: PodInfo[] = [];
  for (const pod of pods) {
    const ip = pod.status?.podIP;
    const n = ip ? parseIPv4(ip) : undefined;
    if (!ip || n === undefined || pod.spec?.hostNetwork) continue;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') continue;
    out.push({
      pod,
      ip,
      n,
      namespace: pod.metadata?.namespace ?? 'default',
      labels: pod.metadata?.labels ?? {},
    });
  }
  return out.sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0));
}

/** A namespace's labels, with the immutable name label Kubernetes always sets. */
function namespaceLabels(namespaces: readonly Namespace[]): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const ns of namespaces) {
    const name = ns.metadata?.name;
    if (name) out.set(name, { ...(ns.metadata?.labels ?? {}), [NAMESPACE_NAME_LABEL]: name });
  }
  return out;
}

function isLocal(p: PodInfo, node: NetpolNode, localCidr: Range | undefined): boolean {
  if (p.pod.spec?.nodeName) return p.pod.spec.nodeName === node.name;
  return localCidr !== undefined && p.n >= localCidr[0] && p.n <= localCidr[1];
}

function compile(sel: LabelSelector | undefined | null): Selector {
  // An absent podSelector in a peer means "not this kind of peer", handled by the caller;
  // an absent policy podSelector is the empty one (defaulting sets it).
  return labelSelectorAsSelector(sel ?? {});
}

function policyTypes(np: NetworkPolicy): Set<string> {
  const given = np.spec?.policyTypes;
  if (given && given.length > 0) return new Set(given);
  return new Set(np.spec?.egress?.length ? ['Ingress', 'Egress'] : ['Ingress']);
}

/** The named port's number on a pod, for that protocol (container ports default to TCP). */
function namedPort(pod: Pod, name: string, protocol: string): number | undefined {
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.name === name && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
    }
  }
  return undefined;
}

class PeerResolver {
  private readonly nsSelected = new Map<string, Set<string>>();
  private readonly peerSets = new Map<string, { pods: PodInfo[]; elements: Set<string> }>();
  /** Pods by namespace: a peer only ever looks at the pods of some namespaces. */
  private readonly byNamespace = new Map<string, PodInfo[]>();

  constructor(
    pods: PodInfo[],
    private readonly nsLabels: Map<string, Record<string, string>>,
  ) {
    for (const p of pods) {
      const list = this.byNamespace.get(p.namespace) ?? [];
      list.push(p);
      this.byNamespace.set(p.namespace, list);
    }
  }

  /** The pods a pod/namespace peer stands for (ipBlock peers are addresses, not pods). */
  podsOf(peer: NetworkPolicyPeer, policyNamespace: string): PodInfo[] {
    const podSel = peer.podSelector ? compile(peer.podSelector) : undefined;
    const namespaces = peer.namespaceSelector
      ? [...this.namespacesMatching(peer.namespaceSelector)]
      : [policyNamespace];
    const out: PodInfo[] = [];
    for (const ns of namespaces) {
      for (const p of this.byNamespace.get(ns) ?? []) if (!podSel || podSel.matches(p.labels)) out.push(p);
    }
    return out;
  }

  /**
   * The addresses (and pods) a rule's peers stand for. Policies often repeat the
   * same peers (allow from the namespace's clients, from monitoring): within one
   * plan each distinct peer list is resolved once, and its element set shared
   * (nobody changes a planned set).
   */
  peerSet(peers: NetworkPolicyPeer[], policyNamespace: string): { pods: PodInfo[]; elements: Set<string> } {
    const key = `${policyNamespace}\u0000${JSON.stringify(peers)}`;
    let out = this.peerSets.get(key);
    if (!out) {
      const ranges: Range[] = [];
      const pods: PodInfo[] = [];
      for (const peer of peers) {
        if (peer.ipBlock) ranges.push(...ipBlockRanges(peer));
        else {
          for (const p of this.podsOf(peer, policyNamespace)) {
            pods.push(p);
            ranges.push([p.n, p.n]);
          }
        }
      }
      out = { pods, elements: new Set(merge(ranges).map(rangeText)) };
      this.peerSets.set(key, out);
    }
    return out;
  }

  private namespacesMatching(sel: LabelSelector): Set<string> {
    const key = JSON.stringify(sel);
    let out = this.nsSelected.get(key);
    if (!out) {
      const s = compile(sel);
      out = new Set([...this.nsLabels].filter(([, labels]) => s.matches(labels)).map(([n]) => n));
      this.nsSelected.set(key, out);
    }
    return out;
  }
}

function ipBlockRanges(peer: NetworkPolicyPeer): Range[] {
  const block = peer.ipBlock;
  if (!block) return [];
  const whole = cidrRange(block.cidr);
  // IPv6 blocks: pods here have IPv4 addresses only, so they match nothing.
  if (!whole) return [];
  const except = (block.except ?? []).map(cidrRange).filter((r): r is Range => r !== undefined);
  return subtract([whole], except);
}

/** Writes one direction of one policy: its chain, peer sets and named-port sets. */
function planDirection(
  rs: NetpolRuleset,
  np: NetworkPolicy,
  id: string,
  dir: Direction,
  targets: PodInfo[],
  resolver: PeerResolver,
  allPods: PodInfo[],
): void {
  const ns = np.metadata?.namespace ?? 'default';
  const rules = dir === 'in' ? (np.spec?.ingress ?? []) : (np.spec?.egress ?? []);
  const chain = `${dir}-${id}`;
  const texts: string[] = [];
  // The remote side of a connection: the source of ingress, the destination of egress.
  const remote = dir === 'in' ? 'saddr' : 'daddr';
  rules.forEach((rule, i) => {
    const peers: NetworkPolicyPeer[] =
      ('from' in rule ? rule.from : (rule as { to?: NetworkPolicyPeer[] }).to) ?? [];
    let peerMatch = '';
    let peerPods: PodInfo[] | undefined;
    if (peers.length > 0) {
      const setName = `${chain}-${i}`;
      const peerSet = resolver.peerSet(peers, ns);
      peerPods = peerSet.pods;
      rs.sets.set(setName, { type: 'ipv4_addr', interval: true, elements: peerSet.elements });
      peerMatch = `ip ${remote} @${setName} `;
    }
    const ports: NetworkPolicyPort[] = rule.ports ?? [];
    if (ports.length === 0) {
      texts.push(`${peerMatch}accept`);
      return;
    }
    const named: NetworkPolicyPort[] = [];
    for (const port of ports) {
      const proto = PROTO[port.protocol ?? 'TCP'] ?? 'tcp';
      if (typeof port.port === 'string') {
        named.push(port);
        continue;
      }
      if (port.port === undefined) texts.push(`${peerMatch}meta l4proto ${proto} accept`);
      else {
        const range =
          port.endPort !== undefined && port.endPort > port.port
            ? `${port.port}-${port.endPort}`
            : `${port.port}`;
        texts.push(`${peerMatch}meta l4proto ${proto} th dport ${range} accept`);
      }
    }
    if (named.length > 0) {
      // Named ports belong to the destination pod: the selected pods for ingress,
      // the peers (or, with no `to`, every pod) for egress.
      const destinations = dir === 'in' ? targets : (peerPods ?? allPods);
      const setName = `${chain}-${i}-np`;
      const elements = new Set<string>();
      for (const port of named) {
        const protocol = port.protocol ?? 'TCP';
        for (const p of destinations) {
          const n = namedPort(p.pod, port.port as string, protocol);
          if (n !== undefined) elements.add(`${p.ip} . ${PROTO[protocol] ?? 'tcp'} . ${n}`);
        }
      }
      rs.sets.set(setName, { type: 'ipv4_addr . inet_proto . inet_service', interval: false, elements });
      texts.push(`${peerMatch}ip daddr . meta l4proto . th dport @${setName} accept`);
    }
  });
  rs.chains.set(chain, { rules: texts });
}

export function emptyNetpolRuleset(
  nodeName: string,
  table: string = netpolTableName(nodeName),
): NetpolRuleset {
  return {
    table,
    chains: new Map(),
    sets: new Map(),
    maps: new Map(),
    stats: { policies: 0, localPods: 0, isolatedIngress: 0, isolatedEgress: 0 },
    skipped: [],
  };
}

export function planPolicies(
  policies: readonly NetworkPolicy[],
  pods: readonly Pod[],
  namespaces: readonly Namespace[],
  node: NetpolNode,
): NetpolRuleset {
  const rs = emptyNetpolRuleset(node.name, node.table);
  const all = networkPods(pods);
  const localCidr = node.podCIDR ? cidrRange(node.podCIDR) : undefined;
  const local = all.filter((p) => isLocal(p, node, localCidr));
  rs.stats.localPods = local.length;
  const resolver = new PeerResolver(all, namespaceLabels(namespaces));

  // Per namespace and direction: the dispatch rules of its policies that select local pods.
  const dispatch = { in: new Map<string, string[]>(), out: new Map<string, string[]>() };
  // Per local pod and direction: whether some policy isolates it.
  const isolated = { in: new Map<string, string>(), out: new Map<string, string>() };

  const sorted = [...policies].sort((a, b) => policyKey(a).localeCompare(policyKey(b)));
  for (const np of sorted) {
    const key = policyKey(np);
    const ns = np.metadata?.namespace ?? 'default';
    let selector: Selector;
    try {
      selector = compile(np.spec?.podSelector);
      // Compile the peers' selectors up front, so a bad one skips the whole policy, not half of it.
      for (const r of [
        ...(np.spec?.ingress ?? []).flatMap((r) => r.from ?? []),
        ...(np.spec?.egress ?? []).flatMap((r) => r.to ?? []),
      ]) {
        if (r.podSelector) compile(r.podSelector);
        if (r.namespaceSelector) compile(r.namespaceSelector);
        if (r.ipBlock && !parseAnyCidr(r.ipBlock.cidr))
          throw new Error(`invalid ipBlock.cidr ${r.ipBlock.cidr}`);
      }
    } catch (err) {
      rs.skipped.push({ policy: key, reason: (err as Error).message });
      continue;
    }
    const targets = local.filter((p) => p.namespace === ns && selector.matches(p.labels));
    // A policy that selects none of this node's pods has nothing to do here.
    if (targets.length === 0) continue;
    rs.stats.policies++;
    const id = hashAndTruncate(key);
    const tgtSet = `tgt-${id}`;
    rs.sets.set(tgtSet, { type: 'ipv4_addr', interval: false, elements: new Set(targets.map((p) => p.ip)) });
    const types = policyTypes(np);
    for (const [dir, type] of [
      ['in', 'Ingress'],
      ['out', 'Egress'],
    ] as const) {
      if (!types.has(type)) continue;
      planDirection(rs, np, id, dir, targets, resolver, all);
      const nsChain = `ns-${dir}-${hashAndTruncate(ns)}`;
      const list = dispatch[dir].get(nsChain) ?? [];
      list.push(`ip ${dir === 'in' ? 'daddr' : 'saddr'} @${tgtSet} jump ${dir}-${id}`);
      dispatch[dir].set(nsChain, list);
      for (const p of targets) isolated[dir].set(p.ip, nsChain);
    }
  }

  for (const dir of ['in', 'out'] as const) {
    // Nothing in the namespace's policies allowed it: drop. A reply never gets here.
    for (const [chain, rules] of dispatch[dir]) rs.chains.set(chain, { rules: [...rules, 'drop'] });
    const map = new Map<string, string>();
    for (const [ip, chain] of [...isolated[dir]].sort()) map.set(ip, `jump ${chain}`);
    rs.maps.set(dir === 'in' ? 'ingress-pods' : 'egress-pods', { type: 'ipv4_addr', elements: map });
  }
  rs.stats.isolatedIngress = isolated.in.size;
  rs.stats.isolatedEgress = isolated.out.size;

  rs.chains.set('forward-egress', {
    base: { hook: 'forward', priority: 0 },
    rules: [ESTABLISHED, 'ip saddr vmap @egress-pods'],
  });
  rs.chains.set('forward-ingress', {
    base: { hook: 'forward', priority: 1 },
    rules: [ESTABLISHED, 'ip daddr vmap @ingress-pods'],
  });
  // A pod's traffic to the node itself (e.g. to kubit-dns on the host bridge, after
  // kubit-proxy's DNAT) is egress too; the node's traffic to its pods leaves through
  // output, which has no chain here: it is always allowed.
  rs.chains.set('input-egress', {
    base: { hook: 'input', priority: 0 },
    rules: [ESTABLISHED, 'ip saddr vmap @egress-pods'],
  });
  return rs;
}

function policyKey(np: NetworkPolicy): string {
  return `${np.metadata?.namespace ?? 'default'}/${np.metadata?.name ?? ''}`;
}
