// IPv4 address and CIDR arithmetic, shared by everything that hands out or matches
// addresses: node pod subnets, Service cluster IPs, LoadBalancer pools, the proxy's
// rules and DNS reverse names. Addresses are unsigned 32-bit numbers.

export interface Cidr {
  /** The network address as an unsigned 32-bit number. */
  base: number;
  prefix: number;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** The number of a dotted-quad address, or undefined when it is not one. */
export function parseIPv4(s: string): number | undefined {
  const m = IPV4.exec(s.trim());
  if (!m) return undefined;
  const octets = m.slice(1, 5).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  // Leading zeros are refused, as Go's net.ParseIP refuses them (they read as octal elsewhere).
  if (m.slice(1, 5).some((o) => o.length > 1 && o.startsWith('0'))) return undefined;
  return ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
}

export function formatIPv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

export function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

export function parseCidr(s: string): Cidr {
  const slash = s.trim().split('/');
  const ip = slash.length === 2 ? parseIPv4(slash[0]) : undefined;
  const prefix = slash.length === 2 && /^\d{1,2}$/.test(slash[1]) ? Number(slash[1]) : Number.NaN;
  if (ip === undefined || !(prefix >= 0 && prefix <= 32)) throw new Error(`invalid CIDR address: ${s}`);
  return { base: (ip & maskOf(prefix)) >>> 0, prefix };
}

export function formatCidr(c: Cidr): string {
  return `${formatIPv4(c.base)}/${c.prefix}`;
}

/** How many addresses the CIDR holds. */
export function cidrSize(c: Cidr): number {
  return 2 ** (32 - c.prefix);
}

export function cidrContains(c: Cidr, ip: number): boolean {
  return (ip & maskOf(c.prefix)) >>> 0 === c.base;
}

/** The n-th address of the CIDR (0 is the network address). */
export function nthAddress(c: Cidr, n: number): number {
  return (c.base + n) >>> 0;
}
