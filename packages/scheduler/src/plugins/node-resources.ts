import {
  ActionType,
  type CycleState,
  type FilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  unschedulable,
} from '../framework/types.js';
import { Hot, type NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';

export const NodeResourcesFitName = 'NodeResourcesFit';
export const BalancedAllocationName = 'NodeResourcesBalancedAllocation';

const tooManyPods = unschedulable('Too many pods');
const insufficientCpu = unschedulable('Insufficient cpu');
const insufficientMemory = unschedulable('Insufficient memory');
const insufficientCpuMemory = unschedulable('Insufficient cpu', 'Insufficient memory');

export type ScoringStrategy = 'LeastAllocated' | 'MostAllocated';

export interface ResourceWeight {
  name: 'cpu' | 'memory';
  weight: number;
}

export interface NodeResourcesFitArgs {
  scoringStrategy?: { type?: ScoringStrategy; resources?: ResourceWeight[] };
}

/**
 * Filter: the pod's requests (see podRequests) fit in allocatable minus what is
 * already requested, and the pod count stays within allocatable pods. Every
 * shortfall is a reason, as Kubernetes lists them.
 * Score: LeastAllocated (default) or MostAllocated over cpu and memory, using the
 * non-zero requests so best-effort pods still spread.
 */
export class NodeResourcesFit implements FilterPlugin, ScorePlugin {
  readonly name = NodeResourcesFitName;
  private readonly strategy: ScoringStrategy;
  private readonly cpuWeight: number;
  private readonly memWeight: number;

  constructor(args: NodeResourcesFitArgs = {}) {
    this.strategy = args.scoringStrategy?.type ?? 'LeastAllocated';
    if (this.strategy !== 'LeastAllocated' && this.strategy !== 'MostAllocated') {
      throw new Error(
        `NodeResourcesFit: unknown scoringStrategy.type "${this.strategy}" (LeastAllocated or MostAllocated)`,
      );
    }
    const res = args.scoringStrategy?.resources ?? [
      { name: 'cpu', weight: 1 },
      { name: 'memory', weight: 1 },
    ];
    this.cpuWeight = res.find((r) => r.name === 'cpu')?.weight ?? 0;
    this.memWeight = res.find((r) => r.name === 'memory')?.weight ?? 0;
  }

  events() {
    return [
      { resource: 'Pod' as const, actions: ActionType.Delete },
      { resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeAllocatable },
    ];
  }

  filter(_s: CycleState, pod: PodInfo, node: NodeInfo): Status | null {
    const hot = node.hot;
    const req = pod.requests;
    let reasons: string[] | null = null;
    if (hot[Hot.PodCount] + 1 > hot[Hot.AllocPods]) reasons = ['Too many pods'];
    const cpuShort = req.milliCpu > 0 && req.milliCpu > hot[Hot.AllocMilliCpu] - hot[Hot.ReqMilliCpu];
    const memShort = req.memory > 0 && req.memory > hot[Hot.AllocMemory] - hot[Hot.ReqMemory];
    const ephShort =
      req.ephemeralStorage > 0 &&
      req.ephemeralStorage > node.allocatable.ephemeralStorage - node.requested.ephemeralStorage;
    if (reasons === null && !ephShort && req.scalars === null) {
      // The common case: reuse frozen statuses instead of building arrays.
      if (cpuShort) return memShort ? insufficientCpuMemory : insufficientCpu;
      return memShort ? insufficientMemory : null;
    }
    const alloc = node.allocatable;
    const used = node.requested;
    reasons ??= [];
    if (cpuShort) reasons.push('Insufficient cpu');
    if (memShort) reasons.push('Insufficient memory');
    if (ephShort) reasons.push('Insufficient ephemeral-storage');
    if (req.scalars) {
      for (const [name, want] of req.scalars) {
        if (want === 0) continue;
        const have = (alloc.scalars?.get(name) ?? 0) - (used.scalars?.get(name) ?? 0);
        if (want > have) reasons.push(`Insufficient ${name}`);
      }
    }
    if (reasons.length === 0) return null;
    if (reasons.length === 1 && reasons[0] === 'Too many pods') return tooManyPods;
    return unschedulable(...reasons);
  }

  score(_s: CycleState, pod: PodInfo, node: NodeInfo): number {
    const hot = node.hot;
    const allocCpu = hot[Hot.AllocMilliCpu];
    const allocMem = hot[Hot.AllocMemory];
    const cpu = resourceScore(hot[Hot.NonZeroMilliCpu] + pod.nonZero.milliCpu, allocCpu, this.strategy);
    const mem = resourceScore(hot[Hot.NonZeroMemory] + pod.nonZero.memory, allocMem, this.strategy);
    let weightSum = 0;
    let total = 0;
    if (allocCpu > 0) {
      total += cpu * this.cpuWeight;
      weightSum += this.cpuWeight;
    }
    if (allocMem > 0) {
      total += mem * this.memWeight;
      weightSum += this.memWeight;
    }
    return weightSum === 0 ? 0 : Math.trunc(total / weightSum);
  }
}

function resourceScore(requested: number, capacity: number, strategy: ScoringStrategy): number {
  if (capacity === 0 || requested > capacity) return 0;
  if (strategy === 'LeastAllocated') return Math.trunc(((capacity - requested) * 100) / capacity);
  return Math.trunc((requested * 100) / capacity);
}

/**
 * Favors nodes whose cpu and memory would be used in equal fractions after
 * placing the pod: score = (1 - standard deviation of the fractions) * 100.
 */
export class BalancedAllocation implements PreScorePlugin, ScorePlugin {
  readonly name = BalancedAllocationName;
  events() {
    return [
      { resource: 'Pod' as const, actions: ActionType.Delete },
      { resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeAllocatable },
    ];
  }

  preScore(): Status | null {
    return null;
  }

  score(_s: CycleState, pod: PodInfo, node: NodeInfo): number {
    const hot = node.hot;
    const allocCpu = hot[Hot.AllocMilliCpu];
    const allocMem = hot[Hot.AllocMemory];
    let n = 0;
    let f0 = 0;
    let f1 = 0;
    if (allocCpu > 0) {
      f0 = Math.min(1, (hot[Hot.ReqMilliCpu] + pod.requests.milliCpu) / allocCpu);
      n++;
    }
    if (allocMem > 0) {
      const f = Math.min(1, (hot[Hot.ReqMemory] + pod.requests.memory) / allocMem);
      if (n === 0) f0 = f;
      else f1 = f;
      n++;
    }
    const std = n === 2 ? Math.abs(f0 - f1) / 2 : 0;
    return Math.trunc((1 - std) * 100);
  }
}
