// Domain-name helpers: the one canonical spelling names are indexed under
// (lower case, no trailing dot; the specification's comparisons are
// case-insensitive) and the reverse (in-addr.arpa) names of IPv4 addresses.
import { formatIPv4, parseIPv4 } from '@kubit/api';

/** Lower case without the trailing dot: "Web.Default.svc.cluster.local." → "web.default.svc.cluster.local". */
export function canonicalName(name: string): string {
  const n = name.endsWith('.') ? name.slice(0, -1) : name;
  return n.toLowerCase();
}

/** True when `name` is `zone` or below it (both canonical). */
export function inZone(name: string, zone: string): boolean {
  return name === zone || name.endsWith(`.${zone}`);
}

/** The names between `name` (exclusive) and `zone` (exclusive), nearest first. */
export function ancestorsBelow(name: string, zone: string): string[] {
  const out: string[] = [];
  let n = name;
  for (;;) {
    const dot = n.indexOf('.');
    if (dot < 0) break;
    n = n.slice(dot + 1);
    if (n === zone || !inZone(n, zone)) break;
    out.push(n);
  }
  return out;
}

export const REVERSE_ZONE = 'in-addr.arpa';

/** "10.96.0.10" → "10.0.96.10.in-addr.arpa". */
export function reverseName(ip: string): string {
  return `${ip.split('.').reverse().join('.')}.${REVERSE_ZONE}`;
}

/** "10.244.1.5" → "10-244-1-5": the name kube-dns and CoreDNS give an endpoint without a hostname. */
export function dashedIP(ip: string): string {
  return ip.replaceAll('.', '-');
}

/** "10-244-1-5" → "10.244.1.5" when it spells an IPv4 address, else undefined. */
export function ipFromDashed(label: string): string | undefined {
  const ip = label.replaceAll('-', '.');
  const n = parseIPv4(ip);
  return n === undefined ? undefined : formatIPv4(n);
}

/** A valid IPv4 address in dotted form, as the records carry it. */
export function isIPv4(s: string | undefined): s is string {
  return s !== undefined && parseIPv4(s) !== undefined;
}
