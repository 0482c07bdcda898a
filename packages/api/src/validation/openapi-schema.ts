// Custom objects against their CRD version's structural OpenAPI v3 schema, as
// Kubernetes' apiextensions-apiserver treats them: unknown fields pruned (and
// reported, for fieldValidation=Strict), `default`s applied, then validation
// with kube-openapi's messages and field paths. Pure: no I/O.
import { type FieldError, fieldErrors } from '../field-errors.js';
import { isObj, jsonEqual, type Obj } from './util.js';

/** The subset of JSONSchemaProps a structural schema uses. */
export interface OpenApiSchema {
  type?: string;
  format?: string;
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema | boolean;
  items?: OpenApiSchema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  multipleOf?: number;
  nullable?: boolean;
  default?: unknown;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/** What an embedded resource (and the root) keeps beside its schema's properties. */
const TYPE_META = ['apiVersion', 'kind', 'metadata'];

/**
 * Drops the fields the schema does not know (returning their paths), where no
 * x-kubernetes-preserve-unknown-fields keeps them. `root` keeps apiVersion, kind
 * and metadata, which ObjectMeta's own rules cover.
 */
export function prune(value: unknown, schema: OpenApiSchema, path = '', root = true): string[] {
  const unknown: string[] = [];
  pruneInto(value, schema, path, root, unknown);
  return unknown;
}

function pruneInto(value: unknown, s: OpenApiSchema, path: string, keepMeta: boolean, out: string[]): void {
  if (Array.isArray(value)) {
    if (s.items) for (const [i, v] of value.entries()) pruneInto(v, s.items, `${path}[${i}]`, false, out);
    return;
  }
  if (!isObj(value)) return;
  const embedded = keepMeta || s['x-kubernetes-embedded-resource'] === true;
  const props = s.properties ?? {};
  const additional = typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
  for (const k of Object.keys(value)) {
    if (embedded && TYPE_META.includes(k) && !Object.hasOwn(props, k)) continue;
    const child = Object.hasOwn(props, k) ? props[k] : additional;
    if (child) pruneInto(value[k], child, join(path, k), false, out);
    else if (s['x-kubernetes-preserve-unknown-fields'] !== true && s.additionalProperties !== true) {
      out.push(join(path, k));
      delete value[k];
    }
  }
}

/** Sets every absent field that has a `default` (a deep copy), in place. */
export function applySchemaDefaults(value: unknown, s: OpenApiSchema): void {
  if (Array.isArray(value)) {
    if (s.items) for (const v of value) applySchemaDefaults(v, s.items);
    return;
  }
  if (!isObj(value)) return;
  for (const [k, child] of Object.entries(s.properties ?? {})) {
    if (value[k] === undefined && child.default !== undefined) value[k] = structuredClone(child.default);
    if (value[k] !== undefined) applySchemaDefaults(value[k], child);
  }
  if (typeof s.additionalProperties === 'object') {
    const add = s.additionalProperties;
    for (const k of Object.keys(value)) {
      if (!Object.hasOwn(s.properties ?? {}, k)) applySchemaDefaults(value[k], add);
    }
  }
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function hasType(v: unknown, t: string): boolean {
  switch (t) {
    case 'object':
      return isObj(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    default:
      return true;
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const INT32 = [-2147483648, 2147483647] as const;

/** A format kube-openapi checks; unknown formats pass, as there. */
function formatOk(v: unknown, format: string): boolean {
  switch (format) {
    case 'int32':
      return typeof v !== 'number' || (v >= INT32[0] && v <= INT32[1]);
    case 'int64':
      return typeof v !== 'number' || Number.isSafeInteger(v);
    case 'date':
      return typeof v !== 'string' || (DATE.test(v) && !Number.isNaN(Date.parse(v)));
    case 'date-time':
      return typeof v !== 'string' || (DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));
    default:
      return true;
  }
}

/** Every way `value` breaks `schema`, with Kubernetes' field paths and messages. */
export function validateAgainstSchema(value: unknown, schema: OpenApiSchema, path = ''): FieldError[] {
  const errs: FieldError[] = [];
  check(value, schema, path, errs, true);
  return errs;
}

function check(v: unknown, s: OpenApiSchema, path: string, errs: FieldError[], root = false): void {
  const where = path || '<root>';
  if (v === null) {
    if (s.nullable || s['x-kubernetes-preserve-unknown-fields'] || !s.type) return;
    errs.push(fieldErrors.typeInvalid(path, 'null', `${where} in body must be of type ${s.type}: "null"`));
    return;
  }
  if (s['x-kubernetes-int-or-string']) {
    if (typeof v !== 'string' && !(typeof v === 'number' && Number.isInteger(v))) {
      errs.push(
        fieldErrors.typeInvalid(
          path,
          typeName(v),
          `${where} in body must be of type integer,string: "${typeName(v)}"`,
        ),
      );
      return;
    }
  } else if (s.type && !hasType(v, s.type)) {
    errs.push(
      fieldErrors.typeInvalid(
        path,
        typeName(v),
        `${where} in body must be of type ${s.type}: "${typeName(v)}"`,
      ),
    );
    return;
  }
  if (s.format && !formatOk(v, s.format)) {
    errs.push(
      fieldErrors.typeInvalid(path, v, `${where} in body must be of type ${s.format}: ${JSON.stringify(v)}`),
    );
  }
  if (s.enum && !s.enum.some((e) => jsonEqual(e, v))) {
    errs.push(
      fieldErrors.notSupported(
        path,
        v,
        s.enum.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))),
      ),
    );
  }
  if (typeof v === 'number') checkNumber(v, s, path, errs);
  if (typeof v === 'string') checkString(v, s, path, errs);
  if (Array.isArray(v)) checkArray(v, s, path, errs);
  if (isObj(v)) checkObject(v, s, path, errs, root);
}

function checkNumber(v: number, s: OpenApiSchema, path: string, errs: FieldError[]): void {
  if (s.maximum !== undefined) {
    if (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum) {
      const op = s.exclusiveMaximum ? 'less than' : 'less than or equal to';
      errs.push(fieldErrors.invalid(path, v, `should be ${op} ${s.maximum}`));
    }
  }
  if (s.minimum !== undefined) {
    if (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum) {
      const op = s.exclusiveMinimum ? 'greater than' : 'greater than or equal to';
      errs.push(fieldErrors.invalid(path, v, `should be ${op} ${s.minimum}`));
    }
  }
  if (s.multipleOf !== undefined && s.multipleOf > 0 && !Number.isInteger(v / s.multipleOf)) {
    errs.push(fieldErrors.invalid(path, v, `should be a multiple of ${s.multipleOf}`));
  }
}

function checkString(v: string, s: OpenApiSchema, path: string, errs: FieldError[]): void {
  const len = [...v].length;
  if (s.maxLength !== undefined && len > s.maxLength) {
    errs.push({
      type: 'FieldValueTooLong',
      field: path,
      badValue: v,
      detail: `may not be more than ${s.maxLength} bytes`,
    });
  }
  if (s.minLength !== undefined && len < s.minLength) {
    errs.push(fieldErrors.invalid(path, v, `should be at least ${s.minLength} chars long`));
  }
  if (s.pattern !== undefined) {
    let re: RegExp | undefined;
    try {
      re = new RegExp(s.pattern, 'u');
    } catch {
      re = undefined;
    }
    if (re && !re.test(v)) errs.push(fieldErrors.invalid(path, v, `should match '${s.pattern}'`));
  }
}

function checkArray(v: unknown[], s: OpenApiSchema, path: string, errs: FieldError[]): void {
  if (s.maxItems !== undefined && v.length > s.maxItems)
    errs.push(fieldErrors.tooMany(path, v.length, s.maxItems));
  if (s.minItems !== undefined && v.length < s.minItems) {
    errs.push(fieldErrors.invalid(path, v.length, `should have at least ${s.minItems} items`));
  }
  if (s.items) for (const [i, item] of v.entries()) check(item, s.items, `${path}[${i}]`, errs);
  const listType = s['x-kubernetes-list-type'];
  if (listType === 'set') {
    for (let i = 0; i < v.length; i++) {
      if (v.slice(0, i).some((o) => jsonEqual(o, v[i])))
        errs.push(fieldErrors.duplicate(`${path}[${i}]`, v[i]));
    }
  } else if (listType === 'map') {
    const keys = s['x-kubernetes-list-map-keys'] ?? [];
    const seen: Obj[] = [];
    for (const [i, item] of v.entries()) {
      if (!isObj(item)) continue;
      const key: Obj = Object.fromEntries(keys.map((k) => [k, item[k] ?? s.items?.properties?.[k]?.default]));
      if (seen.some((o) => jsonEqual(o, key))) errs.push(fieldErrors.duplicate(`${path}[${i}]`, key));
      seen.push(key);
    }
  }
}

function checkObject(v: Obj, s: OpenApiSchema, path: string, errs: FieldError[], root: boolean): void {
  for (const r of s.required ?? []) {
    if (v[r] === undefined) errs.push(fieldErrors.required(join(path, r)));
  }
  const n = Object.keys(v).length;
  if (s.maxProperties !== undefined && n > s.maxProperties)
    errs.push(fieldErrors.tooMany(path, n, s.maxProperties));
  if (s.minProperties !== undefined && n < s.minProperties) {
    errs.push(fieldErrors.invalid(path, n, `should have at least ${s.minProperties} properties`));
  }
  const props = s.properties ?? {};
  for (const [k, child] of Object.entries(v)) {
    if (root && TYPE_META.includes(k)) continue;
    const cs = Object.hasOwn(props, k)
      ? props[k]
      : typeof s.additionalProperties === 'object'
        ? s.additionalProperties
        : undefined;
    if (cs) check(child, cs, join(path, k), errs);
  }
  if (s['x-kubernetes-embedded-resource']) {
    for (const f of ['apiVersion', 'kind']) {
      if (typeof v[f] !== 'string' || !v[f])
        errs.push(fieldErrors.required(join(path, f), 'must not be empty'));
    }
  }
}
