// kubit-proxy as a process: informers for Services and EndpointSlices feed the
// Proxier, which programs this node's (or --network-namespace's) nftables.
// Health on --healthz-bind-address as kube-proxy serves it, metrics on
// --metrics-bind-address. On SIGTERM the rules stay in the kernel (as
// kube-proxy leaves them): traffic keeps flowing while the proxy restarts, and
// the next start replaces them in one transaction. --cleanup removes them.
import { createServer, type Server } from 'node:http';
import type { EndpointSlice, Service } from '@kubit/api';
import {
  type Informer,
  KubeClient,
  loadClientConfig,
  type ResourceRef,
  resources,
  SharedInformerFactory,
} from '@kubit/client';
import {
  createLogger,
  createRegistry,
  type Logger,
  Shutdown,
  StartupError,
  startHealthServer,
} from '@kubit/daemon';
import { createProxyMetrics } from './metrics.js';
import { NftRunner } from './nft.js';
import { sliceServiceKey } from './planner.js';
import { Proxier } from './proxier.js';
import { deleteTableScript } from './ruleset.js';

/** discovery.k8s.io/v1 EndpointSlices (not in the client's list of well-known resources yet). */
export const endpointSlicesResource: ResourceRef = {
  group: 'discovery.k8s.io',
  version: 'v1',
  resource: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};

/** The slices informer's index: the key ("namespace/name") of the Service a slice belongs to. */
const SLICE_SERVICE_INDEX = 'service';

/** The annotation the endpointslice controller sets to when the change that caused a slice update happened. */
export const LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';

export interface ProxyDaemonOptions {
  kubeconfig?: string;
  master?: string;
  nodeName: string;
  clusterCidrs: string[];
  nodePortAddresses: string[];
  masqueradeAll: boolean;
  minSyncPeriodMs: number;
  syncPeriodMs: number;
  healthz?: { host: string; port: number };
  metrics?: { host: string; port: number };
  networkNamespace?: string;
  /** --nft-table: the table's name. */
  tableName: string;
}

export async function runCleanup(networkNamespace: string | undefined, tableName: string): Promise<void> {
  const log = createLogger({ name: 'kubit-proxy' });
  const nft = new NftRunner({ netns: networkNamespace });
  try {
    await nft.apply(deleteTableScript(tableName));
  } catch (err) {
    throw new StartupError(`--cleanup: ${(err as Error).message}`);
  }
  log.info({ netns: networkNamespace, table: tableName }, 'removed the kubit-proxy table');
}

export async function runProxyDaemon(o: ProxyDaemonOptions): Promise<void> {
  const log = createLogger({ name: 'kubit-proxy' });
  const nft = new NftRunner({ netns: o.networkNamespace });
  try {
    await nft.probe();
  } catch (err) {
    throw new StartupError(
      `cannot run nft${o.networkNamespace ? ` in network namespace ${o.networkNamespace}` : ''} ` +
        `(kubit-proxy needs nftables, Debian's nftables package, and root): ${(err as Error).message}`,
    );
  }
  let client: KubeClient;
  try {
    client = new KubeClient(loadClientConfig({ kubeconfig: o.kubeconfig, server: o.master }), {
      userAgent: 'kubit-proxy',
    });
  } catch (err) {
    throw new StartupError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
  const registry = createRegistry();
  const metrics = createProxyMetrics(registry);
  const shutdown = new Shutdown(log);
  shutdown.install();

  const factory = new SharedInformerFactory(client, {
    onError: (err) => log.warn({ err: (err as Error).message }, 'list/watch failed; retrying'),
  });
  const services = factory.forResource<Service & { metadata?: object }>(resources.services);
  const slices = factory.forResource<EndpointSlice & { metadata?: object }>(endpointSlicesResource, {
    indexers: { [SLICE_SERVICE_INDEX]: (s) => keysOf(s) },
  });
  const proxier = new Proxier({
    nft,
    planner: {
      nodeName: o.nodeName,
      clusterCidrs: o.clusterCidrs,
      nodePortAddresses: o.nodePortAddresses,
      masqueradeAll: o.masqueradeAll,
      tableName: o.tableName,
    },
    services: () => services.store.list() as Service[],
    slices: () => slices.store.list() as EndpointSlice[],
    service: (key) => services.store.getByKey(key) as Service | undefined,
    slicesFor: (key) => slices.store.byIndex(SLICE_SERVICE_INDEX, key) as EndpointSlice[],
    minSyncPeriodMs: o.minSyncPeriodMs,
    syncPeriodMs: o.syncPeriodMs,
    metrics,
    log,
  });
  wireHandlers(services, slices, proxier);

  const healthTimeoutMs = 2 * o.syncPeriodMs;
  if (o.healthz) {
    const server = await listen(healthzServer(proxier, healthTimeoutMs), o.healthz, 'healthz', log);
    shutdown.add(() => new Promise<void>((res) => server.close(() => res())));
  }
  if (o.metrics) {
    const app = await startHealthServer({
      host: o.metrics.host,
      port: o.metrics.port,
      registry,
      log,
      readiness: [
        {
          name: 'proxy-rules',
          check: () => {
            if (!proxier.health(healthTimeoutMs).healthy)
              throw new Error('the proxy rules are not up to date');
          },
        },
      ],
    }).catch((err: Error) => {
      throw new StartupError(`cannot serve metrics on ${o.metrics?.host}:${o.metrics?.port}: ${err.message}`);
    });
    shutdown.add(() => app.close());
  }

  factory.start();
  shutdown.add(() => factory.stop());
  shutdown.add(() => proxier.stop());
  await factory.waitForCacheSync();
  log.info(
    {
      node: o.nodeName,
      netns: o.networkNamespace,
      services: services.store.list().length,
      endpointSlices: slices.store.list().length,
    },
    'caches synced; programming nftables',
  );
  proxier.start();
}

function wireHandlers(
  services: Informer<Service & { metadata?: object }>,
  slices: Informer<EndpointSlice & { metadata?: object }>,
  proxier: Proxier,
): void {
  // Before the caches sync the handlers still mark the state dirty; the first sync waits for start().
  // Each event names the Services it touches: a Service its own key, a slice its
  // Service's (both, when an update moved it from one Service to another).
  const changed = (s: Service) => proxier.onChange(undefined, [serviceKeyOf(s)]);
  services.addEventHandler({ onAdd: changed, onUpdate: (_old, s) => changed(s), onDelete: changed });
  const sliceChanged = (s: EndpointSlice, old?: EndpointSlice) =>
    proxier.onChange(triggerTime(s), old ? [...keysOf(old), ...keysOf(s)] : keysOf(s));
  slices.addEventHandler({
    onAdd: (s, initial) => (initial ? proxier.onChange(undefined, keysOf(s)) : sliceChanged(s)),
    onUpdate: (old, s) => sliceChanged(s, old),
    onDelete: (s) => sliceChanged(s),
  });
}

/** The informer store's key of a Service, which is also the planner's serviceKey. */
function serviceKeyOf(s: Service): string {
  return `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
}

function keysOf(s: EndpointSlice): string[] {
  const k = sliceServiceKey(s);
  return k === undefined ? [] : [k];
}

/** The slice's last-change-trigger-time, or now when it has none (or a bad one). */
export function triggerTime(s: EndpointSlice, now = Date.now()): number {
  const v = s.metadata?.annotations?.[LAST_CHANGE_TRIGGER_TIME];
  const t = v ? Date.parse(v) : Number.NaN;
  return Number.isFinite(t) && t <= now ? t : now;
}

/** kube-proxy's /healthz: 200 when the rules are up to date (or were, recently), 503 otherwise, with times in JSON. */
function healthzServer(proxier: Proxier, timeoutMs: number): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/healthz' && path !== '/livez') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    const h = proxier.health(timeoutMs);
    const ok = path === '/livez' || h.healthy;
    const body = {
      lastUpdated: h.lastUpdated ? new Date(h.lastUpdated).toISOString() : '',
      currentTime: new Date().toISOString(),
      nodeEligible: true,
    };
    res.writeHead(ok ? 200 : 503, {
      'content-type': 'application/json',
      'x-content-type-options': 'nosniff',
    });
    res.end(`${JSON.stringify(body)}\n`);
  });
}

function listen(
  server: Server,
  at: { host: string; port: number },
  what: string,
  log: Logger,
): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) =>
      reject(new StartupError(`cannot serve ${what} on ${at.host}:${at.port}: ${err.message}`)),
    );
    server.listen(at.port, at.host, () => {
      log.info({ host: at.host, port: at.port }, `${what} listening`);
      resolve(server);
    });
  });
}
