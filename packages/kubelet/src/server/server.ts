// The kubelet's HTTPS server: container logs for the apiserver (kubectl logs),
// health, metrics, the pods it runs and their stats (/stats/summary). With TLS it demands a client
// certificate signed by --client-ca-file (the apiserver's).
import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { ContainerRuntime, ContainerStatus } from '@kubit/cri';
import { type Check, type Logger, type Registry, registerHealthRoutes } from '@kubit/daemon';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../pods/labels.js';
import type { PodManager } from '../pods/manager.js';
import { restartCountOf } from '../pods/status.js';
import { fileExists, readContainerLog } from './logs.js';
import { RESOURCE_METRICS_CONTENT_TYPE, renderResourceMetrics } from './resource-metrics.js';
import type { StatsCollector } from './stats-sources.js';
import { failureStatus } from './status.js';
import { registerStreaming } from './streaming.js';

export interface KubeletServerOptions {
  host: string;
  port: number;
  manager: PodManager;
  runtime: ContainerRuntime;
  registry: Registry;
  log: Logger;
  readiness?: Check[];
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
  /** Serves /stats/summary when given. */
  stats?: StatsCollector;
}

function status(reply: FastifyReply, code: number, reason: string, message: string) {
  return reply.code(code).send(failureStatus(code, reason, message));
}

function intParam(v: unknown, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string' || !/^-?\d+$/.test(v))
    throw new Error(`${name} must be an integer, got "${String(v)}"`);
  return Number(v);
}

function boolParam(v: unknown): boolean {
  return v === 'true' || v === '1' || v === '';
}

export async function startKubeletServer(opts: KubeletServerOptions): Promise<FastifyInstance> {
  const https = opts.tls
    ? {
        cert: readFileSync(opts.tls.certFile),
        key: readFileSync(opts.tls.keyFile),
        ...(opts.tls.clientCaFile
          ? { ca: readFileSync(opts.tls.clientCaFile), requestCert: true, rejectUnauthorized: true }
          : {}),
      }
    : null;
  const app = Fastify({ logger: false, ...(https ? { https } : {}) }) as unknown as FastifyInstance;
  registerHealthRoutes(app, opts.registry, opts.readiness ?? []);
  // Every client here holds a certificate from the cluster CA, nodes included; pods, their
  // logs and streams are only for the apiserver (and admins): group system:masters.
  const apiserverOnly = (raw: IncomingMessage): string | undefined => {
    if (!https || !opts.tls?.clientCaFile) return undefined;
    const org = (raw.socket as TLSSocket).getPeerCertificate?.()?.subject?.O;
    const groups = Array.isArray(org) ? org : org ? [org] : [];
    return groups.includes('system:masters')
      ? undefined
      : 'only the apiserver (group system:masters) may read pods, stats and logs or stream here';
  };
  app.addHook('onRequest', async (req, reply) => {
    const guarded = ['/containerLogs/', '/pods', '/stats', '/metrics/resource'].some((p) =>
      req.url.startsWith(p),
    );
    if (!guarded) return;
    const denied = apiserverOnly(req.raw);
    if (denied) await status(reply, 403, 'Forbidden', denied);
  });
  registerStreaming(app.server as unknown as Server, {
    manager: opts.manager,
    runtime: opts.runtime,
    denied: apiserverOnly,
  });

  app.get('/pods', async () => ({
    kind: 'PodList',
    apiVersion: 'v1',
    metadata: {},
    items: opts.manager.pods(),
  }));

  app.get<{ Querystring: Record<string, string> }>('/stats/summary', async (req, reply) => {
    if (!opts.stats) return status(reply, 404, 'NotFound', 'this kubelet serves no stats');
    return opts.stats.summary({ onlyCpuAndMemory: req.query.only_cpu_and_memory === 'true' });
  });

  // metrics-server's scrape: the same CRI stats as the Summary, as cumulative counters
  // (the scraper computes rates from its own two samples), so reading it moves no rate here.
  app.get('/metrics/resource', async (_req, reply) => {
    if (!opts.stats) return status(reply, 404, 'NotFound', 'this kubelet serves no stats');
    const summary = await opts.stats.summary({ onlyCpuAndMemory: true, keepRates: true });
    return reply.type(RESOURCE_METRICS_CONTENT_TYPE).send(renderResourceMetrics(summary));
  });

  app.get<{
    Params: { namespace: string; pod: string; container: string };
    Querystring: Record<string, string>;
  }>('/containerLogs/:namespace/:pod/:container', async (req, reply) => {
    const { namespace, pod: podName, container } = req.params;
    const q = req.query;
    let tailLines: number | undefined;
    let sinceSeconds: number | undefined;
    let limitBytes: number | undefined;
    let sinceTimeMs: number | undefined;
    try {
      tailLines = intParam(q.tailLines, 'tailLines');
      sinceSeconds = intParam(q.sinceSeconds, 'sinceSeconds');
      limitBytes = intParam(q.limitBytes, 'limitBytes');
      if (q.sinceTime) {
        sinceTimeMs = Date.parse(q.sinceTime);
        if (Number.isNaN(sinceTimeMs)) throw new Error(`sinceTime "${q.sinceTime}" is not an RFC3339 time`);
      }
    } catch (err) {
      return status(reply, 400, 'BadRequest', (err as Error).message);
    }
    if (sinceSeconds !== undefined) sinceTimeMs = Date.now() - sinceSeconds * 1000;
    const pod = opts.manager
      .pods()
      .find((p) => p.metadata?.namespace === namespace && p.metadata?.name === podName);
    if (!pod)
      return status(
        reply,
        404,
        'NotFound',
        `pod "${podName}" in namespace "${namespace}" not found on this node`,
      );
    const known = [
      ...(pod.spec?.containers ?? []),
      ...(pod.spec?.initContainers ?? []),
      ...(pod.spec?.ephemeralContainers ?? []),
    ].some((c) => c.name === container);
    if (!known) {
      return status(reply, 400, 'BadRequest', `container ${container} is not valid for pod ${podName}`);
    }
    const listed = await opts.runtime.listContainers({
      labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '', [CONTAINER_NAME_LABEL]: container },
    });
    const instances: ContainerStatus[] = [];
    for (const c of listed) {
      const s = await opts.runtime.containerStatus(c.id).catch(() => undefined);
      if (s) instances.push(s);
    }
    instances.sort((a, b) => restartCountOf(b) - restartCountOf(a) || b.createdAt - a.createdAt);
    const previous = boolParam(q.previous);
    const instance = previous ? instances[1] : instances[0];
    if (!instance) {
      return previous
        ? status(
            reply,
            400,
            'BadRequest',
            `previous terminated container "${container}" in pod "${podName}" not found`,
          )
        : status(
            reply,
            400,
            'BadRequest',
            `container "${container}" in pod "${podName}" is waiting to start: ContainerCreating`,
          );
    }
    if (!instance.logPath || !(await fileExists(instance.logPath))) {
      return status(reply, 404, 'NotFound', `log of container "${container}" in pod "${podName}" not found`);
    }
    const abort = new AbortController();
    req.raw.on('close', () => abort.abort());
    const stillRunning = async () => {
      try {
        return (await opts.runtime.containerStatus(instance.id)).state === 'CONTAINER_RUNNING';
      } catch {
        return false;
      }
    };
    const body = Readable.from(
      readContainerLog(
        instance.logPath,
        {
          follow: boolParam(q.follow) && !previous,
          tailLines,
          timestamps: boolParam(q.timestamps),
          sinceTimeMs,
          limitBytes,
        },
        stillRunning,
        abort.signal,
      ),
    );
    return reply.type('text/plain').send(body);
  });

  await app.listen({ host: opts.host, port: opts.port });
  opts.log.info({ host: opts.host, port: opts.port, tls: !!opts.tls }, 'kubelet server listening');
  return app;
}
