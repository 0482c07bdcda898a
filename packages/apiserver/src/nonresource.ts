// The paths that name no resource: discovery (/api, /apis, their group and
// group-version documents), /version, OpenAPI and /metrics.
import { methodNotSupported, notFoundPath } from '@kubit/api';
import type { Registry } from '@kubit/daemon';
import type { Discovery } from './discovery.js';
import { aggregatedVersion } from './negotiation.js';
import { serveOpenApi } from './openapi/serve.js';

export type Answer =
  /** etag: the body's entity tag when known without serializing it (else the server hashes it). */
  | { code: number; body: unknown; contentType?: string; etag?: string; headers?: Record<string, string> }
  | { code: number; text: string | Buffer; contentType: string; headers?: Record<string, string> };

/** The answer to a GET of a non-resource path, or a 404. */
export async function serveNonResource(
  path: string,
  accept: string,
  discovery: Discovery,
  registry: Registry,
  query: Record<string, unknown> = {},
): Promise<Answer> {
  const agg = aggregatedVersion(accept);
  if (path === '/api' || path === '/apis') {
    if (agg) {
      return {
        code: 200,
        body: discovery.aggregated(path === '/api', `apidiscovery.k8s.io/${agg}`),
        contentType: `application/json;g=apidiscovery.k8s.io;v=${agg};as=APIGroupDiscoveryList`,
      };
    }
    return { code: 200, body: path === '/api' ? discovery.apiVersions() : discovery.apiGroupList() };
  }
  if (path === '/version') return { code: 200, body: discovery.version() };
  const gvm = /^\/api\/([^/]+)$/.exec(path) ?? /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
  if (gvm) {
    const list =
      gvm.length === 3 ? discovery.resourceList(gvm[1], gvm[2]) : discovery.resourceList('', gvm[1]);
    if (list) return { code: 200, body: list };
  }
  const openapi = serveOpenApi(path, accept, discovery.openapi, query);
  if (openapi) return openapi;
  if (path === '/metrics')
    return { code: 200, text: await registry.metrics(), contentType: registry.contentType };
  const m = /^\/apis\/([^/]+)$/.exec(path);
  if (m) {
    const g = discovery.apiGroup(m[1]);
    if (g) return { code: 200, body: g };
  }
  throw notFoundPath();
}

/** /api/v1 or /apis/<group>/<version> reached as a resource request (the URL parser's view). */
export function serveGroupVersion(
  discovery: Discovery,
  verb: string,
  group: string,
  version: string,
): { code: number; body: unknown } {
  if (verb !== 'list') throw methodNotSupported({ group, resource: '' }, verb);
  const list = discovery.resourceList(group, version);
  if (!list) throw notFoundPath();
  return { code: 200, body: list };
}
