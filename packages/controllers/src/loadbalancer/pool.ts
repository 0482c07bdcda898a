// The address pool of the service-lb-ipam controller and the assignment of its
// addresses to LoadBalancer Services. Pure: the whole assignment is computed
// from every Service's claim, so it is the same whichever Service is synced
// first, after a restart, or on another replica.
import { formatIPv4, parseCidr, parseIPv4 } from '@kubit/api';

export interface Pool {
  /** First and last address, inclusive. */
  first: number;
  last: number;
  /** The flag's text, for messages. */
  text: string;
}

/**
 * Parses --load-balancer-ip-range: a CIDR ("192.168.50.0/28": its network and
 * broadcast addresses are left out, as a host on that network cannot use
 * them) or an inclusive range ("192.168.50.10-192.168.50.20").
 */
export function parsePool(text: string): Pool {
  const s = text.trim();
  if (s.includes('/')) {
    let c: ReturnType<typeof parseCidr>;
    try {
      c = parseCidr(s);
    } catch {
      throw new Error(
        `--load-balancer-ip-range: "${text}" is not an IPv4 CIDR (e.g. 192.168.50.0/28) or range (e.g. 192.168.50.10-192.168.50.20)`,
      );
    }
    const size = 2 ** (32 - c.prefix);
    const skipEnds = c.prefix <= 30;
    return { first: c.base + (skipEnds ? 1 : 0), last: c.base + size - 1 - (skipEnds ? 1 : 0), text: s };
  }
  const parts = s.split('-');
  const first = parts.length === 2 ? parseIPv4(parts[0]) : undefined;
  const last = parts.length === 2 ? parseIPv4(parts[1]) : undefined;
  if (first === undefined || last === undefined) {
    throw new Error(
      `--load-balancer-ip-range: "${text}" is not an IPv4 CIDR (e.g. 192.168.50.0/28) or range (e.g. 192.168.50.10-192.168.50.20)`,
    );
  }
  if (first > last)
    throw new Error(`--load-balancer-ip-range: "${text}" ends before it starts (${parts[0]} > ${parts[1]})`);
  return { first, last, text: s };
}

export const poolSize = (p: Pool) => p.last - p.first + 1;

export function inPool(p: Pool, ip: string): boolean {
  const n = parseIPv4(ip);
  return n !== undefined && n >= p.first && n <= p.last;
}

/** One LoadBalancer Service's claim on the pool. */
export interface Claim {
  /** ns/name */
  key: string;
  uid: string;
  /** creationTimestamp in ms: the oldest claim wins an address. */
  created: number;
  /** spec.loadBalancerIP, if any. */
  requested?: string;
  /** The address it holds now (its status, or a write still on its way). */
  current?: string;
}

export type Assignment = { ip: string } | { error: string };

const older = (a: Claim, b: Claim) => a.created - b.created || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * Every Service's address: each keeps the address it holds when it is in the
 * pool, matches its request, and no older Service holds it; then requested
 * addresses are given if in the pool and free; then the rest get the lowest
 * free address, oldest Service first. A request outside the pool or taken,
 * or an empty pool, is an error the Service carries (it stays pending).
 */
export function assign(pool: Pool, claims: readonly Claim[]): Map<string, Assignment> {
  const sorted = [...claims].sort(older);
  const out = new Map<string, Assignment>();
  const holder = new Map<number, Claim>();
  const take = (c: Claim, n: number) => {
    holder.set(n, c);
    out.set(c.key, { ip: formatIPv4(n) });
  };
  for (const c of sorted) {
    if (!c.current || !inPool(pool, c.current)) continue;
    if (c.requested && c.requested !== c.current) continue;
    const n = parseIPv4(c.current)!;
    if (!holder.has(n)) take(c, n);
  }
  for (const c of sorted) {
    if (out.has(c.key) || !c.requested) continue;
    const n = parseIPv4(c.requested);
    if (n === undefined || !inPool(pool, c.requested)) {
      out.set(c.key, { error: `requested loadBalancerIP ${c.requested} is not in the pool ${pool.text}` });
      continue;
    }
    const h = holder.get(n);
    if (h) {
      out.set(c.key, {
        error: `requested loadBalancerIP ${c.requested} is already in use by Service ${h.key}`,
      });
      continue;
    }
    take(c, n);
  }
  let next = pool.first;
  for (const c of sorted) {
    if (out.has(c.key)) continue;
    while (next <= pool.last && holder.has(next)) next++;
    if (next > pool.last) {
      out.set(c.key, {
        error: `no available IPs: all ${poolSize(pool)} addresses of the pool ${pool.text} are in use`,
      });
      continue;
    }
    take(c, next);
  }
  return out;
}
