// Decoding a request body into an object of a kind (schema, unknown fields,
// kind/apiVersion/name/namespace checks) and the metadata rules shared by all
// kinds (names, labels, system fields).
import {
  badRequest,
  type FieldError,
  invalid,
  nameIsDNSSubdomain,
  validateObject,
  validateObjectMeta,
  validateObjectMetaUpdate,
  validateUpdate,
} from '@kubit/api';
import { groupVersion, type KindDef } from './kinds/types.js';
import type { FieldScan } from './model/duplicates.js';
import { conform, type DecodeProblems } from './model/schema.js';
import type { KObject } from './storage.js';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export function parseFieldValidation(v: string | undefined): FieldValidation {
  if (v === undefined || v === '') return 'Warn';
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  throw badRequest(`fieldValidation parameter must be one of Ignore, Warn or Strict, not "${v}"`);
}

/**
 * Checks a decoded body against the kind's schema. Returns the object without
 * unknown fields; warnings collects what Warn mode reports.
 */
export function decodeObject(
  def: Pick<KindDef, 'group' | 'version' | 'kind' | 'schema' | 'prune'>,
  raw: unknown,
  mode: FieldValidation,
  warnings: string[],
  /** The body's field scan (JSON bodies): its duplicate fields and the order of its fields. */
  scan?: FieldScan,
): KObject {
  const gv = groupVersion(def);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw badRequest(
      `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the body must be a JSON object`,
    );
  }
  const r = raw as Record<string, unknown>;
  if (r.apiVersion !== undefined && r.apiVersion !== gv) {
    throw badRequest(
      `the API version in the data (${String(r.apiVersion)}) does not match the expected API version (${gv})`,
    );
  }
  if (r.kind !== undefined && r.kind !== def.kind) {
    throw badRequest(
      `the kind in the data (${String(r.kind)}) does not match the expected kind (${def.kind})`,
    );
  }
  const probs: DecodeProblems = { unknown: [], types: [] };
  const obj = conform(raw, def.schema, '', probs) as KObject;
  if (probs.types.length === 0 && def.prune) probs.unknown.push(...def.prune(obj));
  if (probs.types.length > 0) {
    throw badRequest(
      `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: ${probs.types[0]}`,
    );
  }
  const problems = fieldProblems(probs.unknown, scan);
  if (problems.length > 0) {
    if (mode === 'Strict') {
      throw badRequest(
        `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${problems.join(', ')}`,
      );
    }
    if (mode === 'Warn') warnings.push(...problems);
  }
  obj.apiVersion = gv;
  obj.kind = def.kind;
  obj.metadata ??= {};
  dropEmptyMetadata(obj.metadata);
  return obj;
}

/** Unknown and duplicate fields, each named once, in the order the body has them. */
function fieldProblems(unknown: string[], scan: FieldScan | undefined): string[] {
  const all = [
    ...unknown.map((path) => ({ text: `unknown field "${path}"`, at: scan?.order.get(path) ?? Infinity })),
    ...(scan?.duplicates ?? []).map((d) => ({ text: `duplicate field "${d.path}"`, at: d.at })),
  ];
  const seen = new Set<string>();
  return all
    .sort((a, b) => a.at - b.at)
    .map((p) => p.text)
    .filter((t) => !seen.has(t) && seen.add(t));
}

/**
 * ObjectMeta's maps and lists that Kubernetes' JSON omits when empty (omitempty).
 * Not managedFields: an empty list there asks to clear them, and the field manager,
 * which writes them on every write, drops an empty list itself.
 */
const OMITTED_WHEN_EMPTY = ['labels', 'annotations', 'ownerReferences', 'finalizers'];

/**
 * Drops empty labels, annotations, owner references and finalizers, as
 * Kubernetes stores them. A patch that removes the last annotation
 * would otherwise leave `annotations: {}`, and `kubectl diff` would show a
 * change where there is none.
 */
function dropEmptyMetadata(m: Record<string, unknown>): void {
  for (const f of OMITTED_WHEN_EMPTY) {
    const v = m[f];
    const empty = Array.isArray(v)
      ? v.length === 0
      : v !== null && typeof v === 'object' && Object.keys(v).length === 0;
    if (empty) delete m[f];
  }
}

/** All validation of a new object; throws 422 Invalid with every problem. */
/** A custom resource's ObjectMeta rules: those every kind gets, names as DNS subdomains. */
function customMetaErrors(def: KindDef, o: KObject, old?: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const r = o as Record<string, unknown>;
  if (old)
    validateObjectMetaUpdate(r, old as Record<string, unknown>, def.namespaced, nameIsDNSSubdomain, errs);
  else validateObjectMeta(r, def.namespaced, nameIsDNSSubdomain, errs);
  return errs;
}

export function validateNew(def: KindDef, o: KObject): void {
  const base = def.customResource ? customMetaErrors(def, o) : validateObject(o);
  const errs = [...base, ...(def.validate?.(o) ?? [])];
  if (errs.length > 0) {
    throw invalid({ group: def.group, kind: def.kind }, String(o.metadata?.name ?? ''), errs);
  }
}

export function validateChange(def: KindDef, o: KObject, old: KObject): void {
  const errs = [
    ...(def.customResource ? customMetaErrors(def, o, old) : validateUpdate(o, old)),
    ...(def.validate?.(o) ?? []),
    ...(def.validateUpdate?.(o, old) ?? []),
  ];
  if (errs.length > 0) {
    throw invalid({ group: def.group, kind: def.kind }, String(o.metadata?.name ?? ''), errs);
  }
}

/** Fields only the server sets: copied from the stored object over whatever the client sent. */
export function keepSystemMetadata(o: KObject, old: KObject): void {
  o.metadata ??= {};
  const m = o.metadata;
  const om = old.metadata ?? {};
  for (const f of [
    'uid',
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
    'generation',
    'selfLink',
  ]) {
    if (om[f] === undefined) delete m[f];
    else m[f] = om[f];
  }
  if (om.generateName !== undefined && m.generateName === undefined) m.generateName = om.generateName;
}

export function sameIgnoringVersion(a: KObject, b: KObject): boolean {
  const strip = (o: KObject) => ({ ...o, metadata: { ...(o.metadata ?? {}), resourceVersion: undefined } });
  return sameJson(strip(a), strip(b));
}

/**
 * Whether two JSON values are equal regardless of object key order: clients
 * (Go's among them) serialize fields in their own order, and reordering alone
 * is no change (no write, no generation bump).
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_key, value: unknown) => {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
    // No prototype: a "__proto__" key is data here, never a prototype write.
    const sorted: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
    return sorted;
  });
}

const NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';

export function generateNameSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return s;
}

/** The last second formatted: most calls in a busy second ask for the same text. */
let lastSecond = Number.NaN;
let lastText = '';

export function nowRfc3339(ms = Date.now()): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastText = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    lastSecond = second;
  }
  return lastText;
}
