// Which pods a ReplicaSet deletes first when it scales down, in Kubernetes'
// order: unscheduled before scheduled, Pending before Unknown before Running,
// not ready before ready, pods doubled up on a node before lone ones, ready for
// less time before longer, more restarts before fewer, newer before older.
import { isPodReady, podReadyCondition, timeOf } from './objects.js';
import type { Pod } from './types.js';

const PHASE_ORDER: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function restarts(p: Pod): number {
  let max = 0;
  for (const s of p.status?.containerStatuses ?? []) max = Math.max(max, s.restartCount ?? 0);
  return max;
}

/**
 * Compares two pods for deletion: negative when `a` should go before `b`.
 * `rank` is how many of the controller's pods share the pod's node.
 */
export function compareForDeletion(a: Pod, b: Pod, rank: (p: Pod) => number = () => 0): number {
  const aNode = a.spec?.nodeName ?? '';
  const bNode = b.spec?.nodeName ?? '';
  if ((aNode === '') !== (bNode === '')) return aNode === '' ? -1 : 1;
  const ap = PHASE_ORDER[a.status?.phase ?? 'Pending'] ?? 0;
  const bp = PHASE_ORDER[b.status?.phase ?? 'Pending'] ?? 0;
  if (ap !== bp) return ap - bp;
  const ar = isPodReady(a);
  const br = isPodReady(b);
  if (ar !== br) return ar ? 1 : -1;
  const ak = rank(a);
  const bk = rank(b);
  if (ak !== bk) return bk - ak;
  if (ar && br) {
    const at = timeOf(podReadyCondition(a)?.lastTransitionTime);
    const bt = timeOf(podReadyCondition(b)?.lastTransitionTime);
    if (at !== bt) return bt - at;
  }
  const rs = restarts(b) - restarts(a);
  if (rs !== 0) return rs;
  const ac = timeOf(a.metadata?.creationTimestamp);
  const bc = timeOf(b.metadata?.creationTimestamp);
  return bc - ac;
}

/** The `n` pods to delete first. */
export function podsToDelete(pods: readonly Pod[], n: number): Pod[] {
  const perNode = new Map<string, number>();
  for (const p of pods) {
    const node = p.spec?.nodeName;
    if (node) perNode.set(node, (perNode.get(node) ?? 0) + 1);
  }
  const rank = (p: Pod) => (p.spec?.nodeName ? (perNode.get(p.spec.nodeName) ?? 0) : 0);
  return [...pods].sort((a, b) => compareForDeletion(a, b, rank)).slice(0, n);
}
