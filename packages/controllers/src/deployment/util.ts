// Deployment facts shared by the rollout strategies: the pod-template-hash,
// maxSurge/maxUnavailable resolution, revisions and the annotations Kubernetes
// keeps on ReplicaSets.
import { controllerOf } from '../objects.js';
import type { Deployment, PodTemplateSpec, ReplicaSet } from '../types.js';

export const REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';
export const REVISION_HISTORY_ANNOTATION = 'deployment.kubernetes.io/revision-history';
export const DESIRED_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/desired-replicas';
export const MAX_REPLICAS_ANNOTATION = 'deployment.kubernetes.io/max-replicas';
export const POD_TEMPLATE_HASH = 'pod-template-hash';
export const RESTARTED_AT_ANNOTATION = 'kubectl.kubernetes.io/restartedAt';
export const DEFAULT_PROGRESS_DEADLINE_SECONDS = 600;
export const DEFAULT_REVISION_HISTORY_LIMIT = 10;

// Characters that never spell words (no vowels) and are not confused (no 0/1/3).
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** JSON with object keys sorted, so equal templates always hash alike. */
export function canonicalJSON(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJSON).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJSON(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * A stable, short, label-safe hash of a pod template (FNV-1a 32 of its
 * canonical JSON, plus the collision count when there is one), spelled in an
 * alphabet without vowels as Kubernetes does.
 */
export function podTemplateHash(t: PodTemplateSpec | undefined, collisionCount?: number): string {
  let s = canonicalJSON(withoutHashLabel(t));
  if (collisionCount !== undefined && collisionCount > 0) s += `#${collisionCount}`;
  const digits = String(fnv1a32(s));
  let out = '';
  for (const ch of digits) out += SAFE_ALPHABET[ch.charCodeAt(0) % SAFE_ALPHABET.length];
  return out;
}

export function withoutHashLabel(t: PodTemplateSpec | undefined): PodTemplateSpec {
  const c = structuredClone(t ?? {});
  if (c.metadata?.labels) {
    const { [POD_TEMPLATE_HASH]: _ignored, ...rest } = c.metadata.labels;
    c.metadata.labels = Object.keys(rest).length ? rest : undefined;
  }
  return c;
}

/** Same template, ignoring the pod-template-hash label (how a Deployment finds its new RS). */
export function equalIgnoreHash(a: PodTemplateSpec | undefined, b: PodTemplateSpec | undefined): boolean {
  return canonicalJSON(withoutHashLabel(a)) === canonicalJSON(withoutHashLabel(b));
}

/** An int-or-percent against a total: percentages round up for surge, down for unavailable. */
export function scaledValue(
  v: number | string | undefined,
  total: number,
  roundUp: boolean,
  dflt: string,
): number {
  const x = v ?? dflt;
  if (typeof x === 'number') return x;
  const m = /^(\d+)%$/.exec(x);
  if (!m) {
    if (/^\d+$/.test(x)) return Number(x);
    throw new Error(`invalid value for IntOrString: invalid type: string is not a percentage: "${x}"`);
  }
  const exact = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

/**
 * maxSurge and maxUnavailable of a RollingUpdate Deployment as numbers of pods.
 * Surge rounds up, unavailable rounds down; if both come to 0, unavailable is 1
 * so the rollout can make progress.
 */
export function resolveFenceposts(d: Deployment): { maxSurge: number; maxUnavailable: number } {
  const replicas = d.spec?.replicas ?? 1;
  const ru = d.spec?.strategy?.rollingUpdate;
  const maxSurge = scaledValue(ru?.maxSurge, replicas, true, '25%');
  let maxUnavailable = scaledValue(ru?.maxUnavailable, replicas, false, '25%');
  if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  return { maxSurge, maxUnavailable };
}

export function isRollingUpdate(d: Deployment): boolean {
  return (d.spec?.strategy?.type ?? 'RollingUpdate') === 'RollingUpdate';
}

export function maxSurge(d: Deployment): number {
  return isRollingUpdate(d) ? resolveFenceposts(d).maxSurge : 0;
}

export function maxUnavailable(d: Deployment): number {
  if (!isRollingUpdate(d) || (d.spec?.replicas ?? 1) === 0) return 0;
  return Math.min(resolveFenceposts(d).maxUnavailable, d.spec?.replicas ?? 1);
}

export function revisionOf(o: { metadata?: { annotations?: { [k: string]: string } } } | undefined): number {
  const v = Number(o?.metadata?.annotations?.[REVISION_ANNOTATION] ?? '0');
  return Number.isInteger(v) && v > 0 ? v : 0;
}

export function maxRevision(rss: readonly ReplicaSet[]): number {
  return rss.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
}

export const specReplicas = (rs: ReplicaSet | undefined): number => rs?.spec?.replicas ?? 0;
export const sumSpec = (rss: readonly ReplicaSet[]): number => rss.reduce((n, rs) => n + specReplicas(rs), 0);
export const sumStatus = (
  rss: readonly ReplicaSet[],
  f: (s: NonNullable<ReplicaSet['status']>) => number | undefined,
) => rss.reduce((n, rs) => n + (rs.status ? (f(rs.status) ?? 0) : 0), 0);

/**
 * The available pods a ReplicaSet will keep: its status's count, but no more
 * than it asks for. Right after a scale-down the status still counts the pods
 * being deleted (the ReplicaSet controller writes the status from the pods it
 * saw before deleting, as Kubernetes' does), and a rollout that planned with
 * that count would take away more ready pods than maxUnavailable allows.
 */
export const keptAvailable = (rs: ReplicaSet | undefined): number =>
  Math.min(rs?.status?.availableReplicas ?? 0, specReplicas(rs));
export const sumKeptAvailable = (rss: readonly ReplicaSet[]): number =>
  rss.reduce((n, rs) => n + keptAvailable(rs), 0);

/** Oldest first; ties broken by name so the order is stable. */
export function byCreation(a: ReplicaSet, b: ReplicaSet): number {
  const ta = a.metadata?.creationTimestamp ?? '';
  const tb = b.metadata?.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1;
}

export function isControlledBy(rs: ReplicaSet, d: Deployment): boolean {
  return controllerOf(rs)?.uid === d.metadata?.uid;
}

/**
 * How many replicas the new RS should have now: Recreate wants them all; a
 * rolling update grows it as far as maxSurge allows above the desired count.
 */
export function newRSNewReplicas(
  d: Deployment,
  all: readonly ReplicaSet[],
  newRS: ReplicaSet | undefined,
): number {
  const replicas = d.spec?.replicas ?? 1;
  if (!isRollingUpdate(d)) return replicas;
  const current = specReplicas(newRS);
  const maxTotal = replicas + maxSurge(d);
  const total = sumSpec(all);
  if (total >= maxTotal) return current;
  return current + Math.min(maxTotal - total, Math.max(0, replicas - current));
}

/**
 * What `kubectl rollout undo` does in apps/v1: copy the template of the
 * ReplicaSet with the wanted revision (the previous one by default) into the
 * Deployment. Returns the template to write, or throws a clear error.
 */
export function rollbackTemplate(d: Deployment, rss: readonly ReplicaSet[], toRevision = 0): PodTemplateSpec {
  const owned = rss.filter((rs) => isControlledBy(rs, d));
  const current = revisionOf(d);
  let target: ReplicaSet | undefined;
  if (toRevision > 0) {
    target = owned.find((rs) => revisionOf(rs) === toRevision);
    if (!target) throw new Error(`unable to find specified revision ${toRevision} in history`);
  } else {
    const older = owned
      .filter((rs) => revisionOf(rs) < current)
      .sort((a, b) => revisionOf(b) - revisionOf(a));
    target = older[0];
    if (!target)
      throw new Error('no rollout history found for deployment ' + JSON.stringify(d.metadata?.name));
  }
  return withoutHashLabel(target.spec?.template);
}
