// Existing pods' affinity terms, indexed by distinct term across the cluster.
// Replicas share their terms, so "which existing pods repel the incoming pod?"
// becomes one match per distinct term instead of one per pod.
import type { NodeInfo } from './node-info.js';
import type { AffinityTerm, PodInfo } from './pod-info.js';

export type TermKind = 'requiredAnti' | 'requiredAffinity' | 'preferredAffinity' | 'preferredAnti';

export interface TermEntry {
  kind: TermKind;
  term: AffinityTerm;
  /** Nodes running pods with this term, and how many such pods each runs. */
  nodes: Map<NodeInfo, number>;
}

export class TermIndex {
  /** Required anti-affinity terms (for the filter). */
  readonly requiredAnti = new Map<string, TermEntry>();
  /** Terms that feed InterPodAffinity's score: required affinity (hard weight) and preferred terms. */
  readonly scoring = new Map<string, TermEntry>();
  /**
   * requiredAnti again, split for lookup by the incoming pod: terms that select one
   * label in one namespace by that label-pair key (a pod can only match the ones
   * keyed by its own labels), and every other term, which has to be tested.
   */
  readonly requiredAntiByLabel = new Map<string, Set<TermEntry>>();
  readonly requiredAntiOther = new Set<TermEntry>();

  add(p: PodInfo, node: NodeInfo): void {
    this.apply(p, node, 1);
  }

  remove(p: PodInfo, node: NodeInfo): void {
    this.apply(p, node, -1);
  }

  private apply(p: PodInfo, node: NodeInfo, sign: 1 | -1): void {
    for (const t of p.requiredAntiAffinity) this.bump(this.requiredAnti, 'requiredAnti', t, node, sign);
    for (const t of p.requiredAffinity) this.bump(this.scoring, 'requiredAffinity', t, node, sign);
    for (const t of p.preferredAffinity) this.bump(this.scoring, 'preferredAffinity', t, node, sign);
    for (const t of p.preferredAntiAffinity) this.bump(this.scoring, 'preferredAnti', t, node, sign);
  }

  private bump(
    m: Map<string, TermEntry>,
    kind: TermKind,
    term: AffinityTerm,
    node: NodeInfo,
    sign: 1 | -1,
  ): void {
    const key = `${kind}\x00${term.sig}`;
    let e = m.get(key);
    if (!e) {
      if (sign < 0) return;
      e = { kind, term, nodes: new Map() };
      m.set(key, e);
      if (kind === 'requiredAnti') this.indexAnti(e, 1);
    }
    const n = (e.nodes.get(node) ?? 0) + sign;
    if (n > 0) e.nodes.set(node, n);
    else e.nodes.delete(node);
    if (e.nodes.size === 0) {
      m.delete(key);
      if (kind === 'requiredAnti') this.indexAnti(e, -1);
    }
  }

  private indexAnti(e: TermEntry, sign: 1 | -1): void {
    const label = e.term.countKey;
    if (label === null) {
      if (sign > 0) this.requiredAntiOther.add(e);
      else this.requiredAntiOther.delete(e);
      return;
    }
    let set = this.requiredAntiByLabel.get(label);
    if (sign > 0) {
      if (!set) {
        set = new Set();
        this.requiredAntiByLabel.set(label, set);
      }
      set.add(e);
    } else if (set) {
      set.delete(e);
      if (set.size === 0) this.requiredAntiByLabel.delete(label);
    }
  }
}
