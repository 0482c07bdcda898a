// The patch `kubectl apply` sends: a strategic merge patch computed three ways
// from the last configuration applied (stored in an annotation), the new
// manifest and the live object. Fields the manifest dropped since last time
// are deleted; fields it sets are set where the live object differs; fields
// only the live object has (set by the server or other actors) are left alone.
// Which lists merge by which key comes from @kubit/api's patch schema, the same
// table the apiserver applies the patch with.

import { type PatchSchema, patchSchemaFor } from '@kubit/api';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

type Json = unknown;
type JsonObject = Record<string, Json>;

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function canonical(v: Json): Json {
  if (Array.isArray(v)) return v.map(canonical);
  if (isObject(v)) {
    const o: JsonObject = {};
    for (const k of Object.keys(v).sort()) o[k] = canonical(v[k]);
    return o;
  }
  return v;
}

export function deepEqual(a: Json, b: Json): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function findByKey(list: unknown, key: string, value: unknown): JsonObject | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.find((x) => isObject(x) && deepEqual(x[key], value)) as JsonObject | undefined;
}

function diffList(meta: FieldMeta | undefined, orig: Json, mod: Json[], cur: Json): Json[] | undefined {
  const key = meta?.strategy === 'merge' ? meta.mergeKey : undefined;
  if (key && mod.every((m) => isObject(m) && m[key] !== undefined)) {
    const patch: Json[] = [];
    for (const m of mod as JsonObject[]) {
      const c = findByKey(cur, key, m[key]);
      if (!c) {
        patch.push(m);
        continue;
      }
      const sub = diffObject(findByKey(orig, key, m[key]), m, c, meta?.schema);
      if (Object.keys(sub).length > 0) patch.push({ [key]: m[key], ...sub });
    }
    if (Array.isArray(orig)) {
      for (const o of orig) {
        if (!isObject(o) || o[key] === undefined) continue;
        if (!findByKey(mod, key, o[key]) && findByKey(cur, key, o[key]))
          patch.push({ [key]: o[key], $patch: 'delete' });
      }
    }
    return patch.length > 0 ? patch : undefined;
  }
  // Atomic lists (and keyed lists whose elements lack the key) are replaced whole.
  return deepEqual(mod, cur) ? undefined : mod;
}

type FieldMeta = PatchSchema['fields'][string];

/**
 * The patch turning `cur` into `mod`, deleting what `orig` had and `mod` dropped.
 * `schema` says which lists merge (by key, or as sets of scalars); others are atomic.
 */
export function diffObject(orig: Json, mod: JsonObject, cur: Json, schema?: PatchSchema): JsonObject {
  const patch: JsonObject = {};
  const o = isObject(orig) ? orig : {};
  const c = isObject(cur) ? cur : {};
  for (const k of Object.keys(o)) {
    if (!Object.hasOwn(mod, k) && Object.hasOwn(c, k)) patch[k] = null;
  }
  for (const [k, m] of Object.entries(mod)) {
    const cv = c[k];
    const meta = schema?.fields[k];
    if (m === null) {
      if (Object.hasOwn(c, k)) patch[k] = null;
    } else if (isObject(m) && isObject(cv)) {
      const sub = diffObject(o[k], m, cv, meta?.schema);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (Array.isArray(m) && meta?.strategy === 'merge' && !meta.mergeKey) {
      // A set of scalars: add what is new, remove what the manifest dropped.
      const curList = Array.isArray(cv) ? cv : [];
      const adds = m.filter((x) => !curList.some((y) => deepEqual(x, y)));
      const origList = Array.isArray(o[k]) ? (o[k] as Json[]) : [];
      const dels = origList.filter(
        (x) => !m.some((y) => deepEqual(x, y)) && curList.some((y) => deepEqual(x, y)),
      );
      if (adds.length > 0) patch[k] = adds;
      if (dels.length > 0) patch[`$deleteFromPrimitiveList/${k}`] = dels;
    } else if (Array.isArray(m) && Array.isArray(cv)) {
      const lp = diffList(meta, o[k], m, cv);
      if (lp !== undefined) patch[k] = lp;
    } else if (!deepEqual(m, cv)) {
      patch[k] = m;
    }
  }
  return patch;
}

/** The annotation value: the manifest as compact JSON with sorted keys, without the annotation itself. */
export function lastAppliedFor(manifest: JsonObject): string {
  const copy = structuredClone(manifest);
  const meta = isObject(copy.metadata) ? copy.metadata : undefined;
  if (meta && isObject(meta.annotations)) {
    delete meta.annotations[LAST_APPLIED];
    if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
  }
  return `${JSON.stringify(canonical(copy))}\n`;
}

/** The manifest with its last-applied annotation set (what create sends and what apply diffs against). */
export function withLastApplied(manifest: JsonObject): JsonObject {
  const copy = structuredClone(manifest);
  const meta: JsonObject = isObject(copy.metadata) ? copy.metadata : {};
  copy.metadata = meta;
  const annotations: JsonObject = isObject(meta.annotations) ? meta.annotations : {};
  annotations[LAST_APPLIED] = lastAppliedFor(manifest);
  meta.annotations = annotations;
  return copy;
}

/** The strategic merge patch apply sends ({} when nothing changes). */
export function applyPatch(manifest: JsonObject, live: JsonObject): JsonObject {
  const annotations =
    isObject(live.metadata) && isObject(live.metadata.annotations) ? live.metadata.annotations : {};
  const raw = annotations[LAST_APPLIED];
  let original: Json;
  if (typeof raw === 'string') {
    try {
      original = JSON.parse(raw);
    } catch {
      original = undefined;
    }
  }
  const schema = patchSchemaFor(String(manifest.apiVersion ?? ''), String(manifest.kind ?? ''));
  return diffObject(original, withLastApplied(manifest), live, schema);
}
