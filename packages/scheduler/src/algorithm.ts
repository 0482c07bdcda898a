// One scheduling decision: PreFilter → Filter (on a rotating sample of nodes in
// large clusters) → PreScore → Score → pick the best, ties broken at random.
// Entirely synchronous: it reads the cache's live NodeInfos (see cache.ts).
import type { Snapshot } from './cache.js';
import { FitError } from './fit-error.js';
import type { Framework, PluginStatus } from './framework/framework.js';
import { CycleState, type Handle, type Status } from './framework/types.js';
import { type NodeInfo, nodeInfoWith } from './node-info.js';
import type { NamespaceLabels, PodInfo } from './pod-info.js';
import type { VolumeAccess } from './volumes.js';

const minFeasibleNodesToFind = 100;
const minFeasibleNodesPercentageToFind = 5;

/**
 * How many feasible nodes to look for before scoring, as Kubernetes decides:
 * all of them below 100 nodes; otherwise the configured percentage, or adaptively
 * 50% minus 1% per 125 nodes (at least 5%), and never fewer than 100 nodes.
 */
export function numFeasibleNodesToFind(numAllNodes: number, percentage = 0): number {
  if (numAllNodes < minFeasibleNodesToFind || percentage >= 100) return numAllNodes;
  let pct = percentage;
  if (pct <= 0) {
    pct = 50 - Math.trunc(numAllNodes / 125);
    if (pct < minFeasibleNodesPercentageToFind) pct = minFeasibleNodesPercentageToFind;
  }
  const n = Math.trunc((numAllNodes * pct) / 100);
  return Math.max(n, minFeasibleNodesToFind);
}

export interface ScheduleResult {
  nodeName: string;
  evaluatedNodes: number;
  feasibleNodes: number;
  /** The cycle's state, for the binding cycle's PreBind plugins. */
  state: CycleState;
}

export interface AlgorithmOptions {
  /** Random source for breaking ties; injectable so tests are deterministic. */
  random?: () => number;
  namespaceLabels?: NamespaceLabels;
  volumes?: VolumeAccess;
  /**
   * Pods a preemption nominated to a node that must fit there before `pod` does (those
   * of at least its priority, itself aside), as Kubernetes' filters count them;
   * undefined when there are none, which is the common case and costs one lookup.
   */
  nominatedOn?: (node: string, pod: PodInfo) => readonly PodInfo[] | undefined;
}

const NO_PODS: ReadonlySet<string> = new Set();

export class SchedulingAlgorithm {
  private nextStartNodeIndex = 0;
  private readonly random: () => number;
  private readonly namespaceLabels: NamespaceLabels | undefined;
  private readonly volumes: VolumeAccess | undefined;
  private readonly nominatedOn: AlgorithmOptions['nominatedOn'];

  constructor(opts: AlgorithmOptions = {}) {
    this.nominatedOn = opts.nominatedOn;
    this.random = opts.random ?? Math.random;
    this.namespaceLabels = opts.namespaceLabels;
    this.volumes = opts.volumes;
  }

  /** What plugins read besides the pod and the node, over this snapshot. */
  handle(snapshot: Snapshot): Handle {
    return { snapshot, namespaceLabels: this.namespaceLabels, volumes: this.volumes };
  }

  /** Returns where the pod should go, or throws FitError naming why it fits nowhere. */
  schedule(fwk: Framework, snapshot: Snapshot, pod: PodInfo): ScheduleResult {
    const all = snapshot.nodes;
    const h = this.handle(snapshot);
    const statuses = new Map<string, PluginStatus>();
    if (all.length === 0) throw new FitError(pod.key, 0, statuses, null);
    const state = new CycleState();
    const pre = fwk.runPreFilter(state, pod, h);
    if (pre) {
      if (pre.status.code === 'Error')
        throw new Error(`running PreFilter plugin ${pre.plugin}: ${pre.status.reasons.join(', ')}`);
      for (const n of all) statuses.set(n.name, pre);
      throw new FitError(pod.key, all.length, statuses, pre);
    }

    const feasible = this.findFeasible(fwk, state, pod, all, statuses, h);
    if (feasible.length === 0) {
      const fit = new FitError(pod.key, all.length, statuses, null);
      fit.state = state;
      throw fit;
    }
    const evaluated = feasible.length + this.lastRejected;
    if (feasible.length === 1)
      return { nodeName: feasible[0].name, evaluatedNodes: evaluated, feasibleNodes: 1, state };

    const ps = fwk.runPreScore(state, pod, feasible, h);
    if (ps) throw new Error(`running PreScore plugin ${ps.plugin}: ${ps.status.reasons.join(', ')}`);
    const scores = fwk.runScore(state, pod, feasible, h);
    return {
      nodeName: this.selectHost(feasible, scores),
      evaluatedNodes: evaluated,
      feasibleNodes: feasible.length,
      state,
    };
  }

  private findFeasible(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    all: readonly NodeInfo[],
    statuses: Map<string, PluginStatus>,
    h: Handle,
  ): NodeInfo[] {
    const n = all.length;
    const want = numFeasibleNodesToFind(n, fwk.percentageOfNodesToScore);
    // One array for every cycle: it only lives until the cycle has picked a node.
    const feasible = this.feasible;
    feasible.length = 0;
    // Rejections are kept in flat arrays and turned into the per-node map only
    // when the pod fits nowhere: most cycles never need it (nor these arrays).
    let rejected: NodeInfo[] | null = null;
    let rejectedBy: number[] = [];
    let rejectedStatus: Status[] = [];
    const start = this.nextStartNodeIndex % n;
    const plugins = fwk.filter;
    const active = fwk.activeFilters(state);
    let processed = 0;
    // Nodes are visited from `start`, wrapping around, without a modulo per node.
    let idx = start;
    for (; processed < n && feasible.length < want; processed++) {
      const node = all[idx];
      idx = idx + 1 === n ? 0 : idx + 1;
      let status: Status | null = null;
      let by = -1;
      for (let k = 0; k < active.length; k++) {
        status = plugins[active[k]].filter(state, pod, node, h);
        if (status !== null) {
          by = active[k];
          break;
        }
      }
      const nominated = status === null ? this.nominatedOn?.(node.name, pod) : undefined;
      if (nominated) {
        // The node must also take the pods nominated to it: judge a copy holding them.
        const withNominated = nodeInfoWith(node, NO_PODS, nominated);
        for (let k = 0; k < active.length; k++) {
          status = plugins[active[k]].filter(state, pod, withNominated, h);
          if (status !== null) {
            by = active[k];
            break;
          }
        }
      }
      if (status === null) {
        feasible.push(node);
        continue;
      }
      if (status.code === 'Error') {
        throw new Error(
          `running Filter plugin ${plugins[by].name} on node ${node.name}: ${status.reasons.join(', ')}`,
        );
      }
      if (rejected === null) {
        rejected = [];
        rejectedBy = [];
        rejectedStatus = [];
      }
      rejected.push(node);
      rejectedBy.push(by);
      rejectedStatus.push(status);
    }
    // Start the next pod where this one stopped, so every node gets its turn.
    this.nextStartNodeIndex = (start + processed) % n;
    this.lastRejected = rejected?.length ?? 0;
    if (feasible.length === 0 && rejected !== null) {
      for (let k = 0; k < rejected.length; k++) {
        statuses.set(rejected[k].name, { status: rejectedStatus[k], plugin: fwk.filter[rejectedBy[k]].name });
      }
    }
    return feasible;
  }

  private lastRejected = 0;
  private readonly feasible: NodeInfo[] = [];

  private selectHost(nodes: readonly NodeInfo[], scores: Float64Array): string {
    let best = 0;
    let ties = 1;
    for (let i = 1; i < nodes.length; i++) {
      if (scores[i] > scores[best]) {
        best = i;
        ties = 1;
      } else if (scores[i] === scores[best]) {
        // Reservoir sampling: each of the tied nodes ends up chosen with equal probability.
        ties++;
        if (this.random() * ties < 1) best = i;
      }
    }
    return nodes[best].name;
  }
}
