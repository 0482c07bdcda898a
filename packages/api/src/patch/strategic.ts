// Strategic merge patch, the apply side (what the apiserver does with a PATCH of type
// application/strategic-merge-patch+json). Maps merge key by key with null deleting;
// lists tagged `merge` merge element by element on their merge key (or as sets of
// scalars); other lists are replaced. Directives:
//   $patch: replace | delete | merge          (in a map, or as a list element)
//   $retainKeys: [keys]                       (drop map keys not listed)
//   $setElementOrder/<field>: [...]           (final order of a merged list)
//   $deleteFromPrimitiveList/<field>: [...]   (remove scalars from a merged list)
// Null values with nothing to delete are dropped, as the apiserver does.

import {
  assertMaxDepth,
  deepClone,
  getOwn,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  PatchError,
  setOwn,
} from './safe.js';
import { EMPTY_SCHEMA, type FieldMeta, type PatchSchema, patchSchemaFor } from './schema.js';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ELEMENT_ORDER = '$setElementOrder/';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';

function fieldMeta(schema: PatchSchema, key: string): FieldMeta | undefined {
  return Object.hasOwn(schema.fields, key) ? schema.fields[key] : undefined;
}

function isDirectiveKey(key: string): boolean {
  return (
    key === DIRECTIVE ||
    key === RETAIN_KEYS ||
    key.startsWith(SET_ELEMENT_ORDER) ||
    key.startsWith(DELETE_FROM_PRIMITIVE_LIST)
  );
}

function stringList(v: JsonValue | undefined, what: string): JsonValue[] {
  if (!Array.isArray(v)) throw new PatchError(`${what} must be a list`, 400);
  return v;
}

// ---- ordering, as Kubernetes orders merged lists -------------------------------------

type Identity = (item: JsonValue) => JsonValue | undefined;

function identityFor(mergeKey: string | undefined): Identity {
  return mergeKey ? (item) => (isJsonObject(item) ? getOwn(item, mergeKey) : undefined) : (item) => item;
}

/**
 * A Map/Set key standing for a JSON value: scalars stand for themselves (so 1 and "1"
 * stay different, as in Kubernetes), objects for their JSON text. Every lookup is O(1),
 * so a hostile list of many thousand items costs linear time.
 */
type Key = string | number | boolean | null | undefined;

function keyOf(v: JsonValue | undefined): Key {
  if (v === undefined || v === null || typeof v !== 'object') return v;
  return `\u0000json:${JSON.stringify(v)}`;
}

/** Position of each identity in a list (first occurrence wins). */
class Positions {
  private readonly at = new Map<Key, number>();

  constructor(
    list: readonly JsonValue[],
    private readonly id: Identity,
  ) {
    list.forEach((item, i) => {
      const k = keyOf(id(item));
      if (k !== undefined && !this.at.has(k)) this.at.set(k, i);
    });
  }

  of(item: JsonValue): number {
    const k = keyOf(this.id(item));
    return k === undefined ? -1 : (this.at.get(k) ?? -1);
  }
}

/** Stable sort by position in `order`; items not in it keep their place after the rest. */
function sortByOrder(items: JsonValue[], order: Positions): JsonValue[] {
  const keyed = items.map((item, i) => ({ item, i, at: order.of(item) }));
  keyed.sort((a, b) => {
    const ai = a.at < 0 ? Number.MAX_SAFE_INTEGER : a.at;
    const bi = b.at < 0 ? Number.MAX_SAFE_INTEGER : b.at;
    return ai - bi || a.i - b.i;
  });
  return keyed.map((k) => k.item);
}

/**
 * Interleaves the server-only items (in server order) with the patched items (in patch
 * order): a server-only item goes first only if the server had it before the patched one.
 */
function mergeSorted(serverOnly: JsonValue[], patched: JsonValue[], serverOrder: Positions): JsonValue[] {
  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < patched.length) {
    if (j >= patched.length) out.push(serverOnly[i++]);
    else if (i >= serverOnly.length) out.push(patched[j++]);
    else {
      const li = serverOrder.of(serverOnly[i]);
      const ri = serverOrder.of(patched[j]);
      if (li >= 0 && ri >= 0 && li < ri) out.push(serverOnly[i++]);
      else out.push(patched[j++]);
    }
  }
  return out;
}

function normalizeOrder(
  merged: JsonValue[],
  orderList: readonly JsonValue[],
  serverList: readonly JsonValue[],
  id: Identity,
): JsonValue[] {
  const order = new Positions(orderList, id);
  const server = new Positions(serverList, id);
  const inOrder: JsonValue[] = [];
  const serverOnly: JsonValue[] = [];
  for (const item of merged) (order.of(item) >= 0 ? inOrder : serverOnly).push(item);
  return mergeSorted(sortByOrder(serverOnly, server), sortByOrder(inOrder, order), server);
}

// ---- lists ----------------------------------------------------------------------------

function hasObjects(list: readonly JsonValue[]): boolean {
  return list.some(isJsonObject);
}

/** Merges list contents without ordering; returns [merged, patch items with directives removed]. */
function mergeListContents(
  original: JsonValue[],
  patch: JsonValue[],
  meta: FieldMeta,
  field: string,
): { merged: JsonValue[]; order: JsonValue[]; replaced: boolean } {
  if (!hasObjects(patch) && !hasObjects(original)) {
    // A set of scalars: union in first-seen order.
    const merged: JsonValue[] = [];
    const seen = new Set<Key>();
    for (const v of [...original, ...patch]) {
      const k = keyOf(v);
      if (seen.has(k)) continue;
      seen.add(k);
      merged.push(deepClone(v));
    }
    return { merged, order: patch, replaced: false };
  }
  const mergeKey = meta.mergeKey;
  if (!mergeKey) throw new PatchError(`cannot merge lists without merge key for ${field}`);
  const elementSchema = meta.schema ?? EMPTY_SCHEMA;

  // Directive elements first: {$patch: replace} swaps the whole list, {$patch: delete, key: v} drops one.
  const plain: JsonObject[] = [];
  let replace = false;
  const deletions = new Set<Key>();
  for (const item of patch) {
    if (!isJsonObject(item))
      throw new PatchError(`${field}: list of objects has a non-object element ${JSON.stringify(item)}`);
    const directive = getOwn(item, DIRECTIVE);
    if (directive === 'replace') replace = true;
    else if (directive === 'delete') {
      const key = getOwn(item, mergeKey);
      if (key === undefined)
        throw new PatchError(
          `${field}: delete directive ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`,
        );
      deletions.add(keyOf(key));
    } else if (directive === 'merge') {
      throw new PatchError(`${field}: merging lists cannot yet be specified in the patch`);
    } else if (directive !== undefined) {
      throw new PatchError(`${field}: unknown patch type ${JSON.stringify(directive)}`, 400);
    } else {
      if (getOwn(item, mergeKey) === undefined) {
        throw new PatchError(
          `${field}: map ${JSON.stringify(item).slice(0, 200)} does not contain declared merge key: ${mergeKey}`,
        );
      }
      plain.push(item);
    }
  }
  if (replace) {
    return { merged: plain.map((p) => mergeMap({}, p, elementSchema)), order: plain, replaced: true };
  }
  const keyOfItem = (o: JsonValue) => keyOf(isJsonObject(o) ? getOwn(o, mergeKey) : undefined);
  const merged = original.filter((o) => !deletions.has(keyOfItem(o)));
  // Where each merge key sits in the merged list (first occurrence, as Kubernetes finds it).
  const position = new Map<Key, number>();
  merged.forEach((o, i) => {
    const k = keyOfItem(o);
    if (k !== undefined && !position.has(k)) position.set(k, i);
  });
  for (const p of plain) {
    const k = keyOfItem(p);
    const at = position.get(k);
    if (at !== undefined) {
      merged[at] = mergeMap(merged[at] as JsonObject, p, elementSchema);
    } else {
      position.set(k, merged.length);
      merged.push(mergeMap({}, p, elementSchema));
    }
  }
  return { merged, order: plain, replaced: false };
}

function mergeList(original: JsonValue[], patch: JsonValue[], meta: FieldMeta, field: string): JsonValue[] {
  const { merged, order, replaced } = mergeListContents(original, patch, meta, field);
  if (replaced) return merged;
  return normalizeOrder(merged, order, original, identityFor(hasObjects(merged) ? meta.mergeKey : undefined));
}

// ---- maps -----------------------------------------------------------------------------

/** A patch value with its directives applied against nothing (a field the original lacks). */
function fresh(value: JsonValue, meta: FieldMeta | undefined, field: string): JsonValue {
  if (isJsonObject(value)) return mergeMap({}, value, meta?.schema ?? EMPTY_SCHEMA);
  if (Array.isArray(value) && meta?.strategy === 'merge') return mergeList([], value, meta, field);
  return deepClone(value);
}

/** Merges `patch` into `original` (which this owns and may modify) and returns the result. */
function mergeMap(original: JsonObject, patch: JsonObject, schema: PatchSchema): JsonObject {
  const directive = getOwn(patch, DIRECTIVE);
  if (directive === 'replace') {
    const replaced: JsonObject = {};
    for (const k of Object.keys(patch)) if (k !== DIRECTIVE) setOwn(replaced, k, deepClone(patch[k]));
    return replaced;
  }
  if (directive === 'delete') return {};
  if (directive !== undefined && directive !== 'merge') {
    throw new PatchError(
      `unknown patch type ${JSON.stringify(directive)} in ${JSON.stringify(patch).slice(0, 200)}`,
      400,
    );
  }

  const retain = getOwn(patch, RETAIN_KEYS);
  if (retain !== undefined) {
    const keep = new Set(stringList(retain, RETAIN_KEYS).filter((k): k is string => typeof k === 'string'));
    for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k];
  }

  const handled = new Set<string>();
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const field = key.slice(SET_ELEMENT_ORDER.length);
    const order = stringList(patch[key], key);
    const meta = fieldMeta(schema, field);
    if (meta?.strategy !== 'merge') continue;
    const current = getOwn(original, field);
    const base = Array.isArray(current) ? current : [];
    const patchList = getOwn(patch, field);
    // An order for a list neither side has changes nothing.
    if (current === undefined && patchList === undefined) continue;
    let merged = base;
    let replaced = false;
    if (Array.isArray(patchList)) {
      const result = mergeListContents(base, patchList, meta, field);
      merged = result.merged;
      replaced = result.replaced;
    } else if (patchList === null) {
      continue;
    }
    const id = identityFor(hasObjects(merged) || hasObjects(order) ? meta.mergeKey : undefined);
    setOwn(
      original,
      field,
      replaced ? sortByOrder(merged, new Positions(order, id)) : normalizeOrder(merged, order, base, id),
    );
    handled.add(field);
  }

  for (const key of Object.keys(patch)) {
    if (key.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      const field = key.slice(DELETE_FROM_PRIMITIVE_LIST.length);
      const remove = new Set(stringList(patch[key], key).map(keyOf));
      const current = getOwn(original, field);
      if (Array.isArray(current))
        setOwn(
          original,
          field,
          current.filter((v) => !remove.has(keyOf(v))),
        );
      continue;
    }
    if (isDirectiveKey(key) || handled.has(key)) continue;
    const value = patch[key];
    if (value === null) {
      delete original[key];
      continue;
    }
    const meta = fieldMeta(schema, key);
    const current = getOwn(original, key);
    if (current === undefined || current === null) {
      setOwn(original, key, fresh(value, meta, key));
    } else if (isJsonObject(value) && isJsonObject(current)) {
      setOwn(original, key, mergeMap(current, value, meta?.schema ?? EMPTY_SCHEMA));
    } else if (Array.isArray(value) && Array.isArray(current) && meta?.strategy === 'merge') {
      setOwn(original, key, mergeList(current, value, meta, key));
    } else {
      // Scalars, atomic lists and values whose type changed are replaced.
      setOwn(original, key, fresh(value, meta, key));
    }
  }
  return original;
}

/**
 * Applies a strategic merge patch to a copy of `original` using `schema` (see
 * patchSchemaFor); without a schema every list is atomic, as for unknown types.
 */
export function applyStrategicMergePatch(original: unknown, patch: unknown, schema?: PatchSchema): JsonValue {
  if (!isJsonObject(patch)) throw new PatchError('strategic merge patch must be a JSON object', 400);
  assertMaxDepth(patch);
  const base: JsonObject = isJsonObject(original) ? deepClone(original) : {};
  let effective = schema;
  if (!effective) {
    const apiVersion = getOwn(base, 'apiVersion');
    const kind = getOwn(base, 'kind');
    if (typeof apiVersion === 'string' && typeof kind === 'string')
      effective = patchSchemaFor(apiVersion, kind);
  }
  return mergeMap(base, patch, effective ?? EMPTY_SCHEMA);
}
