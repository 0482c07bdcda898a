// x-kubernetes-validations: the CEL rules of a CRD's structural schema, run on
// the value at the rule's node as `self` (and the stored value as `oldSelf`: a
// rule that names oldSelf is a transition rule, checked on updates only), with
// the messages and field paths of Kubernetes' apiextensions validation.
import { parse } from '@marcbachmann/cel-js';
import { type FieldError, fieldErrors } from '../field-errors.js';
import { isObj } from './util.js';

export interface CelRule {
  rule: string;
  message?: string;
  fieldPath?: string;
  reason?: string;
}

/** The schema nodes CEL rules need: their rules, and how to walk below them. */
export interface CelSchema {
  type?: string;
  properties?: Record<string, CelSchema>;
  additionalProperties?: CelSchema | boolean;
  items?: CelSchema;
  'x-kubernetes-validations'?: CelRule[];
}

type Program = ReturnType<typeof parse>;
const programs = new Map<string, Program | Error>();

function compile(rule: string): Program | Error {
  let p = programs.get(rule);
  if (!p) {
    try {
      p = parse(rule);
    } catch (err) {
      p = err as Error;
    }
    if (programs.size > 10_000) programs.clear();
    programs.set(rule, p);
  }
  return p;
}

/** A rule's compile error (for a CRD's validation), undefined when it compiles. */
export function celCompileError(rule: string): string | undefined {
  const p = compile(rule);
  return p instanceof Error ? p.message.split('\n')[0] : undefined;
}

/** JSON integers as CEL ints (BigInt) where the schema says integer, so int arithmetic holds. */
function toCel(v: unknown, s: CelSchema | undefined): unknown {
  if (typeof v === 'number') return s?.type === 'integer' && Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map((x) => toCel(x, s?.items));
  if (isObj(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const child =
        s?.properties?.[k] ??
        (typeof s?.additionalProperties === 'object' ? s.additionalProperties : undefined);
      out[k] = toCel(x, child);
    }
    return out;
  }
  return v;
}

function typeName(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return v === null ? 'null' : typeof v;
}

const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

/**
 * Every rule `value` breaks, walking the schema. Without `old` (a create, or the
 * object on its own) transition rules are skipped; with it (an update) only the
 * transition rules run, the others having run on the object on its own.
 */
export function validateCelRules(value: unknown, schema: CelSchema, old?: unknown, path = ''): FieldError[] {
  const errs: FieldError[] = [];
  walk(value, old, old !== undefined, schema, path, errs);
  return errs;
}

function walk(
  v: unknown,
  old: unknown,
  update: boolean,
  s: CelSchema,
  path: string,
  errs: FieldError[],
): void {
  if (v === undefined || v === null) return;
  for (const r of s['x-kubernetes-validations'] ?? []) {
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition === update && (!transition || old !== undefined))
      checkRule(r, v, old, transition, s, path, errs);
  }
  if (isObj(v)) {
    const oldObj = isObj(old) ? old : undefined;
    for (const [k, child] of Object.entries(v)) {
      const cs =
        s.properties?.[k] ??
        (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      if (cs) walk(child, oldObj?.[k], update, cs, join(path, k), errs);
    }
  } else if (Array.isArray(v) && s.items) {
    // Items are correlated with the old list by position only when it is the same length.
    const oldArr = Array.isArray(old) && old.length === v.length ? old : undefined;
    for (const [i, item] of v.entries()) walk(item, oldArr?.[i], update, s.items, `${path}[${i}]`, errs);
  }
}

function checkRule(
  r: CelRule,
  v: unknown,
  old: unknown,
  transition: boolean,
  s: CelSchema,
  path: string,
  errs: FieldError[],
): void {
  const p = compile(r.rule);
  const at = r.fieldPath
    ? `${path}${r.fieldPath.startsWith('.') ? '' : '.'}${r.fieldPath}`.replace(/^\./, '')
    : path;
  if (p instanceof Error) {
    errs.push(fieldErrors.invalid(at, typeName(v), `compilation failed: ${p.message.split('\n')[0]}`));
    return;
  }
  let ok: unknown;
  try {
    ok = p({ self: toCel(v, s), ...(transition ? { oldSelf: toCel(old, s) } : {}) });
  } catch (err) {
    errs.push(
      fieldErrors.invalid(at, typeName(v), `rule evaluation error: ${(err as Error).message.split('\n')[0]}`),
    );
    return;
  }
  if (ok !== true) {
    const message = r.message || `failed rule: ${r.rule}`;
    errs.push(
      r.reason === 'FieldValueForbidden'
        ? fieldErrors.forbidden(at, message)
        : r.reason === 'FieldValueRequired'
          ? fieldErrors.required(at, message)
          : fieldErrors.invalid(at, typeName(v), message),
    );
  }
}
