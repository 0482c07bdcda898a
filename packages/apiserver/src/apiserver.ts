// Assembles kubit-apiserver: store client, watch caches, bootstrap policy,
// authn/authz and the HTTPS server. main.ts turns flags into these options.
import { existsSync, readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { apiServerServiceIP, formatIPv4 } from '@kubit/api';
import type { Logger } from '@kubit/daemon';
import { Counter, durationArg, Histogram, type Registry, StartupError } from '@kubit/daemon';
import type { FastifyInstance } from 'fastify';
import { limitRangerAdmission } from './admission/limitranger.js';
import { PolicyAdmission } from './admission/policy.js';
import { PolicyStatus } from './admission/policy-status.js';
import { PriorityAdmission } from './admission/priority.js';
import { QuotaAdmission } from './admission/quota.js';
import { WebhookAdmission } from './admission/webhooks.js';
import { Authenticator, loadTokenFile, type UserInfo } from './authn.js';
import { type Authorizer, NodeAuthorizer, RbacAuthorizer, UnionAuthorizer } from './authz.js';
import { bootstrap } from './bootstrap.js';
import { CrdServing } from './crd/serving.js';
import { apiExtensionKinds, builtinKinds, KindRegistry } from './kinds/index.js';
import { ResourceMetricsScraper } from './metrics/scraper.js';
import { loadProtobufSchema } from './protobuf.js';
import { type CreateAdmission, Rest } from './rest.js';
import { ServiceAccountAdmission } from './sa-admission.js';
import { type BoundObjectLookup, ServiceAccountTokens } from './sa-tokens.js';
import { createServer } from './server.js';
import { ApiServerEndpoints } from './services/apiserver-endpoints.js';
import { type ServiceNetworking, serviceNetworking } from './services/networking.js';
import { AllocationRepair } from './services/repair.js';
import { StoreStartup, withTimeout } from './startup.js';
import { Store } from './storage.js';
import { storageAdmission } from './storage-admission.js';
import { WatchCache } from './watchcache.js';

export interface ApiServerOptions {
  bindAddress: string;
  securePort: number;
  tlsCertFile: string;
  tlsPrivateKeyFile: string;
  clientCaFile?: string;
  tokenAuthFile?: string;
  etcdServers: string[];
  etcdCaFile?: string;
  etcdCertFile?: string;
  etcdKeyFile?: string;
  authorizationModes: string[];
  kubeletClientCertificate?: string;
  kubeletClientKey?: string;
  kubeletCertificateAuthority?: string;
  watchCacheHistory?: number;
  bookmarkIntervalMs?: number;
  minRequestTimeoutSeconds?: number;
  /** RSA private key (PEM) ServiceAccount tokens are signed with; without it no tokens are issued or accepted. */
  serviceAccountSigningKeyFile?: string;
  /** Public keys (PEM) tokens may also be verified with (a key being rotated out). */
  serviceAccountKeyFiles?: string[];
  serviceAccountIssuer?: string;
  apiAudiences?: string[];
  serviceAccountMaxTokenExpirationSeconds?: number;
  /** --service-cluster-ip-range (default 10.96.0.0/12). */
  serviceClusterIpRange?: string;
  /** --service-node-port-range (default 30000-32767). */
  serviceNodePortRange?: string;
  /** --metric-resolution: how often kubelets are scraped for metrics.k8s.io (a duration, "15s" by default). */
  metricResolution?: string;
  /** --advertise-address: the address the `kubernetes` Service's endpoints list for this apiserver. */
  advertiseAddress?: string;
}

/** The bind address when it names one; else the first non-loopback IPv4 address of the host. */
export function defaultAdvertiseAddress(bindAddress: string): string | undefined {
  if (isIPv4(bindAddress) && bindAddress !== '0.0.0.0') return bindAddress;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

function advertiseAddressOf(opts: ApiServerOptions): string {
  if (opts.advertiseAddress !== undefined && opts.advertiseAddress !== '') {
    if (!isIPv4(opts.advertiseAddress) || opts.advertiseAddress === '0.0.0.0') {
      throw new StartupError(
        `--advertise-address=${opts.advertiseAddress}: expected one IPv4 address (not 0.0.0.0)`,
      );
    }
    return opts.advertiseAddress;
  }
  const found = defaultAdvertiseAddress(opts.bindAddress);
  if (!found) {
    throw new StartupError('--advertise-address: no non-loopback IPv4 address on this host; set the flag');
  }
  return found;
}

function networkingOf(opts: ApiServerOptions): ServiceNetworking {
  try {
    return serviceNetworking(opts.serviceClusterIpRange, opts.serviceNodePortRange);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
}

function readFile(path: string | undefined, flag: string): Buffer | undefined {
  if (!path) return undefined;
  if (!existsSync(path)) throw new StartupError(`${flag}: no such file: ${path}`);
  try {
    return readFileSync(path);
  } catch (err) {
    throw new StartupError(`${flag}: cannot read ${path}: ${(err as Error).message}`);
  }
}

/** The token signer from the --service-account-* flags, or undefined when no signing key is given. */
function serviceAccountTokens(opts: ApiServerOptions): ServiceAccountTokens | undefined {
  const signingKey = readFile(opts.serviceAccountSigningKeyFile, '--service-account-signing-key-file');
  if (!signingKey) {
    if (opts.serviceAccountKeyFiles?.length) {
      throw new StartupError('--service-account-key-file needs --service-account-signing-key-file');
    }
    return undefined;
  }
  const verificationKeys = (opts.serviceAccountKeyFiles ?? []).map(
    (f) => readFile(f, '--service-account-key-file') as Buffer,
  );
  try {
    return new ServiceAccountTokens({
      signingKey,
      verificationKeys,
      issuer: opts.serviceAccountIssuer,
      apiAudiences: opts.apiAudiences,
      maxExpirationSeconds: opts.serviceAccountMaxTokenExpirationSeconds,
    });
  } catch (err) {
    throw new StartupError(`--service-account-signing-key-file: ${(err as Error).message}`);
  }
}

const BOUND_RESOURCES = { ServiceAccount: 'serviceaccounts', Pod: 'pods', Secret: 'secrets', Node: 'nodes' };
/** A pod whose deletion's grace ended this long ago no longer vouches for its tokens. */
const DELETED_POD_GRACE_MS = 60_000;

/** Finds the objects a token is bound to: the watch cache first, the store when the cache has not seen them. */
function boundObjectLookup(store: Store, caches: Map<string, WatchCache>): BoundObjectLookup {
  return {
    async uidOf(kind, namespace, name) {
      const resource = BOUND_RESOURCES[kind];
      const key = kind === 'Node' ? `/registry/nodes/${name}` : `/registry/${resource}/${namespace}/${name}`;
      const o = caches.get(resource)?.objects.get(key) ?? (await store.get(key))?.obj;
      if (!o) return undefined;
      const deleted = o.metadata?.deletionTimestamp;
      if (kind === 'Pod' && deleted && Date.parse(String(deleted)) + DELETED_POD_GRACE_MS < Date.now()) {
        return undefined;
      }
      return typeof o.metadata?.uid === 'string' ? o.metadata.uid : undefined;
    },
  };
}

function serviceAccountAdmission(serviceAccounts: WatchCache, store: Store): CreateAdmission {
  const plugin = new ServiceAccountAdmission(serviceAccounts, store);
  return async (def, o, namespace) => {
    if (def.group === '' && def.resource === 'pods') await plugin.admitPod(o, namespace);
  };
}

export interface RunningApiServer {
  app: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/** What the command line names, read and checked before anything starts: a bad flag fails the start, not a request. */
function readStartupInputs(opts: ApiServerOptions) {
  const cert = readFile(opts.tlsCertFile, '--tls-cert-file');
  const key = readFile(opts.tlsPrivateKeyFile, '--tls-private-key-file');
  if (!cert || !key) throw new StartupError('--tls-cert-file and --tls-private-key-file are required');
  const ca = readFile(opts.clientCaFile, '--client-ca-file');
  let tokens = new Map<string, UserInfo>();
  if (opts.tokenAuthFile) {
    readFile(opts.tokenAuthFile, '--token-auth-file');
    try {
      tokens = loadTokenFile(opts.tokenAuthFile);
    } catch (err) {
      throw new StartupError(`--token-auth-file: ${(err as Error).message}`);
    }
  }
  if (opts.etcdServers.length === 0) throw new StartupError('--etcd-servers is required');
  for (const mode of opts.authorizationModes) {
    if (!['Node', 'RBAC', 'AlwaysAllow'].includes(mode)) {
      throw new StartupError(`--authorization-mode: unknown mode "${mode}" (known: Node, RBAC, AlwaysAllow)`);
    }
  }
  // Read the protobuf schema now: a missing or broken proto/ fails the start, not a request.
  try {
    loadProtobufSchema();
  } catch (err) {
    throw new StartupError(`protobuf schema: ${(err as Error).message}`);
  }
  let metricResolutionMs: number;
  try {
    metricResolutionMs = durationArg(opts.metricResolution ?? '15s');
  } catch (err) {
    throw new StartupError(`--metric-resolution: ${(err as Error).message}`);
  }
  if (metricResolutionMs < 1000) throw new StartupError('--metric-resolution: must be at least 1s');
  return {
    tls: { cert, key, ca },
    tokens,
    networking: networkingOf(opts),
    advertiseAddress: advertiseAddressOf(opts),
    kubeletTls: {
      cert: readFile(opts.kubeletClientCertificate, '--kubelet-client-certificate'),
      key: readFile(opts.kubeletClientKey, '--kubelet-client-key'),
      ca: readFile(opts.kubeletCertificateAuthority, '--kubelet-certificate-authority'),
    },
    metricResolutionMs,
  };
}

/** The authorizers of --authorization-mode, in its order (the first that decides wins). */
function authorizerChain(
  modes: readonly string[],
  caches: Map<string, WatchCache>,
): { chain: Authorizer[]; rbac: RbacAuthorizer } {
  const chain: Authorizer[] = [];
  const rbac = new RbacAuthorizer({
    roles: caches.get('roles')!,
    clusterroles: caches.get('clusterroles')!,
    rolebindings: caches.get('rolebindings')!,
    clusterrolebindings: caches.get('clusterrolebindings')!,
  });
  for (const mode of modes) {
    if (mode === 'Node') chain.push(new NodeAuthorizer(caches.get('pods')!));
    if (mode === 'RBAC') chain.push(rbac);
    if (mode === 'AlwaysAllow')
      chain.push({ authorize: () => ({ decision: 'allow', reason: 'AlwaysAllow' }) });
  }
  return { chain, rbac };
}

export async function startApiServer(
  opts: ApiServerOptions,
  log: Logger,
  registry: Registry,
): Promise<RunningApiServer> {
  const { tls, tokens, networking, advertiseAddress, kubeletTls, metricResolutionMs } =
    readStartupInputs(opts);
  const storeLatency = new Histogram({
    name: 'apiserver_storage_request_duration_seconds',
    help: 'Latency of requests to the store, by operation.',
    labelNames: ['operation'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const store = new Store({
    endpoints: opts.etcdServers,
    caFile: readFile(opts.etcdCaFile, '--etcd-cafile'),
    certFile: readFile(opts.etcdCertFile, '--etcd-certfile'),
    keyFile: readFile(opts.etcdKeyFile, '--etcd-keyfile'),
    latency: storeLatency,
  });
  const saTokens = serviceAccountTokens(opts);
  const kinds = new KindRegistry([
    ...builtinKinds({ serviceAccountTokens: saTokens, serviceNetworking: networking }),
    ...apiExtensionKinds(),
  ]);
  const caches = new Map<string, WatchCache>();
  for (const d of kinds.all) {
    const sr = kinds.storageResource(d);
    if (!caches.has(sr))
      caches.set(sr, new WatchCache(store, `/registry/${sr}/`, log, { historySize: opts.watchCacheHistory }));
  }
  // CustomResourceDefinitions become kinds at runtime, each with its own watch cache.
  const crds = new CrdServing(store, kinds, caches, log, { historySize: opts.watchCacheHistory });
  const policyStatus = new PolicyStatus(caches.get('validatingadmissionpolicies')!, store, log);
  const repair = new AllocationRepair(
    store,
    log,
    new Counter({
      name: 'apiserver_service_allocation_repairs_total',
      help: 'Service allocation keys the repair loop released (no Service held them) or restored.',
      labelNames: ['action'],
      registers: [registry],
    }),
  );
  const metricsScraper = new ResourceMetricsScraper({
    nodes: caches.get('nodes')!,
    kubeletTls,
    log,
    resolutionMs: metricResolutionMs,
  });
  const kubernetesService = new ApiServerEndpoints({
    store,
    rest: new Rest(store, kinds, caches, log),
    services: kinds.lookup('', 'v1', 'services')!,
    log,
    ip: advertiseAddress,
    port: opts.securePort,
    serviceIP: formatIPv4(apiServerServiceIP(networking.cidr)),
  });
  let background = false;
  const startup = new StoreStartup(store, opts.etcdServers, log, async () => {
    await bootstrap(store, log);
    await Promise.all([...caches.values()].map((c) => c.start()));
    await crds.start();
    policyStatus.start();
    // At start, before serving: leaked allocations go, the `kubernetes` Service is there.
    // Neither stops the apiserver from serving when it fails: each retries on its loop.
    await repair
      .runOnce()
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'service allocation repair failed'));
    await kubernetesService
      .reconcile()
      .catch((err: unknown) =>
        log.warn({ err: (err as Error).message }, 'kubernetes service endpoints: reconcile failed; retrying'),
      );
    if (!background) {
      background = true;
      repair.start();
      kubernetesService.start();
      metricsScraper.start();
    }
  });

  const { chain: authzChain, rbac } = authorizerChain(opts.authorizationModes, caches);
  const lookup = boundObjectLookup(store, caches);
  // DefaultStorageClass, StorageObjectInUseProtection and PersistentVolumeClaimResize.
  const storage = storageAdmission(caches.get('storageclasses')!, store);
  const authz = new UnionAuthorizer(authzChain);
  const webhooks = new WebhookAdmission(kinds, caches, log, store, registry, authz);
  const policies = new PolicyAdmission(kinds, caches, log, store, registry, authz);
  const quota = new QuotaAdmission(kinds, caches.get('resourcequotas')!, store);
  const priority = new PriorityAdmission(caches.get('priorityclasses')!);
  const app = createServer({
    store,
    kinds,
    caches,
    authn: new Authenticator(tokens, saTokens && { tokens: saTokens, lookup }, log),
    tokenReviewer: { tokens: saTokens, lookup, staticUser: (t) => tokens.get(t) },
    createAdmission: [
      ...(saTokens ? [serviceAccountAdmission(caches.get('serviceaccounts')!, store)] : []),
      storage.create,
      // LimitRanger sets defaults: ResourceQuota (validating, last) counts them.
      limitRangerAdmission(caches.get('limitranges')!),
      priority.admitCreate,
    ],
    updateAdmission: [storage.update],
    // Priority, ValidatingAdmissionPolicy, validating webhooks, then ResourceQuota, as
    // Kubernetes orders its validating plugins.
    webhooks: {
      mutate: (a) => webhooks.mutate(a),
      validate: async (a) => {
        await priority.validate(a);
        await policies.validate(a);
        await webhooks.validate(a);
        await quota.validate(a);
      },
    },
    authz,
    rbac,
    log,
    registry,
    kubeletTls,
    metrics: { scraper: metricsScraper, nodes: caches.get('nodes')!, pods: caches.get('pods')! },
    tls,
    serverAddress: `${opts.bindAddress}:${opts.securePort}`,
    bookmarkIntervalMs: opts.bookmarkIntervalMs,
    minRequestTimeoutSeconds: opts.minRequestTimeoutSeconds,
    ready: async () => {
      startup.check();
      await withTimeout(store.currentRevision(), 3000, 'store read');
    },
    serving: () => startup.done,
    notServingReason: () => startup.reason,
  });
  try {
    await app.listen({ host: opts.bindAddress, port: opts.securePort });
  } catch (err) {
    throw new StartupError(
      `cannot listen on ${opts.bindAddress}:${opts.securePort}: ${(err as Error).message}`,
    );
  }
  const url = `https://${opts.bindAddress.includes(':') ? `[${opts.bindAddress}]` : opts.bindAddress}:${opts.securePort}`;
  log.info({ url, store: opts.etcdServers }, 'kubit-apiserver listening; connecting to the store');
  startup.run();
  return {
    app,
    url,
    async stop() {
      startup.stop();
      await metricsScraper.stop();
      await repair.stop();
      await kubernetesService.stop();
      await crds.stop();
      await policyStatus.stop();
      await Promise.all([...caches.values()].map((c) => c.stop()));
      await app.close();
      webhooks.close();
      store.close();
    },
  };
}
