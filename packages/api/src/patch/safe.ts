// Building blocks that keep patching safe against hostile documents: property writes
// that can never reach a prototype ("__proto__", "constructor", "prototype" become
// ordinary own keys), iterative deep copies and a nesting limit checked up front so the
// recursive merges below cannot overflow the stack.

import { badRequest, StatusError } from '../status.js';

export type JsonObject = { [key: string]: JsonValue };
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/** Patches nested deeper than this are refused before any merging starts. */
export const MAX_PATCH_DEPTH = 1000;

/** A patch that is malformed (400) or that cannot be applied to the object (422). */
export class PatchError extends Error {
  constructor(
    message: string,
    /** 400 for a malformed patch document, 422 for one that does not apply. */
    readonly code: 400 | 422 = 422,
  ) {
    super(message);
    this.name = 'PatchError';
  }

  /** The Status the apiserver answers with: 400 BadRequest or 422 Invalid. */
  toStatusError(): StatusError {
    if (this.code === 400) return badRequest(this.message);
    return new StatusError({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: 'Invalid',
      code: 422,
    });
  }
}

export function isJsonObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Writes an own enumerable property; a "__proto__" key stays data, never a prototype. */
export function setOwn(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

export function getOwn(o: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

/** Deep copy without recursion, so any depth is fine. Non-JSON leaves are kept as is. */
export function deepClone<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  const root: unknown = Array.isArray(value) ? new Array(value.length) : {};
  const stack: [unknown, unknown][] = [[value, root]];
  while (stack.length > 0) {
    const [src, dst] = stack.pop()!;
    if (Array.isArray(src)) {
      const out = dst as unknown[];
      for (let i = 0; i < src.length; i++) {
        const v = src[i];
        if (typeof v === 'object' && v !== null) {
          const copy: unknown = Array.isArray(v) ? new Array(v.length) : {};
          out[i] = copy;
          stack.push([v, copy]);
        } else {
          out[i] = v;
        }
      }
    } else {
      const s = src as Record<string, unknown>;
      for (const k of Object.keys(s)) {
        const v = s[k];
        if (typeof v === 'object' && v !== null) {
          const copy: unknown = Array.isArray(v) ? new Array(v.length) : {};
          setOwn(dst as object, k, copy);
          stack.push([v, copy]);
        } else {
          setOwn(dst as object, k, v);
        }
      }
    }
  }
  return root as T;
}

/** Throws if the document nests deeper than `max` levels (checked without recursion). */
export function assertMaxDepth(doc: unknown, max: number = MAX_PATCH_DEPTH, what = 'patch'): void {
  const stack: [unknown, number][] = [[doc, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) throw new PatchError(`${what} is nested too deeply (more than ${max} levels)`, 400);
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push([c, depth + 1]);
  }
}
