// The overlay's vocabulary: its modes, the annotations a node publishes its
// tunnel endpoint in, and the kernel objects it owns (the VXLAN device, routes
// marked with its own protocol number, the device's neighbour and FDB entries),
// both as the planner wants them and as the kernel reader found them.

export type OverlayMode = 'host-gw' | 'vxlan' | 'auto';
export const OVERLAY_MODES: readonly OverlayMode[] = ['host-gw', 'vxlan', 'auto'];

/** Kubit's own prefix: the same facts flannel keeps under flannel.alpha.coreos.com/. */
export const ANNOTATION_PREFIX = 'net.kubit.dev/';
/** "vxlan" when the node has a VTEP (vxlan and auto modes), "host-gw" otherwise. */
export const BACKEND_TYPE_ANNOTATION = `${ANNOTATION_PREFIX}backend-type`;
/** JSON {"VNI":1,"VtepMAC":"02:…"} for vxlan, "null" for host-gw. */
export const BACKEND_DATA_ANNOTATION = `${ANNOTATION_PREFIX}backend-data`;
/** The underlay address peers send to (routes' next hop, the FDB entry's dst). */
export const PUBLIC_IP_ANNOTATION = `${ANNOTATION_PREFIX}public-ip`;
/** The MTU pods on this node must use (the kubelet writes it into the CNI conflist). */
export const POD_MTU_ANNOTATION = `${ANNOTATION_PREFIX}pod-mtu`;

/**
 * The protocol number marking the routes kubit-net owns (`ip route … proto 75`,
 * 0x4b): the reader lists only these, so it never touches anyone else's routes.
 * 75 is unassigned in iproute2's rt_protos.
 */
export const ROUTE_PROTO = 75;
/** Linux's VXLAN header cost over IPv4: outer IP 20 + UDP 8 + VXLAN 8 + inner Ethernet 14. */
export const VXLAN_OVERHEAD = 50;

export interface OverlayConfig {
  mode: OverlayMode;
  vni: number;
  port: number;
  device: string;
}

export interface BackendData {
  VNI: number;
  VtepMAC: string;
}

/** The VXLAN device this node wants. */
export interface DesiredDevice {
  name: string;
  vni: number;
  /** The underlay address the tunnel leaves from. */
  local: string;
  port: number;
  mtu: number;
  mac: string;
  /** The .0 of this node's pod subnet, /32 (as flannel gives its device). */
  address: string;
}

/** A route to a peer's pod subnet: via its underlay address (host-gw), or via its gateway on the device (vxlan). */
export interface OverlayRoute {
  dst: string;
  via: string;
  /** Set for vxlan routes (`dev D onlink`); host-gw routes leave the device to the kernel. */
  dev?: string;
}

export interface OverlayNeigh {
  ip: string;
  mac: string;
}

export interface OverlayFdb {
  mac: string;
  dst: string;
}

/** What kubit-net wants in the kernel, keyed for the differ. */
export interface OverlayState {
  device?: DesiredDevice;
  /** by dst */
  routes: Map<string, OverlayRoute>;
  /** by ip (on the device) */
  neighs: Map<string, OverlayNeigh>;
  /** by mac (on the device) */
  fdb: Map<string, OverlayFdb>;
}

/** The device as the kernel has it. */
export interface KernelDevice {
  name: string;
  kind: string;
  vni?: number;
  local?: string;
  port?: number;
  learning?: boolean;
  mtu: number;
  mac: string;
  up: boolean;
  /** "a.b.c.d/nn" */
  addresses: string[];
}

/** A route of the main table (any owner), as `ip -j route` prints it. */
export interface HostRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  protocol?: string;
  type?: string;
  onlink: boolean;
}

/** An IPv4 address of this host's interfaces, with the interface's MTU. */
export interface HostAddress {
  dev: string;
  local: string;
  prefixlen: number;
  mtu: number;
}

/** What the kernel holds: kubit-net's own objects, and the host facts the planner decides with. */
export interface KernelState {
  device?: KernelDevice;
  /** Owned routes (proto 75), by dst. */
  routes: Map<string, OverlayRoute>;
  /** Permanent neighbour entries on the device, by ip. */
  neighs: Map<string, OverlayNeigh>;
  /** FDB entries with a dst on the device, by mac. */
  fdb: Map<string, OverlayFdb>;
  /** Every main-table route (for directly connected subnets and pod subnets already routed). */
  hostRoutes: HostRoute[];
  hostAddresses: HostAddress[];
}

export function emptyOverlayState(): OverlayState {
  return { routes: new Map(), neighs: new Map(), fdb: new Map() };
}
