// The overlay planner, pure: this node, every Node object and what the kernel
// says about this host's routes and addresses → the kernel objects kubit-net
// wants (the VXLAN device; per peer a host-gw route, or a vxlan route with the
// peer gateway's permanent ARP entry and its FDB entry), the annotations this
// node publishes, and the problems to report as Events on the nodes at fault.
//
// A peer is left out, never half-programmed, when something about it is wrong:
// its pod subnet overlaps an earlier claimant's (PodCIDRConflict), it has no
// underlay address (NoUnderlayAddress), host-gw cannot reach it (PeerNotOnSegment),
// it has no VTEP yet, or its VNI differs. Leaving one peer out changes nothing
// about the others.
import { createHash } from 'node:crypto';
import {
  type Cidr,
  cidrContains,
  formatCidr,
  formatIPv4,
  maskOf,
  type Node,
  parseCidr,
  parseIPv4,
} from '@kubit/api';
import {
  BACKEND_DATA_ANNOTATION,
  BACKEND_TYPE_ANNOTATION,
  type BackendData,
  emptyOverlayState,
  type HostAddress,
  type HostRoute,
  type OverlayConfig,
  type OverlayState,
  POD_MTU_ANNOTATION,
  PUBLIC_IP_ANNOTATION,
  ROUTE_PROTO,
  VXLAN_OVERHEAD,
} from './types.js';

const ETHERNET_MTU = 1500;

export type ProblemReason =
  | 'PodCIDRConflict'
  | 'NoUnderlayAddress'
  | 'InvalidPodCIDR'
  | 'PeerNotOnSegment'
  | 'VNIMismatch'
  | 'VtepMACConflict';

/** Something wrong with one node, said as a Warning Event on that node. */
export interface OverlayProblem {
  node: string;
  reason: ProblemReason;
  message: string;
}

export interface PeerPlan {
  node: string;
  backend: 'host-gw' | 'vxlan' | 'skipped';
  /** Why it was skipped. */
  why?: string;
}

export interface OverlayPlan {
  /** Undefined when this node cannot be planned yet (no Node, pod subnet or underlay address): touch nothing. */
  state?: OverlayState;
  /** Why state is undefined. */
  notReady?: string;
  /** The annotations this node's Node must carry. */
  annotations?: Record<string, string>;
  peers: PeerPlan[];
  problems: OverlayProblem[];
}

export interface PlanInput {
  config: OverlayConfig;
  nodeName: string;
  /** --underlay-address; else this Node's annotation-free InternalIP. */
  underlayAddress?: string;
  nodes: Node[];
  hostRoutes: HostRoute[];
  hostAddresses: HostAddress[];
}

/**
 * A stable MAC for the VTEP (locally administered, unicast), from the node and VNI:
 * a device recreated after a crash or a reboot keeps its MAC, so no peer's
 * ARP or FDB entry goes stale and the annotation does not change.
 */
export function vtepMac(nodeName: string, vni: number): string {
  const h = createHash('sha256').update(`${nodeName}/${vni}`).digest();
  h[0] = (h[0] & 0xfe) | 0x02;
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

/** The Node's InternalIP (the first), or undefined. */
export function internalIP(node: Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP' && parseIPv4(a.address) !== undefined)
    ?.address;
}

/** A peer's underlay address: the one its agent published, else its InternalIP. */
export function peerUnderlay(node: Node): string | undefined {
  const pub = node.metadata?.annotations?.[PUBLIC_IP_ANNOTATION];
  if (pub && parseIPv4(pub) !== undefined) return pub;
  return internalIP(node);
}

export function parseBackendData(node: Node): BackendData | undefined {
  const raw = node.metadata?.annotations?.[BACKEND_DATA_ANNOTATION];
  if (!raw || node.metadata?.annotations?.[BACKEND_TYPE_ANNOTATION] !== 'vxlan') return undefined;
  try {
    const d = JSON.parse(raw) as Partial<BackendData>;
    if (typeof d.VNI !== 'number' || typeof d.VtepMAC !== 'string') return undefined;
    if (!/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i.test(d.VtepMAC)) return undefined;
    return { VNI: d.VNI, VtepMAC: d.VtepMAC.toLowerCase() };
  } catch {
    return undefined;
  }
}

function overlaps(a: Cidr, b: Cidr): boolean {
  const p = Math.min(a.prefix, b.prefix);
  return (a.base & maskOf(p)) >>> 0 === (b.base & maskOf(p)) >>> 0;
}

function tryCidr(s: string | undefined): Cidr | undefined {
  if (!s) return undefined;
  try {
    return parseCidr(s);
  } catch {
    return undefined;
  }
}

/** Routes kubit-net does not own; `default` counts as 0.0.0.0/0. */
function foreignRoutes(routes: HostRoute[], device: string): { cidr: Cidr; r: HostRoute }[] {
  const out: { cidr: Cidr; r: HostRoute }[] = [];
  for (const r of routes) {
    if (r.protocol === String(ROUTE_PROTO) || r.dev === device) continue;
    if (r.type && r.type !== 'unicast') continue;
    const cidr =
      r.dst === 'default' ? { base: 0, prefix: 0 } : tryCidr(r.dst.includes('/') ? r.dst : `${r.dst}/32`);
    if (cidr) out.push({ cidr, r });
  }
  return out;
}

/**
 * Whether `addr` is on a directly connected subnet: the longest main-table
 * prefix holding it (kubit-net's own routes aside) has no gateway. This is
 * what `ip route get` answers without policy routing, read from one table
 * listing per sync instead of one process per peer.
 */
export function directlyConnected(addr: string, routes: { cidr: Cidr; r: HostRoute }[]): boolean {
  const ip = parseIPv4(addr);
  if (ip === undefined) return false;
  let best: { cidr: Cidr; r: HostRoute } | undefined;
  for (const x of routes) {
    if (cidrContains(x.cidr, ip) && (!best || x.cidr.prefix > best.cidr.prefix)) best = x;
  }
  return best !== undefined && !best.r.gateway;
}

function creationOrder(a: Node, b: Node): number {
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const na = a.metadata?.name ?? '';
  const nb = b.metadata?.name ?? '';
  return na < nb ? -1 : na > nb ? 1 : 0;
}

export function planOverlay(input: PlanInput): OverlayPlan {
  const { config, nodeName } = input;
  const problems: OverlayProblem[] = [];
  const peers: PeerPlan[] = [];
  const self = input.nodes.find((n) => n.metadata?.name === nodeName);
  if (!self) return { notReady: `no Node named "${nodeName}" yet`, peers, problems };
  const selfCidr = tryCidr(self.spec?.podCIDR);
  if (!selfCidr) return { notReady: `node "${nodeName}" has no pod CIDR yet`, peers, problems };
  const underlay = input.underlayAddress ?? internalIP(self);
  if (!underlay)
    return {
      notReady: `node "${nodeName}" has no InternalIP address and no --underlay-address was given`,
      peers,
      problems,
    };
  const underlayIf = input.hostAddresses.find((a) => a.local === underlay);
  // An underlay on loopback (the one-machine cluster's nodes report 127.0.0.1) carries
  // no tunnel to another host; its 65536 would give pods an MTU their traffic out of
  // the host cannot use, so such a node counts as on Ethernet's 1500.
  const underlayMtu = underlayIf && (underlayIf.dev === 'lo' ? ETHERNET_MTU : underlayIf.mtu);
  if (underlayMtu === undefined)
    return {
      notReady: `the underlay address ${underlay} is not on any interface of this host`,
      peers,
      problems,
    };

  const vxlan = config.mode !== 'host-gw';
  const mac = vtepMac(nodeName, config.vni);
  const podMtu = vxlan ? underlayMtu - VXLAN_OVERHEAD : underlayMtu;
  const state = emptyOverlayState();
  if (vxlan)
    state.device = {
      name: config.device,
      vni: config.vni,
      local: underlay,
      port: config.port,
      mtu: podMtu,
      mac,
      address: `${formatIPv4(selfCidr.base)}/32`,
    };
  const annotations: Record<string, string> = {
    [BACKEND_TYPE_ANNOTATION]: vxlan ? 'vxlan' : 'host-gw',
    [BACKEND_DATA_ANNOTATION]: vxlan ? JSON.stringify({ VNI: config.vni, VtepMAC: mac }) : 'null',
    [PUBLIC_IP_ANNOTATION]: underlay,
    [POD_MTU_ANNOTATION]: String(podMtu),
  };

  const foreign = foreignRoutes(input.hostRoutes, config.device);
  // Pod subnets are claimed in creation order, this node's first: an older claim
  // is never displaced by a newer one, so a conflict changes nothing that works.
  const claimed: { node: string; cidr: Cidr }[] = [{ node: nodeName, cidr: selfCidr }];
  const macs = new Map<string, string>([[mac, nodeName]]);
  const others = input.nodes.filter((n) => n.metadata?.name !== nodeName).sort(creationOrder);
  for (const peer of others) {
    const name = peer.metadata?.name ?? '';
    const skip = (why: string, problem?: Omit<OverlayProblem, 'node'>) => {
      peers.push({ node: name, backend: 'skipped', why });
      if (problem) problems.push({ node: name, ...problem });
    };
    const rawCidr = peer.spec?.podCIDR;
    if (!rawCidr) {
      skip('no pod CIDR yet');
      continue;
    }
    const cidr = tryCidr(rawCidr);
    if (!cidr) {
      skip('invalid pod CIDR', {
        reason: 'InvalidPodCIDR',
        message: `spec.podCIDR "${rawCidr}" is not an IPv4 CIDR; no route to this node's pods is programmed`,
      });
      continue;
    }
    const dst = formatCidr(cidr);
    const holder = claimed.find((c) => overlaps(c.cidr, cidr));
    if (holder) {
      skip(`pod CIDR overlaps node ${holder.node}'s`, {
        reason: 'PodCIDRConflict',
        message: `spec.podCIDR ${dst} overlaps node "${holder.node}"'s ${formatCidr(holder.cidr)}; node "${nodeName}" routes no traffic to this node's pods`,
      });
      continue;
    }
    claimed.push({ node: name, cidr });
    // The one-machine cluster: the peer's bridge is on this host already.
    if (foreign.some((f) => !f.r.gateway && f.cidr.prefix > 0 && overlaps(f.cidr, cidr))) {
      skip('pod subnet is directly connected on this host');
      continue;
    }
    const addr = peerUnderlay(peer);
    if (!addr) {
      skip('no underlay address', {
        reason: 'NoUnderlayAddress',
        message: `node has no InternalIP address and no ${PUBLIC_IP_ANNOTATION} annotation; node "${nodeName}" routes no traffic to its pods`,
      });
      continue;
    }
    // A peer at one of this host's own addresses shares its network namespace (the
    // one-machine cluster, whose nodes all report 127.0.0.1): its bridge, once its first
    // pod makes it, is connected here, and there is nothing to route.
    if (input.hostAddresses.some((a) => a.local === addr)) {
      skip('underlay address is this host’s own (one network namespace)');
      continue;
    }
    const direct = directlyConnected(addr, foreign);
    const useHostGw = config.mode === 'host-gw' || (config.mode === 'auto' && direct);
    if (useHostGw) {
      if (!direct) {
        skip('underlay address not on a connected subnet', {
          reason: 'PeerNotOnSegment',
          message: `underlay address ${addr} is not on a subnet directly connected to node "${nodeName}", so host-gw cannot route to this node's pods (use --overlay-mode=vxlan or auto)`,
        });
        continue;
      }
      state.routes.set(dst, { dst, via: addr });
      peers.push({ node: name, backend: 'host-gw' });
      continue;
    }
    const data = parseBackendData(peer);
    if (!data) {
      skip('no VTEP published yet (its kubit-net is not running in vxlan or auto mode)');
      continue;
    }
    if (data.VNI !== config.vni) {
      skip('different VNI', {
        reason: 'VNIMismatch',
        message: `its VXLAN VNI is ${data.VNI}, node "${nodeName}"'s is ${config.vni}; no tunnel between them`,
      });
      continue;
    }
    const owner = macs.get(data.VtepMAC);
    if (owner) {
      skip('VTEP MAC in use', {
        reason: 'VtepMACConflict',
        message: `its VTEP MAC ${data.VtepMAC} is also node "${owner}"'s`,
      });
      continue;
    }
    macs.set(data.VtepMAC, name);
    const gw = formatIPv4(cidr.base);
    state.routes.set(dst, { dst, via: gw, dev: config.device });
    state.neighs.set(gw, { ip: gw, mac: data.VtepMAC });
    state.fdb.set(data.VtepMAC, { mac: data.VtepMAC, dst: addr });
    peers.push({ node: name, backend: 'vxlan' });
  }
  return { state, annotations, peers, problems };
}
