// Everything about a pod the scheduler uses, computed once when the pod is seen
// (not once per node): requests, host ports, compiled affinity terms, tolerations.
import { compileLabelSelector, type Labels, type Selector } from './labels.js';
import { podNonZeroRequests, podRequests, type Resources } from './resources.js';
import type { Pod, PodAffinityTerm, Toleration } from './types.js';

export interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

/** A pod (anti-)affinity term, compiled. */
export interface AffinityTerm {
  selector: Selector;
  /** Namespaces the term looks in; null means all namespaces (an empty namespaceSelector). */
  namespaces: ReadonlySet<string> | null;
  /** A non-empty namespaceSelector, matched against namespace labels when they are known. */
  namespaceSelector: Selector | null;
  topologyKey: string;
  weight: number;
  /** Identifies equal terms (same selector, namespaces, key, weight) so the cache can index them once. */
  sig: string;
  /** When the term is one key=value in one namespace: the node label-count key that answers it. */
  countKey: string | null;
}

export interface PodInfo {
  readonly pod: Pod;
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly labels: Labels;
  readonly priority: number;
  readonly requests: Resources;
  readonly nonZero: { milliCpu: number; memory: number };
  readonly hostPorts: readonly HostPort[];
  readonly tolerations: readonly Toleration[];
  readonly requiredAffinity: readonly AffinityTerm[];
  readonly requiredAntiAffinity: readonly AffinityTerm[];
  readonly preferredAffinity: readonly AffinityTerm[];
  readonly preferredAntiAffinity: readonly AffinityTerm[];
  /** "namespace\x00key=value" for each label, for the per-node label counts. */
  readonly labelPairs: readonly string[];
}

export function podKey(pod: Pod): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

export function labelPairKey(namespace: string, pair: string): string {
  return `${namespace}\x00${pair}`;
}

function compileTerm(pod: Pod, term: PodAffinityTerm, weight: number): AffinityTerm {
  const ns = pod.metadata?.namespace ?? 'default';
  const listed = term.namespaces ?? [];
  let namespaces: Set<string> | null = new Set(listed);
  let namespaceSelector: Selector | null = null;
  if (term.namespaceSelector) {
    const sel = compileLabelSelector(term.namespaceSelector);
    if (sel.empty) namespaces = null;
    else namespaceSelector = sel;
  } else if (listed.length === 0) {
    namespaces = new Set([ns]);
  }
  const selector = compileLabelSelector(term.labelSelector);
  let countKey: string | null = null;
  if (
    selector.singlePair !== null &&
    namespaces !== null &&
    namespaces.size === 1 &&
    namespaceSelector === null
  ) {
    countKey = labelPairKey([...namespaces][0], selector.singlePair);
  }
  const sig = JSON.stringify([
    term.labelSelector ?? null,
    [...(namespaces ?? ['*'])].sort(),
    term.namespaceSelector ?? null,
    term.topologyKey,
    weight,
  ]);
  return { selector, namespaces, namespaceSelector, topologyKey: term.topologyKey, weight, sig, countKey };
}

export function newPodInfo(pod: Pod): PodInfo {
  const spec = pod.spec;
  const hostPorts: HostPort[] = [];
  for (const c of spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (p.hostPort !== undefined && p.hostPort > 0) {
        hostPorts.push({ ip: p.hostIP || '0.0.0.0', protocol: p.protocol || 'TCP', port: p.hostPort });
      }
    }
  }
  const aff = spec?.affinity;
  const namespace = pod.metadata?.namespace ?? 'default';
  const labels = pod.metadata?.labels ?? {};
  return {
    pod,
    key: podKey(pod),
    namespace,
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    labels,
    priority: spec?.priority ?? 0,
    requests: podRequests(pod),
    nonZero: podNonZeroRequests(pod),
    hostPorts,
    tolerations: spec?.tolerations ?? [],
    requiredAffinity: (aff?.podAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map((t) =>
      compileTerm(pod, t, 1),
    ),
    requiredAntiAffinity: (aff?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []).map(
      (t) => compileTerm(pod, t, 1),
    ),
    preferredAffinity: (aff?.podAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((w) =>
      compileTerm(pod, w.podAffinityTerm, w.weight),
    ),
    preferredAntiAffinity: (aff?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map(
      (w) => compileTerm(pod, w.podAffinityTerm, w.weight),
    ),
    labelPairs: Object.entries(labels).map(([k, v]) => labelPairKey(namespace, `${k}=${v}`)),
  };
}

export function hasAffinityTerms(p: PodInfo): boolean {
  return (
    p.requiredAffinity.length > 0 ||
    p.requiredAntiAffinity.length > 0 ||
    p.preferredAffinity.length > 0 ||
    p.preferredAntiAffinity.length > 0
  );
}

/** Namespace labels by name, for namespaceSelector; undefined when the namespace is unknown. */
export type NamespaceLabels = (namespace: string) => Labels | undefined;

/** Whether `term` (belonging to some pod) selects the pod `target`. */
export function termMatches(term: AffinityTerm, target: PodInfo, nsLabels?: NamespaceLabels): boolean {
  if (!termNamespaceMatches(term, target.namespace, nsLabels)) return false;
  return term.selector.matches(target.labels);
}

export function termNamespaceMatches(
  term: AffinityTerm,
  namespace: string,
  nsLabels?: NamespaceLabels,
): boolean {
  if (term.namespaces === null) return true;
  if (term.namespaces.has(namespace)) return true;
  if (term.namespaceSelector) {
    const l = nsLabels?.(namespace);
    return l !== undefined && term.namespaceSelector.matches(l);
  }
  return false;
}
