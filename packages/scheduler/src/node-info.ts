// One node and what the scheduler believes it runs (bound and assumed pods), with
// the aggregates every filter and score needs kept up to date on each add/remove,
// so a scheduling cycle never walks a node's pods to add up requests.
import { hasAffinityTerms, type PodInfo } from './pod-info.js';
import { type Allocatable, emptyResources, nodeAllocatable, type Resources } from './resources.js';
import type { Node, Taint } from './types.js';

/** Node properties some filters and scores care about, so a cycle can skip them when no node has them. */
export const NodeTrait = {
  Unschedulable: 1,
  /** A NoSchedule or NoExecute taint (TaintToleration's filter). */
  HardTaint: 2,
  /** A PreferNoSchedule taint (TaintToleration's score). */
  SoftTaint: 4,
} as const;

function traitsOf(node: Node): number {
  let t = node.spec?.unschedulable === true ? NodeTrait.Unschedulable : 0;
  for (const taint of node.spec?.taints ?? []) {
    if (taint.effect === 'PreferNoSchedule') t |= NodeTrait.SoftTaint;
    else if (taint.effect === 'NoSchedule' || taint.effect === 'NoExecute') t |= NodeTrait.HardTaint;
  }
  return t;
}

/**
 * Where each number sits in NodeInfo.hot: what NodeResourcesFit and the resource
 * scores read for every node of every cycle, side by side in 64 bytes.
 */
export const Hot = {
  AllocMilliCpu: 0,
  AllocMemory: 1,
  AllocPods: 2,
  ReqMilliCpu: 3,
  ReqMemory: 4,
  PodCount: 5,
  NonZeroMilliCpu: 6,
  NonZeroMemory: 7,
} as const;

export class NodeInfo {
  node: Node | null = null;
  name: string;
  labels: Readonly<Record<string, string>> = {};
  taints: readonly Taint[] = [];
  unschedulable = false;
  /** NodeTrait bits of the current Node object (0 without one). */
  traits = 0;
  allocatable: Allocatable = { milliCpu: 0, memory: 0, ephemeralStorage: 0, scalars: null, pods: 0 };
  readonly pods = new Map<string, PodInfo>();
  readonly requested: Resources = emptyResources();
  readonly nonZeroRequested = { milliCpu: 0, memory: 0 };
  /** "protocol/port" → host IP → number of pods using it. */
  readonly usedPorts = new Map<string, Map<string, number>>();
  readonly podsWithAffinity = new Set<PodInfo>();
  readonly podsWithRequiredAntiAffinity = new Set<PodInfo>();
  /** "namespace\0key=value" → number of pods here carrying that label. */
  readonly labelCounts = new Map<string, number>();
  /**
   * Copies of the numbers above that every cycle reads (see Hot), in one small typed
   * array: a cycle visits hundreds of nodes, and reading one cache line per node
   * instead of four objects (allocatable, requested, the pods map, ...) is most of
   * what a filter costs once other work has pushed the nodes out of the CPU cache.
   */
  readonly hot = new Float64Array(8);
  /** Bumped on every change; lets snapshots and tests see what moved. */
  generation = 0;

  constructor(name: string) {
    this.name = name;
  }

  setNode(node: Node): void {
    this.node = node;
    this.name = node.metadata?.name ?? this.name;
    this.labels = node.metadata?.labels ?? {};
    this.taints = node.spec?.taints ?? [];
    this.unschedulable = node.spec?.unschedulable === true;
    this.allocatable = nodeAllocatable(node);
    this.traits = traitsOf(node);
    this.hot[Hot.AllocMilliCpu] = this.allocatable.milliCpu;
    this.hot[Hot.AllocMemory] = this.allocatable.memory;
    this.hot[Hot.AllocPods] = this.allocatable.pods;
    this.generation++;
  }

  addPod(p: PodInfo): void {
    if (this.pods.has(p.key)) this.removePod(p.key);
    this.pods.set(p.key, p);
    this.account(p, 1);
  }

  removePod(key: string): PodInfo | undefined {
    const p = this.pods.get(key);
    if (!p) return undefined;
    this.pods.delete(key);
    this.account(p, -1);
    return p;
  }

  private account(p: PodInfo, sign: 1 | -1): void {
    const r = p.requests;
    this.requested.milliCpu += sign * r.milliCpu;
    this.requested.memory += sign * r.memory;
    this.requested.ephemeralStorage += sign * r.ephemeralStorage;
    if (r.scalars) {
      this.requested.scalars ??= new Map();
      for (const [k, v] of r.scalars)
        this.requested.scalars.set(k, (this.requested.scalars.get(k) ?? 0) + sign * v);
    }
    this.nonZeroRequested.milliCpu += sign * p.nonZero.milliCpu;
    this.nonZeroRequested.memory += sign * p.nonZero.memory;
    const hot = this.hot;
    hot[Hot.ReqMilliCpu] = this.requested.milliCpu;
    hot[Hot.ReqMemory] = this.requested.memory;
    hot[Hot.PodCount] = this.pods.size;
    hot[Hot.NonZeroMilliCpu] = this.nonZeroRequested.milliCpu;
    hot[Hot.NonZeroMemory] = this.nonZeroRequested.memory;
    for (const hp of p.hostPorts) {
      const k = `${hp.protocol}/${hp.port}`;
      let ips = this.usedPorts.get(k);
      if (!ips) {
        ips = new Map();
        this.usedPorts.set(k, ips);
      }
      const n = (ips.get(hp.ip) ?? 0) + sign;
      if (n > 0) ips.set(hp.ip, n);
      else ips.delete(hp.ip);
      if (ips.size === 0) this.usedPorts.delete(k);
    }
    if (hasAffinityTerms(p)) {
      if (sign > 0) this.podsWithAffinity.add(p);
      else this.podsWithAffinity.delete(p);
    }
    if (p.requiredAntiAffinity.length > 0) {
      if (sign > 0) this.podsWithRequiredAntiAffinity.add(p);
      else this.podsWithRequiredAntiAffinity.delete(p);
    }
    for (const pair of p.labelPairs) {
      const n = (this.labelCounts.get(pair) ?? 0) + sign;
      if (n > 0) this.labelCounts.set(pair, n);
      else this.labelCounts.delete(pair);
    }
    this.generation++;
  }
}

/**
 * A copy of a node's NodeInfo with some pods taken away and others added, for filters
 * to judge a node as it would be (preemption's victims gone, nominated pods placed).
 */
export function nodeInfoWith(
  ni: NodeInfo,
  without: ReadonlySet<string>,
  extra: readonly PodInfo[] = [],
): NodeInfo {
  const copy = new NodeInfo(ni.name);
  if (ni.node) copy.setNode(ni.node);
  for (const p of ni.pods.values()) if (!without.has(p.key)) copy.addPod(p);
  for (const p of extra) copy.addPod(p);
  return copy;
}
