// A DaemonSet's revision history, as Kubernetes keeps it: one ControllerRevision
// per pod template, named `<ds>-<hash>`, whose data is the strategic merge patch
// that puts the template back (`{"spec":{"template":{...,"$patch":"replace"}}}`,
// what `kubectl rollout undo` applies), numbered by revision. These are the pure
// parts; the controller does the reads and writes.
import type { ControllerRevision, DaemonSet } from '@kubit/api';
import { canonicalJSON, podTemplateHash } from '../deployment/util.js';
import { ownerRefFor } from '../objects.js';
import { CONTROLLER_REVISION_HASH } from './update.js';

/** Kubernetes' DaemonSet getPatch: the template, marked to replace the whole template when applied. */
export function revisionData(ds: DaemonSet): { spec: { template: Record<string, unknown> } } {
  const template = structuredClone(ds.spec?.template ?? {}) as Record<string, unknown>;
  template.$patch = 'replace';
  return { spec: { template } };
}

/** The hash of the template (and the collision count, when the plain one collided). */
export function revisionHash(ds: DaemonSet): string {
  return podTemplateHash(ds.spec?.template, ds.status?.collisionCount);
}

/** `<prefix>-<hash>`, the prefix cut so the name stays within 253 characters (ControllerRevisionName). */
export function revisionName(dsName: string, hash: string): string {
  return `${dsName.length > 223 ? dsName.slice(0, 223) : dsName}-${hash}`;
}

/** Whether the revision holds the DaemonSet's current template. */
export function matchesRevision(ds: DaemonSet, cr: ControllerRevision): boolean {
  return canonicalJSON(cr.data) === canonicalJSON(revisionData(ds));
}

export function newRevision(ds: DaemonSet, hash: string, revision: number): ControllerRevision {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: revisionName(ds.metadata?.name ?? '', hash),
      namespace: ds.metadata?.namespace,
      labels: { ...ds.spec?.template?.metadata?.labels, [CONTROLLER_REVISION_HASH]: hash },
      annotations: changeCause(ds),
      ownerReferences: [ownerRefFor(ds, 'DaemonSet')],
    },
    data: revisionData(ds),
    revision,
  };
}

const CHANGE_CAUSE = 'kubernetes.io/change-cause';

/** `kubectl rollout history` shows the change cause a revision was annotated with. */
function changeCause(ds: DaemonSet): { [k: string]: string } | undefined {
  const v = ds.metadata?.annotations?.[CHANGE_CAUSE];
  return v === undefined ? undefined : { [CHANGE_CAUSE]: v };
}

export function maxRevision(crs: readonly ControllerRevision[]): number {
  return crs.reduce((m, cr) => Math.max(m, cr.revision ?? 0), 0);
}

/** The hash a revision stands for: its label, or the tail of its name. */
export function hashOf(cr: ControllerRevision): string {
  return cr.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? (cr.metadata?.name ?? '').split('-').pop() ?? '';
}

/**
 * The old revisions to delete so that at most `limit` remain, oldest first,
 * never one that a live pod still comes from (cleanupHistory).
 */
export function revisionsToPrune(
  old: readonly ControllerRevision[],
  limit: number,
  liveHashes: ReadonlySet<string>,
): ControllerRevision[] {
  let excess = old.length - Math.max(0, limit);
  if (excess <= 0) return [];
  const out: ControllerRevision[] = [];
  for (const cr of [...old].sort((a, b) => (a.revision ?? 0) - (b.revision ?? 0))) {
    if (excess <= 0) break;
    if (liveHashes.has(hashOf(cr))) continue;
    out.push(cr);
    excess--;
  }
  return out;
}
