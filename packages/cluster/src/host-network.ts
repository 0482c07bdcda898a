// The addresses a one-machine cluster gives "the host" and its LoadBalancers.
// Its nodes report 127.0.0.1, which a pod cannot reach (a packet to loopback
// from a pod's interface is dropped), so the launcher adds a host-local bridge
// with an address of its own: pods reach the apiserver (the `kubernetes`
// Service) and cluster DNS there, node ports answer there, and the rest of its
// /24 is the LoadBalancer address pool kubit-proxy answers on.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { clusterDnsIP, DEFAULT_SERVICE_CIDR, formatIPv4 } from '@kubit/api';
import type { ClusterLayout } from './layout.js';

const run = promisify(execFile);

/** The Service range every way of running Kubit uses, and cluster DNS at its tenth address. */
export const SERVICE_CIDR = DEFAULT_SERVICE_CIDR;
export const CLUSTER_DNS_IP = formatIPv4(clusterDnsIP(SERVICE_CIDR));
export const CLUSTER_DOMAIN = 'cluster.local';

/** Cluster DNS of a one-machine cluster: the tenth address of its Service range. */
export function clusterDns(settings: { serviceCidr: string }): string {
  return formatIPv4(clusterDnsIP(settings.serviceCidr));
}

/**
 * Its kubit-proxy's nft table: the default cluster keeps kube-proxy's own name for it; any other
 * cluster on the machine, which shares the host's network namespace, has its own.
 */
export function proxyTable(settings: { name: string }): string {
  return settings.name === 'kubit' ? 'kubit-proxy' : `kubit-proxy-${settings.name}`;
}

export interface HostNetwork {
  bridge: string;
  /** The host's address on it: 10.199.<n>.1. */
  address: string;
  cidr: string;
  /** The LoadBalancer pool: 10.199.<n>.100-10.199.<n>.199. */
  loadBalancerRange: string;
}

/** Per cluster (from its id), so two clusters on one machine get two subnets. */
export function hostNetwork(layout: ClusterLayout): HostNetwork {
  const n = Number.parseInt(layout.id.slice(0, 2), 16);
  const net = `10.199.${n}`;
  return {
    bridge: layout.hostBridge,
    address: `${net}.1`,
    cidr: `${net}.0/24`,
    loadBalancerRange: `${net}.100-${net}.199`,
  };
}

async function ip(args: string[]): Promise<string> {
  try {
    return (await run('ip', args)).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${(e.stderr ?? e.message).trim()}`);
  }
}

/** Creates the bridge and its address when missing (a resumed cluster finds them). */
export async function ensureHostNetwork(h: HostNetwork): Promise<void> {
  const links = await ip(['-o', 'link', 'show']);
  if (!new RegExp(`^\\d+: ${h.bridge}[:@]`, 'm').test(links)) {
    await ip(['link', 'add', h.bridge, 'type', 'bridge']);
  }
  const addrs = await ip(['-o', '-4', 'addr', 'show', 'dev', h.bridge]);
  if (!addrs.includes(` ${h.address}/24 `)) await ip(['addr', 'add', `${h.address}/24`, 'dev', h.bridge]);
  await ip(['link', 'set', h.bridge, 'up']);
}

/** Removes the bridge (and with it its address and route); nothing when it is gone already. */
export async function removeHostNetwork(h: HostNetwork): Promise<boolean> {
  const links = await ip(['-o', 'link', 'show']);
  if (!new RegExp(`^\\d+: ${h.bridge}[:@]`, 'm').test(links)) return false;
  await ip(['link', 'del', h.bridge]);
  return true;
}
