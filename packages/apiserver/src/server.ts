// kubit-apiserver's HTTPS server: authenticate → authorize → decode → default →
// validate → admit → store, for every kind in the registry; discovery,
// OpenAPI, health and metrics around it. This file wires fastify to the
// handlers: resource requests (resource-handler.ts), non-resource paths
// (nonresource.ts), the streaming upgrades (streaming.ts).
import type { Server as HttpServer, IncomingMessage } from 'node:http';
import {
  badRequest,
  internalError,
  notFoundPath,
  requestEntityTooLarge,
  type Status,
  StatusError,
  serviceUnavailable,
  unauthorized,
} from '@kubit/api';
import type { Logger, Registry } from '@kubit/daemon';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Authenticator } from './authn.js';
import { type Authorizer, authorizeRequest, type RbacAuthorizer } from './authz.js';
import { Discovery } from './discovery.js';
import { etagOf, matchesEtag } from './etag.js';
import { impersonate } from './impersonation.js';
import type { KindRegistry } from './kinds/index.js';
import type { RawExchange } from './kinds/types.js';
import type { KubeletClientTls } from './logs.js';
import { serveNonResource } from './nonresource.js';
import { parseRequestInfo } from './request.js';
import { RequestMetrics } from './request-metrics.js';
import { type ResourceServices, type Responder, serveResource } from './resource-handler.js';
import { type CreateAdmission, type Ctx, type DynamicAdmission, Rest, type UpdateAdmission } from './rest.js';
import type { Store } from './storage.js';
import { registerStreaming } from './streaming.js';
import type { TokenReviewer } from './token-review.js';
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
  /** Mutating admission for creates (see Rest). */
  createAdmission?: CreateAdmission[];
  updateAdmission?: UpdateAdmission[];
  /** Admission webhooks (Mutating/ValidatingWebhookConfigurations). */
  webhooks?: DynamicAdmission;
  /** Answers TokenReviews. */
  tokenReviewer: TokenReviewer;
  log: Logger;
  registry: Registry;
  kubeletTls: KubeletClientTls;
  tls: { cert: Buffer; key: Buffer; ca?: Buffer };
  /** host:port clients reach this server at (for /api's serverAddressByClientCIDRs). */
  serverAddress: string;
  bookmarkIntervalMs?: number;
  /** A watch without timeoutSeconds lasts between this and twice this (spreads reconnects). */
  minRequestTimeoutSeconds?: number;
  /** metrics.k8s.io/v1beta1 from this scraper (and the nodes and pods caches). */
  metrics?: ResourceServices['metrics'];
  ready: () => Promise<void>;
  /** False until the store answered and the caches are filled: requests get 503 until then. */
  serving: () => boolean;
  /** Why the server is not serving yet. */
  notServingReason: () => string;
}

/** The paths of the pods, services and nodes proxies, whose bodies are streamed rather than read. */
const PROXY_ROUTES = [
  ...['pods', 'services'].flatMap((r) => [
    `/api/v1/namespaces/:namespace/${r}/:name/proxy`,
    `/api/v1/namespaces/:namespace/${r}/:name/proxy/*`,
  ]),
  '/api/v1/nodes/:name/proxy',
  '/api/v1/nodes/:name/proxy/*',
];

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
  const metrics = new RequestMetrics(deps.registry, deps.log);
  const services: ResourceServices = {
    rest: new Rest(
      deps.store,
      deps.kinds,
      deps.caches,
      deps.log,
      deps.createAdmission,
      deps.updateAdmission,
      deps.webhooks,
    ),
    discovery: new Discovery(deps.kinds, deps.serverAddress, !!deps.metrics),
    authz: deps.authz,
    rbac: deps.rbac,
    kubeletTls: deps.kubeletTls,
    tokenReviewer: deps.tokenReviewer,
    watch: {
      bookmarkIntervalMs: deps.bookmarkIntervalMs ?? 10_000,
      minRequestTimeoutSeconds: deps.minRequestTimeoutSeconds ?? 1800,
      openWatches: metrics.openWatches,
    },
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  // Callback-style hooks: an async hook costs a promise and a microtask turn per request.
  app.addHook('onResponse', (req, reply, done) => {
    metrics.finish(req.raw, reply.statusCode);
    done();
  });
  app.addHook('onRequest', (req, reply, done) => {
    metrics.begin(req.raw, req.method);
    refuseTooLargeBody(req, reply, done);
  });
  app.setErrorHandler((err: unknown, req, reply) => {
    const status = statusOfError(err, deps.log, req.url);
    if (reply.sent || reply.raw.headersSent) {
      reply.raw.destroy();
      return;
    }
    sendStatus(reply, status);
  });
  app.setNotFoundHandler((_req, reply) => sendStatus(reply, notFoundPath().status));
  registerHealth(app, deps.ready);

  registerStreaming(app.server as unknown as HttpServer, {
    store: deps.store,
    kubeletTls: deps.kubeletTls,
    authenticate: async (req) => {
      const user = await deps.authn.authenticate(req);
      return user && impersonate(user, req.headers, deps.authz);
    },
    authorize: (user, info) => authorizeRequest(deps.authz, user, info),
    parse: (method, path, query) => parseRequestInfo(method, path, query, deps.kinds),
    serving: deps.serving,
    admitConnect: async (user, info, options) => {
      const pods = deps.kinds.lookup('', 'v1', 'pods');
      if (!deps.webhooks || !pods || info.kind !== 'resource') return;
      const review = {
        def: pods,
        subresource: info.subresource,
        operation: 'CONNECT' as const,
        namespace: info.namespace,
        name: info.name,
        object: options,
        user,
        dryRun: false,
        warnings: [],
      };
      await deps.webhooks.mutate(review);
      await deps.webhooks.validate(review);
    },
  });

  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const meta = metrics.meta(req.raw)!;
    const path = requestPath(req.url);
    const authenticated = await deps.authn.authenticate(req.raw);
    if (!authenticated) throw unauthorized();
    // Impersonation headers: from here on the request is the impersonated user's.
    const user = impersonate(authenticated, req.headers, deps.authz);
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
    authorizeRequest(deps.authz, user, info);
    const accept = String(req.headers.accept ?? '');
    const ctx: Ctx = {
      user,
      query,
      body: Buffer.isBuffer(req.body) ? req.body : undefined,
      contentType: req.headers['content-type'],
      warnings: [],
      userAgent: req.headers['user-agent'],
    };
    const out = responder(req, reply, ctx, metrics);
    if (info.kind === 'resource') return serveResource(info, ctx, accept, out, services);
    const a = await serveNonResource(info.path, accept, services.discovery, deps.registry, query);
    for (const [k, v] of Object.entries(a.headers ?? {})) reply.raw.setHeader(k, v);
    if ('text' in a && Buffer.isBuffer(a.text)) {
      reply.hijack();
      reply.raw.writeHead(a.code, { 'Content-Type': a.contentType, 'Content-Length': a.text.length });
      reply.raw.end(a.text);
      return metrics.finish(req.raw, a.code);
    }
    if ('text' in a) return reply.code(a.code).header('Content-Type', a.contentType).send(a.text);
    return out.document(a.code, a.body, a.contentType, a.etag);
  };

  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], url: '/*', handler });
  // A proxy subresource's body is streamed to its backend as it comes, never read here.
  app.register(async (proxies) => {
    proxies.removeAllContentTypeParsers();
    proxies.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    for (const url of PROXY_ROUTES) {
      proxies.route({
        method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'],
        url,
        handler,
        bodyLimit: Number.MAX_SAFE_INTEGER,
      });
    }
  });
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'], url: '/', handler });
  return app;
}

/**
 * How handlers answer one request. A JSON answer goes straight to the socket: the body
 * is already serialized, and fastify's send pipeline (onSend hooks, payload checks) was
 * a measurable part of a small write's CPU. The request is then counted here.
 */
function responder(req: FastifyRequest, reply: FastifyReply, ctx: Ctx, metrics: RequestMetrics): Responder {
  const raw: RawExchange = {
    request: req.raw,
    hijack: () => {
      reply.hijack();
      return reply.raw;
    },
    onClose: (fn) => {
      req.raw.on('close', fn);
      reply.raw.on('close', fn);
    },
  };
  return {
    raw,
    json(code, body, contentType = 'application/json') {
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
      metrics.finish(req.raw, code);
    },
    finished: () => metrics.finish(req.raw, reply.raw.statusCode),
    document(code, body, contentType, etag) {
      if (code === 200 && (req.method === 'GET' || req.method === 'HEAD')) {
        const tag = etag ?? etagOf(body);
        if (matchesEtag(req.headers['if-none-match'], tag)) {
          reply.hijack();
          reply.raw.writeHead(304, { ETag: tag });
          reply.raw.end();
          metrics.finish(req.raw, 304);
          return;
        }
        reply.raw.setHeader('ETag', tag);
      }
      this.json(code, body, contentType);
    },
  };
}

/** The URL's path, percent-decoded, without trailing slashes. */
function requestPath(url: string): string {
  try {
    return decodeURIComponent((url.split('?')[0] ?? '/').replace(/\/+$/, '') || '/');
  } catch {
    throw badRequest('the request path is not valid URL encoding');
  }
}

function sendStatus(reply: FastifyReply, status: Status): void {
  reply.code(status.code).header('Content-Type', 'application/json').send(JSON.stringify(status));
}

/** The Status an error thrown by a handler (or by fastify itself) is answered with. */
function statusOfError(err: unknown, log: Logger, url: string): Status {
  if (err instanceof StatusError) return err.status;
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e.statusCode === 413) {
    return requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`).status;
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { ...badRequest(e.message ?? 'bad request').status, code: e.statusCode };
  }
  log.error({ err, path: url }, 'internal error');
  return internalError(err).status;
}

/**
 * A body announced as too large is read and dropped (up to a bound) before the 413
 * goes out: closing while the client still writes would make it see a connection
 * reset instead of the answer. Beyond the bound the connection is closed at once.
 */
function refuseTooLargeBody(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const length = Number(req.headers['content-length'] ?? 0);
  if (!(length > MAX_BODY_BYTES)) {
    done();
    return;
  }
  const answer = () => sendStatus(reply, requestEntityTooLarge(`limit is ${MAX_BODY_BYTES}`).status);
  if (length > MAX_DRAINED_BODY_BYTES) {
    reply.header('Connection', 'close');
    answer();
    return;
  }
  const raw: IncomingMessage = req.raw;
  raw.on('error', () => {});
  raw.once('end', answer);
  raw.resume();
}

/** /livez, /readyz and /healthz: unauthenticated, as Kubernetes' system:public-info-viewer allows. */
function registerHealth(app: FastifyInstance, ready: () => Promise<void>): void {
  const health = async (reply: FastifyReply, verbose: boolean) => {
    try {
      await ready();
      return reply.type('text/plain').send(verbose ? '[+]etcd ok\n[+]caches ok\nok\n' : 'ok');
    } catch (err) {
      return reply
        .code(503)
        .type('text/plain')
        .send(`[-]etcd failed: ${(err as Error).message}\nreadyz check failed\n`);
    }
  };
  const verbose = (req: FastifyRequest) => Object.hasOwn((req.query as object) ?? {}, 'verbose');
  app.get('/livez', async (_req, reply) => reply.type('text/plain').send('ok'));
  app.get('/readyz', async (req, reply) => health(reply, verbose(req)));
  app.get('/healthz', async (req, reply) => health(reply, verbose(req)));
}
