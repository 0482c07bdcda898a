// kubit-apiserver's HTTPS server: authenticate → authorize → decode → default →
// validate → admit → store, for every kind in the registry; discovery,
// OpenAPI, health and metrics around it.
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import {
  badRequest,
  type FieldError,
  fieldErrors,
  forbidden,
  forbiddenPath,
  internalError,
  invalid,
  methodNotSupported,
  notAcceptable,
  notFound,
  requestEntityTooLarge,
  type Status,
  StatusError,
  serviceUnavailable,
  statusFromUnknown,
  unauthorized,
} from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { Counter, Gauge, Histogram, type Registry } from '@kubit/daemon';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Authenticator, UserInfo } from './authn.js';
import type { Attributes, Authorizer, RbacAuthorizer } from './authz.js';
import { Discovery } from './discovery.js';
import type { KindRegistry } from './kinds/index.js';
import { obj, str } from './kinds/types.js';
import { type KubeletClientTls, proxyPodLog } from './logs.js';
import { conform, schemas } from './model/schema.js';
import { decodeAccessReview, PROTOBUF_MEDIA_TYPE } from './protobuf.js';
import {
  BODY_MEDIA_TYPES,
  bodyFormat,
  parseBody,
  parseRequestInfo,
  queryString,
  type RequestInfo,
  type ResourceRequest,
} from './request.js';
import { type Ctx, Rest } from './rest.js';
import type { Store } from './storage.js';
import { registerStreaming } from './streaming.js';
import { type IncludeObject, toTable } from './table.js';
import { serveWatch } from './watch.js';
import type { WatchCache } from './watchcache.js';

export const MAX_BODY_BYTES = 3 * 1024 * 1024;
/** How much of a too-large body is read and dropped so the client can read the 413. */
const MAX_DRAINED_BODY_BYTES = 4 * MAX_BODY_BYTES;

export interface ServerDeps {
  store: Store;
  kinds: KindRegistry;
  caches: Map<string, WatchCache>;
  authn: Authenticator;
  authz: Authorizer;
  rbac: RbacAuthorizer;
  log: Logger;
  registry: Registry;
  kubeletTls: KubeletClientTls;
  tls: { cert: Buffer; key: Buffer; ca?: Buffer };
  /** host:port clients reach this server at (for /api's serverAddressByClientCIDRs). */
  serverAddress: string;
  bookmarkIntervalMs?: number;
  /** A watch without timeoutSeconds lasts between this and twice this (spreads reconnects). */
  minRequestTimeoutSeconds?: number;
  ready: () => Promise<void>;
  /** False until the store answered and the caches are filled: requests get 503 until then. */
  serving: () => boolean;
  /** Why the server is not serving yet. */
  notServingReason: () => string;
}

interface Meta {
  verb: string;
  resource: string;
  start: bigint;
  user?: string;
}

export function createServer(deps: ServerDeps): FastifyInstance {
  const app = Fastify({
    logger: false,
    https: {
      cert: deps.tls.cert,
      key: deps.tls.key,
      ca: deps.tls.ca,
      requestCert: true,
      rejectUnauthorized: false,
    },
    bodyLimit: MAX_BODY_BYTES,
    maxParamLength: 2000,
    // Watches and followed logs are long-running; they end on their own timeouts.
    requestTimeout: 0,
    return503OnClosing: false,
  }) as unknown as FastifyInstance;
  const rest = new Rest(deps.store, deps.kinds, deps.caches, deps.log);
  const discovery = new Discovery(deps.kinds, deps.serverAddress);
  const namespaces = deps.caches.get('namespaces')!;

  const requests = new Counter({
    name: 'apiserver_request_total',
    help: 'Requests by verb, group, resource, subresource and HTTP code.',
    labelNames: ['verb', 'resource', 'code'],
    registers: [deps.registry],
  });
  const latency = new Histogram({
    name: 'apiserver_request_duration_seconds',
    help: 'Request latency by verb and resource (watches excluded).',
    labelNames: ['verb', 'resource'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [deps.registry],
  });
  const openWatches = new Gauge({
    name: 'apiserver_open_watches',
    help: 'Watches being served, by resource.',
    labelNames: ['resource'],
    registers: [deps.registry],
  });
  const metas = new WeakMap<IncomingMessage, Meta>();
  // The metric children of each verb/resource/code, looked up once: prom-client hashes
  // the label object on every inc/observe otherwise.
  const children = new Map<string, { count: { inc(): void }; latency: { observe(v: number): void } }>();
  const metricsFor = (verb: string, resource: string, code: number) => {
    const k = `${verb} ${resource} ${code}`;
    let c = children.get(k);
    if (!c) {
      c = {
        count: requests.labels({ verb, resource, code: String(code) }),
        latency: latency.labels({ verb, resource }),
      };
      children.set(k, c);
    }
    return c;
  };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const finish = (raw: IncomingMessage, code: number) => {
    const m = metas.get(raw);
    if (!m || m.start === 0n) return;
    const seconds = Number(process.hrtime.bigint() - m.start) / 1e9;
    m.start = 0n;
    metricsFor(m.verb, m.resource, code).count.inc();
    if (m.verb !== 'watch') metricsFor(m.verb, m.resource, code).latency.observe(seconds);
    // Every write and every failure at info; successful reads (the bulk of the traffic,
    // and what watch-heavy clients repeat all day) only at debug.
    const quiet = code < 400 && (m.verb === 'get' || m.verb === 'list' || m.verb === 'watch');
    if (quiet && !deps.log.isLevelEnabled('debug')) return;
    deps.log[quiet ? 'debug' : 'info'](
      {
        verb: m.verb,
        resource: m.resource || undefined,
        path: raw.url,
        code,
        user: m.user,
        ms: Math.round(seconds * 1000),
      },
      'request',
    );
  };
  // Callback-style hooks: an async hook costs a promise and a microtask turn per request.
  app.addHook('onResponse', (req, reply, done) => {
    finish(req.raw, reply.statusCode);
    done();
  });

  const sendStatus = (reply: FastifyReply, status: Status) => {
    reply.code(status.code).header('Content-Type', 'application/json').send(JSON.stringify(status));
  };

  // A body announced as too large is read and dropped (up to a bound) before the 413
  // goes out: closing while the client still writes would make it see a connection
  // reset instead of the answer. Beyond the bound the connection is closed at once.
  app.addHook('onRequest', (req, reply, done) => {
    metas.set(req.raw, { verb: req.method.toLowerCase(), resource: '', start: process.hrtime.bigint() });
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length > MAX_BODY_BYTES)) return done();
    const answer = () => sendStatus(reply, requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`).status);
    if (length > MAX_DRAINED_BODY_BYTES) {
      reply.header('Connection', 'close');
      answer();
      return;
    }
    req.raw.on('error', () => {});
    req.raw.once('end', answer);
    req.raw.resume();
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    let status: Status;
    if (err instanceof StatusError) status = err.status;
    else {
      const e = err as { statusCode?: number; code?: string; message?: string };
      if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) {
        status = requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`).status;
      } else if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
        status = { ...badRequest(e.message ?? 'bad request').status, code: e.statusCode };
      } else {
        deps.log.error({ err, path: req.url }, 'internal error');
        status = internalError(err).status;
      }
    }
    if (reply.sent || reply.raw.headersSent) {
      reply.raw.destroy();
      return;
    }
    sendStatus(reply, status);
  });
  app.setNotFoundHandler((_req, reply) => {
    sendStatus(reply, {
      ...notFound({ group: '', resource: '' }, '').status,
      message: 'the server could not find the requested resource',
      details: {},
    });
  });

  // ---- health (unauthenticated, as Kubernetes' system:public-info-viewer allows) ----
  const health = async (reply: FastifyReply, verbose: boolean) => {
    try {
      await deps.ready();
      return reply.type('text/plain').send(verbose ? '[+]etcd ok\n[+]caches ok\nok\n' : 'ok');
    } catch (err) {
      return reply
        .code(503)
        .type('text/plain')
        .send(`[-]etcd failed: ${(err as Error).message}\nreadyz check failed\n`);
    }
  };
  app.get('/livez', async (_req, reply) => reply.type('text/plain').send('ok'));
  app.get('/readyz', async (req, reply) =>
    health(reply, Object.hasOwn((req.query as object) ?? {}, 'verbose')),
  );
  app.get('/healthz', async (req, reply) =>
    health(reply, Object.hasOwn((req.query as object) ?? {}, 'verbose')),
  );

  const authorize = (user: UserInfo, info: RequestInfo) => {
    const a: Attributes =
      info.kind === 'resource'
        ? {
            user,
            verb: info.verb,
            resourceRequest: true,
            path: info.path,
            group: info.group,
            resource: info.resource,
            subresource: info.subresource,
            namespace: info.namespace,
            name: info.name,
          }
        : {
            user,
            verb: info.verb,
            resourceRequest: false,
            path: info.path,
            group: '',
            resource: '',
            subresource: '',
            namespace: '',
            name: '',
          };
    const d = deps.authz.authorize(a);
    if (d.decision === 'allow') return;
    if (info.kind === 'nonresource') throw forbiddenPath(user.name, info.verb, info.path);
    const res = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    throw forbidden(
      user.name,
      info.verb,
      res,
      info.group,
      info.name || undefined,
      info.namespace || undefined,
      d.reason || undefined,
    );
  };

  registerStreaming(app.server as unknown as HttpServer, {
    store: deps.store,
    kubeletTls: deps.kubeletTls,
    authenticate: (req) => deps.authn.authenticate(req),
    authorize,
    parse: (method, path, query) => parseRequestInfo(method, path, query, deps.kinds),
    serving: deps.serving,
  });

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const meta = metas.get(req.raw)!;
    let path: string;
    try {
      path = decodeURIComponent((req.url.split('?')[0] ?? '/').replace(/\/+$/, '') || '/');
    } catch {
      throw badRequest('the request path is not valid URL encoding');
    }
    const user = deps.authn.authenticate(req.raw);
    if (!user) throw unauthorized();
    meta.user = user.name;
    if (!deps.serving()) {
      reply.header('Retry-After', '1');
      throw serviceUnavailable(`the apiserver is starting: ${deps.notServingReason()}`);
    }
    const query = (req.query ?? {}) as Record<string, unknown>;
    const info = parseRequestInfo(req.method, path, query, deps.kinds);
    meta.verb = info.verb;
    if (info.kind === 'resource')
      meta.resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    authorize(user, info);
    const accept = String(req.headers.accept ?? '');
    const ctx: Ctx = {
      user,
      query,
      body: Buffer.isBuffer(req.body) ? req.body : undefined,
      contentType: req.headers['content-type'],
      warnings: [],
    };
    // The answer goes straight to the socket: the body is already serialized, and
    // fastify's send pipeline (onSend hooks, payload checks) was a measurable part of
    // a small write's CPU. The request is then finished here, as for watches.
    const json = (code: number, body: unknown, contentType = 'application/json') => {
      const text = JSON.stringify(body);
      const headers: Record<string, string | number> = {
        'Content-Type': contentType,
        'Content-Length': Buffer.byteLength(text),
      };
      if (ctx.warnings.length > 0) {
        headers.Warning = ctx.warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ');
      }
      reply.hijack();
      reply.raw.writeHead(code, headers);
      reply.raw.end(text);
      finish(req.raw, code);
      return reply;
    };
    if (info.kind === 'nonresource') return serveNonResource(info.path, accept, json, reply);
    if (onlyProtobuf(accept)) throw notAcceptable(['application/json', 'application/yaml']);
    if (!info.resource) {
      // /api/v1 or /apis/<g>/<v> itself.
      if (info.verb !== 'list') throw methodNotSupported({ group: info.group, resource: '' }, info.verb);
      const list = discovery.resourceList(info.group, info.version);
      if (!list) throw notFoundPath();
      return json(200, list);
    }
    if (info.group === 'authorization.k8s.io' && info.version === 'v1') return serveReview(info, ctx, json);
    const def = info.def;
    if (!def) throw notFoundPath();
    if (
      def.namespaced &&
      !info.namespace &&
      (info.name || ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(info.verb))
    ) {
      throw notFoundPath();
    }
    if (!def.namespaced && info.namespace && info.resource !== 'namespaces') throw notFoundPath();
    if (info.subresource) return serveSubresource(info, def, ctx, req, reply, json);
    if (!info.name && (info.verb === 'update' || info.verb === 'patch')) {
      throw methodNotSupported({ group: def.group, resource: def.resource }, info.verb);
    }
    switch (info.verb) {
      case 'get': {
        const r = await rest.get(def, info);
        return json(
          r.code,
          tableOr(def, info, accept, query, [r.body as Record<string, unknown>], {}) ?? r.body,
          contentTypeFor(accept),
        );
      }
      case 'list': {
        const { items, meta: lm } = await rest.list(def, info, ctx);
        const table = tableOr(def, info, accept, query, items, lm);
        return json(200, table ?? rest.listObject(def, items, lm), contentTypeFor(accept));
      }
      case 'watch':
        reply.hijack();
        await serveWatch(rest, def, info, ctx, watchTarget(req, reply, accept, query), {
          bookmarkIntervalMs: deps.bookmarkIntervalMs ?? 10_000,
          minRequestTimeoutSeconds: deps.minRequestTimeoutSeconds ?? 1800,
          openWatches,
        }).catch((err) => {
          if (!reply.raw.headersSent) {
            const s = statusFromUnknown(err);
            reply.raw.writeHead(s.code, { 'Content-Type': 'application/json' });
            reply.raw.end(JSON.stringify(s));
          } else reply.raw.destroy();
        });
        finish(req.raw, reply.raw.statusCode);
        return;
      case 'create': {
        const r = await rest.create(def, info, ctx, namespaces);
        return json(r.code, r.body);
      }
      case 'update': {
        const r = await rest.update(def, info, ctx);
        return json(r.code, r.body);
      }
      case 'patch': {
        const r = await rest.patch(def, info, ctx, namespaces);
        return json(r.code, r.body);
      }
      case 'delete': {
        const r = await rest.delete(def, info, ctx);
        return json(r.code, r.body);
      }
      case 'deletecollection': {
        const r = await rest.deleteCollection(def, info, ctx);
        return json(r.code, r.body);
      }
      default:
        throw methodNotSupported({ group: def.group, resource: def.resource }, info.verb);
    }
  };

  const serveSubresource = async (
    info: ResourceRequest,
    def: NonNullable<ResourceRequest['def']>,
    ctx: Ctx,
    req: FastifyRequest,
    reply: FastifyReply,
    json: (code: number, body: unknown) => FastifyReply,
  ) => {
    if (!def.subresources.includes(info.subresource) || !info.name) throw notFoundPath();
    const verb = info.verb;
    if (info.subresource === 'status') {
      if (verb === 'get') return json(200, (await rest.get(def, info)).body);
      if (verb === 'update') {
        const r = await rest.update(def, info, ctx);
        return json(r.code, r.body);
      }
      if (verb === 'patch') {
        const r = await rest.patch(def, info, ctx, namespaces);
        return json(r.code, r.body);
      }
    }
    if (info.subresource === 'scale') {
      if (verb === 'get') return json(200, (await rest.getScale(def, info)).body);
      if (verb === 'update' || verb === 'patch') {
        const r = await rest.updateScale(def, info, ctx);
        return json(r.code, r.body);
      }
    }
    if (info.subresource === 'finalize' && verb === 'update') {
      const r = await rest.update(def, info, ctx);
      return json(r.code, r.body);
    }
    if (info.subresource === 'binding' && verb === 'create') {
      const r = await rest.bind(info, ctx, def);
      return json(r.code, r.body);
    }
    if (info.subresource === 'log' && verb === 'get') {
      reply.hijack();
      await proxyPodLog(deps.store, info, ctx, reply.raw, deps.kubeletTls, (fn) =>
        req.raw.on('close', fn),
      ).catch((err) => {
        if (!reply.raw.headersSent) {
          const s = statusFromUnknown(err);
          reply.raw.writeHead(s.code, { 'Content-Type': 'application/json' });
          reply.raw.end(JSON.stringify(s));
        } else reply.raw.destroy();
      });
      if (!reply.raw.writableEnded && !reply.raw.destroyed) reply.raw.end();
      finish(req.raw, reply.raw.statusCode);
      return;
    }
    throw methodNotSupported({ group: def.group, resource: `${def.resource}/${info.subresource}` }, verb);
  };

  const serveReview = (
    info: ResourceRequest,
    ctx: Ctx,
    json: (code: number, body: unknown) => FastifyReply,
  ) => {
    const kinds: Record<string, string> = {
      selfsubjectaccessreviews: 'SelfSubjectAccessReview',
      subjectaccessreviews: 'SubjectAccessReview',
      selfsubjectrulesreviews: 'SelfSubjectRulesReview',
    };
    const kind = kinds[info.resource];
    if (!kind || info.name || info.subresource) throw notFoundPath();
    if (info.verb !== 'create')
      throw methodNotSupported({ group: info.group, resource: info.resource }, info.verb);
    const isProto = (ctx.contentType ?? '').split(';')[0].trim() === PROTOBUF_MEDIA_TYPE;
    const raw = isProto
      ? decodeAccessReview(ctx.body ?? Buffer.alloc(0))
      : parseBody(ctx.body, bodyFormat(ctx.contentType, BODY_MEDIA_TYPES));
    const probs = { unknown: [] as string[], types: [] as string[] };
    const review = conform(
      raw,
      kind === 'SelfSubjectAccessReview' ? schemas.selfSubjectAccessReview : { t: 'any' },
      '',
      probs,
    );
    if (probs.types.length > 0 || typeof review !== 'object' || review === null || Array.isArray(review)) {
      throw badRequest(`${kind} cannot be decoded: ${probs.types[0] ?? 'the body must be a JSON object'}`);
    }
    const r = review as Record<string, unknown>;
    const spec = obj(r.spec);
    let subject: UserInfo = ctx.user;
    if (kind === 'SubjectAccessReview') {
      if (!str(spec.user) && !Array.isArray(spec.groups)) {
        throw invalid({ group: 'authorization.k8s.io', kind }, '', [
          fieldErrors.required('spec.user', 'at least one of user or group must be specified'),
        ]);
      }
      subject = { name: str(spec.user), groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [] };
    }
    if (kind === 'SelfSubjectRulesReview') {
      const ns = str(spec.namespace);
      const rules = deps.rbac.rulesFor(ctx.user, ns).map(obj);
      return json(201, {
        ...r,
        apiVersion: 'authorization.k8s.io/v1',
        kind,
        status: {
          resourceRules: rules
            .filter((x) => !x.nonResourceURLs)
            .map((x) => ({
              verbs: x.verbs,
              apiGroups: x.apiGroups,
              resources: x.resources,
              resourceNames: x.resourceNames,
            })),
          nonResourceRules: rules
            .filter((x) => x.nonResourceURLs)
            .map((x) => ({ verbs: x.verbs, nonResourceURLs: x.nonResourceURLs })),
          incomplete: false,
        },
      });
    }
    const ra = spec.resourceAttributes ? obj(spec.resourceAttributes) : undefined;
    const na = spec.nonResourceAttributes ? obj(spec.nonResourceAttributes) : undefined;
    if (!ra && !na) {
      const errs: FieldError[] = [
        fieldErrors.required(
          'spec.resourceAttributes',
          'exactly one of nonResourceAttributes or resourceAttributes must be specified',
        ),
      ];
      throw invalid({ group: 'authorization.k8s.io', kind }, '', errs);
    }
    const attrs: Attributes = ra
      ? {
          user: subject,
          verb: str(ra.verb),
          resourceRequest: true,
          path: '',
          group: str(ra.group),
          resource: str(ra.resource),
          subresource: str(ra.subresource),
          namespace: str(ra.namespace),
          name: str(ra.name),
        }
      : {
          user: subject,
          verb: str(na?.verb),
          resourceRequest: false,
          path: str(na?.path),
          group: '',
          resource: '',
          subresource: '',
          namespace: '',
          name: '',
        };
    const d = deps.authz.authorize(attrs);
    return json(201, {
      ...r,
      apiVersion: 'authorization.k8s.io/v1',
      kind,
      metadata: { creationTimestamp: null },
      status: {
        allowed: d.decision === 'allow',
        ...(d.decision === 'deny' ? { denied: true } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
      },
    });
  };

  const serveNonResource = (
    path: string,
    accept: string,
    json: (code: number, body: unknown, ct?: string) => FastifyReply,
    reply: FastifyReply,
  ) => {
    const agg = aggregatedVersion(accept);
    if (path === '/api' || path === '/apis') {
      if (agg) {
        return json(
          200,
          discovery.aggregated(path === '/api', `apidiscovery.k8s.io/${agg}`),
          `application/json;g=apidiscovery.k8s.io;v=${agg};as=APIGroupDiscoveryList`,
        );
      }
      return json(200, path === '/api' ? discovery.apiVersions() : discovery.apiGroupList());
    }
    if (path === '/version') return json(200, discovery.version());
    const gvm = /^\/api\/([^/]+)$/.exec(path) ?? /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (gvm) {
      const list =
        gvm.length === 3 ? discovery.resourceList(gvm[1], gvm[2]) : discovery.resourceList('', gvm[1]);
      if (list) return json(200, list);
    }
    if (path === '/openapi/v3') return json(200, discovery.openapiRoot());
    if (path.startsWith('/openapi/v3/')) {
      const gv = discovery.openapiPath(path.slice('/openapi/v3/'.length));
      if (gv) return json(200, discovery.openapiFor(gv.group, gv.version));
    }
    if (path === '/metrics') {
      return deps.registry
        .metrics()
        .then((text) => reply.code(200).header('Content-Type', deps.registry.contentType).send(text));
    }
    const m = /^\/apis\/([^/]+)$/.exec(path);
    if (m) {
      const g = discovery.apiGroup(m[1]);
      if (g) return json(200, g);
    }
    throw notFoundPath();
  };

  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], url: '/*', handler });
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], url: '/', handler });
  return app;
}

function notFoundPath(): StatusError {
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
}

function onlyProtobuf(accept: string): boolean {
  if (!accept) return false;
  return !/json|yaml|\*\/\*|text\/plain/.test(accept);
}

function aggregatedVersion(accept: string): 'v2' | 'v2beta1' | undefined {
  for (const part of accept.split(',')) {
    if (!part.includes('as=APIGroupDiscoveryList') || !part.includes('g=apidiscovery.k8s.io')) continue;
    if (/v=v2(;|$|\s)/.test(part)) return 'v2';
    if (part.includes('v=v2beta1')) return 'v2beta1';
  }
  return undefined;
}

function wantsTable(accept: string): boolean {
  return accept.split(',').some((p) => p.includes('as=Table') && p.includes('g=meta.k8s.io'));
}

function contentTypeFor(accept: string): string {
  return wantsTable(accept) ? 'application/json;as=Table;v=v1;g=meta.k8s.io' : 'application/json';
}

function includeObject(query: Record<string, unknown>): IncludeObject {
  const v = queryString(query, 'includeObject') ?? 'Metadata';
  if (v !== 'None' && v !== 'Metadata' && v !== 'Object') {
    throw badRequest(
      `includeObject: Unsupported value: "${v}": supported values: "Metadata", "None", "Object"`,
    );
  }
  return v;
}

function tableOr(
  def: NonNullable<ResourceRequest['def']>,
  _info: ResourceRequest,
  accept: string,
  query: Record<string, unknown>,
  items: Record<string, unknown>[],
  listMeta: Record<string, unknown>,
) {
  if (!wantsTable(accept)) return undefined;
  return toTable(def, items, listMeta, includeObject(query));
}

function watchTarget(
  req: FastifyRequest,
  reply: FastifyReply,
  accept: string,
  query: Record<string, unknown>,
) {
  return {
    raw: reply.raw as ServerResponse,
    onClose: (fn: () => void) => {
      req.raw.on('close', fn);
      reply.raw.on('close', fn);
    },
    table: wantsTable(accept) ? includeObject(query) : undefined,
  };
}
