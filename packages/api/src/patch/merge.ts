// JSON merge patch (RFC 7386): objects merge key by key, null deletes, anything else
// replaces. Also the inverse, a merge patch that turns one document into another.

import { jsonEqual } from '../validation/util.js';
import {
  assertMaxDepth,
  deepClone,
  getOwn,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  setOwn,
} from './safe.js';

function mergeInto(target: JsonObject, patch: JsonObject): void {
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) {
      delete target[key];
      continue;
    }
    if (isJsonObject(value)) {
      const current = getOwn(target, key);
      const base: JsonObject = isJsonObject(current) ? current : {};
      mergeInto(base, value);
      setOwn(target, key, base);
    } else {
      setOwn(target, key, deepClone(value));
    }
  }
}

/** Applies a merge patch; neither input is modified and the result shares nothing with them. */
export function applyMergePatch(target: unknown, patch: unknown): JsonValue {
  assertMaxDepth(patch);
  if (!isJsonObject(patch)) return deepClone(patch as JsonValue);
  const result: JsonObject = isJsonObject(target) ? deepClone(target) : {};
  mergeInto(result, patch);
  return result;
}

function diff(original: JsonObject, modified: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const key of Object.keys(original)) {
    if (!Object.hasOwn(modified, key)) setOwn(patch, key, null);
  }
  for (const key of Object.keys(modified)) {
    const m = modified[key];
    const o = getOwn(original, key);
    if (o !== undefined && jsonEqual(o, m)) continue;
    if (isJsonObject(o) && isJsonObject(m)) setOwn(patch, key, diff(o, m));
    else setOwn(patch, key, deepClone(m));
  }
  return patch;
}

/**
 * The merge patch that turns `original` into `modified`. Merge patches cannot set a
 * member to null, so nulls inside `modified` objects come out as deletions.
 */
export function createMergePatch(original: unknown, modified: unknown): JsonValue {
  assertMaxDepth(original, undefined, 'document');
  assertMaxDepth(modified, undefined, 'document');
  if (!isJsonObject(original) || !isJsonObject(modified)) return deepClone(modified as JsonValue);
  return diff(original, modified);
}
