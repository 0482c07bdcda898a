// The rolling-update maths of a DaemonSet, as Kubernetes' daemon controller
// does it (update.go): which old pods to delete and on which nodes to surge a
// new pod, given each node's daemon pods, so that at most maxUnavailable nodes
// are without an available pod (maxSurge 0) or at most maxSurge nodes run two
// pods at once (maxSurge > 0).
import type { DaemonSet, Pod } from '@kubit/api';
import { scaledValue } from '../deployment/util.js';
import { isPodAvailable, timeOf } from '../objects.js';

export const CONTROLLER_REVISION_HASH = 'controller-revision-hash';
export const POD_TEMPLATE_GENERATION = 'pod-template-generation';

/** maxSurge and maxUnavailable as numbers of nodes: percentages of the desired nodes, rounded up. */
export function updatedDesiredNodeCounts(
  ds: DaemonSet,
  desiredNumberScheduled: number,
): { maxSurge: number; maxUnavailable: number } {
  const ru = ds.spec?.updateStrategy?.rollingUpdate;
  const maxUnavailableRaw = scaledValue(ru?.maxUnavailable, desiredNumberScheduled, true, '1');
  const maxSurge = scaledValue(ru?.maxSurge, desiredNumberScheduled, true, '0');
  // Neither may be 0 together, or the update would never start.
  const maxUnavailable = maxUnavailableRaw === 0 && maxSurge === 0 ? 1 : maxUnavailableRaw;
  return { maxSurge, maxUnavailable };
}

export function isRollingUpdate(ds: DaemonSet): boolean {
  return (ds.spec?.updateStrategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
}

/** Surging is on only for RollingUpdate with a non-zero maxSurge (AllowsSurge). */
export function allowsSurge(ds: DaemonSet): boolean {
  if (!isRollingUpdate(ds)) return false;
  const v = ds.spec?.updateStrategy?.rollingUpdate?.maxSurge;
  return v !== undefined && v !== 0 && v !== '0' && v !== '0%';
}

/** The pod was made from the current template: its hash label, or its template generation (IsPodUpdated). */
export function isPodUpdated(pod: Pod, hash: string, generation: number | undefined): boolean {
  const labels = pod.metadata?.labels ?? {};
  const templateMatches = generation !== undefined && labels[POD_TEMPLATE_GENERATION] === String(generation);
  const hashMatches = hash.length > 0 && labels[CONTROLLER_REVISION_HASH] === hash;
  return hashMatches || templateMatches;
}

/** Oldest first (creation time, then name), as Kubernetes keeps the oldest daemon pod. */
export function byAge(a: Pod, b: Pod): number {
  const d = timeOf(a.metadata?.creationTimestamp) - timeOf(b.metadata?.creationTimestamp);
  if (d !== 0) return d;
  return (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1;
}

/**
 * The node's one new and one old pod (terminating ones ignored); undefined when
 * it has more than one of either, which the manage pass cleans up first.
 */
export function findUpdatedPodsOnNode(
  pods: readonly Pod[],
  hash: string,
  generation: number | undefined,
): { newPod?: Pod; oldPod?: Pod } | undefined {
  let newPod: Pod | undefined;
  let oldPod: Pod | undefined;
  for (const p of pods) {
    if (p.metadata?.deletionTimestamp) continue;
    if (isPodUpdated(p, hash, generation)) {
      if (newPod) return undefined;
      newPod = p;
    } else {
      if (oldPod) return undefined;
      oldPod = p;
    }
  }
  return { newPod, oldPod };
}

export interface UpdateInput {
  /** Each node's daemon pods (nodes without pods need not be present). */
  nodeToPods: ReadonlyMap<string, readonly Pod[]>;
  hash: string;
  generation: number | undefined;
  maxSurge: number;
  maxUnavailable: number;
  minReadySeconds: number;
  now: number;
  /** Whether a new pod should run on the node (for surging past an unavailable old pod). */
  shouldRun(node: string): boolean;
}

export interface UpdatePlan {
  /** Names of the old pods to delete. */
  podsToDelete: string[];
  /** Nodes to create a new pod on beside the old one (surge). */
  nodesToCreate: string[];
}

/** One step of a rolling update (Kubernetes' rollingUpdate). */
export function planRollingUpdate(input: UpdateInput): UpdatePlan {
  return input.maxSurge === 0 ? planByUnavailable(input) : planBySurge(input);
}

function sortedNodes(m: ReadonlyMap<string, readonly Pod[]>): string[] {
  // A stable order, so that one step after another picks the same candidates.
  return [...m.keys()].sort();
}

function planByUnavailable(input: UpdateInput): UpdatePlan {
  const available = (p: Pod) => isPodAvailable(p, input.minReadySeconds, input.now);
  let numUnavailable = 0;
  const replacements: string[] = [];
  const candidates: string[] = [];
  for (const node of sortedNodes(input.nodeToPods)) {
    const found = findUpdatedPodsOnNode(input.nodeToPods.get(node) ?? [], input.hash, input.generation);
    if (!found) {
      numUnavailable++;
      continue;
    }
    const { newPod, oldPod } = found;
    if ((!oldPod && !newPod) || (oldPod && newPod)) {
      // The manage pass creates or deletes here; the node is unavailable meanwhile.
      numUnavailable++;
    } else if (newPod) {
      if (!available(newPod)) numUnavailable++;
    } else if (oldPod) {
      // An old pod that is not available anyway can be replaced at no cost.
      if (!available(oldPod)) replacements.push(oldPod.metadata?.name ?? '');
      else if (numUnavailable < input.maxUnavailable) candidates.push(oldPod.metadata?.name ?? '');
    }
  }
  const remaining = Math.min(Math.max(0, input.maxUnavailable - numUnavailable), candidates.length);
  return { podsToDelete: [...replacements, ...candidates.slice(0, remaining)], nodesToCreate: [] };
}

function planBySurge(input: UpdateInput): UpdatePlan {
  const available = (p: Pod) => isPodAvailable(p, input.minReadySeconds, input.now);
  const podsToDelete: string[] = [];
  const allowedNew: string[] = [];
  const candidates: string[] = [];
  let numSurge = 0;
  for (const node of sortedNodes(input.nodeToPods)) {
    const found = findUpdatedPodsOnNode(input.nodeToPods.get(node) ?? [], input.hash, input.generation);
    if (!found) {
      numSurge++;
      continue;
    }
    const { newPod, oldPod } = found;
    if (!oldPod) continue; // the manage pass handles it
    if (!newPod) {
      if (!available(oldPod)) {
        // Nothing to lose: replace it at once, or just remove it if it no longer belongs here.
        if (!input.shouldRun(node)) podsToDelete.push(oldPod.metadata?.name ?? '');
        else allowedNew.push(node);
      } else if (numSurge < input.maxSurge) candidates.push(node);
      continue;
    }
    // Already surged: the old pod goes once the new one is available.
    if (!available(newPod)) numSurge++;
    else podsToDelete.push(oldPod.metadata?.name ?? '');
  }
  const remaining = Math.min(Math.max(0, input.maxSurge - numSurge), candidates.length);
  return { podsToDelete, nodesToCreate: [...allowedNew, ...candidates.slice(0, remaining)] };
}
