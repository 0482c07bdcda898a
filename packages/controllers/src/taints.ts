// Taints and tolerations as Kubernetes matches them, and when a NoExecute
// taint evicts a pod.
import type { Pod, Taint, Toleration } from './types.js';

export const TAINT_UNREACHABLE = 'node.kubernetes.io/unreachable';
export const TAINT_NOT_READY = 'node.kubernetes.io/not-ready';

export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  // Equal is the default operator.
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/**
 * When the NoExecute taints evict the pod: 'now' if some taint is not
 * tolerated, a time (ms) if every toleration is bounded, undefined if never.
 */
export function evictionTime(pod: Pod, taints: readonly Taint[], now: number): number | 'now' | undefined {
  const noExecute = taints.filter((t) => t.effect === 'NoExecute');
  if (noExecute.length === 0) return undefined;
  const tolerations = pod.spec?.tolerations ?? [];
  let at: number | undefined;
  for (const taint of noExecute) {
    const matching = tolerations.filter((t) => tolerates(t, taint));
    if (matching.length === 0) return 'now';
    // The taint stays tolerated for as long as the most generous matching toleration allows.
    if (matching.some((t) => t.tolerationSeconds === undefined || t.tolerationSeconds === null)) continue;
    const secs = Math.max(...matching.map((t) => t.tolerationSeconds as number));
    const added = taint.timeAdded ? Date.parse(taint.timeAdded) : now;
    const deadline = (Number.isFinite(added) ? added : now) + Math.max(0, secs) * 1000;
    at = at === undefined ? deadline : Math.min(at, deadline);
  }
  return at;
}
