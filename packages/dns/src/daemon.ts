// kubit-dns as a process: informers on Services and EndpointSlices (all
// namespaces) feed the in-memory cluster zone; UDP and TCP listeners answer
// from it and forward the rest upstream; health on --health-port (/health,
// /ready as CoreDNS's health and ready plugins, plus /healthz, /readyz, /livez),
// Prometheus metrics on --metrics-port; the kube-dns Service and this
// instance's slice are kept in place until SIGTERM takes the slice away.
import { readFileSync } from 'node:fs';
import type { EndpointSlice, Service } from '@kubit/api';
import { type Informer, KubeClient, loadClientConfig, resources, SharedInformerFactory } from '@kubit/client';
import {
  type Check,
  createLogger,
  createRegistry,
  type Logger,
  registerHealthRoutes,
  Shutdown,
  StartupError,
  startHealthServer,
} from '@kubit/daemon';
import Fastify from 'fastify';
import { Forwarder, parseUpstream, resolvConfNameservers, type Upstream } from './forwarder.js';
import { Registration } from './kube-dns.js';
import { createDnsMetrics } from './metrics.js';
import { endpointSlices } from './resources.js';
import { DnsServer } from './server.js';
import { ClusterZone } from './zone.js';

/** How long start-up waits for the informers before serving anyway (CoreDNS waits 5 s too). */
const SYNC_WAIT_MS = 5_000;
/** How often the kube-dns Service and this instance's slice are checked (and repaired). */
const REGISTRATION_PERIOD_MS = 10_000;

export interface DaemonOptions {
  kubeconfig?: string;
  master?: string;
  clusterDomain: string;
  ttl: number;
  upstreams?: string[];
  resolvConf: string;
  bindAddress: string;
  port: number;
  healthPort: number;
  metricsPort: number;
  clusterDnsIP: string;
  advertiseAddress?: string;
  nodeName: string;
  register: boolean;
  upstreamTimeoutMs: number;
}

export async function runDaemon(o: DaemonOptions): Promise<void> {
  const log = createLogger({ name: 'kubit-dns' });
  const upstreams = chooseUpstreams(o, log);
  const client = dnsClient(o);
  const registry = createRegistry();
  const zone = new ClusterZone({ zone: o.clusterDomain, ttl: o.ttl });
  const metrics = createDnsMetrics(registry, () => zone.names);
  const forwarder = new Forwarder({
    upstreams,
    attemptTimeoutMs: o.upstreamTimeoutMs,
    totalTimeoutMs: Math.max(o.upstreamTimeoutMs, 2 * o.upstreamTimeoutMs),
  });
  const shutdown = new Shutdown(log);
  shutdown.install();

  const factory = new SharedInformerFactory(client, {
    onError: (err) => log.warn({ err: (err as Error).message }, 'list/watch failed; retrying'),
  });
  const { services, slices } = feedZone(factory, zone);
  const synced = () => services.hasSynced() && slices.hasSynced();
  factory.start();
  shutdown.add(() => factory.stop());

  const readiness: Check[] = [
    {
      name: 'informer-sync',
      check: () => {
        if (!synced()) throw new Error('Services and EndpointSlices not synced yet');
      },
    },
  ];
  await serveHealth(o, registry, readiness, log, shutdown);
  if (o.metricsPort > 0) {
    const m = await startHealthServer({ host: o.bindAddress, port: o.metricsPort, registry, log }).catch(
      (err: Error) => {
        throw new StartupError(`cannot serve metrics on ${o.bindAddress}:${o.metricsPort}: ${err.message}`);
      },
    );
    shutdown.add(() => m.close());
  }

  await Promise.race([factory.waitForCacheSync(), new Promise((r) => setTimeout(r, SYNC_WAIT_MS).unref())]);
  if (!synced())
    log.warn('serving before Services and EndpointSlices are synced (answers may be incomplete)');
  else log.info({ names: zone.names }, 'caches synced');

  const server = new DnsServer({
    zone,
    forwarder,
    metrics,
    onError: (err) => log.warn({ err: err.message }, 'dns server error'),
  });
  await server.listen(o.bindAddress, o.port).catch((err: NodeJS.ErrnoException) => {
    throw new StartupError(`cannot serve DNS on ${o.bindAddress}:${o.port} (udp and tcp): ${err.message}`);
  });
  log.info(
    { address: o.bindAddress, port: o.port, zone: zone.zone, upstreams: upstreams.map(showUpstream) },
    'serving DNS',
  );
  shutdown.add(async () => {
    await server.close();
    forwarder.close();
  });

  if (o.register) register(client, o, log, shutdown);
}

function showUpstream(u: Upstream): string {
  return u.host.includes(':') ? `[${u.host}]:${u.port}` : `${u.host}:${u.port}`;
}

/** --upstream, or the nameservers of --resolv-conf; never this server itself (a forwarding loop). */
function chooseUpstreams(o: DaemonOptions, log: Logger): Upstream[] {
  let ups: Upstream[];
  if (o.upstreams && o.upstreams.length > 0) {
    try {
      ups = o.upstreams.map(parseUpstream);
    } catch (err) {
      throw new StartupError(`--upstream: ${(err as Error).message}`);
    }
  } else {
    let text = '';
    try {
      text = readFileSync(o.resolvConf, 'utf8');
    } catch (err) {
      throw new StartupError(`cannot read --resolv-conf ${o.resolvConf}: ${(err as Error).message}`);
    }
    ups = resolvConfNameservers(text);
  }
  const self = (u: Upstream) =>
    u.port === o.port &&
    (u.host === o.bindAddress || (o.bindAddress === '0.0.0.0' && u.host.startsWith('127.')));
  const kept = ups.filter((u) => !self(u));
  if (kept.length < ups.length)
    log.warn('left out an upstream that is this server itself (a forwarding loop)');
  if (kept.length === 0) log.warn('no upstream resolvers: names outside the cluster zone get SERVFAIL');
  return kept;
}

function dnsClient(o: DaemonOptions): KubeClient {
  try {
    const config = loadClientConfig({ kubeconfig: o.kubeconfig, server: o.master });
    return new KubeClient(config, { userAgent: 'kubit-dns' });
  } catch (err) {
    throw new StartupError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
}

function feedZone(
  factory: SharedInformerFactory,
  zone: ClusterZone,
): {
  services: Informer<Service & { metadata?: object }>;
  slices: Informer<EndpointSlice & { metadata?: object }>;
} {
  const services = factory.forResource<Service & { metadata?: object }>(resources.services);
  const slices = factory.forResource<EndpointSlice & { metadata?: object }>(endpointSlices);
  services.addEventHandler({
    onAdd: (s) => zone.upsertService(s),
    onUpdate: (_a, b) => zone.upsertService(b),
    onDelete: (s) => zone.deleteService(s),
  });
  slices.addEventHandler({
    onAdd: (s) => zone.upsertSlice(s),
    onUpdate: (a, b) => zone.upsertSlice(b, a),
    onDelete: (s) => zone.deleteSlice(s),
  });
  return { services, slices };
}

/** Plain HTTP, as CoreDNS's health (8080 /health) and ready (/ready) plugins serve. */
async function serveHealth(
  o: DaemonOptions,
  registry: ReturnType<typeof createRegistry>,
  readiness: Check[],
  log: Logger,
  shutdown: Shutdown,
): Promise<void> {
  if (o.healthPort <= 0) return;
  const app = Fastify({ logger: false });
  registerHealthRoutes(app as never, registry, readiness);
  app.get('/health', async (_req, reply) => reply.type('text/plain').send('OK'));
  app.get('/ready', async (_req, reply) => {
    for (const c of readiness) {
      try {
        await c.check();
      } catch (err) {
        return reply
          .code(503)
          .type('text/plain')
          .send(`${c.name}: ${(err as Error).message}\n`);
      }
    }
    return reply.type('text/plain').send('OK');
  });
  await app.listen({ host: o.bindAddress, port: o.healthPort }).catch((err: Error) => {
    throw new StartupError(`cannot serve health on ${o.bindAddress}:${o.healthPort}: ${err.message}`);
  });
  log.info({ host: o.bindAddress, port: o.healthPort }, 'health listening');
  shutdown.add(() => app.close());
}

/** Keeps the Service and this instance's slice in place; on shutdown, marks it not ready and removes it. */
function register(client: KubeClient, o: DaemonOptions, log: Logger, shutdown: Shutdown): void {
  const reg = new Registration(
    client,
    {
      clusterDnsIP: o.clusterDnsIP,
      nodeName: o.nodeName,
      advertiseAddress: o.advertiseAddress,
      dnsPort: o.port,
      metricsPort: o.metricsPort,
    },
    log,
  );
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = reg
      .reconcile()
      .catch((err: Error) => log.warn({ err: err.message }, 'kube-dns registration failed; retrying'))
      .finally(() => {
        if (!stopping) timer = setTimeout(tick, REGISTRATION_PERIOD_MS);
      });
  };
  tick();
  shutdown.add(async () => {
    stopping = true;
    clearTimeout(timer);
    await running;
    await reg.deregister();
  });
}
