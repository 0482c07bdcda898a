// Serving one authorized resource request: the scope checks, then the verb
// (get, list, watch, create, update, patch, delete, deletecollection) or the
// kind's subresource. What a kind does of its own lives on its KindDef; this
// file names no kind.
import { methodNotSupported, notAcceptable, notFoundPath } from '@kubit/api';
import { serveAccessReview } from './access-reviews.js';
import type { Authorizer, RbacAuthorizer } from './authz.js';
import type { Discovery } from './discovery.js';
import type { KindDef, RawExchange } from './kinds/types.js';
import type { KubeletClientTls } from './logs.js';
import { METRICS_GROUP, type MetricsApiDeps, serveMetrics } from './metrics/api.js';
import { contentTypeFor, includeObject, onlyProtobuf, tableIfWanted, wantsTable } from './negotiation.js';
import { serveGroupVersion } from './nonresource.js';
import { failResponse } from './reply.js';
import type { ResourceRequest } from './request.js';
import type { Ctx, Rest } from './rest.js';
import { serveSelfSubjectReview } from './self-subject-review.js';
import { serveTokenReview, type TokenReviewer } from './token-review.js';
import { serveWatch, type WatchOptions } from './watch.js';

/** How a handler answers: a serialized JSON body, or the raw response taken over. */
export interface Responder {
  json(code: number, body: unknown, contentType?: string): void;
  /**
   * A discovery or OpenAPI document: json() with an ETag (the body's hash unless
   * given), or a bodiless 304 when the client's If-None-Match names it.
   */
  document(code: number, body: unknown, contentType?: string, etag?: string): void;
  raw: RawExchange;
  /** Counts a request whose answer was written on the raw response. */
  finished(): void;
}

export interface ResourceServices {
  rest: Rest;
  discovery: Discovery;
  authz: Authorizer;
  rbac: RbacAuthorizer;
  kubeletTls: KubeletClientTls;
  tokenReviewer: TokenReviewer;
  watch: WatchOptions;
  /** metrics.k8s.io, when this apiserver gathers resource metrics. */
  metrics?: MetricsApiDeps;
}

const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];

export async function serveResource(
  info: ResourceRequest,
  ctx: Ctx,
  accept: string,
  out: Responder,
  s: ResourceServices,
): Promise<void> {
  if (onlyProtobuf(accept)) throw notAcceptable(['application/json', 'application/yaml']);
  if (!info.resource) {
    const r = serveGroupVersion(s.discovery, info.verb, info.group, info.version);
    return out.document(r.code, r.body);
  }
  if (info.group === 'authorization.k8s.io' && info.version === 'v1') {
    const r = serveAccessReview(info, ctx, s.authz, s.rbac);
    return out.json(r.code, r.body);
  }
  if (info.group === 'authentication.k8s.io' && info.version === 'v1') {
    const r =
      info.resource === 'selfsubjectreviews'
        ? serveSelfSubjectReview(info, ctx)
        : await serveTokenReview(info, ctx, s.tokenReviewer);
    return out.json(r.code, r.body);
  }
  if (info.group === METRICS_GROUP && s.metrics) {
    const r = serveMetrics(info, ctx, s.metrics);
    return out.json(r.code, r.body);
  }
  const def = info.def;
  if (!def) throw notFoundPath();
  // A namespaced kind is only reached inside a namespace for anything but a list or
  // watch across all of them; a cluster-scoped kind never is.
  if (def.namespaced && !info.namespace && (info.name || WRITE_VERBS.includes(info.verb))) {
    throw notFoundPath();
  }
  if (!def.namespaced && info.namespace && info.resource !== 'namespaces') throw notFoundPath();
  if (info.subresource) return serveSubresource(def, info, ctx, out, s);
  if (!info.name && (info.verb === 'update' || info.verb === 'patch')) {
    throw methodNotSupported({ group: def.group, resource: def.resource }, info.verb);
  }
  const { rest } = s;
  switch (info.verb) {
    case 'get': {
      const r = await rest.get(def, info);
      const table = tableIfWanted(def, accept, ctx.query, [r.body as Record<string, unknown>], {});
      return out.json(r.code, table ?? r.body, contentTypeFor(accept));
    }
    case 'list': {
      const { items, meta } = await rest.list(def, info, ctx);
      const table = tableIfWanted(def, accept, ctx.query, items, meta);
      return out.json(200, table ?? rest.listObject(def, items, meta), contentTypeFor(accept));
    }
    case 'watch': {
      const res = out.raw.hijack();
      const target = {
        raw: res,
        onClose: out.raw.onClose,
        table: wantsTable(accept) ? includeObject(ctx.query) : undefined,
      };
      await serveWatch(rest, def, info, ctx, target, s.watch).catch((err) => failResponse(res, err));
      return out.finished();
    }
    case 'create':
      return send(out, await rest.create(def, info, ctx));
    case 'update':
      return send(out, await rest.update(def, info, ctx));
    case 'patch':
      return send(out, await rest.patch(def, info, ctx));
    case 'delete':
      return send(out, await rest.delete(def, info, ctx));
    case 'deletecollection':
      return send(out, await rest.deleteCollection(def, info, ctx));
    default:
      throw methodNotSupported({ group: def.group, resource: def.resource }, info.verb);
  }
}

function send(out: Responder, r: { code: number; body: unknown }): void {
  out.json(r.code, r.body);
}

async function serveSubresource(
  def: KindDef,
  info: ResourceRequest,
  ctx: Ctx,
  out: Responder,
  s: ResourceServices,
): Promise<void> {
  const sub = def.subresources.find((x) => x.name === info.subresource);
  if (!sub || !info.name) throw notFoundPath();
  if (!sub.verbs.includes(info.verb)) {
    throw methodNotSupported({ group: def.group, resource: `${def.resource}/${sub.name}` }, info.verb);
  }
  const r = await sub.serve(info.verb, {
    rest: s.rest,
    def,
    ri: info,
    ctx,
    raw: out.raw,
    kubeletTls: s.kubeletTls,
  });
  // undefined: the subresource answered on the raw response itself (a streamed log).
  if (r) return send(out, r);
  out.finished();
}
