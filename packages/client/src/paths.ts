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

/** `?a=1&b=x` from the defined values only (arrays repeat the key). */
export function queryString(query: Record<string, QueryValue> | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) for (const item of v) params.append(k, item);
    else params.append(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}
