// IPv4 ranges for the peer sets: a policy's peers are pod addresses and ipBlocks
// (a CIDR minus its excepts), which may overlap. An nft interval set refuses
// overlapping elements, so the planner merges them into disjoint ranges here
// and writes each as "a.b.c.d" or "a.b.c.d-e.f.g.h": one canonical text per
// set of addresses, which is what the differ compares.
import { formatIPv4, parseAnyCidr, parseIPv4 } from '@kubit/api';

/** Inclusive [first, last] as unsigned 32-bit numbers. */
export type Range = [number, number];

export function cidrRange(text: string): Range | undefined {
  const c = parseAnyCidr(text);
  if (c === undefined || c.bits !== 32) return undefined;
  const first = Number(c.base);
  return [first, first + 2 ** (32 - c.prefix) - 1];
}

/** The ranges of `from` with every range of `minus` taken out. */
export function subtract(from: Range[], minus: Range[]): Range[] {
  let out = from;
  for (const [a, b] of minus) {
    const next: Range[] = [];
    for (const [x, y] of out) {
      if (b < x || a > y) next.push([x, y]);
      else {
        if (x < a) next.push([x, a - 1]);
        if (b < y) next.push([b + 1, y]);
      }
    }
    out = next;
  }
  return out;
}

/** Sorted, disjoint, with adjacent ranges joined. */
export function merge(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((p, q) => p[0] - q[0]);
  const out: Range[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}

export function rangeText([a, b]: Range): string {
  return a === b ? formatIPv4(a) : `${formatIPv4(a)}-${formatIPv4(b)}`;
}

export function ipRange(ip: string): Range | undefined {
  const n = parseIPv4(ip);
  return n === undefined ? undefined : [n, n];
}
