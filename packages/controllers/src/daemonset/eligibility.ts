// Which nodes a DaemonSet's pod belongs on, as Kubernetes' daemon controller
// decides it (NodeShouldRunDaemonPod): the template's nodeName, nodeSelector and
// required node affinity must match the node, and its taints must be tolerated
// by the template's tolerations plus the ones every daemon pod gets. A pod whose
// node gained a NoSchedule taint keeps running; only an untolerated NoExecute
// taint makes it leave.

import type {
  Affinity,
  Node,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  Pod,
  PodSpec,
  Toleration,
} from '@kubit/api';
import { findUntoleratedTaint, nodeSelectorRequirementsAsSelector, selectorFromSet } from '@kubit/api';

export interface DaemonSetLike {
  metadata?: { namespace?: string };
  spec?: { template?: { spec?: PodSpec } };
}

/** The node-name field of a node selector term (the only field Kubernetes supports there). */
export const NODE_NAME_FIELD = 'metadata.name';

const exists = (key: string, effect: 'NoSchedule' | 'NoExecute'): Toleration => ({
  key,
  operator: 'Exists',
  effect,
});

/**
 * The tolerations Kubernetes adds to every daemon pod
 * (AddOrUpdateDaemonPodTolerations): a node agent must keep running on a node
 * that is not ready, unreachable, under pressure or cordoned, and a host-network
 * pod (the network plugin itself) on a node whose network is not up yet.
 */
export function daemonTolerations(spec: PodSpec | undefined): Toleration[] {
  const out = [
    exists('node.kubernetes.io/not-ready', 'NoExecute'),
    exists('node.kubernetes.io/unreachable', 'NoExecute'),
    exists('node.kubernetes.io/disk-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/memory-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/pid-pressure', 'NoSchedule'),
    exists('node.kubernetes.io/unschedulable', 'NoSchedule'),
  ];
  if (spec?.hostNetwork) out.push(exists('node.kubernetes.io/network-unavailable', 'NoSchedule'));
  return out;
}

const sameToleration = (a: Toleration, b: Toleration) =>
  a.key === b.key && (a.operator ?? 'Equal') === (b.operator ?? 'Equal') && a.effect === b.effect;

/** The template's tolerations with the daemon ones added (an existing one with the same key and effect is replaced). */
export function withDaemonTolerations(spec: PodSpec | undefined): Toleration[] {
  const own = spec?.tolerations ?? [];
  const added = daemonTolerations(spec);
  return [...own.filter((t) => !added.some((a) => sameToleration(a, t))), ...added];
}

function requirementsMatch(
  reqs: readonly NodeSelectorRequirement[] | undefined,
  labels: Record<string, string>,
) {
  return !reqs?.length || nodeSelectorRequirementsAsSelector(reqs).matches(labels);
}

/** A term matches when all its requirements do; a term with none matches nothing, as in Kubernetes. */
export function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  if (!term.matchExpressions?.length && !term.matchFields?.length) return false;
  return (
    requirementsMatch(term.matchExpressions, node.metadata?.labels ?? {}) &&
    requirementsMatch(term.matchFields, { [NODE_NAME_FIELD]: node.metadata?.name ?? '' })
  );
}

/** nodeSelector AND any required node affinity term. */
export function nodeSelectorAndAffinityMatch(spec: PodSpec | undefined, node: Node): boolean {
  if (spec?.nodeSelector && !selectorFromSet(spec.nodeSelector).matches(node.metadata?.labels ?? {}))
    return false;
  const terms =
    spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms === undefined) return true;
  return terms.some((t) => termMatches(t, node));
}

export interface Eligibility {
  /** A new daemon pod should be created on the node. */
  shouldRun: boolean;
  /** An existing daemon pod may stay on the node. */
  shouldContinueRunning: boolean;
}

/** Kubernetes' NodeShouldRunDaemonPod. */
export function nodeShouldRunDaemonPod(node: Node, ds: DaemonSetLike): Eligibility {
  const spec = ds.spec?.template?.spec;
  const name = node.metadata?.name ?? '';
  const no = { shouldRun: false, shouldContinueRunning: false };
  if (spec?.nodeName && spec.nodeName !== name) return no;
  if (!nodeSelectorAndAffinityMatch(spec, node)) return no;
  const tolerations = withDaemonTolerations(spec);
  const taints = node.spec?.taints;
  if (findUntoleratedTaint(taints, tolerations, ['NoSchedule', 'NoExecute'])) {
    return {
      shouldRun: false,
      shouldContinueRunning: !findUntoleratedTaint(taints, tolerations, ['NoExecute']),
    };
  }
  return { shouldRun: true, shouldContinueRunning: true };
}

/**
 * The affinity a daemon pod for `nodeName` is created with
 * (ReplaceDaemonSetPodNodeNameNodeAffinity): the required terms are replaced by
 * one term, `metadata.name In [nodeName]`. The controller has already matched the
 * template's own terms against the node, and the scheduler now binds the pod to
 * exactly that node (or leaves it pending if the node cannot take it).
 */
export function affinityForNode(affinity: Affinity | undefined, nodeName: string): Affinity {
  const term: NodeSelectorTerm = {
    matchFields: [{ key: NODE_NAME_FIELD, operator: 'In', values: [nodeName] }],
  };
  return {
    ...affinity,
    nodeAffinity: {
      ...affinity?.nodeAffinity,
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [term] },
    },
  };
}

/** The node a daemon pod is on, or is meant for (its matchFields term) while unscheduled. */
export function targetNodeName(pod: Pod): string | undefined {
  if (pod.spec?.nodeName) return pod.spec.nodeName;
  const terms =
    pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  for (const t of terms ?? []) {
    for (const f of t.matchFields ?? []) {
      if (f.key === NODE_NAME_FIELD && f.operator === 'In' && f.values?.length === 1) return f.values[0];
    }
  }
  return undefined;
}
