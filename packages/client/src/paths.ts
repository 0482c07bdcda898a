// REST paths and query strings, built the way the Kubernetes API lays them out:
//   /api/v1/namespaces/<ns>/pods/<name>/<subresource>
//   /apis/<group>/<version>/<resource>

import type { ResourceRef } from './resources.js';

export interface PathParts {
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** The URL path of a resource, a collection, or one object's subresource. */
export function resourcePath(
  res: Pick<ResourceRef, 'group' | 'version' | 'resource' | 'namespaced'>,
  parts: PathParts = {},
): string {
  let path = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`;
  if (res.namespaced && parts.namespace) path += `/namespaces/${encodeURIComponent(parts.namespace)}`;
  path += `/${res.resource}`;
  if (parts.name !== undefined) {
    if (parts.name === '') throw new Error(`a resource name may not be empty (${res.resource})`);
    path += `/${encodeURIComponent(parts.name)}`;
    if (parts.subresource) path += `/${parts.subresource}`;
  } else if (parts.subresource) {
    throw new Error(`subresource "${parts.subresource}" needs a name`);
  }
  return path;
}

export type QueryValue = string | number | boolean | undefined | null | readonly string[];

/** Characters application/x-www-form-urlencoded leaves as they are (as URLSearchParams does). */
const formSafe = /^[A-Za-z0-9*\-._]*$/;

/** One value encoded exactly as URLSearchParams would, without building one: this runs per request. */
function formEncode(s: string): string {
  if (formSafe.test(s)) return s;
  // A lone surrogate makes encodeURIComponent throw; URLSearchParams writes U+FFFD for it.
  if (/[\uD800-\uDFFF]/.test(s)) return new URLSearchParams([['', s]]).toString().slice(1);
  return encodeURIComponent(s)
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** `?a=1&b=x` from the defined values only (arrays repeat the key). */
export function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return '';
  let s = '';
  for (const k in query) {
    const v = query[k];
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) {
      for (const item of v) s += `${s ? '&' : '?'}${formEncode(k)}=${formEncode(item)}`;
    } else {
      s += `${s ? '&' : '?'}${formEncode(k)}=${formEncode(String(v))}`;
    }
  }
  return s;
}
