import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** A named readiness check: resolves when healthy, throws (with a reason) when not. */
export type Check = { name: string; check: () => Promise<void> | void };

export interface HealthServerOptions {
  host: string;
  port: number;
  registry: Registry;
  log: Logger;
  /** Checks for /readyz (and /healthz). /livez only says the process answers. */
  readiness?: Check[];
  tls?: { certFile: string; keyFile: string; caFile?: string };
}

/**
 * The operations endpoints every daemon serves: /healthz, /livez, /readyz
 * (with `?verbose` listing each check, as Kubernetes does) and /metrics.
 * Returns the fastify instance so a daemon can add its own routes.
 */
export async function startHealthServer(opts: HealthServerOptions): Promise<FastifyInstance> {
  const https = opts.tls
    ? {
        cert: readFileSync(opts.tls.certFile),
        key: readFileSync(opts.tls.keyFile),
        ...(opts.tls.caFile ? { ca: readFileSync(opts.tls.caFile) } : {}),
      }
    : null;
  const app = Fastify({ logger: false, ...(https ? { https } : {}) }) as unknown as FastifyInstance;
  registerHealthRoutes(app, opts.registry, opts.readiness ?? []);
  await app.listen({ host: opts.host, port: opts.port });
  opts.log.info({ host: opts.host, port: opts.port }, 'health and metrics listening');
  return app;
}

export function registerHealthRoutes(app: FastifyInstance, registry: Registry, readiness: Check[]): void {
  const ready = async (verbose: boolean) => {
    const lines: string[] = [];
    let ok = true;
    for (const c of readiness) {
      try {
        await c.check();
        lines.push(`[+]${c.name} ok`);
      } catch (err) {
        ok = false;
        lines.push(`[-]${c.name} failed: ${(err as Error).message}`);
      }
    }
    const body = verbose
      ? `${lines.join('\n')}\n${ok ? 'ok' : 'not ok'}\n`
      : ok
        ? 'ok'
        : `${lines.filter((l) => l.startsWith('[-]')).join('\n')}\nnot ok`;
    return { ok, body };
  };
  app.get('/livez', async (_req, reply) => reply.type('text/plain').send('ok'));
  for (const path of ['/healthz', '/readyz']) {
    app.get(path, async (req, reply) => {
      const verbose = Object.hasOwn((req.query as object) ?? {}, 'verbose');
      const r = await ready(verbose);
      return reply
        .code(r.ok ? 200 : 503)
        .type('text/plain')
        .send(r.body);
    });
  }
  app.get('/metrics', async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}
