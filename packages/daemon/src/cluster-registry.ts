// The machine's list of one-machine clusters (`./scripts/up`): one JSON file
// per cluster name in /var/lib/kubit/clusters (KUBIT_CLUSTER_REGISTRY for
// tests), written by the launcher when a cluster is created and removed by
// `down --purge`. The launcher reads it to keep a new cluster's name, ports
// and address ranges apart from every other cluster's on the machine, even
// from another checkout; `kubit cluster list` reads it to show them.
// An entry whose state directory is gone (removed by hand) is stale and is
// not listed.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface RegisteredCluster {
  name: string;
  /** Where its state lives (cluster.json, PKI, data, logs, PID files). */
  stateDir: string;
  /** The checkout that runs it (its scripts/down stops it). */
  repoRoot: string;
  nodes: number;
  portOffset: number;
  /** https://127.0.0.1:PORT */
  apiserver: string;
  clusterCidr: string;
  serviceCidr: string;
  /** The host bridge's /24 (the apiserver's advertise address, LoadBalancers). */
  hostCidr: string;
}

export function clusterRegistryDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.KUBIT_CLUSTER_REGISTRY || '/var/lib/kubit/clusters';
}

function entryFile(dir: string, name: string): string {
  return join(dir, `${name}.json`);
}

function parseEntry(file: string): RegisteredCluster | undefined {
  try {
    const o = JSON.parse(readFileSync(file, 'utf8')) as Partial<RegisteredCluster>;
    if (typeof o.name !== 'string' || typeof o.stateDir !== 'string') return undefined;
    return o as RegisteredCluster;
  } catch {
    // A half-written or hand-edited file: not a cluster we can reason about.
    return undefined;
  }
}

/** Every registered cluster whose state directory still exists, by name. */
export function listClusters(dir: string = clusterRegistryDir()): RegisteredCluster[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => parseEntry(join(dir, f)))
    .filter((c): c is RegisteredCluster => c !== undefined && existsSync(join(c.stateDir, 'cluster.json')))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Adds or replaces the entry (written whole, then renamed, so a reader never sees half of it). */
export function registerCluster(c: RegisteredCluster, dir: string = clusterRegistryDir()): void {
  mkdirSync(dir, { recursive: true });
  const tmp = `${entryFile(dir, c.name)}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`);
  renameSync(tmp, entryFile(dir, c.name));
}

/** Removes the entry of `name` if it is the one of `stateDir` (another checkout's is not ours to drop). */
export function unregisterCluster(name: string, stateDir: string, dir: string = clusterRegistryDir()): void {
  const file = entryFile(dir, name);
  const entry = existsSync(file) ? parseEntry(file) : undefined;
  if (!entry || entry.stateDir === stateDir || !existsSync(join(entry.stateDir, 'cluster.json'))) {
    rmSync(file, { force: true });
  }
}

/** The PIDs of the cluster's processes that are alive (their PID files, checked against /proc). */
export function runningProcesses(stateDir: string): number[] {
  const runDir = join(stateDir, 'run');
  if (!existsSync(runDir)) return [];
  const pids: number[] = [];
  for (const f of readdirSync(runDir).filter((n) => n.endsWith('.pid'))) {
    const pid = Number(readFileSync(join(runDir, f), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 1) continue;
    try {
      // The launcher starts every process with its state directory in its command line.
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(stateDir)) pids.push(pid);
    } catch {
      // not running
    }
  }
  return pids;
}
