// Field management on every write, as Kubernetes' fieldmanager does it:
//  - an Update (create, update, any patch but apply) gives its manager the fields it
//    added or changed, and takes them, and the ones it removed, from every other manager;
//  - an Apply makes the applied configuration's field set the manager's Apply entry,
//    merges it into the live object, drops the fields the manager applied before and no
//    longer applies unless someone else owns them, and refuses (409) to change a field
//    another manager owns unless forced, which takes it over.
// The pure set and object logic is @kubit/api's fieldmanager; this file knows kinds,
// subresources, managers and the Status a conflict is.
import {
  compareObjects,
  fieldSetOf,
  isSameComparison,
  mergeApplied,
  type Path,
  PathSet,
  pathString,
  removeUnowned,
  StatusError,
  withoutSubtree,
} from '@kubit/api';
import type { KindDef } from '../kinds/types.js';
import type { KObject } from '../storage.js';
import {
  capUpdateManagers,
  decodeManaged,
  encodeManaged,
  identity,
  isResetRequest,
  type Managed,
  type ManagedEntry,
} from './managed-fields.js';
import { shapeOfKind } from './shape.js';

/** Who writes: the manager, the apiVersion of the request, and the subresource ('' for the object). */
export interface Writer {
  manager: string;
  apiVersion: string;
  subresource: string;
}

/** What Kubernetes never records as owned (its stripMeta manager's list). */
const STRIPPED: Path[] = [
  ['f:apiVersion'],
  ['f:kind'],
  ['f:metadata'],
  ...[
    'name',
    'namespace',
    'creationTimestamp',
    'selfLink',
    'uid',
    'clusterName',
    'generation',
    'managedFields',
    'resourceVersion',
  ].map((f): Path => ['f:metadata', `f:${f}`]),
];
const STRIPPED_SET = PathSet.of(...STRIPPED);

/**
 * The fields a write through `subresource` may own: never the stripped ones; a write
 * to the object itself not the status of a kind with a status subresource, a status
 * write not the spec (Kubernetes' reset fields).
 */
function ownable(def: KindDef, subresource: string, s: PathSet): PathSet {
  let out = s.difference(STRIPPED_SET);
  if (subresource === '' && def.subresources.some((r) => r.name === 'status'))
    out = withoutSubtree(out, ['f:status']);
  if (subresource === 'status') out = withoutSubtree(out, ['f:spec']);
  return out;
}

/** The object without what is not content: its managed fields and resourceVersion. */
function bare(o: KObject): KObject {
  const m = { ...(o.metadata ?? {}) };
  delete m.managedFields;
  delete m.resourceVersion;
  return { ...o, metadata: m };
}

/** The live object's entries; one that does not decode (it never should) counts as none. */
function liveManaged(live: KObject | undefined): Managed {
  try {
    return decodeManaged(live?.metadata?.managedFields);
  } catch {
    return new Map();
  }
}

// Go's zero value of a kind serializes these structs as {} and these lists as null, so
// a create adds what is in them, not them: `f:spec` and `f:containers` get no ".".
const ZERO_STRUCTS = new Set([
  'metadata',
  'spec',
  'status',
  'template',
  'strategy',
  'updateStrategy',
  'jobTemplate',
]);
const ZERO_NULLS = new Set(['containers']);

function zeroLike(o: unknown): KObject {
  const z: KObject = {};
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return z;
  for (const [k, v] of Object.entries(o)) {
    if (ZERO_STRUCTS.has(k) && typeof v === 'object' && v !== null && !Array.isArray(v)) z[k] = zeroLike(v);
    else if (ZERO_NULLS.has(k)) z[k] = null;
  }
  return z;
}

function store(next: KObject, managed: Managed): void {
  capUpdateManagers(managed);
  const list = encodeManaged(managed);
  next.metadata ??= {};
  if (list.length > 0) next.metadata.managedFields = list;
  else delete next.metadata.managedFields;
}

/**
 * Records an Update by `who` on `next` (its metadata.managedFields), from `live`, the
 * stored object (undefined for a create). Managed fields the client sent are the base
 * when they decode; `[]` or `[{}]` clears them (this write's own fields are still
 * recorded); garbage or none keeps the live ones.
 */
export function recordUpdate(
  def: KindDef,
  live: KObject | undefined,
  next: KObject,
  who: Writer,
  now: string,
): void {
  next.metadata ??= {};
  const sent = next.metadata.managedFields;
  let managed: Managed | undefined;
  // A subresource's body never sets managed fields (Kubernetes ignores them there).
  if (who.subresource === '' && isResetRequest(sent)) managed = new Map();
  else if (sent !== undefined && who.subresource === '') {
    try {
      managed = decodeManaged(sent);
    } catch {
      managed = undefined;
    }
    if (managed?.size === 0) managed = undefined;
  }
  managed ??= liveManaged(live);
  const shape = shapeOfKind(def);
  const c = compareObjects(live ? bare(live) : zeroLike(next), bare(next), shape);
  const changed = ownable(def, who.subresource, c.added.union(c.modified));
  const removed = c.removed;
  for (const [id, e] of managed) {
    e.set = e.set.difference(changed).difference(removed);
    if (e.set.empty()) managed.delete(id);
  }
  if (!changed.empty()) {
    const entry: ManagedEntry = {
      manager: who.manager,
      operation: 'Update',
      apiVersion: who.apiVersion,
      set: changed,
    };
    if (who.subresource) entry.subresource = who.subresource;
    const id = identity(entry);
    const own = managed.get(id);
    managed.set(id, { ...entry, set: own ? own.set.union(changed) : changed, time: now });
  }
  store(next, managed);
}

/**
 * Server-side apply of `config` by `who` onto `live` (undefined: the object is created).
 * Returns the object to write, with its managed fields; a 409 lists every field another
 * manager owns whose value this would change, unless `force` takes them over.
 */
export function applyConfiguration(
  def: KindDef,
  live: KObject | undefined,
  config: KObject,
  who: Writer,
  force: boolean,
  now: string,
): KObject {
  const shape = shapeOfKind(def);
  const liveBare = live ? bare(live) : {};
  const configBare = bare(config);
  const managed = liveManaged(live);
  const entry: ManagedEntry = {
    manager: who.manager,
    operation: 'Apply',
    apiVersion: who.apiVersion,
    set: ownable(def, who.subresource, fieldSetOf(configBare, shape)),
  };
  if (who.subresource) entry.subresource = who.subresource;
  const id = identity(entry);
  const prev = managed.get(id);
  if (prev?.time) entry.time = prev.time;
  managed.set(id, entry);
  let merged = mergeApplied(liveBare, configBare, shape) as KObject;
  if (prev && !prev.set.empty()) {
    let owned = new PathSet();
    for (const e of managed.values()) owned = owned.union(e.set);
    merged = removeUnowned(merged, prev.set, owned, shape) as KObject;
  }
  const c = compareObjects(liveBare, merged, shape);
  const changed = c.added.union(c.modified);
  const conflicts: { entry: ManagedEntry; paths: Path[] }[] = [];
  for (const [otherId, e] of managed) {
    if (otherId === id) continue;
    const x = e.set.intersection(changed);
    if (!x.empty()) conflicts.push({ entry: e, paths: x.paths() });
  }
  if (conflicts.length > 0 && !force) throw applyConflict(conflicts);
  for (const [otherId, e] of managed) {
    if (otherId === id) continue;
    e.set = e.set.difference(changed).difference(c.removed);
    if (e.set.empty()) managed.delete(otherId);
  }
  if (!prev || !isSameComparison(c)) entry.time = now;
  store(merged, managed);
  return merged;
}

/** A manager as Kubernetes names it in a conflict: `"m"`, `with subresource "s"`, `using v1` for updaters. */
function printManager(e: ManagedEntry): string {
  let s = JSON.stringify(e.manager);
  if (e.subresource) s += ` with subresource ${JSON.stringify(e.subresource)}`;
  if (e.operation === 'Update') s += ` using ${e.apiVersion}`;
  return s;
}

/** The 409 of an apply whose fields other managers own, with Kubernetes' message and one cause per field. */
export function applyConflict(conflicts: { entry: ManagedEntry; paths: Path[] }[]): StatusError {
  const sorted = [...conflicts].sort((a, b) => (identity(a.entry) < identity(b.entry) ? -1 : 1));
  const count = sorted.reduce((n, c) => n + c.paths.length, 0);
  const causes = sorted.flatMap((c) =>
    c.paths.map((p) => ({
      reason: 'FieldManagerConflict',
      message: `conflict with ${printManager(c.entry)}`,
      field: pathString(p),
    })),
  );
  const message =
    count === 1
      ? `Apply failed with 1 conflict: conflict with ${printManager(sorted[0].entry)}: ${pathString(sorted[0].paths[0])}`
      : `Apply failed with ${count} conflicts: ${sorted
          .flatMap((c) => [
            `conflicts with ${printManager(c.entry)}:`,
            ...c.paths.map((p) => `- ${pathString(p)}`),
          ])
          .join('\n')}`;
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Conflict',
    details: { causes },
    code: 409,
  });
}
