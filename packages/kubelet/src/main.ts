#!/usr/bin/env node
// kubit-kubelet: the node agent. Registers the node, keeps its Lease fresh,
// runs the pods bound to it through containerd's CRI, and serves their logs.
import { existsSync, readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { KubeClient as Client, Informer, type KubeClient, resources } from '@kubit/client';
import type { ContainerRuntime } from '@kubit/cri';
import { CriRuntime } from '@kubit/cri';
import {
  createLogger,
  createRegistry,
  Gauge,
  intArg,
  type Logger,
  listArg,
  runMain,
  Shutdown,
  StartupError,
} from '@kubit/daemon';
import { Command } from 'commander';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { ApiEventSink, ApiObjectSource, ApiPodStatusSink } from './node/apiserver-sinks.js';
import {
  CniConfig,
  checkPodCidr,
  DEFAULT_CNI_BRIDGE,
  DEFAULT_CNI_NETWORK,
  defaultCniTemplatePath,
} from './node/cni-config.js';
import { parseNodeLabels, parseTaints } from './node/flags.js';
import { defaultHostname, NodeAgent } from './node/node-status.js';
import { ServiceIndex } from './node/service-index.js';
import { type NodeDnsSettings, parseResolvConf } from './pods/dns.js';
import { PodManager } from './pods/manager.js';
import { fileTracer } from './pods/trace.js';
import { FakeRuntime } from './runtime/fake.js';
import { startKubeletServer } from './server/server.js';
import { StatsCollector } from './server/stats-sources.js';
import { LocalStorage } from './volumes/local-path.js';
import { NodeVolumeProvisioner } from './volumes/provisioner.js';

interface Flags {
  kubeconfig?: string;
  containerRuntimeEndpoint: string;
  hostnameOverride?: string;
  nodeIp?: string;
  rootDir: string;
  localStorageDir?: string;
  address: string;
  port: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  maxPods: number;
  nodeLabels: string[];
  registerWithTaints: string[];
  podCidr?: string;
  podLogsDir?: string;
  cniConfDir?: string;
  cniConfTemplate?: string;
  cniBridgeName: string;
  cniNetworkName: string;
  clusterDns: string[];
  clusterDomain: string;
  resolvConf: string;
}

/**
 * Pods' DNS, when --cluster-dns names cluster DNS: ClusterFirst pods get it and the
 * cluster's search path, Default pods the node's --resolv-conf. Without it the runtime
 * gives every pod the node's resolv.conf, as before.
 */
function nodeDns(flags: Flags): NodeDnsSettings | undefined {
  if (flags.clusterDns.length === 0) return undefined;
  for (const ip of flags.clusterDns) {
    if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip))
      throw new StartupError(`--cluster-dns: "${ip}" is not an IPv4 address`);
  }
  let text = '';
  try {
    text = readFileSync(flags.resolvConf, 'utf8');
  } catch (err) {
    throw new StartupError(`--resolv-conf ${flags.resolvConf}: ${(err as Error).message}`);
  }
  return { clusterDNS: flags.clusterDns, clusterDomain: flags.clusterDomain, host: parseResolvConf(text) };
}

/** The kubelet-owned CNI config, when --cni-conf-dir asks for it. */
function cniConfig(flags: Flags): CniConfig | undefined {
  if (!flags.cniConfDir) return undefined;
  const templatePath = flags.cniConfTemplate ?? defaultCniTemplatePath();
  if (!templatePath) {
    throw new StartupError(
      '--cni-conf-dir needs --cni-conf-template: deploy/containerd/10-kubit.conflist.tmpl was not found next to this kubelet',
    );
  }
  if (!existsSync(templatePath))
    throw new StartupError(`--cni-conf-template: ${templatePath} does not exist`);
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(flags.cniBridgeName)) {
    throw new StartupError(
      `--cni-bridge-name: "${flags.cniBridgeName}" is not an interface name (1-15 of A-Z a-z 0-9 _ . -)`,
    );
  }
  if (flags.podCidr) {
    try {
      checkPodCidr(flags.podCidr);
    } catch (err) {
      throw new StartupError(`--pod-cidr: ${(err as Error).message}`);
    }
  }
  return new CniConfig({
    confDir: flags.cniConfDir,
    templatePath,
    bridge: flags.cniBridgeName,
    networkName: flags.cniNetworkName,
    ipMasq: false,
  });
}

function firstIPv4(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

async function connectRuntime(endpoint: string): Promise<ContainerRuntime> {
  // A hollow node: the pod logic and the apiserver side are real, the containers are not.
  if (endpoint === 'fake://') return new FakeRuntime({ ipPrefix: '10.88.0' });
  let runtime: CriRuntime;
  try {
    runtime = new CriRuntime({ endpoint, timeoutMs: 30_000 });
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await runtime.version();
      return runtime;
    } catch (err) {
      if (Date.now() > deadline) {
        runtime.close();
        throw new StartupError(
          `cannot reach the container runtime at ${endpoint}: ${(err as Error).message}. Is containerd running with its CRI plugin?`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * Waits (up to a minute) until the apiserver answers /readyz with 200. Polled
 * every 200 ms without the client's own retries, so a kubelet started with (or
 * before) the control plane registers the moment the apiserver is ready rather
 * than a backoff later.
 */
async function waitForApiserver(client: KubeClient, log: Logger): Promise<void> {
  const deadline = Date.now() + 60_000;
  let told = false;
  while (Date.now() < deadline) {
    try {
      const res = await client.rawRequest({
        method: 'GET',
        path: '/readyz',
        accept: 'text/plain',
        timeoutMs: 2000,
        retry: { maxRetries: 0 },
      });
      if (res.statusCode === 200) return;
      // 401/403: /readyz is not ours to read; registering will tell more.
      if (res.statusCode === 401 || res.statusCode === 403) return;
    } catch {
      // not listening yet
    }
    if (!told) {
      log.info('waiting for the apiserver');
      told = true;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function run(flags: Flags): Promise<void> {
  const log = createLogger({ name: 'kubit-kubelet' });
  const registry = createRegistry();
  const nodeName = (flags.hostnameOverride ?? defaultHostname()).toLowerCase();
  const nodeIP = flags.nodeIp ?? firstIPv4();
  const labels = parseNodeLabels(flags.nodeLabels);
  const taints = parseTaints(flags.registerWithTaints);
  if ((flags.tlsCertFile === undefined) !== (flags.tlsPrivateKeyFile === undefined)) {
    throw new StartupError('--tls-cert-file and --tls-private-key-file must be given together');
  }
  const cni = cniConfig(flags);
  const shutdown = new Shutdown(log);
  shutdown.install();

  const runtime = await connectRuntime(flags.containerRuntimeEndpoint);
  shutdown.add(() => runtime.close());
  const version = await runtime.version();
  log.info(
    { runtime: `${version.runtimeName} ${version.runtimeVersion}`, node: nodeName },
    'container runtime connected',
  );

  let client: KubeClient;
  try {
    client = Client.fromKubeconfig(
      { kubeconfig: flags.kubeconfig },
      { userAgent: `kubit-kubelet/${nodeName}` },
    );
  } catch (err) {
    throw new StartupError(`--kubeconfig: ${(err as Error).message}`);
  }
  shutdown.add(() => client.close());

  const agent = new NodeAgent(
    client,
    runtime,
    {
      name: nodeName,
      nodeIP,
      port: flags.port,
      maxPods: flags.maxPods,
      labels,
      taints,
      podCIDR: flags.podCidr,
      criSocket: flags.containerRuntimeEndpoint,
    },
    log,
    { cni },
  );
  await waitForApiserver(client, log);
  for (let attempt = 0; ; attempt++) {
    try {
      await agent.register();
      break;
    } catch (err) {
      if (attempt >= 20)
        throw new StartupError(
          `cannot register node "${nodeName}" with the apiserver: ${(err as Error).message}`,
        );
      log.warn({ err: (err as Error).message }, 'node registration failed, retrying');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  agent.start();
  shutdown.add(() => agent.stop());

  const events = new ApiEventSink(client, nodeName, log);
  // KUBIT_KUBELET_TRACE_FILE: where start-up steps go, one JSON line each (bench:pod-startup).
  const traceFile = process.env.KUBIT_KUBELET_TRACE_FILE;
  const trace = traceFile ? fileTracer(traceFile) : undefined;
  const statusSink = new ApiPodStatusSink(client, log, trace);
  shutdown.add(() => statusSink.close());
  const services = new ServiceIndex(client, log);
  await services.start(log);
  shutdown.add(() => services.stop());
  const objects = new ApiObjectSource(client);
  const manager = new PodManager({
    runtime,
    services,
    tokenIssuer: objects,
    dns: nodeDns(flags),
    objects,
    statusSink,
    events,
    log,
    hostIP: nodeIP,
    rootDir: flags.rootDir,
    podLogsDir: flags.podLogsDir,
    maxPods: flags.maxPods,
    networkNotReady: () => agent.networkNotReady(),
    trace,
  });
  agent.onPodCidr(() => manager.syncAll());
  // This node's local-path and kubit-disk volumes (storage.ts: the provisioning protocol).
  const provisioner = new NodeVolumeProvisioner(
    client,
    nodeName,
    new LocalStorage(flags.localStorageDir ?? join(flags.rootDir, 'storage')),
    log,
  );
  provisioner.start();
  shutdown.add(() => provisioner.stop());
  shutdown.add(() => manager.stop());
  shutdown.add(() => events.flush());

  const informer = new Informer<Pod>(client, resources.pods, {
    fieldSelector: `spec.nodeName=${nodeName}`,
    // After an apiserver outage, see pod changes again within seconds, not after a 30 s backoff.
    backoff: { baseDelayMs: 200, maxDelayMs: 5000 },
    onError: (err) => log.warn({ err: (err as Error).message }, 'pod watch failed, retrying'),
  });
  let started = false;
  informer.addEventHandler({
    onAdd: (pod) => started && manager.upsert(pod),
    onUpdate: (_old, pod) => started && manager.upsert(pod),
    onDelete: (pod) => started && manager.remove(pod),
  });
  informer.start();
  shutdown.add(() => informer.stop());
  await informer.waitForSync();
  await manager.start(informer.store.list());
  started = true;
  manager.setPods(informer.store.list()); // anything that changed while the manager started

  new Gauge({
    name: 'kubelet_running_pods',
    help: 'Pods this kubelet manages.',
    registers: [registry],
    collect() {
      this.set(manager.pods().length);
    },
  });

  const server = await startKubeletServer({
    host: flags.address,
    port: flags.port,
    manager,
    runtime,
    registry,
    log,
    readiness: [{ name: 'runtime', check: async () => void (await runtime.version()) }],
    stats: new StatsCollector({
      nodeName,
      rootDir: manager.rootDir,
      podLogsDir: manager.podLogsDir,
      runtime,
      pods: () => manager.pods(),
      log,
    }),
    ...(flags.tlsCertFile && flags.tlsPrivateKeyFile
      ? {
          tls: {
            certFile: flags.tlsCertFile,
            keyFile: flags.tlsPrivateKeyFile,
            clientCaFile: flags.clientCaFile,
          },
        }
      : {}),
  });
  shutdown.add(() => server.close());
  log.info({ node: nodeName, nodeIP }, 'kubelet running');
}

const program = new Command('kubit-kubelet')
  .description('The Kubit node agent: runs the pods bound to this node through containerd (CRI).')
  .option('--kubeconfig <path>', 'kubeconfig with the credentials of this node')
  .option(
    '--container-runtime-endpoint <endpoint>',
    'CRI socket; fake:// runs a hollow node on an in-memory runtime',
    'unix:///run/containerd/containerd.sock',
  )
  .option('--hostname-override <name>', 'node name (default: the hostname)')
  .option('--node-ip <ip>', 'the address the node reports (default: its first non-loopback IPv4)')
  .option('--root-dir <dir>', 'where pod volumes (and logs) live', '/var/lib/kubelet')
  .option(
    '--local-storage-dir <dir>',
    "where this node's local-path directories and kubit-disk files live (default: <root-dir>/storage)",
  )
  .option('--pod-logs-dir <dir>', 'where container logs go (default: <root-dir>/logs/pods)')
  .option('--address <ip>', 'address the kubelet server listens on', '0.0.0.0')
  .option('--port <port>', 'port of the kubelet server', intArg(0, 65535), 10250)
  .option('--tls-cert-file <path>', 'serving certificate')
  .option('--tls-private-key-file <path>', 'serving key')
  .option('--client-ca-file <path>', 'CA whose client certificates may call the kubelet (the apiserver)')
  .option('--max-pods <n>', 'most pods this node runs', intArg(1, 10_000), 110)
  .option('--node-labels <k=v,...>', 'labels to register the node with', listArg, [])
  .option('--register-with-taints <key=value:Effect,...>', 'taints to register the node with', listArg, [])
  .option('--pod-cidr <cidr>', "this node's pod subnet when no node IPAM assigns one (recorded on the Node)")
  .option(
    '--cni-conf-dir <dir>',
    "write this node's CNI conflist here from its pod CIDR (containerd's CNI conf_dir); pods wait until then",
  )
  .option(
    '--cni-conf-template <path>',
    'conflist template (default: deploy/containerd/10-kubit.conflist.tmpl)',
  )
  .option('--cni-bridge-name <name>', 'the bridge of the pod network', DEFAULT_CNI_BRIDGE)
  .option('--cni-network-name <name>', 'the CNI network name', DEFAULT_CNI_NETWORK)
  .option(
    '--cluster-dns <ip,...>',
    "cluster DNS servers for pods with dnsPolicy ClusterFirst (kube-dns's cluster IP)",
    listArg,
    [],
  )
  .option('--cluster-domain <domain>', 'the cluster domain pods search in', 'cluster.local')
  .option('--resolv-conf <path>', 'the resolver config dnsPolicy Default pods get', '/etc/resolv.conf')
  .action(async (opts: Flags) => {
    if (!opts.podLogsDir) opts.podLogsDir = join(opts.rootDir, 'logs', 'pods');
    if (!opts.localStorageDir) opts.localStorageDir = join(opts.rootDir, 'storage');
    await run(opts);
  });

await runMain(program);
