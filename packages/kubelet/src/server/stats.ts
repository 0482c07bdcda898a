// The kubelet's Summary API (`GET /stats/summary`, k8s.io/kubelet/pkg/apis/stats/v1alpha1),
// read by metrics-server and by `kubectl get --raw .../nodes/<node>/proxy/stats/summary`.
// This module only shapes what was measured (stats-sources.ts) into the Summary; it does no I/O.
import type { Pod } from 'kubernetes-types/core/v1.js';
import { claimNameOf } from '../volumes/persistent.js';

/** FsStats: every field is optional in Kubernetes; the measured ones are set. */
export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface CPUStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
}

export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

export interface ContainerStatsSummary {
  name: string;
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  logs?: FsStats;
}

export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStatsSummary[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
}

export interface NodeStats {
  nodeName: string;
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats };
}

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** What a statfs or a du-like walk measured, without its time. */
export type FsUsage = Omit<FsStats, 'time'>;

export interface CpuSample {
  usageCoreNanoSeconds: number;
  /** Only once two samples exist: the rate between them. */
  usageNanoCores?: number;
}

export interface ContainerSample {
  name: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
  cpu: CpuSample;
  memoryWorkingSetBytes: number;
  logs?: FsUsage;
}

export interface PodSample {
  pod: Pod;
  /** The running containers' stats (one per container name, the newest instance). */
  containers: ContainerSample[];
  /** Usage of each mounted volume, by volume name; volumes that could not be measured are absent. */
  volumes: Map<string, FsUsage>;
}

export interface SummaryInputs {
  nodeName: string;
  time: Date;
  nodeStartTime: Date;
  /** `?only_cpu_and_memory=true` (metrics-server's read): no filesystems, volumes or logs. */
  onlyCpuAndMemory?: boolean;
  /** Absent only with onlyCpuAndMemory. */
  nodeFs?: FsUsage;
  imageFs?: FsUsage;
  nodeCpu?: CpuSample;
  nodeMemory?: { totalBytes: number; usageBytes: number; workingSetBytes: number; rssBytes?: number };
  pods: PodSample[];
}

/** Volumes that live on the node's filesystem and go away with the pod (Kubernetes' "local ephemeral"). */
function isEphemeralVolume(pod: Pod, name: string): boolean {
  const v = pod.spec?.volumes?.find((x) => x.name === name);
  return !!(v && (v.emptyDir || v.configMap || v.secret || v.downwardAPI || v.projected));
}

function sum(values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length ? known.reduce((a, b) => a + b, 0) : undefined;
}

function podStats(s: PodSample, time: string, nodeFs: FsUsage | undefined): PodStats {
  const meta = s.pod.metadata ?? {};
  const ref = { name: meta.name ?? '', namespace: meta.namespace ?? 'default', uid: meta.uid ?? '' };
  const containers: ContainerStatsSummary[] = s.containers.map((c) => ({
    name: c.name,
    startTime: new Date(c.startedAt).toISOString(),
    cpu: { time, ...c.cpu },
    memory: { time, workingSetBytes: c.memoryWorkingSetBytes },
    ...(c.logs ? { logs: { time, ...c.logs } } : {}),
  }));
  const volume: VolumeStats[] = [];
  for (const v of s.pod.spec?.volumes ?? []) {
    const usage = s.volumes.get(v.name);
    if (!usage) continue;
    const claim = claimNameOf(s.pod, v);
    volume.push({
      time,
      ...usage,
      name: v.name,
      ...(claim !== undefined ? { pvcRef: { name: claim, namespace: ref.namespace } } : {}),
    });
  }
  // Ephemeral storage: the pod's local ephemeral volumes and its containers' logs, on the node fs.
  const ephemeralUsed = sum([
    ...volume.filter((v) => isEphemeralVolume(s.pod, v.name)).map((v) => v.usedBytes),
    ...s.containers.map((c) => c.logs?.usedBytes),
  ]);
  const ephemeralInodes = sum([
    ...volume.filter((v) => isEphemeralVolume(s.pod, v.name)).map((v) => v.inodesUsed),
    ...s.containers.map((c) => c.logs?.inodesUsed),
  ]);
  const started = s.pod.status?.startTime ?? meta.creationTimestamp ?? time;
  const out: PodStats = { podRef: ref, startTime: new Date(started).toISOString(), containers };
  if (s.containers.length) {
    out.cpu = {
      time,
      usageCoreNanoSeconds: sum(s.containers.map((c) => c.cpu.usageCoreNanoSeconds)),
      ...(s.containers.every((c) => c.cpu.usageNanoCores !== undefined)
        ? { usageNanoCores: sum(s.containers.map((c) => c.cpu.usageNanoCores)) }
        : {}),
    };
    out.memory = { time, workingSetBytes: sum(s.containers.map((c) => c.memoryWorkingSetBytes)) };
  }
  if (volume.length) out.volume = volume;
  if (nodeFs)
    out['ephemeral-storage'] = {
      time,
      availableBytes: nodeFs.availableBytes,
      capacityBytes: nodeFs.capacityBytes,
      usedBytes: ephemeralUsed ?? 0,
      inodesFree: nodeFs.inodesFree,
      inodes: nodeFs.inodes,
      inodesUsed: ephemeralInodes ?? 0,
    };
  return out;
}

export function buildSummary(inputs: SummaryInputs): Summary {
  const time = inputs.time.toISOString();
  const only = !!inputs.onlyCpuAndMemory;
  const node: NodeStats = { nodeName: inputs.nodeName, startTime: inputs.nodeStartTime.toISOString() };
  if (inputs.nodeFs && !only) node.fs = { time, ...inputs.nodeFs };
  if (inputs.nodeCpu) node.cpu = { time, ...inputs.nodeCpu };
  if (inputs.nodeMemory) {
    const m = inputs.nodeMemory;
    node.memory = {
      time,
      // As Kubernetes: what is left of the capacity once the working set is taken.
      availableBytes: Math.max(0, m.totalBytes - m.workingSetBytes),
      usageBytes: m.usageBytes,
      workingSetBytes: m.workingSetBytes,
      ...(m.rssBytes !== undefined ? { rssBytes: m.rssBytes } : {}),
    };
  }
  if (inputs.imageFs && !only) node.runtime = { imageFs: { time, ...inputs.imageFs } };
  const pods = inputs.pods.map((p) =>
    only
      ? podStats(
          { ...p, volumes: new Map(), containers: p.containers.map(({ logs: _, ...c }) => c) },
          time,
          undefined,
        )
      : podStats(p, time, inputs.nodeFs),
  );
  return { node, pods };
}
