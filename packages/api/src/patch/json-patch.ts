// JSON patch (RFC 6902) over JSON pointers (RFC 6901): add, remove, replace, move, copy
// and test, applied to a copy of the document. Every error names the operation and path.

import { jsonEqual } from '../validation/util.js';
import {
  assertMaxDepth,
  deepClone,
  isJsonObject,
  type JsonObject,
  type JsonValue,
  PatchError,
  setOwn,
} from './safe.js';

/** Kubernetes refuses JSON patches with more operations than this. */
export const MAX_JSON_PATCH_OPERATIONS = 10000;

export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: JsonValue }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

/** Splits a JSON pointer into unescaped reference tokens ("" is the whole document). */
export function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/'))
    throw new PatchError(`invalid JSON pointer ${JSON.stringify(pointer)}: must start with '/'`, 400);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => {
      if (/~[^01]|~$/.test(token)) {
        throw new PatchError(
          `invalid JSON pointer ${JSON.stringify(pointer)}: '~' must be followed by '0' or '1'`,
          400,
        );
      }
      return token.replace(/~1/g, '/').replace(/~0/g, '~');
    });
}

type Container = JsonObject | JsonValue[];

function arrayIndex(token: string, length: number, allowEnd: boolean, describe: () => string): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9][0-9]*)$/.test(token))
    throw new PatchError(`${describe()}: "${token}" is not a valid array index`);
  const i = Number(token);
  if (i > (allowEnd ? length : length - 1)) {
    throw new PatchError(`${describe()}: index ${token} is out of bounds (array length ${length})`);
  }
  return i;
}

/** The container holding the last token of `tokens`, which must exist. */
function parentOf(doc: JsonValue, tokens: string[], describe: () => string): Container {
  let cur: JsonValue = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i];
    if (Array.isArray(cur)) {
      cur = cur[arrayIndex(t, cur.length, false, describe)];
    } else if (isJsonObject(cur) && Object.hasOwn(cur, t)) {
      cur = cur[t];
    } else {
      throw new PatchError(`${describe()}: path does not exist`);
    }
  }
  if (!Array.isArray(cur) && !isJsonObject(cur))
    throw new PatchError(`${describe()}: parent is not an object or array`);
  return cur;
}

function getAt(doc: JsonValue, tokens: string[], describe: () => string): JsonValue {
  if (tokens.length === 0) return doc;
  const parent = parentOf(doc, tokens, describe);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) return parent[arrayIndex(last, parent.length, false, describe)];
  if (!Object.hasOwn(parent, last)) throw new PatchError(`${describe()}: path does not exist`);
  return parent[last];
}

function opField(op: JsonObject, index: number, name: string): string {
  const v = Object.hasOwn(op, name) ? op[name] : undefined;
  if (typeof v !== 'string') {
    throw new PatchError(`json patch operation ${index}: "${name}" must be a string`, 400);
  }
  return v;
}

/** Applies a JSON patch to a copy of `doc`; throws PatchError naming the failing operation. */
export function applyJsonPatch(doc: unknown, patch: unknown): JsonValue {
  if (!Array.isArray(patch)) throw new PatchError('json patch must be an array of operations', 400);
  if (patch.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new PatchError(
      `the allowed number of operations in a json patch is ${MAX_JSON_PATCH_OPERATIONS}, but got ${patch.length}`,
      400,
    );
  }
  assertMaxDepth(patch);
  let result: JsonValue = deepClone(doc as JsonValue);

  patch.forEach((raw, index) => {
    if (!isJsonObject(raw)) throw new PatchError(`json patch operation ${index} must be an object`, 400);
    const op = typeof raw.op === 'string' && Object.hasOwn(raw, 'op') ? raw.op : undefined;
    const path = opField(raw, index, 'path');
    const describe = () => `json patch operation ${index} (${op}) on "${path}"`;
    const tokens = parsePointer(path);
    const needValue = () => {
      if (!Object.hasOwn(raw, 'value')) throw new PatchError(`${describe()}: missing "value"`, 400);
      return deepClone(raw.value);
    };

    const add = (value: JsonValue) => {
      if (tokens.length === 0) {
        result = value;
        return;
      }
      const parent = parentOf(result, tokens, describe);
      const last = tokens[tokens.length - 1];
      if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true, describe), 0, value);
      else setOwn(parent, last, value);
    };
    const remove = (): JsonValue => {
      if (tokens.length === 0) throw new PatchError(`${describe()}: cannot remove the whole document`);
      const parent = parentOf(result, tokens, describe);
      const last = tokens[tokens.length - 1];
      if (Array.isArray(parent)) return parent.splice(arrayIndex(last, parent.length, false, describe), 1)[0];
      if (!Object.hasOwn(parent, last)) throw new PatchError(`${describe()}: path does not exist`);
      const old = parent[last];
      delete parent[last];
      return old;
    };

    switch (op) {
      case 'add':
        add(needValue());
        break;
      case 'remove':
        remove();
        break;
      case 'replace': {
        const value = needValue();
        getAt(result, tokens, describe);
        if (tokens.length === 0) {
          result = value;
        } else {
          const parent = parentOf(result, tokens, describe);
          const last = tokens[tokens.length - 1];
          if (Array.isArray(parent)) parent[arrayIndex(last, parent.length, false, describe)] = value;
          else setOwn(parent, last, value);
        }
        break;
      }
      case 'test': {
        const value = needValue();
        if (!jsonEqual(getAt(result, tokens, describe), value))
          throw new PatchError(`${describe()}: test failed`);
        break;
      }
      case 'move':
      case 'copy': {
        const from = opField(raw, index, 'from');
        const fromTokens = parsePointer(from);
        const describeFrom = () => `json patch operation ${index} (${op}) from "${from}"`;
        if (op === 'move') {
          if (from === path) break;
          if (path.startsWith(`${from}/`))
            throw new PatchError(`${describe()}: cannot move "${from}" into itself`);
          const parent = parentOf(result, fromTokens, describeFrom);
          const last = fromTokens[fromTokens.length - 1];
          let value: JsonValue;
          if (fromTokens.length === 0)
            throw new PatchError(`${describeFrom()}: cannot move the whole document`);
          if (Array.isArray(parent))
            value = parent.splice(arrayIndex(last, parent.length, false, describeFrom), 1)[0];
          else {
            if (!Object.hasOwn(parent, last)) throw new PatchError(`${describeFrom()}: path does not exist`);
            value = parent[last];
            delete parent[last];
          }
          add(value);
        } else {
          add(deepClone(getAt(result, fromTokens, describeFrom)));
        }
        break;
      }
      default:
        throw new PatchError(
          `json patch operation ${index}: unsupported op ${JSON.stringify(op ?? null)}`,
          400,
        );
    }
  });
  return result;
}
