#!/usr/bin/env node
// kubit-controller-manager: runs the controllers (replicaset,
// replicationcontroller, deployment, node IPAM, node lifecycle, garbage
// collector, namespace, pod GC, endpoint, endpointslice,
// endpointslicemirroring, service-lb-ipam) against the apiserver,
// with Lease leader election so only one replica acts at a time.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import {
  createLogger,
  createRegistry,
  durationArg,
  Gauge,
  intArg,
  listArg,
  runMain,
  Shutdown,
  StartupError,
  serveOperations,
} from '@kubit/daemon';
import { Command } from 'commander';
import { parseCidr } from './cidr.js';
import { enabledControllers } from './controller-names.js';
import { parsePool } from './loadbalancer/pool.js';

interface Flags {
  kubeconfig?: string;
  master?: string;
  leaderElect: boolean;
  leaderElectLeaseDuration: number;
  leaderElectRenewDeadline: number;
  leaderElectRetryPeriod: number;
  leaderElectResourceNamespace: string;
  leaderElectResourceName: string;
  clusterCidr?: string;
  nodeCidrMaskSize: number;
  allocateNodeCidrs: boolean;
  controllers: string[];
  nodeMonitorGracePeriod: number;
  nodeMonitorPeriod: number;
  concurrentSyncs: number;
  maxEndpointsPerSlice: number;
  mirroringMaxEndpointsPerSubset: number;
  loadBalancerIpRange: string;
  securePort: number;
  bindAddress: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  rootCaFile?: string;
  horizontalPodAutoscalerSyncPeriod: number;
  horizontalPodAutoscalerDownscaleStabilization: number;
  horizontalPodAutoscalerTolerance: number;
  horizontalPodAutoscalerCpuInitializationPeriod: number;
  horizontalPodAutoscalerInitialReadinessDelay: number;
  v?: number;
}

const boolArg = (v: string): boolean => {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new StartupError(`"${v}" is not a boolean (true or false)`);
};

const program = new Command('kubit-controller-manager')
  .description(
    'Runs the Kubit controllers: replicaset, replicationcontroller, deployment, nodeipam, nodelifecycle, garbagecollector, namespace, podgc, endpoint, endpointslice, endpointslicemirroring, service-lb-ipam.',
  )
  .option('--kubeconfig <file>', 'kubeconfig with the apiserver address and credentials')
  .option('--master <url>', 'apiserver address (overrides the kubeconfig)')
  .option('--leader-elect [bool]', 'elect a leader through a Lease before acting', boolArg, true)
  .option('--leader-elect-lease-duration <duration>', 'how long a lease is valid', durationArg, 15_000)
  .option(
    '--leader-elect-renew-deadline <duration>',
    'how long the leader tries to renew before giving up',
    durationArg,
    10_000,
  )
  .option('--leader-elect-retry-period <duration>', 'time between acquire/renew attempts', durationArg, 2_000)
  .option('--leader-elect-resource-namespace <ns>', 'namespace of the leader Lease', 'kube-system')
  .option('--leader-elect-resource-name <name>', 'name of the leader Lease', 'kube-controller-manager')
  .option('--cluster-cidr <cidr>', 'CIDR range for pods (e.g. 10.244.0.0/16)')
  .option('--node-cidr-mask-size <n>', 'mask size of each node CIDR', intArg(1, 30), 24)
  .option('--allocate-node-cidrs [bool]', 'give nodes podCIDRs from --cluster-cidr', boolArg, false)
  .option(
    '--controllers <list>',
    'controllers to run: "*" for the defaults, "foo" to add, "-foo" to remove',
    listArg,
    [],
  )
  .option(
    '--node-monitor-grace-period <duration>',
    'silence after which a node is marked Unknown',
    durationArg,
    40_000,
  )
  .option('--node-monitor-period <duration>', 'how often node health is checked', durationArg, 5_000)
  .option('--concurrent-syncs <n>', 'workers per controller', intArg(1, 64), 2)
  .option(
    '--max-endpoints-per-slice <n>',
    'the most endpoints the endpointslice controller puts in one EndpointSlice',
    intArg(1, 1000),
    100,
  )
  .option(
    '--mirroring-max-endpoints-per-subset <n>',
    'the most addresses of one Endpoints subset the endpointslicemirroring controller mirrors into a slice',
    intArg(1, 1000),
    1000,
  )
  .option(
    '--load-balancer-ip-range <range>',
    'addresses for LoadBalancer Services, a CIDR (192.168.50.0/28) or a range (192.168.50.10-192.168.50.20); empty turns service-lb-ipam off',
    '',
  )
  .option(
    '--secure-port <port>',
    'HTTPS port for /healthz and /metrics (0 disables)',
    intArg(0, 65535),
    10257,
  )
  .option('--bind-address <ip>', 'address for --secure-port', '0.0.0.0')
  .option('--tls-cert-file <file>', 'serving certificate for --secure-port (self-signed when absent)')
  .option('--tls-private-key-file <file>', 'key of --tls-cert-file')
  .option(
    '--root-ca-file <file>',
    'the CA bundle published as the kube-root-ca.crt ConfigMap in every namespace (pods verify the apiserver with it)',
  )
  .option(
    '--horizontal-pod-autoscaler-sync-period <duration>',
    'how often each HorizontalPodAutoscaler is synced',
    durationArg,
    15_000,
  )
  .option(
    '--horizontal-pod-autoscaler-downscale-stabilization <duration>',
    'how far back an HPA without behavior looks for a higher recommendation before scaling down',
    durationArg,
    300_000,
  )
  .option(
    '--horizontal-pod-autoscaler-tolerance <ratio>',
    'how far the usage-to-target ratio may be from 1 before an HPA scales',
    (v: string) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) throw new StartupError(`"${v}" is not a non-negative number`);
      return n;
    },
    0.1,
  )
  .option(
    '--horizontal-pod-autoscaler-cpu-initialization-period <duration>',
    "how long after a pod's start its CPU samples count only once it is ready",
    durationArg,
    300_000,
  )
  .option(
    '--horizontal-pod-autoscaler-initial-readiness-delay <duration>',
    'how long after its start an unready pod is taken as never ready yet',
    durationArg,
    30_000,
  )
  .option('--v <level>', 'log verbosity (ignored beyond info/debug)', intArg(0, 10))
  .action(async (flags: Flags) => {
    await run(flags);
  });

async function run(flags: Flags): Promise<void> {
  const log = createLogger({
    name: 'kubit-controller-manager',
    level: (flags.v ?? 0) >= 4 ? 'debug' : undefined,
  });
  let controllers: ReturnType<typeof enabledControllers>;
  try {
    controllers = enabledControllers(flags.controllers);
    if (flags.clusterCidr) parseCidr(flags.clusterCidr);
    if (flags.loadBalancerIpRange) parsePool(flags.loadBalancerIpRange);
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  if (flags.allocateNodeCidrs && !flags.clusterCidr) {
    throw new StartupError(
      '--allocate-node-cidrs=true needs --cluster-cidr (e.g. --cluster-cidr=10.244.0.0/16)',
    );
  }
  if (Boolean(flags.tlsCertFile) !== Boolean(flags.tlsPrivateKeyFile)) {
    throw new StartupError('--tls-cert-file and --tls-private-key-file go together');
  }
  let rootCA: string | undefined;
  if (flags.rootCaFile) {
    try {
      rootCA = readFileSync(flags.rootCaFile, 'utf8');
    } catch (err) {
      throw new StartupError(`--root-ca-file: ${(err as Error).message}`);
    }
    if (!rootCA.includes('-----BEGIN CERTIFICATE-----')) {
      throw new StartupError(`--root-ca-file: ${flags.rootCaFile} holds no PEM certificate`);
    }
  }
  // Loaded only once the flags are good, so a mistake is reported at once.
  const { EventRecorder, KubeClient, LeaderElector, SharedInformerFactory } = await import('@kubit/client');
  const { ControllerManager } = await import('./manager.js');
  const { RestCluster } = await import('./rest-cluster.js');
  const { RestHpaApi } = await import('./hpa/api.js');
  const { customResources, servedResources } = await import('./served.js');
  let client: InstanceType<typeof KubeClient>;
  try {
    client = KubeClient.fromKubeconfig(
      { kubeconfig: flags.kubeconfig, server: flags.master },
      { userAgent: 'kubit-controller-manager' },
    );
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  const served = await servedResources(client, log);
  let manager: InstanceType<typeof ControllerManager>;
  try {
    // One informer per resource for the whole process; list/watch failures are retried by it.
    const informers = new SharedInformerFactory(client, {
      onError: (err) => log.warn({ err }, 'informer list/watch failed; retrying'),
    });
    manager = new ControllerManager(new RestCluster(client), informers, {
      controllers,
      allocateNodeCIDRs: flags.allocateNodeCidrs,
      clusterCIDR: flags.clusterCidr,
      nodeCIDRMaskSize: flags.nodeCidrMaskSize,
      nodeMonitorGracePeriodMs: flags.nodeMonitorGracePeriod,
      nodeMonitorPeriodMs: flags.nodeMonitorPeriod,
      workers: flags.concurrentSyncs,
      maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
      mirroringMaxEndpointsPerSubset: flags.mirroringMaxEndpointsPerSubset,
      loadBalancerIPRange: flags.loadBalancerIpRange || undefined,
      served,
      customResources: () => customResources(client),
      rootCA,
      hpaApi: new RestHpaApi(client),
      hpa: {
        syncPeriodMs: flags.horizontalPodAutoscalerSyncPeriod,
        downscaleStabilizationMs: flags.horizontalPodAutoscalerDownscaleStabilization,
        tolerance: flags.horizontalPodAutoscalerTolerance,
        cpuInitializationPeriodMs: flags.horizontalPodAutoscalerCpuInitializationPeriod,
        initialReadinessDelayMs: flags.horizontalPodAutoscalerInitialReadinessDelay,
      },
      events: (component) => {
        const recorder = new EventRecorder(client, {
          component,
          host: hostname(),
          onError: (err) => log.debug({ err, component }, 'event not recorded'),
        });
        return { event: (obj, type, reason, message) => recorder.event(obj, type, reason, message) };
      },
      log,
    });
  } catch (err) {
    throw new StartupError((err as Error).message);
  }

  const shutdown = new Shutdown(log);
  shutdown.install();
  // Registered first, so it runs last: losing the lease ends the process with an error, as in Kubernetes.
  let lostLeadership = false;
  shutdown.add(() => {
    if (lostLeadership) process.exit(1);
  });
  const registry = createRegistry();
  const leading = new Gauge({
    name: 'leader_election_master_status',
    help: '1 while this process leads',
    registers: [registry],
  });
  const depth = new Gauge({
    name: 'workqueue_depth',
    help: 'Keys waiting in each controller work queue',
    labelNames: ['name'],
    registers: [registry],
    collect() {
      for (const c of manager.controllers) this.set({ name: c.name }, c.queue.len());
    },
  });
  void depth;

  await serveOperations({
    component: 'kubit-controller-manager',
    bindAddress: flags.bindAddress,
    securePort: flags.securePort,
    tlsCertFile: flags.tlsCertFile,
    tlsPrivateKeyFile: flags.tlsPrivateKeyFile,
    registry,
    log,
    shutdown,
  });

  const stop = new AbortController();
  let electing: Promise<void> = Promise.resolve();
  shutdown.add(async () => {
    stop.abort();
    // Stop acting first, then hand the lease over (the elector releases it), then hang up.
    await manager.stop();
    await electing;
    client.close();
  });

  log.info({ controllers: manager.names, leaderElect: flags.leaderElect }, 'starting');
  if (!flags.leaderElect) {
    await manager.start(stop.signal);
    return;
  }
  const identity = `${hostname()}_${randomBytes(6).toString('hex')}`;
  const elector = new LeaderElector(client, {
    lockName: flags.leaderElectResourceName,
    lockNamespace: flags.leaderElectResourceNamespace,
    identity,
    leaseDurationMs: flags.leaderElectLeaseDuration,
    renewDeadlineMs: flags.leaderElectRenewDeadline,
    retryPeriodMs: flags.leaderElectRetryPeriod,
    onStartedLeading: async (signal) => {
      log.info({ identity }, 'became leader');
      leading.set(1);
      await manager.start(signal);
    },
    onStoppedLeading: () => {
      leading.set(0);
      if (stop.signal.aborted) return;
      // Controllers keep private state (expectations, allocations): start over cleanly, as Kubernetes does.
      log.error({ identity }, 'leader election lost');
      lostLeadership = true;
      void shutdown.run('leader election lost');
    },
    onNewLeader: (who) => {
      if (who !== identity) log.info({ leader: who }, 'new leader elected');
    },
    onError: (err) => log.warn({ err }, 'leader election error'),
  });
  electing = elector.run(stop.signal).catch((err) => log.error({ err }, 'leader election failed'));
}

await runMain(program);
