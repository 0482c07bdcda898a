// Turning an HTTP request into what the handlers work with: which resource
// and verb a URL names (Kubernetes' RequestInfo), and decoded bodies.
import { badRequest, StatusError, unsupportedMediaType } from '@kubit/api';
import { load } from 'js-yaml';
import type { KindRegistry } from './kinds/index.js';
import type { KindDef } from './kinds/types.js';
import { decodeProtobufObject } from './protobuf.js';

export interface ResourceRequest {
  kind: 'resource';
  verb: string;
  group: string;
  version: string;
  /** The plural resource; "" for /api/v1 itself. */
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  def?: KindDef;
  path: string;
  /** What follows a proxy subresource (nodes/<name>/proxy/<subpath>), without its leading slash. */
  subpath?: string;
}

export interface NonResourceRequest {
  kind: 'nonresource';
  verb: string;
  path: string;
}

export type RequestInfo = ResourceRequest | NonResourceRequest;

const METHOD_VERBS: Record<string, string> = {
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
  GET: 'get',
  HEAD: 'get',
};

/** Namespace subresources (so /api/v1/namespaces/x/status is not "resource status in namespace x"). */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export function parseRequestInfo(
  method: string,
  path: string,
  query: Record<string, unknown>,
  kinds: KindRegistry,
): RequestInfo {
  const verbBase = METHOD_VERBS[method] ?? method.toLowerCase();
  let parts = path.split('/').filter((p) => p !== '');
  let group = '';
  let version = '';
  if (parts[0] === 'api' && parts.length >= 2) {
    version = parts[1];
    parts = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    group = parts[1];
    version = parts[2];
    parts = parts.slice(3);
  } else {
    return { kind: 'nonresource', verb: verbBase, path };
  }
  let watchPath = false;
  if (parts[0] === 'watch') {
    watchPath = true;
    parts = parts.slice(1);
  }
  let namespace = '';
  if (parts[0] === 'namespaces' && parts.length >= 3) {
    const isNsSub =
      parts.length === 3 && NAMESPACE_SUBRESOURCES.has(parts[2]) && !kinds.lookup(group, version, parts[2]);
    if (!isNsSub) {
      namespace = parts[1];
      parts = parts.slice(2);
    }
  }
  const [resource = '', name = '', subresource = '', ...rest] = parts;
  // /api/v1 and /apis/<g>/<v> themselves are discovery documents, authorized as paths.
  if (!resource && !namespace) return { kind: 'nonresource', verb: verbBase, path };
  // A proxy subresource carries the path it forwards (Kubernetes' RequestInfo keeps it as Parts).
  const subpath = subresource === 'proxy' ? rest.join('/') : undefined;
  if (rest.length > 0 && subpath === undefined) {
    throw new StatusError({
      ...badRequest('').status,
      code: 404,
      reason: 'NotFound',
      message: `the server could not find the requested resource`,
    });
  }
  // A namespace's own name is its "namespace" for authorization, as Kubernetes does.
  if (resource === 'namespaces' && name) namespace = name;
  let verb = verbBase;
  // A proxy's query is its backend's: `?watch=true` there is not a Kubernetes watch.
  const watch = watchPath || (subpath === undefined && (query.watch === 'true' || query.watch === '1'));
  if (verb === 'get' && !name) verb = watch ? 'watch' : 'list';
  else if (verb === 'get' && watch) verb = 'watch';
  if (verb === 'delete' && !name) verb = 'deletecollection';
  return {
    kind: 'resource',
    verb,
    group,
    version,
    resource,
    subresource,
    namespace,
    name,
    def: resource ? kinds.lookup(group, version, resource) : undefined,
    path,
    ...(subpath !== undefined ? { subpath } : {}),
  };
}

export type BodyFormat = 'json' | 'yaml' | 'merge' | 'strategic' | 'jsonpatch' | 'apply' | 'protobuf';

const FORMATS: Record<string, BodyFormat> = {
  'application/json': 'json',
  'application/yaml': 'yaml',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/json-patch+json': 'jsonpatch',
  'application/apply-patch+yaml': 'apply',
  'application/vnd.kubernetes.protobuf': 'protobuf',
};

export const BODY_MEDIA_TYPES = [
  'application/json',
  'application/yaml',
  'application/vnd.kubernetes.protobuf',
];
export const PATCH_MEDIA_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
/** What a custom resource takes: no strategic merge (it has no patch-merge keys). */
export const CUSTOM_PATCH_MEDIA_TYPES = PATCH_MEDIA_TYPES.filter(
  (t) => t !== 'application/strategic-merge-patch+json',
);

export function bodyFormat(contentType: string | undefined, allowed: readonly string[]): BodyFormat {
  const base = (contentType ?? 'application/json').split(';')[0].trim().toLowerCase() || 'application/json';
  const f = FORMATS[base];
  if (!f || !allowed.includes(base)) throw unsupportedMediaType(allowed);
  return f;
}

/** Parses a body as JSON, YAML or protobuf; malformed input is a 400 naming the problem (protobuf not decoded fully: 415). */
export function parseBody(raw: Buffer | undefined, format: BodyFormat, kind = ''): unknown {
  if (format === 'protobuf') {
    if (!raw || raw.length === 0) throw badRequest('the request body is empty');
    return decodeProtobufObject(raw, kind);
  }
  const text = raw ? raw.toString('utf8') : '';
  if (text.trim() === '') throw badRequest('the request body is empty');
  if (format === 'yaml' || format === 'apply') {
    try {
      return load(text);
    } catch (err) {
      throw badRequest(`error converting YAML to JSON: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw badRequest(`error decoding JSON: ${(err as Error).message}`);
  }
}

export function queryString(q: Record<string, unknown>, name: string): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (Array.isArray(v)) return String(v[v.length - 1]);
  return String(v);
}

/** A non-negative integer query parameter, or a 400 naming it. */
export function queryInt(q: Record<string, unknown>, name: string): number | undefined {
  const v = queryString(q, name);
  if (v === undefined || v === '') return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`invalid value for ${name}: "${v}" is not an integer`);
  return Number(v);
}

/** A resourceVersion as a number (undefined when unset, 0 for "0"). */
export function parseResourceVersion(v: string | undefined, what = 'resourceVersion'): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^\d{1,18}$/.test(v)) throw badRequest(`invalid ${what} "${v}": must be a non-negative integer`);
  return Number(v);
}
