// What kubit-net wants in the kernel for NetworkPolicy on one node: one nft
// table of chains (ordered rule texts), sets and verdict maps with their
// elements, all as nft text so that two rulesets compare exactly and the
// differ can write the transaction that turns one into the other.
import { hashAndTruncate } from '@kubit/proxy';

/**
 * `inet`, not `bridge`: this kernel has no CONFIG_NF_CONNTRACK_BRIDGE, so a bridge
 * table cannot match `ct state` and could not let replies of allowed connections
 * through. Pods on one bridge reach the inet forward hook through br_netfilter
 * (`net.bridge.bridge-nf-call-iptables=1`, which kube-proxy-style Service DNAT
 * between pods of one bridge needs as well); the agent turns it on.
 */
export const NETPOL_FAMILY = 'inet';

/** One table per node: two nodes of the one-machine cluster share the host's network namespace. */
export function netpolTableName(nodeName: string): string {
  return `kubit-netpol-${hashAndTruncate(nodeName).slice(0, 8).toLowerCase()}`;
}

export interface NetpolBaseChain {
  hook: 'forward' | 'input';
  priority: number;
}

export interface NetpolChain {
  base?: NetpolBaseChain;
  /** Rule texts in order, as written after `add rule inet <table> <chain>`. */
  rules: string[];
  /**
   * Set only on a chain read back from the kernel (kernel.ts): the digest its rules were
   * written with, since nft's listing of a rule is not the text that wrote it.
   */
  digest?: string;
}

export interface NetpolSet {
  /** nft type, e.g. "ipv4_addr" or "ipv4_addr . inet_proto . inet_service". */
  type: string;
  interval: boolean;
  elements: Set<string>;
}

export interface NetpolMap {
  /** nft key type; the value is a verdict. */
  type: string;
  /** key → verdict ("10.1.0.5" → "jump ns-in-…"). */
  elements: Map<string, string>;
}

export interface NetpolRuleset {
  table: string;
  chains: Map<string, NetpolChain>;
  sets: Map<string, NetpolSet>;
  maps: Map<string, NetpolMap>;
  /** What was planned, for logs and metrics (not kernel state). */
  stats: { policies: number; localPods: number; isolatedIngress: number; isolatedEgress: number };
  /** Policies left out and why (a selector that does not compile). */
  skipped: { policy: string; reason: string }[];
}
