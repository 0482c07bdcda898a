// What /stats/summary measures: statfs of filesystems, a bounded du-like walk of
// directories on the node's filesystem (cached per path), the node's CPU and memory
// from /proc, and the containers' CPU and memory from the runtime (CRI ListContainerStats).
import { existsSync } from 'node:fs';
import { lstat, readdir, readFile, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, ContainerRuntime, ContainerStats } from '@kubit/cri';
import type { Logger } from '@kubit/daemon';
import type { Pod, Volume } from 'kubernetes-types/core/v1.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../pods/labels.js';
import { claimNameOf } from '../volumes/persistent.js';
import {
  buildSummary,
  type ContainerSample,
  type CpuSample,
  type FsUsage,
  type PodSample,
  type Summary,
} from './stats.js';

/** A filesystem's whole usage, as Kubernetes' MetricsStatFS reports it. */
export async function fsUsageOf(path: string): Promise<FsUsage> {
  const s = await statfs(path);
  return {
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
}

/**
 * `du -x -s -B 1` and `find -xdev | wc -l` in one walk: the bytes allocated to what is
 * under `dir` on its own filesystem (hard links once) and the inodes. The walk stops at
 * `deadline` (ms since the epoch) and returns what it counted by then: stats must not
 * hang on a volume with millions of files.
 */
export async function diskUsage(
  dir: string,
  deadline: number,
): Promise<{ bytes: number; inodes: number; complete: boolean }> {
  const root = await lstat(dir);
  const seen = new Set<number>();
  let bytes = 0;
  let inodes = 0;
  let complete = true;
  const stack = [dir];
  while (stack.length) {
    if (Date.now() > deadline) {
      complete = false;
      break;
    }
    const path = stack.pop() as string;
    const st = await lstat(path).catch(() => undefined);
    if (!st || st.dev !== root.dev) continue;
    if (st.nlink > 1) {
      if (seen.has(st.ino)) continue;
      seen.add(st.ino);
    }
    bytes += st.blocks * 512;
    inodes++;
    if (st.isDirectory()) {
      for (const e of await readdir(path).catch(() => [] as string[])) stack.push(join(path, e));
    }
  }
  return { bytes, inodes, complete };
}

/** A directory's usage as Kubernetes' MetricsDu reports it: used from the walk, the rest from its fs. */
async function directoryUsage(dir: string, deadline: number): Promise<FsUsage> {
  const [fs, du] = await Promise.all([fsUsageOf(dir), diskUsage(dir, deadline)]);
  return { ...fs, usedBytes: du.bytes, inodesUsed: du.inodes };
}

/** How a volume's path is measured: a filesystem of its own (statfs), or a directory on another (walk). */
export interface VolumeTarget {
  path: string;
  ownFilesystem: boolean;
}

/**
 * Where the kubelet mounted a volume of the pod (pods/volumes.ts, volumes/persistent.ts),
 * or undefined for the kinds Kubernetes reports no stats for (hostPath, Block volumes).
 */
export function volumeTarget(podVolumesDir: string, pod: Pod, v: Volume): VolumeTarget | undefined {
  const under = (plugin: string) => join(podVolumesDir, plugin, v.name);
  if (claimNameOf(pod, v) !== undefined) {
    // A kubit-disk is its own ext4; a local-path or hostPath volume is a bind-mounted directory.
    const disk = join(under('kubernetes.io~csi'), 'mount');
    if (existsSync(disk)) return { path: disk, ownFilesystem: true };
    return { path: under('kubernetes.io~local-volume'), ownFilesystem: false };
  }
  if (v.emptyDir) return { path: under('kubernetes.io~empty-dir'), ownFilesystem: false };
  if (v.configMap) return { path: under('kubernetes.io~configmap'), ownFilesystem: false };
  if (v.secret) return { path: under('kubernetes.io~secret'), ownFilesystem: false };
  if (v.downwardAPI) return { path: under('kubernetes.io~downward-api'), ownFilesystem: false };
  if (v.projected) return { path: under('kubernetes.io~projected'), ownFilesystem: false };
  return undefined;
}

/** /proc/stat's first line: the CPU time of all cores, in USER_HZ ticks (100 a second on Linux). */
export function parseProcStatCpu(text: string): { usageCoreNanoSeconds: number; bootTime?: Date } {
  const cpu = text.split('\n').find((l) => l.startsWith('cpu '));
  const f = (cpu ?? '').trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = [0, 1, 2, 5, 6, 7].reduce((a, i) => a + (f[i] || 0), 0);
  const btime = /^btime (\d+)$/m.exec(text);
  return {
    usageCoreNanoSeconds: busy * 10_000_000,
    ...(btime ? { bootTime: new Date(Number(btime[1]) * 1000) } : {}),
  };
}

/** /proc/meminfo as the root cgroup sees it: usage is all but free, the working set leaves inactive file pages out. */
export function parseMeminfo(text: string): {
  totalBytes: number;
  usageBytes: number;
  workingSetBytes: number;
  rssBytes?: number;
} {
  const kb = (key: string) => {
    const m = new RegExp(`^${key.replace(/[()]/g, '\\$&')}:\\s+(\\d+)`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
  };
  const total = kb('MemTotal') ?? 0;
  const usage = total - (kb('MemFree') ?? 0);
  const anon = kb('AnonPages');
  return {
    totalBytes: total,
    usageBytes: usage,
    workingSetBytes: Math.max(0, usage - (kb('Inactive(file)') ?? 0)),
    ...(anon !== undefined ? { rssBytes: anon } : {}),
  };
}

/** Turns cumulative CPU counters into rates between two reads, as cAdvisor's usageNanoCores. */
class CpuRates {
  private readonly last = new Map<string, { at: number; usage: number }>();

  /** `record` false: the rate since the last recorded read, leaving that read the reference. */
  sample(key: string, usageCoreNanoSeconds: number, at: number, record = true): CpuSample {
    const prev = this.last.get(key);
    if (record || !prev) this.last.set(key, { at, usage: usageCoreNanoSeconds });
    if (!prev || at <= prev.at || usageCoreNanoSeconds < prev.usage) return { usageCoreNanoSeconds };
    const rate = ((usageCoreNanoSeconds - prev.usage) * 1000) / (at - prev.at);
    return { usageCoreNanoSeconds, usageNanoCores: Math.round(rate) };
  }

  /** Forgets the keys not seen in the last read, so removed containers do not pile up. */
  keep(keys: Set<string>, record = true): void {
    if (!record) return;
    for (const k of this.last.keys()) if (k !== 'node' && !keys.has(k)) this.last.delete(k);
  }
}

export interface StatsCollectorOptions {
  nodeName: string;
  /** --root-dir: its filesystem is the node fs; pods' volumes are under <rootDir>/pods/<uid>/volumes. */
  rootDir: string;
  /** Where the containers' logs are (<ns>_<name>_<uid>/<container>). */
  podLogsDir: string;
  runtime: ContainerRuntime;
  /** The pods this kubelet runs. */
  pods: () => Pod[];
  log: Logger;
  /** How long a walked directory's usage is reused (Kubernetes caches its du results too). */
  walkCacheMs?: number;
  /** How long one directory's walk may take before it reports what it counted. */
  walkBudgetMs?: number;
  /**
   * How long the walks of one summary may take together: past it, a directory keeps its
   * last (stale) usage, or is left out until a later read measures it.
   */
  summaryWalkBudgetMs?: number;
  procDir?: string;
}

export class StatsCollector {
  /** The walks by directory; a promise, so concurrent reads share one walk. */
  private readonly walked = new Map<string, { at: number; usage: Promise<FsUsage> }>();
  private readonly rates = new CpuRates();

  constructor(private readonly opts: StatsCollectorOptions) {}

  private walkedUsage(dir: string, summaryDeadline: number): Promise<FsUsage> {
    const now = Date.now();
    const cached = this.walked.get(dir);
    if (cached && now - cached.at < (this.opts.walkCacheMs ?? 10_000)) return cached.usage;
    if (now >= summaryDeadline) {
      return cached?.usage ?? Promise.reject(new Error(`no time left this read to walk ${dir}`));
    }
    const usage = directoryUsage(dir, Math.min(now + (this.opts.walkBudgetMs ?? 1000), summaryDeadline));
    const entry = { at: now, usage };
    this.walked.set(dir, entry);
    usage.catch(() => {
      if (this.walked.get(dir) === entry) this.walked.delete(dir);
    });
    return usage;
  }

  private async volumesOf(pod: Pod, deadline: number): Promise<Map<string, FsUsage>> {
    const dir = join(this.opts.rootDir, 'pods', pod.metadata?.uid ?? '', 'volumes');
    const out = new Map<string, FsUsage>();
    for (const v of pod.spec?.volumes ?? []) {
      const target = volumeTarget(dir, pod, v);
      if (!target || !existsSync(target.path)) continue;
      try {
        out.set(
          v.name,
          target.ownFilesystem ? await fsUsageOf(target.path) : await this.walkedUsage(target.path, deadline),
        );
      } catch (err) {
        this.opts.log.debug({ volume: v.name, err: (err as Error).message }, 'volume stats failed');
      }
    }
    return out;
  }

  /**
   * The running containers of every pod and their stats, in two CRI calls
   * (ListContainers, ListContainerStats) however many pods there are.
   */
  private async runningContainers(): Promise<Map<string, { container: Container; stats: ContainerStats }[]>> {
    const [listed, stats] = await Promise.all([
      this.opts.runtime.listContainers({ state: 'CONTAINER_RUNNING' }).catch(() => [] as Container[]),
      this.opts.runtime.listContainerStats().catch(() => [] as ContainerStats[]),
    ]);
    const statsById = new Map(stats.map((s) => [s.id, s]));
    const byPod = new Map<string, { container: Container; stats: ContainerStats }[]>();
    for (const c of listed) {
      const s = statsById.get(c.id);
      const uid = c.labels[POD_UID_LABEL];
      if (!s || !uid) continue;
      byPod.set(uid, [...(byPod.get(uid) ?? []), { container: c, stats: s }]);
    }
    return byPod;
  }

  private async containersOf(
    pod: Pod,
    running: { container: Container; stats: ContainerStats }[],
    seen: Set<string>,
    logsDeadline: number | undefined,
    record: boolean,
  ): Promise<ContainerSample[]> {
    // The newest running instance of each container.
    const newest = new Map<string, { container: Container; stats: ContainerStats }>();
    for (const r of running) {
      const name = r.container.labels[CONTAINER_NAME_LABEL] ?? r.container.metadata.name;
      const had = newest.get(name);
      if (!had || had.container.createdAt < r.container.createdAt) newest.set(name, r);
    }
    const uid = pod.metadata?.uid ?? '';
    const logsDir = join(this.opts.podLogsDir, `${pod.metadata?.namespace}_${pod.metadata?.name}_${uid}`);
    const out: ContainerSample[] = [];
    const now = Date.now();
    for (const [name, { container: c, stats }] of newest) {
      seen.add(c.id);
      const logs =
        logsDeadline !== undefined && existsSync(join(logsDir, name))
          ? await this.walkedUsage(join(logsDir, name), logsDeadline).catch(() => undefined)
          : undefined;
      out.push({
        name,
        startedAt: Math.floor(c.createdAt / 1e6),
        cpu: this.rates.sample(c.id, stats.cpuUsageCoreNanoSeconds, now, record),
        memoryWorkingSetBytes: stats.memoryWorkingSetBytes,
        ...(logs ? { logs } : {}),
      });
    }
    return out;
  }

  /** The runtime's image filesystem: what its images take (CRI), the rest from statfs of its mountpoint. */
  private async imageFs(): Promise<FsUsage | undefined> {
    const [images] = await this.opts.runtime.imageFsInfo().catch(() => []);
    if (!images) return undefined;
    const fs = images.mountpoint ? await fsUsageOf(images.mountpoint).catch(() => undefined) : undefined;
    return { ...fs, usedBytes: images.usedBytes, inodesUsed: images.inodesUsed };
  }

  /**
   * The Summary; `onlyCpuAndMemory` (metrics-server's query) skips every filesystem and walk.
   * `keepRates`: this read is not a new reference for the CPU rates (/metrics/resource, whose
   * frequent scrapes would otherwise shorten the interval /stats/summary's rates span).
   */
  async summary(opts: { onlyCpuAndMemory?: boolean; keepRates?: boolean } = {}): Promise<Summary> {
    const full = !opts.onlyCpuAndMemory;
    const record = !opts.keepRates;
    const proc = this.opts.procDir ?? '/proc';
    const [stat, meminfo] = await Promise.all([
      readFile(join(proc, 'stat'), 'utf8').catch(() => undefined),
      readFile(join(proc, 'meminfo'), 'utf8').catch(() => undefined),
    ]);
    const cpu = stat ? parseProcStatCpu(stat) : undefined;
    const time = new Date();
    const seen = new Set<string>();
    const walkDeadline = time.getTime() + (this.opts.summaryWalkBudgetMs ?? 5000);
    const running = await this.runningContainers();
    const pods: PodSample[] = [];
    for (const pod of this.opts.pods()) {
      const mine = running.get(pod.metadata?.uid ?? '') ?? [];
      pods.push({
        pod,
        containers: await this.containersOf(pod, mine, seen, full ? walkDeadline : undefined, record),
        volumes: full ? await this.volumesOf(pod, walkDeadline) : new Map(),
      });
    }
    this.rates.keep(seen, record);
    const imageFs = full ? await this.imageFs() : undefined;
    // Directories not asked about for a while belong to pods that are gone.
    const stale = time.getTime() - 6 * (this.opts.walkCacheMs ?? 10_000);
    for (const [k, v] of this.walked) if (v.at < stale) this.walked.delete(k);
    return buildSummary({
      nodeName: this.opts.nodeName,
      time,
      nodeStartTime: cpu?.bootTime ?? time,
      onlyCpuAndMemory: !full,
      ...(full ? { nodeFs: await fsUsageOf(this.opts.rootDir) } : {}),
      ...(imageFs ? { imageFs } : {}),
      ...(cpu
        ? { nodeCpu: this.rates.sample('node', cpu.usageCoreNanoSeconds, time.getTime(), record) }
        : {}),
      ...(meminfo ? { nodeMemory: parseMeminfo(meminfo) } : {}),
      pods,
    });
  }
}
