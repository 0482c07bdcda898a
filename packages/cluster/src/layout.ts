// Where everything of one cluster lives inside its state directory (.kubit/ by
// default). Pure path arithmetic: nothing here touches the disk.
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';

export interface NodeLayout {
  /** e.g. "node-1" */
  name: string;
  /** 0-based position, which picks the node's ports. */
  index: number;
  dir: string;
  containerdConfig: string;
  containerdRoot: string;
  containerdState: string;
  /** containerd's CRI socket (kept short: unix sockets are limited to 107 bytes). */
  socket: string;
  cniConfDir: string;
  cniConflist: string;
  registryConfigDir: string;
  kubeletRootDir: string;
  kubeconfig: string;
  /** CNI bridge on the host; unique per cluster and node, at most 15 characters (IFNAMSIZ). */
  bridge: string;
  /** CNI network name, which also names host-local's lease directory in /var/lib/cni/networks. */
  networkName: string;
}

export interface StoreMemberLayout {
  name: string;
  index: number;
  dataDir: string;
}

export interface ClusterLayout {
  stateDir: string;
  /** A short stable id of the state dir, so two clusters on one machine never share a bridge name. */
  id: string;
  configFile: string;
  pkiDir: string;
  logsDir: string;
  runDir: string;
  registryDir: string;
  registryConfig: string;
  registryData: string;
  /** Written once the images are in the registry, so a resume skips pushing them. */
  registryImagesMarker: string;
  adminKubeconfig: string;
  schedulerKubeconfig: string;
  controllerManagerKubeconfig: string;
  proxyKubeconfig: string;
  dnsKubeconfig: string;
  netKubeconfig: string;
  /**
   * The host-local bridge of a one-machine cluster: its address stands for "the
   * host" to pods (the apiserver's and cluster DNS's endpoints, node ports) and
   * its subnet holds the LoadBalancer address pool. At most 15 characters.
   */
  hostBridge: string;
  store: StoreMemberLayout[];
  nodes: NodeLayout[];
  logFile(process: string): string;
  pidFile(process: string): string;
}

export const STORE_MEMBERS = 3;

export function nodeName(index: number): string {
  return `node-${index + 1}`;
}

export function clusterId(stateDir: string): string {
  return createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 6);
}

export function clusterLayout(stateDir: string, nodeCount: number): ClusterLayout {
  const dir = resolve(stateDir);
  const id = clusterId(dir);
  const runDir = join(dir, 'run');
  const logsDir = join(dir, 'logs');
  const store = Array.from({ length: STORE_MEMBERS }, (_, i) => ({
    name: `store-${i + 1}`,
    index: i,
    dataDir: join(dir, 'store', `store-${i + 1}`),
  }));
  const nodes = Array.from({ length: nodeCount }, (_, i) => nodeLayout(dir, id, i));
  return {
    stateDir: dir,
    id,
    configFile: join(dir, 'cluster.json'),
    pkiDir: join(dir, 'pki'),
    logsDir,
    runDir,
    registryDir: join(dir, 'registry'),
    registryConfig: join(dir, 'registry', 'config.yml'),
    registryData: join(dir, 'registry', 'data'),
    registryImagesMarker: join(dir, 'registry', 'images-pushed'),
    adminKubeconfig: join(dir, 'kubeconfig'),
    schedulerKubeconfig: join(dir, 'kubeconfigs', 'scheduler.kubeconfig'),
    controllerManagerKubeconfig: join(dir, 'kubeconfigs', 'controller-manager.kubeconfig'),
    proxyKubeconfig: join(dir, 'kubeconfigs', 'kube-proxy.kubeconfig'),
    dnsKubeconfig: join(dir, 'kubeconfigs', 'kubit-dns.kubeconfig'),
    netKubeconfig: join(dir, 'kubeconfigs', 'kubit-net.kubeconfig'),
    hostBridge: `kbt${id}h`,
    store,
    nodes,
    logFile: (name) => join(logsDir, `${name}.log`),
    pidFile: (name) => join(runDir, `${name}.pid`),
  };
}

function nodeLayout(stateDir: string, id: string, index: number): NodeLayout {
  const name = nodeName(index);
  const dir = join(stateDir, 'nodes', name);
  return {
    name,
    index,
    dir,
    containerdConfig: join(dir, 'containerd', 'config.toml'),
    containerdRoot: join(dir, 'containerd', 'root'),
    containerdState: join(dir, 'containerd', 'state'),
    socket: join(dir, 'containerd.sock'),
    cniConfDir: join(dir, 'cni'),
    cniConflist: join(dir, 'cni', '10-kubit.conflist'),
    registryConfigDir: join(dir, 'containerd', 'certs.d'),
    kubeletRootDir: join(dir, 'kubelet'),
    kubeconfig: join(dir, 'kubelet.kubeconfig'),
    bridge: `kbt${id}n${index}`,
    networkName: `kubit-${id}-${name}`,
  };
}

/** The supervised processes of a cluster, in the order they are started. */
export function processNames(layout: ClusterLayout): {
  store: string[];
  registry: string;
  containerd: string[];
  controlPlane: string[];
  kubelets: string[];
  addons: string[];
} {
  return {
    store: layout.store.map((m) => `kubit-${m.name}`),
    registry: 'registry',
    containerd: layout.nodes.map((n) => `containerd-${n.name}`),
    controlPlane: ['kubit-apiserver', 'kubit-scheduler', 'kubit-controller-manager'],
    kubelets: layout.nodes.map((n) => `kubit-kubelet-${n.name}`),
    addons: [
      'kubit-proxy',
      ...dnsNodes(layout).map((n) => `kubit-dns-${n.name}`),
      ...layout.nodes.map((n) => `kubit-net-${n.name}`),
    ],
  };
}

/** Cluster DNS runs on the first two nodes: two endpoints, so one node's loss leaves names resolving. */
export function dnsNodes(layout: ClusterLayout): NodeLayout[] {
  return layout.nodes.slice(0, 2);
}
