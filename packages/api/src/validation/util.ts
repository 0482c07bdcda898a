// Small helpers shared by the validators: reading untrusted JSON defensively (a wrong
// type becomes a field error, never a crash) and common numeric checks.

import { type FieldError, fieldErrors } from '../field-errors.js';

export type Obj = Record<string, unknown>;

/** Kubernetes' message for a field that may not change. */
export const IMMUTABLE = 'field is immutable';

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads an own property only, so "__proto__" or "constructor" never reach the prototype. */
export function own(o: Obj | undefined, key: string): unknown {
  return o !== undefined && Object.hasOwn(o, key) ? o[key] : undefined;
}

/** The object at `v`, or undefined; a non-object records an error. */
export function objAt(v: unknown, path: string, errs: FieldError[]): Obj | undefined {
  if (v === undefined || v === null) return undefined;
  if (isObj(v)) return v;
  errs.push(fieldErrors.typeInvalid(path, v, 'must be an object'));
  return undefined;
}

export function arrAt(v: unknown, path: string, errs: FieldError[]): unknown[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v;
  errs.push(fieldErrors.typeInvalid(path, v, 'must be an array'));
  return [];
}

export function strAt(v: unknown, path: string, errs: FieldError[]): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  errs.push(fieldErrors.typeInvalid(path, v, 'must be a string'));
  return undefined;
}

export function intAt(v: unknown, path: string, errs: FieldError[]): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  errs.push(fieldErrors.typeInvalid(path, v, 'must be an integer'));
  return undefined;
}

export function boolAt(v: unknown, path: string, errs: FieldError[]): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  errs.push(fieldErrors.typeInvalid(path, v, 'must be a boolean'));
  return undefined;
}

/** A string-to-string map (labels, annotations, nodeSelector, data). */
export function stringMapAt(v: unknown, path: string, errs: FieldError[]): [string, string][] {
  const o = objAt(v, path, errs);
  if (!o) return [];
  const out: [string, string][] = [];
  for (const k of Object.keys(o)) {
    const val = o[k];
    if (typeof val !== 'string') errs.push(fieldErrors.typeInvalid(`${path}[${k}]`, val, 'must be a string'));
    else out.push([k, val]);
  }
  return out;
}

export function nonNegative(value: number | undefined, path: string, errs: FieldError[]): void {
  if (value !== undefined && value < 0)
    errs.push(fieldErrors.invalid(path, value, 'must be greater than or equal to 0'));
}

export function positive(value: number | undefined, path: string, errs: FieldError[]): void {
  if (value !== undefined && value <= 0)
    errs.push(fieldErrors.invalid(path, value, 'must be greater than 0'));
}

export function inRange(
  value: number | undefined,
  lo: number,
  hi: number,
  path: string,
  errs: FieldError[],
): void {
  if (value !== undefined && (value < lo || value > hi)) {
    errs.push(fieldErrors.invalid(path, value, `must be between ${lo} and ${hi}, inclusive`));
  }
}

/** Adds a NotSupported error unless the value is one of `allowed` (absent values are left to `required`). */
export function oneOf(
  value: string | undefined,
  allowed: readonly string[],
  path: string,
  errs: FieldError[],
): void {
  if (value !== undefined && !allowed.includes(value))
    errs.push(fieldErrors.notSupported(path, value, allowed));
}

/** Each message of a name check as an Invalid error on `path`. */
export function nameErrors(value: string, msgs: string[], path: string, errs: FieldError[]): void {
  for (const m of msgs) errs.push(fieldErrors.invalid(path, value, m));
}

/**
 * Structural equality of JSON values, iterative so hostile nesting cannot overflow the
 * stack. Key order does not matter; undefined-valued keys count as absent.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x) && Array.isArray(y)) {
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], y[i]]);
      continue;
    }
    const xo = x as Obj;
    const yo = y as Obj;
    const xk = Object.keys(xo).filter((k) => xo[k] !== undefined);
    const yk = Object.keys(yo).filter((k) => yo[k] !== undefined);
    if (xk.length !== yk.length) return false;
    for (const k of xk) {
      if (!Object.hasOwn(yo, k)) return false;
      stack.push([xo[k], yo[k]]);
    }
  }
  return true;
}
