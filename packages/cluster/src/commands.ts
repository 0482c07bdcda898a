// The command line of every process the launcher supervises. Pure but for a
// look at which build exists (freshBundle, from @kubit/daemon): the same
// lines go into deploy/systemd's units, so what `up` runs is what a host runs.

import { join } from 'node:path';
import { freshBundle } from '@kubit/daemon';
import { apiserverArgs, controllerManagerArgs, schedulerArgs } from '@kubit/daemon/daemon-args';
import { type ClusterPorts, type ClusterSettings, clusterPorts, readSettings } from './config.js';
import { CLUSTER_DOMAIN, clusterDns, hostNetwork, proxyTable } from './host-network.js';
import { type ClusterLayout, clusterLayout, dnsNodes, type NodeLayout } from './layout.js';

export interface Command {
  /** The process's name: its log is logs/<name>.log and its PID file run/<name>.pid. */
  name: string;
  command: string;
  args: string[];
}

/** How to run a Kubit daemon: the built dist/ by default, the TypeScript sources when asked (tests). */
export interface DaemonRunner {
  repoRoot: string;
  nodePath: string;
  fromSource: boolean;
}

export const NODE_IP = '127.0.0.1';

/**
 * V8 flags for every daemon. A 1 MiB young-generation semi-space (Node 20's
 * default is 16) cut the control plane's idle RSS by about a fifth when measured
 * (bench.ts); the cost is more frequent scavenges, which a small cluster never notices.
 */
export const DAEMON_NODE_OPTIONS = '--max-semi-space-size=1';

/** The environment of a supervised process: ours, JSON logs, the V8 flags (a person's own NODE_OPTIONS win). */
export function daemonEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const nodeOptions = [DAEMON_NODE_OPTIONS, base.NODE_OPTIONS].filter(Boolean).join(' ');
  return { ...base, KUBIT_LOG_FORMAT: 'json', NODE_OPTIONS: nodeOptions };
}

export function daemon(runner: DaemonRunner, pkg: string): { command: string; args: string[] } {
  if (runner.fromSource) {
    return {
      command: runner.nodePath,
      args: [
        '--conditions=kubit-source',
        '--import',
        'tsx',
        join(runner.repoRoot, 'packages', pkg, 'src', 'main.ts'),
      ],
    };
  }
  const built = join(runner.repoRoot, 'packages', pkg, 'dist', 'src', 'main.js');
  return { command: runner.nodePath, args: [freshBundle(built) ?? built] };
}

function pki(layout: ClusterLayout, name: string): { cert: string; key: string } {
  return { cert: join(layout.pkiDir, `${name}.crt`), key: join(layout.pkiDir, `${name}.key`) };
}

function ca(layout: ClusterLayout): string {
  return join(layout.pkiDir, 'ca.crt');
}

export function storeEndpoints(ports: ClusterPorts): string[] {
  return ports.store.map((p) => `https://${NODE_IP}:${p.client}`);
}

export function storeCommands(layout: ClusterLayout, ports: ClusterPorts, runner: DaemonRunner): Command[] {
  const peers = layout.store
    .map((m) => `${m.name}=https://${NODE_IP}:${ports.store[m.index].peer}`)
    .join(',');
  const tls = pki(layout, 'store');
  return layout.store.map((m) => {
    const p = ports.store[m.index];
    const d = daemon(runner, 'store');
    return {
      name: `kubit-${m.name}`,
      command: d.command,
      args: [
        ...d.args,
        `--name=${m.name}`,
        `--data-dir=${m.dataDir}`,
        `--listen-client-urls=https://${NODE_IP}:${p.client}`,
        `--advertise-client-urls=https://${NODE_IP}:${p.client}`,
        `--listen-peer-urls=https://${NODE_IP}:${p.peer}`,
        `--initial-advertise-peer-urls=https://${NODE_IP}:${p.peer}`,
        `--listen-metrics-urls=http://${NODE_IP}:${p.metrics}`,
        `--initial-cluster=${peers}`,
        // etcd ignores "new" once a data dir exists, so the same line both creates and resumes.
        '--initial-cluster-state=new',
        `--initial-cluster-token=kubit-${layout.id}`,
        `--cert-file=${tls.cert}`,
        `--key-file=${tls.key}`,
        `--trusted-ca-file=${ca(layout)}`,
        '--client-cert-auth',
        `--peer-cert-file=${tls.cert}`,
        `--peer-key-file=${tls.key}`,
        `--peer-trusted-ca-file=${ca(layout)}`,
        '--peer-client-cert-auth',
        '--log-level=warn',
      ],
    };
  });
}

export function apiserverCommand(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command {
  const d = daemon(runner, 'apiserver');
  const serving = pki(layout, 'apiserver');
  const etcd = pki(layout, 'apiserver-etcd-client');
  const kubelet = pki(layout, 'apiserver-kubelet-client');
  return {
    name: 'kubit-apiserver',
    command: d.command,
    args: [
      ...d.args,
      ...apiserverArgs({
        // Every address: pods reach it through the `kubernetes` Service at the host bridge's.
        bindAddress: '0.0.0.0',
        advertiseAddress: hostNetwork(layout).address,
        serviceClusterIpRange: settings.serviceCidr,
        serviceAccountSigningKeyFile: join(layout.pkiDir, 'sa.key'),
        serviceAccountKeyFiles: [join(layout.pkiDir, 'sa.pub')],
        securePort: ports.apiserver,
        tlsCertFile: serving.cert,
        tlsPrivateKeyFile: serving.key,
        clientCaFile: ca(layout),
        etcdServers: storeEndpoints(ports),
        etcdCaFile: ca(layout),
        etcdCertFile: etcd.cert,
        etcdKeyFile: etcd.key,
        authorizationModes: ['Node', 'RBAC'],
        kubeletClientCertificate: kubelet.cert,
        kubeletClientKey: kubelet.key,
        kubeletCertificateAuthority: ca(layout),
      }),
    ],
  };
}

export function schedulerCommand(layout: ClusterLayout, ports: ClusterPorts, runner: DaemonRunner): Command {
  const d = daemon(runner, 'scheduler');
  return {
    name: 'kubit-scheduler',
    command: d.command,
    args: [
      ...d.args,
      ...schedulerArgs({
        kubeconfig: layout.schedulerKubeconfig,
        bindAddress: NODE_IP,
        securePort: ports.scheduler,
      }),
    ],
  };
}

export function controllerManagerCommand(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command {
  const d = daemon(runner, 'controllers');
  return {
    name: 'kubit-controller-manager',
    command: d.command,
    args: [
      ...d.args,
      ...controllerManagerArgs({
        kubeconfig: layout.controllerManagerKubeconfig,
        bindAddress: NODE_IP,
        securePort: ports.controllerManager,
        clusterCidr: settings.clusterCidr,
      }),
      `--root-ca-file=${ca(layout)}`,
      `--load-balancer-ip-range=${hostNetwork(layout).loadBalancerRange}`,
    ],
  };
}

export function kubeletCommand(
  layout: ClusterLayout,
  node: NodeLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command {
  const d = daemon(runner, 'kubelet');
  const serving = pki(layout, `kubelet-${node.name}-server`);
  return {
    name: `kubit-kubelet-${node.name}`,
    command: d.command,
    args: [
      ...d.args,
      `--kubeconfig=${node.kubeconfig}`,
      `--container-runtime-endpoint=unix://${node.socket}`,
      `--hostname-override=${node.name}`,
      // Every node of a one-machine cluster shares the host's network: same IP, its own port.
      `--node-ip=${NODE_IP}`,
      `--address=${NODE_IP}`,
      `--port=${ports.kubelets[node.index]}`,
      `--root-dir=${node.kubeletRootDir}`,
      // Its local-path directories and kubit-disk files, under the node's dir so `down` finds them.
      `--local-storage-dir=${join(node.dir, 'storage')}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--client-ca-file=${ca(layout)}`,
      // The kubelet writes the node's CNI network from its spec.podCIDR (node IPAM) into the
      // conf dir its containerd reads; each node has its own bridge and network name.
      `--cni-conf-dir=${node.cniConfDir}`,
      `--cni-conf-template=${join(runner.repoRoot, 'deploy', 'containerd', '10-kubit.conflist.tmpl')}`,
      `--cni-bridge-name=${node.bridge}`,
      `--cni-network-name=${node.networkName}`,
      `--cluster-dns=${clusterDns(settings)}`,
      `--cluster-domain=${CLUSTER_DOMAIN}`,
    ],
  };
}

/**
 * kubit-proxy: one for the host's network namespace, which every node of a
 * one-machine cluster shares (two would program the same kernel twice). It
 * speaks for the first node, whose pods are the "local" endpoints.
 */
export function proxyCommand(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command {
  const d = daemon(runner, 'proxy');
  return {
    name: 'kubit-proxy',
    command: d.command,
    args: [
      ...d.args,
      `--kubeconfig=${layout.proxyKubeconfig}`,
      `--hostname-override=${layout.nodes[0].name}`,
      `--cluster-cidr=${settings.clusterCidr}`,
      `--nft-table=${proxyTable(settings)}`,
      `--healthz-bind-address=${NODE_IP}:${ports.proxy.healthz}`,
      `--metrics-bind-address=${NODE_IP}:${ports.proxy.metrics}`,
    ],
  };
}

/** The `--cleanup` run of kubit-proxy that `down` makes: its nft table goes. */
export function proxyCleanupCommand(settings: ClusterSettings, runner: DaemonRunner): Command {
  const d = daemon(runner, 'proxy');
  return {
    name: 'kubit-proxy-cleanup',
    command: d.command,
    args: [...d.args, `--nft-table=${proxyTable(settings)}`, '--cleanup'],
  };
}

/**
 * kubit-net on every node: the node's NetworkPolicy table, and its routes to the other nodes' pod
 * subnets. On one machine every node shares the host's network namespace and address, so the
 * agents find every peer local and program no route (host-gw, the default, is what that means
 * there); each still enforces the policies of its own node's pods in its own nft table.
 */
export function netCommands(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command[] {
  return layout.nodes.map((node) => {
    const d = daemon(runner, 'net');
    return {
      name: `kubit-net-${node.name}`,
      command: d.command,
      args: [
        ...d.args,
        `--kubeconfig=${layout.netKubeconfig}`,
        `--hostname-override=${node.name}`,
        '--overlay-mode=host-gw',
        `--healthz-bind-address=${NODE_IP}:${ports.net[node.index]}`,
        // Another cluster on this machine has a node-1 too: each keeps its own table.
        ...(settings.name === 'kubit' ? [] : [`--nft-table=kubit-netpol-${settings.name}-${node.name}`]),
      ],
    };
  });
}

/** The `--cleanup` runs of kubit-net that `down` makes: each node's table and routes go. */
export function netCleanupCommands(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command[] {
  return netCommands(layout, ports, settings, runner).map((c) => ({
    name: `${c.name}-cleanup`,
    command: c.command,
    args: [...c.args, '--cleanup'],
  }));
}

/** kubit-dns on the first two nodes, each on its own port of the host bridge's address. */
export function dnsCommands(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command[] {
  const host = hostNetwork(layout).address;
  return dnsNodes(layout).map((node, i) => {
    const d = daemon(runner, 'dns');
    const p = ports.dns[i];
    return {
      name: `kubit-dns-${node.name}`,
      command: d.command,
      args: [
        ...d.args,
        `--kubeconfig=${layout.dnsKubeconfig}`,
        `--hostname-override=${node.name}`,
        `--bind-address=${host}`,
        `--port=${p.dns}`,
        `--health-port=${p.health}`,
        `--metrics-port=${p.metrics}`,
        `--advertise-address=${host}`,
        `--cluster-dns-ip=${clusterDns(settings)}`,
        `--cluster-domain=${CLUSTER_DOMAIN}`,
      ],
    };
  });
}

export function containerdCommand(node: NodeLayout): Command {
  return {
    name: `containerd-${node.name}`,
    command: 'containerd',
    args: [
      '--config',
      node.containerdConfig,
      '--root',
      node.containerdRoot,
      '--state',
      node.containerdState,
      '--address',
      node.socket,
    ],
  };
}

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export function registryCommand(layout: ClusterLayout): Command {
  return { name: 'registry', command: REGISTRY_BIN, args: ['serve', layout.registryConfig] };
}

export function registryConfigText(layout: ClusterLayout, ports: ClusterPorts): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${layout.registryData}`,
    'http:',
    `  addr: ${NODE_IP}:${ports.registry}`,
    '',
  ].join('\n');
}

/** A cluster as `up` left it in its state directory: settings, layout and ports. */
export interface ExistingCluster {
  settings: ClusterSettings;
  layout: ClusterLayout;
  ports: ClusterPorts;
}

/** The cluster in `stateDir`, or undefined when `up` never ran there. */
export function readCluster(stateDir: string): ExistingCluster | undefined {
  const settings = readSettings(clusterLayout(stateDir, 1).configFile);
  if (!settings) return undefined;
  const layout = clusterLayout(stateDir, settings.nodes);
  return { settings, layout, ports: clusterPorts(settings, layout.store.length) };
}

/** Every process the launcher supervises for a cluster, in the order `up` starts them. */
export function clusterCommands(
  layout: ClusterLayout,
  ports: ClusterPorts,
  settings: ClusterSettings,
  runner: DaemonRunner,
): Command[] {
  return [
    ...storeCommands(layout, ports, runner),
    registryCommand(layout),
    ...layout.nodes.map(containerdCommand),
    apiserverCommand(layout, ports, settings, runner),
    schedulerCommand(layout, ports, runner),
    controllerManagerCommand(layout, ports, settings, runner),
    ...layout.nodes.map((n) => kubeletCommand(layout, n, ports, settings, runner)),
    proxyCommand(layout, ports, settings, runner),
    ...dnsCommands(layout, ports, settings, runner),
    ...netCommands(layout, ports, settings, runner),
  ];
}
