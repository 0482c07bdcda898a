// A StatefulSet's history, as Kubernetes keeps it: one ControllerRevision per
// distinct pod template, named `<set>-<hash>` and numbered in order of use.
// Its data is the strategic merge patch that puts the template back
// (`{"spec":{"template":{..., "$patch":"replace"}}}`), which is also what
// `kubectl rollout undo` applies.
import { canonicalJSON } from '../deployment/util.js';
import { ownerRefFor } from '../objects.js';
import type { ControllerRevision, PodTemplateSpec, StatefulSet } from '../types.js';
import { REVISION_LABEL } from './identity.js';

export const DEFAULT_REVISION_HISTORY_LIMIT = 10;

// rand.SafeEncodeString's alphabet: no vowels, no 0/1/3.
const SAFE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
// Kubernetes keeps revision names within a label value after `-<hash>`.
const MAX_PREFIX = 223;

type RevisionData = { spec: { template: PodTemplateSpec & { $patch: 'replace' } } };

/** The revision's data: the set's template, as a patch that replaces it. */
export function revisionData(set: StatefulSet): RevisionData {
  return { spec: { template: { ...structuredClone(set.spec?.template ?? {}), $patch: 'replace' } } };
}

/** FNV-1a 32 of the data's JSON and the collision count (little-endian uint32), spelled safely. */
export function revisionHash(data: unknown, collisionCount: number): string {
  const bytes = Buffer.concat([Buffer.from(canonicalJSON(data), 'utf8'), Buffer.alloc(4)]);
  bytes.writeUInt32LE(collisionCount >>> 0, bytes.length - 4);
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  let out = '';
  for (const ch of String(h >>> 0)) out += SAFE_ALPHABET[ch.charCodeAt(0) % SAFE_ALPHABET.length];
  return out;
}

/** A new revision of the set's current template, numbered `revision`. */
export function newRevision(set: StatefulSet, revision: number, collisionCount: number): ControllerRevision {
  const data = revisionData(set);
  const hash = revisionHash(data, collisionCount);
  const prefix = (set.metadata?.name ?? '').slice(0, MAX_PREFIX);
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: `${prefix}-${hash}`,
      namespace: set.metadata?.namespace,
      labels: { ...set.spec?.template?.metadata?.labels, [REVISION_LABEL]: hash },
      annotations: set.metadata?.annotations ? { ...set.metadata.annotations } : undefined,
      ownerReferences: [ownerRefFor(set, 'StatefulSet')],
    },
    data: data as unknown as ControllerRevision['data'],
    revision,
  };
}

export function sameData(a: ControllerRevision, b: ControllerRevision): boolean {
  return canonicalJSON(a.data) === canonicalJSON(b.data);
}

/** Oldest first: by revision number, then name. */
export function byRevision(a: ControllerRevision, b: ControllerRevision): number {
  if (a.revision !== b.revision) return a.revision - b.revision;
  return (a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1;
}

export const nextRevision = (sorted: readonly ControllerRevision[]): number =>
  sorted.length === 0 ? 1 : sorted[sorted.length - 1].revision + 1;

/** The set as of a revision: its template replaced by the revision's. */
export function applyRevision(set: StatefulSet, rev: ControllerRevision): StatefulSet {
  const data = rev.data as unknown as Partial<RevisionData> | undefined;
  const template = data?.spec?.template;
  if (!template) return set;
  const { $patch: _directive, ...plain } = structuredClone(template);
  return { ...set, spec: { ...set.spec!, template: plain } };
}

/**
 * The revisions to delete: the oldest of those no pod uses and that are
 * neither current nor update, beyond revisionHistoryLimit.
 */
export function revisionsToTruncate(
  sorted: readonly ControllerRevision[],
  live: ReadonlySet<string>,
  limit: number,
): ControllerRevision[] {
  const history = sorted.filter((r) => !live.has(r.metadata?.name ?? ''));
  return history.slice(0, Math.max(0, history.length - limit));
}
