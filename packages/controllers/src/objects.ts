// Small facts about objects shared by the controllers: controller refs, pod
// readiness and availability, time stamps.
import type { KubeObject, OwnerReference, Pod } from './types.js';

/**
 * The controller reference a controller puts on what it creates (Kubernetes'
 * metav1.NewControllerRef): the owner's kind, name and uid, marked as the
 * controller, and blocking the owner's foreground deletion until it is gone.
 */
export function ownerRefFor(owner: KubeObject, kind: string, apiVersion = 'apps/v1'): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata?.name ?? '',
    uid: owner.metadata?.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerOf(o: KubeObject): OwnerReference | undefined {
  return o.metadata?.ownerReferences?.find((r) => r.controller === true);
}

export function isPodActive(p: Pod): boolean {
  return p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && !p.metadata?.deletionTimestamp;
}

export function podReadyCondition(p: Pod) {
  return p.status?.conditions?.find((c) => c.type === 'Ready');
}

export function isPodReady(p: Pod): boolean {
  return podReadyCondition(p)?.status === 'True';
}

/** Ready for at least minReadySeconds (as of `now`). */
export function isPodAvailable(p: Pod, minReadySeconds: number, now: number): boolean {
  const c = podReadyCondition(p);
  if (c?.status !== 'True') return false;
  if (minReadySeconds <= 0) return true;
  const since = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : Number.NaN;
  return Number.isFinite(since) && since + minReadySeconds * 1000 <= now;
}

export function timeOf(s: string | undefined): number {
  const t = s ? Date.parse(s) : Number.NaN;
  return Number.isFinite(t) ? t : 0;
}

export function isoNow(now: number): string {
  // Kubernetes' metav1.Time has second precision on the wire.
  return new Date(Math.floor(now / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
