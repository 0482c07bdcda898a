// Several clusters on one machine: every one-machine cluster shares the
// host's network namespace, so two with the same pod range would put the same
// gateway address on two bridges (the kernel routes to one, pods on the other
// go silent), and two with the same Service range would program the same
// cluster IPs twice. Before `up` starts anything, this places the cluster
// among the others the machine's registry knows (@kubit/daemon's
// cluster-registry): a new cluster gets free ranges and ports by itself; one
// a person asked for, or a saved one that another cluster now holds, is
// refused with the other cluster's name, where it lives and how to stop it.
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Cidr, cidrSize, parseCidr } from '@kubit/api';
import { listClusters, type RegisteredCluster, runningProcesses } from '@kubit/daemon/cluster-registry';
import { allPorts, type ClusterSettings, clusterPorts, DEFAULT_SETTINGS } from './config.js';

const run = promisify(execFile);

/** What the machine has that a new cluster must keep clear of. */
export interface MachineView {
  /** The other registered clusters (not the one being placed). */
  others: RegisteredCluster[];
  /** The machine's IPv4 routes (`ip -4 route show table all`): a range they touch is taken. */
  routes: Cidr[];
  /** Whether a TCP port on 127.0.0.1 can be bound now. */
  portFree: (port: number) => Promise<boolean>;
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  const [small, big] = a.prefix >= b.prefix ? [a, b] : [b, a];
  return ((small.base >>> 0) & maskBits(big.prefix)) >>> 0 === big.base;
}

function maskBits(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** How to stop another cluster, for the messages below. */
export function stopHint(c: RegisteredCluster): string {
  const running = runningProcesses(c.stateDir).length;
  const state = running > 0 ? `running, ${running} processes` : 'stopped';
  return `cluster "${c.name}" (${state}; state in ${c.stateDir}): stop it with ${join(c.repoRoot, 'scripts', 'down')} --name ${c.name}${running > 0 ? '' : ' --purge'}`;
}

/** The address ranges a registered cluster holds. */
function rangesOf(c: RegisteredCluster): [string, Cidr][] {
  const out: [string, Cidr][] = [];
  for (const [what, cidr] of [
    ['pod range', c.clusterCidr],
    ['Service range', c.serviceCidr],
    ['host network', c.hostCidr],
  ] as const) {
    try {
      out.push([what, parseCidr(cidr)]);
    } catch {
      // an entry from an older launcher without this range
    }
  }
  return out;
}

/** The first other cluster holding a range that overlaps `cidr`, with what it is there. */
function holderOf(cidr: Cidr, others: RegisteredCluster[]): [RegisteredCluster, string] | undefined {
  for (const c of others) for (const [what, r] of rangesOf(c)) if (overlaps(cidr, r)) return [c, what];
  return undefined;
}

/** Candidates for a new cluster's pod range after the default: 10.245.0.0/16 … 10.254.0.0/16. */
function podRangeCandidates(): string[] {
  return Array.from({ length: 10 }, (_, i) => `10.${245 + i}.0.0/16`);
}

/** … and for its Service range: 10.112.0.0/16 … 10.127.0.0/16 (outside the default 10.96.0.0/12). */
function serviceRangeCandidates(): string[] {
  return Array.from({ length: 16 }, (_, i) => `10.${112 + i}.0.0/16`);
}

function pick(
  what: string,
  flag: string,
  first: string,
  candidates: string[],
  view: MachineView,
  extraTaken: Cidr[],
): string {
  for (const c of [first, ...candidates]) {
    const cidr = parseCidr(c);
    if (holderOf(cidr, view.others)) continue;
    if (view.routes.some((r) => overlaps(r, cidr))) continue;
    if (extraTaken.some((r) => overlaps(r, cidr))) continue;
    return c;
  }
  throw new Error(
    `no free ${what} for a new cluster among ${first} and ${candidates.join(', ')}: give one with ${flag}`,
  );
}

/** A port offset (multiples of 1000) none of whose ports another cluster uses or anything listens on. */
async function pickPortOffset(settings: ClusterSettings, view: MachineView): Promise<number> {
  const taken = new Set(
    view.others.flatMap((c) =>
      allPorts(clusterPorts({ ...DEFAULT_SETTINGS, nodes: c.nodes, portOffset: c.portOffset }, 3)),
    ),
  );
  for (let offset = 0; offset <= 20_000; offset += 1000) {
    const ports = allPorts(clusterPorts({ ...settings, portOffset: offset }, 3));
    if (ports.some((p) => taken.has(p))) continue;
    if ((await Promise.all(ports.map(view.portFree))).every(Boolean)) return offset;
  }
  throw new Error('no port offset from 0 to 20000 has all of its ports free: give one with --port-offset');
}

/**
 * The settings the cluster runs with on this machine. `requested` are the flags a person gave;
 * `saved` is the cluster's own cluster.json (undefined for a new cluster); `settings` is what
 * mergeSettings made of the two; `hostCidr` its host bridge's /24.
 */
export async function placeCluster(
  settings: ClusterSettings,
  requested: Partial<ClusterSettings>,
  isNew: boolean,
  hostCidr: string,
  stateDir: string,
  view: MachineView,
): Promise<ClusterSettings> {
  const sameName = view.others.find((c) => c.name === settings.name);
  if (sameName) {
    throw new Error(
      `a cluster named "${settings.name}" already exists on this machine (${stopHint(sameName)}); give this one (${stateDir}) another name with --name NAME`,
    );
  }
  const host = parseCidr(hostCidr);
  const hostHolder = holderOf(host, view.others);
  if (hostHolder) {
    throw new Error(
      `this cluster's host network ${hostCidr} is the ${hostHolder[1]} of ${stopHint(hostHolder[0])}; start this one with another --state-dir`,
    );
  }
  const placed = { ...settings };
  if (isNew) {
    if (requested.clusterCidr === undefined) {
      placed.clusterCidr = pick(
        'pod range',
        '--cluster-cidr',
        settings.clusterCidr,
        podRangeCandidates(),
        view,
        [host],
      );
    }
    if (requested.serviceCidr === undefined) {
      placed.serviceCidr = pick(
        'Service range',
        '--service-cidr',
        settings.serviceCidr,
        serviceRangeCandidates(),
        view,
        [host, parseCidr(placed.clusterCidr)],
      );
    }
    if (requested.portOffset === undefined) placed.portOffset = await pickPortOffset(placed, view);
  }
  // What a person asked for, or what a saved cluster has, is not moved: another cluster holding it is refused.
  for (const [flag, value] of [
    ['--cluster-cidr', placed.clusterCidr],
    ['--service-cidr', placed.serviceCidr],
  ] as const) {
    const cidr = parseCidr(value);
    const holder = holderOf(cidr, view.others);
    if (holder) {
      throw new Error(
        `${flag} ${value} overlaps the ${holder[1]} of ${stopHint(holder[0])}; ${isNew ? `give this cluster another ${flag}` : 'stop that one first'}`,
      );
    }
  }
  if (overlaps(parseCidr(placed.clusterCidr), parseCidr(placed.serviceCidr))) {
    throw new Error(`--cluster-cidr ${placed.clusterCidr} and --service-cidr ${placed.serviceCidr} overlap`);
  }
  const ownPorts = new Set(allPorts(clusterPorts(placed, 3)));
  for (const c of view.others) {
    const clash = allPorts(
      clusterPorts({ ...DEFAULT_SETTINGS, nodes: c.nodes, portOffset: c.portOffset }, 3),
    ).find((p) => ownPorts.has(p));
    if (clash !== undefined) {
      throw new Error(
        `port ${clash} (--port-offset ${placed.portOffset}) is also a port of ${stopHint(c)}; ${isNew ? 'give this cluster another --port-offset' : 'stop that one first'}`,
      );
    }
  }
  return placed;
}

/** The machine as `placeCluster` sees it: the registry (without this state dir's own entry) and the routes. */
export async function machineView(stateDir: string, registryDir?: string): Promise<MachineView> {
  const others = listClusters(registryDir).filter((c) => c.stateDir !== stateDir);
  const { stdout } = await run('ip', ['-4', 'route', 'show', 'table', 'all']);
  const routes: Cidr[] = [];
  for (const line of stdout.split('\n')) {
    const dst = line.trim().split(/\s+/)[0];
    // Only real destinations: not the default route, not local/broadcast entries of the host's own addresses.
    if (!dst || dst === 'default' || /^(local|broadcast|unreachable|blackhole|prohibit|throw)$/.test(dst))
      continue;
    try {
      const c = parseCidr(dst.includes('/') ? dst : `${dst}/32`);
      if (cidrSize(c) <= 2 ** 24) routes.push(c);
    } catch {
      // not an IPv4 destination
    }
  }
  return { others, routes, portFree };
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
