import {
  ActionType,
  type CycleState,
  type FilterPlugin,
  type Handle,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
  type Status,
  skip,
  unresolvable,
  unschedulable,
} from '../framework/types.js';
import { compileLabelSelector, type Selector } from '../labels.js';
import type { NodeInfo } from '../node-info.js';
import { labelPairKey, type PodInfo } from '../pod-info.js';
import type { TopologySpreadConstraint } from '../types.js';
import { nodeLabel, podMatchesNodeSelectorAndAffinity } from './helpers.js';

export const PodTopologySpreadName = 'PodTopologySpread';
export const errReasonSpread = "node(s) didn't match pod topology spread constraints";
export const errReasonSpreadMissingLabel =
  "node(s) didn't match pod topology spread constraints (missing required label)";
const rejected = unschedulable(errReasonSpread);
const missingLabel = unresolvable(errReasonSpreadMissingLabel);

interface Constraint {
  maxSkew: number;
  topologyKey: string;
  minDomains: number;
  selector: Selector;
  /** The node label-count key answering the selector in the pod's namespace, when it is one key=value. */
  countKey: string | null;
  /** Whether the incoming pod itself matches the selector (it will add one to its domain). */
  selfMatch: number;
  honorNodeAffinity: boolean;
}

function compile(pod: PodInfo, c: TopologySpreadConstraint): Constraint {
  let sel = c.labelSelector;
  // matchLabelKeys: the pod's own values for those keys narrow the selector.
  if (sel && c.matchLabelKeys && c.matchLabelKeys.length > 0) {
    const extra = c.matchLabelKeys
      .filter((k) => pod.labels[k] !== undefined)
      .map((k) => ({ key: k, operator: 'In', values: [pod.labels[k]] }));
    sel = { ...sel, matchExpressions: [...(sel.matchExpressions ?? []), ...extra] };
  }
  const selector = compileLabelSelector(sel);
  if (!Number.isInteger(c.maxSkew) || c.maxSkew < 1) {
    throw new Error(`topologySpreadConstraints: maxSkew must be a positive integer, got ${c.maxSkew}`);
  }
  return {
    maxSkew: c.maxSkew,
    topologyKey: c.topologyKey,
    minDomains: c.minDomains ?? 1,
    selector,
    countKey: selector.singlePair !== null ? labelPairKey(pod.namespace, selector.singlePair) : null,
    selfMatch: selector.matches(pod.labels) ? 1 : 0,
    honorNodeAffinity: (c.nodeAffinityPolicy ?? 'Honor') === 'Honor',
  };
}

function countOnNode(c: Constraint, pod: PodInfo, node: NodeInfo): number {
  if (c.countKey !== null) return node.labelCounts.get(c.countKey) ?? 0;
  let n = 0;
  for (const p of node.pods.values()) {
    if (
      p.namespace === pod.namespace &&
      p.pod.metadata?.deletionTimestamp === undefined &&
      c.selector.matches(p.labels)
    ) {
      n++;
    }
  }
  return n;
}

function hasAllKeys(node: NodeInfo, cs: readonly Constraint[]): boolean {
  for (const c of cs) if (nodeLabel(node, c.topologyKey) === undefined) return false;
  return true;
}

/** Each constraint's least-populated domain; 0 with fewer domains than minDomains. */
function minimumsOf(cs: readonly Constraint[], counts: readonly Map<string, number>[]): number[] {
  return cs.map((c, i) => {
    if (counts[i].size < c.minDomains) return 0;
    let min = Number.POSITIVE_INFINITY;
    for (const n of counts[i].values()) if (n < min) min = n;
    return min === Number.POSITIVE_INFINITY ? 0 : min;
  });
}

interface FilterState {
  constraints: Constraint[];
  counts: Map<string, number>[];
  minimums: number[];
}

interface ScoreState {
  constraints: Constraint[];
  counts: Map<string, number>[];
  weights: number[];
}

/**
 * Spreads pods matching a selector evenly across topology domains: with
 * DoNotSchedule a node is rejected when placing the pod there would make its
 * domain exceed the least-populated domain by more than maxSkew; ScheduleAnyway
 * constraints turn the same counts into a score.
 */
export class PodTopologySpread implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin {
  readonly name = PodTopologySpreadName;
  events() {
    return [
      { resource: 'Pod' as const, actions: ActionType.All },
      { resource: 'Node' as const, actions: ActionType.Add | ActionType.Delete | ActionType.UpdateNodeLabel },
    ];
  }

  private constraints(pod: PodInfo, when: string): Constraint[] {
    const out: Constraint[] = [];
    for (const c of pod.pod.spec?.topologySpreadConstraints ?? []) {
      if (c.whenUnsatisfiable === when) out.push(compile(pod, c));
    }
    return out;
  }

  private count(pod: PodInfo, cs: Constraint[], nodes: readonly NodeInfo[]): Map<string, number>[] {
    const counts = cs.map(() => new Map<string, number>());
    for (const node of nodes) {
      if (!hasAllKeys(node, cs)) continue;
      for (let i = 0; i < cs.length; i++) {
        const c = cs[i];
        if (c.honorNodeAffinity && !podMatchesNodeSelectorAndAffinity(pod.pod, node)) continue;
        const v = nodeLabel(node, c.topologyKey)!;
        counts[i].set(v, (counts[i].get(v) ?? 0) + countOnNode(c, pod, node));
      }
    }
    return counts;
  }

  preFilter(state: CycleState, pod: PodInfo, h: Handle): Status | null {
    const cs = this.constraints(pod, 'DoNotSchedule');
    if (cs.length === 0) return skip;
    const counts = this.count(pod, cs, h.snapshot.nodes);
    state.write(this.name, {
      constraints: cs,
      counts,
      minimums: minimumsOf(cs, counts),
    } satisfies FilterState);
    return null;
  }

  /** The domain counts less `victim` on `node`, when it was counted (preemption). */
  removePod(state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo): void {
    const s = state.read<FilterState>(this.name);
    if (!s || !hasAllKeys(node, s.constraints)) return;
    if (victim.namespace !== pod.namespace || victim.pod.metadata?.deletionTimestamp !== undefined) return;
    const counts = s.counts.map((m) => new Map(m));
    s.constraints.forEach((c, i) => {
      if (c.honorNodeAffinity && !podMatchesNodeSelectorAndAffinity(pod.pod, node)) return;
      if (!c.selector.matches(victim.labels)) return;
      const v = nodeLabel(node, c.topologyKey)!;
      counts[i].set(v, (counts[i].get(v) ?? 0) - 1);
    });
    state.write(this.name, {
      constraints: s.constraints,
      counts,
      minimums: minimumsOf(s.constraints, counts),
    } satisfies FilterState);
  }

  filter(state: CycleState, _pod: PodInfo, node: NodeInfo): Status | null {
    const s = state.read<FilterState>(this.name);
    if (!s) return null;
    for (let i = 0; i < s.constraints.length; i++) {
      const c = s.constraints[i];
      const v = nodeLabel(node, c.topologyKey);
      if (v === undefined) return missingLabel;
      const skew = (s.counts[i].get(v) ?? 0) + c.selfMatch - s.minimums[i];
      if (skew > c.maxSkew) return rejected;
    }
    return null;
  }

  preScore(state: CycleState, pod: PodInfo, _nodes: readonly NodeInfo[], h: Handle): Status | null {
    const cs = this.constraints(pod, 'ScheduleAnyway');
    if (cs.length === 0) return skip;
    // Counts come from every eligible node (Kubernetes narrows hostname domains to the
    // filtered nodes; for scoring the difference only shifts all scores alike).
    const counts = this.count(pod, cs, h.snapshot.nodes);
    const weights = cs.map((_c, i) => Math.log(counts[i].size + 2));
    state.write(`${this.name}/score`, { constraints: cs, counts, weights } satisfies ScoreState);
    return null;
  }

  score(state: CycleState, _pod: PodInfo, node: NodeInfo): number {
    const s = state.read<ScoreState>(`${this.name}/score`);
    if (!s) return 0;
    if (!hasAllKeys(node, s.constraints)) return -1;
    let total = 0;
    for (let i = 0; i < s.constraints.length; i++) {
      const c = s.constraints[i];
      const cnt = s.counts[i].get(nodeLabel(node, c.topologyKey)!) ?? 0;
      total += cnt * s.weights[i] + (c.maxSkew - 1);
    }
    return Math.round(total);
  }

  normalizeScore(state: CycleState, _p: PodInfo, scores: Float64Array | number[]): void {
    if (!state.read(`${this.name}/score`)) return;
    // -1 marks nodes without the topology keys: they get 0.
    let min = Number.POSITIVE_INFINITY;
    let max = 0;
    for (const s of scores) {
      if (s < 0) continue;
      if (s < min) min = s;
      if (s > max) max = s;
    }
    for (let i = 0; i < scores.length; i++) {
      const s = scores[i];
      if (s < 0) scores[i] = 0;
      else if (max === 0) scores[i] = 100;
      else scores[i] = Math.trunc((100 * (max + min - s)) / max);
    }
  }
}
