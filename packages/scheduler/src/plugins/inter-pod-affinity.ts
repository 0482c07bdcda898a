import type { Snapshot } from '../cache.js';
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
import type { NodeInfo } from '../node-info.js';
import { type AffinityTerm, type NamespaceLabels, type PodInfo, termMatches } from '../pod-info.js';
import type { TermEntry } from '../term-index.js';
import { nodeLabel } from './helpers.js';

export const InterPodAffinityName = 'InterPodAffinity';
export const errReasonAffinity = "node(s) didn't match pod affinity rules";
export const errReasonAntiAffinity = "node(s) didn't match pod anti-affinity rules";
export const errReasonExistingAntiAffinity = "node(s) didn't satisfy existing pods anti-affinity rules";
const affinityRejected = unresolvable(errReasonAffinity);
const antiAffinityRejected = unschedulable(errReasonAntiAffinity);
const existingAntiRejected = unschedulable(errReasonExistingAntiAffinity);

/** topologyKey → topology value → count (or score). */
type TopologyCounts = Map<string, Map<string, number>>;

function bump(m: TopologyCounts, key: string, value: string, by: number): void {
  let inner = m.get(key);
  if (!inner) {
    inner = new Map();
    m.set(key, inner);
  }
  inner.set(value, (inner.get(value) ?? 0) + by);
}

function countAt(m: TopologyCounts, key: string, node: NodeInfo): number {
  const v = nodeLabel(node, key);
  if (v === undefined) return 0;
  return m.get(key)?.get(v) ?? 0;
}

/**
 * How many pods on `node` the term selects. When the term is a single key=value
 * in a single namespace, the node's label counts answer without walking its pods.
 */
export function countMatchingPods(term: AffinityTerm, node: NodeInfo, nsLabels?: NamespaceLabels): number {
  if (term.countKey !== null) return node.labelCounts.get(term.countKey) ?? 0;
  let n = 0;
  for (const p of node.pods.values()) if (termMatches(term, p, nsLabels)) n++;
  return n;
}

/** Adds up, by the term's topology value, the pods carrying the term's single label. */
function countByLabel(snap: Snapshot, term: AffinityTerm, into: TopologyCounts): void {
  const nodes = term.countKey === null ? undefined : snap.nodesWithPodLabel(term.countKey);
  if (!nodes) return;
  for (const [node, n] of nodes) {
    if (node.node === null) continue;
    const v = nodeLabel(node, term.topologyKey);
    if (v !== undefined) bump(into, term.topologyKey, v, n);
  }
}

interface PreFilterState {
  /** As an array: the filter walks it for every node. */
  existingAnti: [string, Map<string, number>][];
  affinity: TopologyCounts;
  anti: TopologyCounts;
  /** No existing pod matches the incoming pod's affinity terms, but the pod matches them itself. */
  selfAffinityAllowed: boolean;
}

interface PreScoreState {
  scores: TopologyCounts;
}

export interface InterPodAffinityArgs {
  /** Weight given to existing pods' required affinity terms that select the incoming pod. */
  hardPodAffinityWeight?: number;
}

/**
 * Required pod affinity / anti-affinity of the incoming pod, and existing pods'
 * required anti-affinity toward it, over any topology key; preferred terms (both
 * ways) as a score.
 */
export class InterPodAffinity implements PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin {
  readonly name = InterPodAffinityName;
  private readonly hardWeight: number;

  constructor(args: InterPodAffinityArgs = {}) {
    this.hardWeight = args.hardPodAffinityWeight ?? 1;
  }

  events() {
    return [
      { resource: 'Pod' as const, actions: ActionType.All },
      { resource: 'Node' as const, actions: ActionType.Add | ActionType.UpdateNodeLabel },
    ];
  }

  preFilter(state: CycleState, pod: PodInfo, h: Handle): Status | null {
    const snap: Snapshot = h.snapshot;
    const existingTerms = snap.existingTerms;
    if (
      pod.requiredAffinity.length === 0 &&
      pod.requiredAntiAffinity.length === 0 &&
      existingTerms.requiredAnti.size === 0
    ) {
      return skip;
    }
    const ns = h.namespaceLabels;
    const existingAnti: TopologyCounts = new Map();
    // Existing pods' required anti-affinity, by distinct term: only the terms keyed by
    // one of the pod's own labels can select it, plus the terms that need a full test.
    const addExisting = (e: TermEntry) => {
      if (!termMatches(e.term, pod, ns)) return;
      for (const [node, n] of e.nodes) {
        if (node.node === null) continue; // pods left on a deleted node
        const v = nodeLabel(node, e.term.topologyKey);
        if (v !== undefined) bump(existingAnti, e.term.topologyKey, v, n);
      }
    };
    if (existingTerms.requiredAnti.size > 0) {
      for (const pair of pod.labelPairs) {
        const entries = existingTerms.requiredAntiByLabel.get(pair);
        if (entries) for (const e of entries) addExisting(e);
      }
      for (const e of existingTerms.requiredAntiOther) addExisting(e);
    }
    const affinity: TopologyCounts = new Map();
    const anti: TopologyCounts = new Map();
    // The pod's own terms. A term naming one label finds its pods through the cache's
    // label index; the others (and several affinity terms, which must all match the
    // same pod) walk every node.
    const single = pod.requiredAffinity.length === 1 ? pod.requiredAffinity[0] : null;
    if (single?.countKey != null) countByLabel(snap, single, affinity);
    for (const t of pod.requiredAntiAffinity) if (t.countKey !== null) countByLabel(snap, t, anti);
    const walkAffinity = pod.requiredAffinity.length > 0 && single?.countKey == null;
    const walkAnti = pod.requiredAntiAffinity.some((t) => t.countKey === null);
    if (walkAffinity || walkAnti) {
      for (const node of snap.nodes) {
        if (node.pods.size === 0) continue;
        if (walkAffinity && single) {
          const v = nodeLabel(node, single.topologyKey);
          if (v !== undefined) {
            const n = countMatchingPods(single, node, ns);
            if (n > 0) bump(affinity, single.topologyKey, v, n);
          }
        } else if (walkAffinity) {
          // Several terms: an existing pod counts only if it matches all of them.
          for (const existing of node.pods.values()) {
            if (!pod.requiredAffinity.every((t) => termMatches(t, existing, ns))) continue;
            for (const t of pod.requiredAffinity) {
              const v = nodeLabel(node, t.topologyKey);
              if (v !== undefined) bump(affinity, t.topologyKey, v, 1);
            }
          }
        }
        if (!walkAnti) continue;
        for (const t of pod.requiredAntiAffinity) {
          if (t.countKey !== null) continue;
          const v = nodeLabel(node, t.topologyKey);
          if (v === undefined) continue;
          const n = countMatchingPods(t, node, ns);
          if (n > 0) bump(anti, t.topologyKey, v, n);
        }
      }
    }
    const selfAffinityAllowed =
      affinity.size === 0 && pod.requiredAffinity.every((t) => termMatches(t, pod, ns));
    state.write(this.name, {
      existingAnti: [...existingAnti],
      affinity,
      anti,
      selfAffinityAllowed,
    } satisfies PreFilterState);
    return null;
  }

  /** The counts PreFilter made, less what `victim` on `node` contributed to them. */
  removePod(state: CycleState, pod: PodInfo, victim: PodInfo, node: NodeInfo, h: Handle): void {
    const s = state.read<PreFilterState>(this.name);
    if (!s) return;
    const ns = h.namespaceLabels;
    const copy = (m: TopologyCounts): TopologyCounts => new Map([...m].map(([k, v]) => [k, new Map(v)]));
    const less = (m: TopologyCounts, key: string) => {
      const v = nodeLabel(node, key);
      if (v !== undefined) bump(m, key, v, -1);
    };
    const anti = copy(s.anti);
    for (const t of pod.requiredAntiAffinity) if (termMatches(t, victim, ns)) less(anti, t.topologyKey);
    const affinity = copy(s.affinity);
    if (pod.requiredAffinity.length > 0 && pod.requiredAffinity.every((t) => termMatches(t, victim, ns))) {
      for (const t of pod.requiredAffinity) less(affinity, t.topologyKey);
    }
    const existing = copy(new Map(s.existingAnti));
    for (const t of victim.requiredAntiAffinity) if (termMatches(t, pod, ns)) less(existing, t.topologyKey);
    state.write(this.name, {
      existingAnti: [...existing],
      affinity,
      anti,
      selfAffinityAllowed: s.selfAffinityAllowed,
    } satisfies PreFilterState);
  }

  filter(state: CycleState, pod: PodInfo, node: NodeInfo): Status | null {
    const s = state.read<PreFilterState>(this.name);
    if (!s) return null;
    if (pod.requiredAffinity.length > 0) {
      let ok = true;
      for (const t of pod.requiredAffinity) {
        if (nodeLabel(node, t.topologyKey) === undefined || countAt(s.affinity, t.topologyKey, node) <= 0) {
          ok = false;
          break;
        }
      }
      // The first pod of a group that is affine to itself may go anywhere that has the topology keys.
      if (!ok && s.selfAffinityAllowed) {
        ok = pod.requiredAffinity.every((t) => nodeLabel(node, t.topologyKey) !== undefined);
      }
      if (!ok) return affinityRejected;
    }
    if (s.anti.size > 0) {
      for (const t of pod.requiredAntiAffinity) {
        if (countAt(s.anti, t.topologyKey, node) > 0) return antiAffinityRejected;
      }
    }
    // Checked last, as Kubernetes does, so replicas that repel each other report their own rule.
    const existing = s.existingAnti;
    for (let i = 0; i < existing.length; i++) {
      const v = nodeLabel(node, existing[i][0]);
      if (v !== undefined && (existing[i][1].get(v) ?? 0) > 0) return existingAntiRejected;
    }
    return null;
  }

  preScore(state: CycleState, pod: PodInfo, _nodes: readonly NodeInfo[], h: Handle): Status | null {
    const incomingPreferred = pod.preferredAffinity.length > 0 || pod.preferredAntiAffinity.length > 0;
    const existing = h.snapshot.existingTerms.scoring;
    if (!incomingPreferred && existing.size === 0) return skip;
    const ns = h.namespaceLabels;
    const scores: TopologyCounts = new Map();
    const add = (term: AffinityTerm, node: NodeInfo, w: number) => {
      const v = nodeLabel(node, term.topologyKey);
      if (v !== undefined && w !== 0) bump(scores, term.topologyKey, v, w);
    };
    if (incomingPreferred) {
      // Single-label terms through the cache's label index; the rest by walking the nodes.
      const byLabel = (t: AffinityTerm, w: number) => {
        const nodes = t.countKey === null ? undefined : h.snapshot.nodesWithPodLabel(t.countKey);
        if (nodes) for (const [node, n] of nodes) if (node.node !== null) add(t, node, w * n);
      };
      for (const t of pod.preferredAffinity) if (t.countKey !== null) byLabel(t, t.weight);
      for (const t of pod.preferredAntiAffinity) if (t.countKey !== null) byLabel(t, -t.weight);
      const walk =
        pod.preferredAffinity.some((t) => t.countKey === null) ||
        pod.preferredAntiAffinity.some((t) => t.countKey === null);
      if (walk) {
        for (const node of h.snapshot.nodes) {
          for (const t of pod.preferredAffinity) {
            if (t.countKey !== null) continue;
            const n = countMatchingPods(t, node, ns);
            if (n > 0) add(t, node, t.weight * n);
          }
          for (const t of pod.preferredAntiAffinity) {
            if (t.countKey !== null) continue;
            const n = countMatchingPods(t, node, ns);
            if (n > 0) add(t, node, -t.weight * n);
          }
        }
      }
    }
    // Existing pods' terms toward the incoming pod, by distinct term.
    for (const e of existing.values()) {
      if (!termMatches(e.term, pod, ns)) continue;
      const w =
        e.kind === 'requiredAffinity'
          ? this.hardWeight
          : e.kind === 'preferredAnti'
            ? -e.term.weight
            : e.term.weight;
      for (const [node, n] of e.nodes) if (node.node !== null) add(e.term, node, w * n);
    }
    if (scores.size === 0) return skip;
    state.write(`${this.name}/score`, { scores } satisfies PreScoreState);
    return null;
  }

  score(state: CycleState, _pod: PodInfo, node: NodeInfo): number {
    const s = state.read<PreScoreState>(`${this.name}/score`);
    if (!s) return 0;
    let total = 0;
    for (const [key, values] of s.scores) {
      const v = nodeLabel(node, key);
      if (v !== undefined) total += values.get(v) ?? 0;
    }
    return total;
  }

  normalizeScore(state: CycleState, _p: PodInfo, scores: Float64Array | number[]): void {
    if (!state.read(`${this.name}/score`)) return;
    let min = Number.POSITIVE_INFINITY;
    let max = Number.NEGATIVE_INFINITY;
    for (const s of scores) {
      if (s < min) min = s;
      if (s > max) max = s;
    }
    const diff = max - min;
    for (let i = 0; i < scores.length; i++)
      scores[i] = diff > 0 ? Math.trunc((100 * (scores[i] - min)) / diff) : 0;
  }
}
