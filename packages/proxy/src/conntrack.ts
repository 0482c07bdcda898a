// Stale UDP flows: conntrack keeps a UDP "connection" NATed to the endpoint it
// was first sent to for as long as packets keep coming, so a client that keeps
// sending (a DNS resolver's fixed source port) would keep talking to a dead pod.
// After each sync we delete the entries that point at endpoints that went, as
// kube-proxy does, with Debian's conntrack tool (in the same network namespace).
import type { UdpServicePort } from './ruleset.js';

type UdpPorts = Map<string, UdpServicePort>;

/**
 * conntrack argument lists (after `conntrack`) that clear what `previous` → `current`
 * made stale: the rulesets' `udp`, whole or (an incremental sync) only the UDP service
 * ports that changed, on both sides.
 */
export function staleUdpFlows(previous: UdpPorts | undefined, current: UdpPorts): string[][] {
  if (!previous) return [];
  const cmds: string[][] = [];
  for (const [key, was] of previous) {
    const now = current.get(key);
    const kept = new Set(now?.endpointIPs ?? []);
    for (const ep of was.endpointIPs) {
      if (kept.has(ep)) continue;
      for (const ip of was.ips) cmds.push(['-D', '-p', 'udp', '--orig-dst', ip, '--dst-nat', ep]);
      if (was.nodePort !== undefined)
        cmds.push(['-D', '-p', 'udp', '--orig-port-dst', String(was.nodePort), '--dst-nat', ep]);
    }
  }
  // A service that had no endpoint and now has one: entries made while it rejected must go.
  for (const [key, now] of current) {
    const was = previous.get(key);
    if (now.endpointIPs.length > 0 && (!was || was.endpointIPs.length === 0)) {
      for (const ip of now.ips) cmds.push(['-D', '-p', 'udp', '--orig-dst', ip]);
    }
  }
  return cmds;
}
