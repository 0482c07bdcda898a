// The cluster's Service networking as the apiserver's flags set it: the range cluster
// IPs come from (--service-cluster-ip-range) and the one node ports come from
// (--service-node-port-range), and where each allocation is kept in the store.
import {
  type Cidr,
  cidrContains,
  cidrSize,
  DEFAULT_NODE_PORT_RANGE,
  DEFAULT_SERVICE_CIDR,
  formatCidr,
  formatIPv4,
  parseCidr,
  parseIPv4,
} from '@kubit/api';

/** One key per allocated cluster IP: /registry/serviceips/<ip>, holding its owner. */
export const SERVICE_IPS_PREFIX = '/registry/serviceips/';
/** One key per allocated node port: /registry/servicenodeports/<port>, holding its owner. */
export const NODE_PORTS_PREFIX = '/registry/servicenodeports/';

/** A range of numbers to hand out: [first, last], with its low "static" band. */
export interface Band {
  first: number;
  last: number;
  /**
   * The first `staticSize` values are picked only when the rest is full, so values an
   * operator or an addon asks for (10.96.0.10 for cluster DNS) stay free, as Kubernetes'
   * ServiceIPStaticSubrange and ServiceNodePortStaticSubrange keep them.
   */
  staticSize: number;
}

export interface ServiceNetworking {
  cidr: Cidr;
  /** The cluster IPs that can be handed out: the range without its network and broadcast addresses. */
  ips: Band;
  /** As --service-node-port-range spells it ("30000-32767"). */
  nodePortRangeText: string;
  nodePorts: Band;
}

/** Kubernetes' size of the static band: min(max(min, size/step), max), none for tiny ranges. */
function staticBand(size: number, min: number, max: number, step: number): number {
  if (size < min) return 0;
  return Math.min(Math.max(min, Math.floor(size / step)), max);
}

/** Parses --service-cluster-ip-range; throws a message naming the flag. */
export function parseServiceCidr(text: string): Cidr {
  if (text.includes(',')) {
    throw new Error(
      `--service-cluster-ip-range=${text}: only one (IPv4) range is supported; Kubit's clusters are single-stack`,
    );
  }
  let cidr: Cidr;
  try {
    cidr = parseCidr(text);
  } catch {
    throw new Error(`--service-cluster-ip-range=${text}: not an IPv4 CIDR (e.g. ${DEFAULT_SERVICE_CIDR})`);
  }
  if (cidr.prefix > 29) {
    throw new Error(`--service-cluster-ip-range=${text}: too small; the prefix must be /29 or shorter`);
  }
  if (cidr.prefix < 12) {
    // Kubernetes refuses ranges of more than 2^20 addresses for its bitmap; so do we.
    throw new Error(`--service-cluster-ip-range=${text}: too large; the prefix must be /12 or longer`);
  }
  return cidr;
}

/** Parses --service-node-port-range ("30000-32767", or one port); throws a message naming the flag. */
export function parseNodePortRange(text: string): { first: number; last: number } {
  const m = /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(text);
  const first = m ? Number(m[1]) : Number.NaN;
  const last = m ? Number(m[2] ?? m[1]) : Number.NaN;
  if (!(first >= 1 && last <= 65535 && first <= last)) {
    throw new Error(
      `--service-node-port-range=${text}: expected a port range "first-last" within 1-65535 (e.g. ${DEFAULT_NODE_PORT_RANGE})`,
    );
  }
  return { first, last };
}

export function serviceNetworking(
  cidrText: string = DEFAULT_SERVICE_CIDR,
  portRangeText: string = DEFAULT_NODE_PORT_RANGE,
): ServiceNetworking {
  const cidr = parseServiceCidr(cidrText);
  const ports = parseNodePortRange(portRangeText);
  const usable = cidrSize(cidr) - 2;
  const portCount = ports.last - ports.first + 1;
  return {
    cidr,
    ips: { first: cidr.base + 1, last: cidr.base + usable, staticSize: staticBand(usable, 16, 256, 16) },
    nodePortRangeText: `${ports.first}-${ports.last}`,
    nodePorts: { ...ports, staticSize: staticBand(portCount, 16, 128, 32) },
  };
}

/** Whether `ip` can be handed out: in the range, not its network or broadcast address. */
export function ipInRange(n: ServiceNetworking, ip: string): boolean {
  const v = parseIPv4(ip);
  return v !== undefined && cidrContains(n.cidr, v) && v >= n.ips.first && v <= n.ips.last;
}

export function ipKey(ip: string): string {
  return `${SERVICE_IPS_PREFIX}${ip}`;
}

export function nodePortKey(port: number): string {
  return `${NODE_PORTS_PREFIX}${port}`;
}

export function cidrText(n: ServiceNetworking): string {
  return formatCidr(n.cidr);
}

/**
 * A random free value of the band: from above the static band first, then from within
 * it. `taken` answers for each value; undefined when every value is taken.
 */
export function pickFree(band: Band, taken: (v: number) => boolean): number | undefined {
  const dynamicFirst = band.first + band.staticSize;
  for (const [lo, hi] of [
    [dynamicFirst, band.last],
    [band.first, dynamicFirst - 1],
  ]) {
    const size = hi - lo + 1;
    if (size <= 0) continue;
    // Start at a random offset and walk forward: every value is visited once.
    const start = Math.floor(Math.random() * size);
    for (let i = 0; i < size; i++) {
      const v = lo + ((start + i) % size);
      if (!taken(v)) return v;
    }
  }
  return undefined;
}

/** A random value of the dynamic part of the band (the static part when there is none). */
export function pickRandom(band: Band): number {
  const dynamicFirst = band.first + band.staticSize;
  const lo = dynamicFirst <= band.last ? dynamicFirst : band.first;
  return lo + Math.floor(Math.random() * (band.last - lo + 1));
}

export { formatIPv4 };
