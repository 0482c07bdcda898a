// The settings a cluster keeps for its whole life, in <state-dir>/cluster.json:
// a resume must come back on the same ports, node count and pod network.
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';

export interface ClusterSettings {
  /** Its name on this machine (`--name`): unique among the machine's clusters (see machine.ts). */
  name: string;
  nodes: number;
  /** Added to every default port, so a second cluster (e.g. a test's) can share the machine. */
  portOffset: number;
  /** Pods' address range; node IPAM gives each node a /24 of it. */
  clusterCidr: string;
  /** Services' cluster IPs; cluster DNS is its tenth address. */
  serviceCidr: string;
}

/** The name of the cluster in a checkout's own .kubit/. */
export const DEFAULT_CLUSTER_NAME = 'kubit';

export const DEFAULT_SETTINGS: ClusterSettings = {
  name: DEFAULT_CLUSTER_NAME,
  nodes: 2,
  portOffset: 0,
  clusterCidr: '10.244.0.0/16',
  serviceCidr: '10.96.0.0/12',
};

/** A cluster name: a DNS label short enough for the interface and nft table names made from it. */
export const CLUSTER_NAME = /^[a-z]([a-z0-9-]{0,18}[a-z0-9])?$/;

export const MAX_NODES = 50;

/** Every port the cluster listens on, from its offset. Loopback only. */
export interface ClusterPorts {
  store: { client: number; peer: number; metrics: number }[];
  apiserver: number;
  controllerManager: number;
  scheduler: number;
  registry: number;
  kubelets: number[];
  /** kubit-proxy's /healthz and /metrics (kube-proxy's 10256 and 10249). */
  proxy: { healthz: number; metrics: number };
  /** Each kubit-dns instance's DNS, health and metrics ports (one per DNS node, see dnsNodes). */
  dns: { dns: number; health: number; metrics: number }[];
  /** Each node's kubit-net /healthz and /metrics port. */
  net: number[];
}

export function clusterPorts(settings: ClusterSettings, storeMembers: number): ClusterPorts {
  const o = settings.portOffset;
  return {
    store: Array.from({ length: storeMembers }, (_, i) => ({
      client: o + 2379 + 10 * i,
      peer: o + 2380 + 10 * i,
      metrics: o + 2381 + 10 * i,
    })),
    apiserver: o + 6443,
    controllerManager: o + 10257,
    scheduler: o + 10259,
    registry: o + 5000,
    // Past the scheduler's and controller manager's ports so 50 nodes never collide with them.
    kubelets: Array.from({ length: settings.nodes }, (_, i) => o + 10300 + i),
    proxy: { healthz: o + 10256, metrics: o + 10249 },
    dns: Array.from({ length: Math.min(settings.nodes, 2) }, (_, i) => ({
      dns: o + 10053 + i,
      health: o + 10060 + i,
      metrics: o + 9153 + i,
    })),
    // Past the kubelets' 10300-10349.
    net: Array.from({ length: settings.nodes }, (_, i) => o + 10400 + i),
  };
}

export function allPorts(ports: ClusterPorts): number[] {
  return [
    ...ports.store.flatMap((s) => [s.client, s.peer, s.metrics]),
    ports.apiserver,
    ports.controllerManager,
    ports.scheduler,
    ports.registry,
    ...ports.kubelets,
    ports.proxy.healthz,
    ports.proxy.metrics,
    ...ports.dns.flatMap((d) => [d.dns, d.health, d.metrics]),
    ...ports.net,
  ];
}

/** Checks what a person typed (or a cluster.json holds); throws a message naming the bad field. */
export function validateSettings(s: ClusterSettings): ClusterSettings {
  if (!CLUSTER_NAME.test(s.name)) {
    throw new Error(
      `--name "${s.name}" must be a lowercase DNS label of at most 20 characters (letters, digits, "-")`,
    );
  }
  if (!Number.isInteger(s.nodes) || s.nodes < 1 || s.nodes > MAX_NODES) {
    throw new Error(`--nodes must be an integer from 1 to ${MAX_NODES}, not ${s.nodes}`);
  }
  if (!Number.isInteger(s.portOffset) || s.portOffset < 0 || s.portOffset + 10400 + s.nodes > 65535) {
    throw new Error(`--port-offset ${s.portOffset} puts ports outside 1-65535`);
  }
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(s.clusterCidr);
  if (!m || m.slice(1, 5).some((x) => Number(x) > 255) || Number(m[5]) > 24 || Number(m[5]) < 8) {
    throw new Error(
      `--cluster-cidr "${s.clusterCidr}" must be an IPv4 CIDR from /8 to /24 (e.g. 10.244.0.0/16)`,
    );
  }
  if (2 ** (24 - Number(m[5])) < s.nodes) {
    throw new Error(`--cluster-cidr ${s.clusterCidr} has room for fewer than ${s.nodes} node /24s`);
  }
  const svc = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(s.serviceCidr);
  if (!svc || svc.slice(1, 5).some((x) => Number(x) > 255) || Number(svc[5]) > 24 || Number(svc[5]) < 12) {
    throw new Error(
      `--service-cidr "${s.serviceCidr}" must be an IPv4 CIDR from /12 to /24 (e.g. 10.96.0.0/12)`,
    );
  }
  return s;
}

/** The saved settings; `name` for a file written before clusters had names. */
export function readSettings(file: string, name: string = DEFAULT_CLUSTER_NAME): ClusterSettings | undefined {
  if (!existsSync(file)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not valid JSON (${(err as Error).message}); fix it or run down --purge`);
  }
  const o = (parsed ?? {}) as Record<string, unknown>;
  // Files written before names and service ranges were settings: the defaults they ran with.
  const settings = {
    name: String(o.name ?? name),
    nodes: Number(o.nodes),
    portOffset: Number(o.portOffset ?? 0),
    clusterCidr: String(o.clusterCidr ?? DEFAULT_SETTINGS.clusterCidr),
    serviceCidr: String(o.serviceCidr ?? DEFAULT_SETTINGS.serviceCidr),
  };
  try {
    return validateSettings(settings);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`);
  }
}

export async function writeSettings(file: string, s: ClusterSettings): Promise<void> {
  await writeFile(file, `${JSON.stringify(s, null, 2)}\n`);
}

/**
 * What this `up` runs with: the saved settings, with the flags a person gave.
 * A cluster may grow (more nodes) but not change its ports, network or shrink:
 * those are baked into certificates, node objects and pod addresses.
 */
export function mergeSettings(
  saved: ClusterSettings | undefined,
  requested: Partial<ClusterSettings>,
  defaultName: string = DEFAULT_CLUSTER_NAME,
): ClusterSettings {
  if (!saved) return validateSettings({ ...DEFAULT_SETTINGS, name: defaultName, ...requested });
  if (requested.nodes !== undefined && requested.nodes < saved.nodes) {
    throw new Error(
      `this cluster has ${saved.nodes} nodes; it cannot shrink to ${requested.nodes} (run down --purge to start over)`,
    );
  }
  for (const key of ['name', 'portOffset', 'clusterCidr', 'serviceCidr'] as const) {
    if (requested[key] !== undefined && requested[key] !== saved[key]) {
      throw new Error(
        `this cluster was created with ${key}=${saved[key]}; it cannot change to ${requested[key]} (run down --purge to start over)`,
      );
    }
  }
  return validateSettings({ ...saved, nodes: requested.nodes ?? saved.nodes });
}
