// What every host of an inventory gets: its certificates, kubeconfigs,
// containerd config, the env files of its daemons (the same format the
// launcher's env-files writes) and the systemd units from deploy/systemd that
// read them. Pure: the caller writes the files and runs the units.
import { certKubeconfigYaml } from '@kubit/client';
import { DOCKER_HUB, hostsTomlValues } from '@kubit/cri/registry-hosts';
import { apiserverArgs, controllerManagerArgs, schedulerArgs } from '@kubit/daemon/daemon-args';
import type { Command, DaemonRunner } from '../commands.js';
import { envFileText } from '../env-files.js';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, SERVICE_CIDR } from '../host-network.js';
import { fillTemplate, SANDBOX_IMAGE } from '../node-runtime.js';
import { type Host, hostWithRole, type Inventory, storeHosts } from './inventory.js';
import { shQuote } from './ssh.js';

export const PORTS = {
  storeClient: 2379,
  storePeer: 2380,
  storeMetrics: 2381,
  apiserver: 6443,
  controllerManager: 10257,
  scheduler: 10259,
  kubelet: 10250,
  proxyHealthz: 10256,
  proxyMetrics: 10249,
  dns: 53,
  dnsHealth: 8080,
  dnsMetrics: 9153,
  netHealthz: 10263,
} as const;

/**
 * Cluster DNS runs on the first two node hosts (two endpoints: one host's loss
 * leaves names resolving), as on the one-machine cluster.
 */
export function dnsHosts(inv: Inventory): Host[] {
  return inv.nodes.slice(0, 2);
}

/** Where things live on a host, under its prefix ('' on a real machine). */
export interface HostPaths {
  etc: string;
  pki: string;
  kubeconfigs: string;
  unitDir: string;
  data: string;
  run: string;
  log: string;
  containerdConfig: string;
  containerdRoot: string;
  containerdState: string;
  registryConfigDir: string;
  socket: string;
  cniConfDir: string;
  cniTemplate: string;
  kubeletRoot: string;
}

export function hostPaths(h: Host): HostPaths {
  const p = h.prefix;
  const etc = `${p}/etc/kubit`;
  return {
    etc,
    pki: `${etc}/pki`,
    kubeconfigs: `${etc}/kubeconfigs`,
    unitDir: `${p}/etc/systemd/system`,
    data: `${p}/var/lib/kubit`,
    run: `${p}/run/kubit`,
    log: `${p}/var/log/kubit`,
    containerdConfig: `${etc}/containerd/config.toml`,
    containerdRoot: `${p}/var/lib/kubit/containerd`,
    containerdState: `${p}/run/kubit/containerd`,
    registryConfigDir: `${etc}/containerd/certs.d`,
    socket: `${p}/run/kubit/containerd.sock`,
    cniConfDir: `${etc}/cni/net.d`,
    cniTemplate: `${etc}/cni/10-kubit.conflist.tmpl`,
    kubeletRoot: `${p}/var/lib/kubit/kubelet`,
  };
}

/** A systemd unit to run on a host: the template file in deploy/systemd and its instance. */
export interface UnitRef {
  /** File name in deploy/systemd, e.g. "kubit-store@.service". */
  template: string;
  /** Instance for template units ('' otherwise). */
  instance: string;
  /** The unit's name as systemctl knows it, e.g. "kubit-store@cp-1.service". */
  name: string;
}

export interface PlannedFile {
  /** Absolute path on the host (prefix included). */
  path: string;
  /** Text, or a file of the local PKI to copy. */
  content: { text: string } | { localPki: string };
  mode: number;
}

export interface HostPlan {
  host: Host;
  paths: HostPaths;
  files: PlannedFile[];
  /** In start order. */
  units: UnitRef[];
}

/** Names of the certificates (in the local PKI dir) each role needs; the CA key never leaves the installer. */
const CERTS = {
  store: ['store'],
  apiserver: ['apiserver', 'apiserver-etcd-client', 'apiserver-kubelet-client'],
  scheduler: ['scheduler'],
  'controller-manager': ['controller-manager'],
} as const;

function unit(template: string, instance = ''): UnitRef {
  return { template, instance, name: template.replace('@.', instance ? `@${instance}.` : '.') };
}

function envName(u: UnitRef): string {
  // The env file names deploy/systemd's units read: kubit-store@X -> kubit-store-X.env, containerd-kubit@X -> containerd-X.env.
  if (u.template === 'containerd-kubit@.service') return `containerd-${u.instance}`;
  return u.name.replace(/\.service$/, '').replace('@', '-');
}

export function apiserverUrl(inv: Inventory): string {
  return `https://${hostWithRole(inv, 'apiserver').address}:${PORTS.apiserver}`;
}

export function storeMetricsUrl(h: Host): string {
  return `http://${h.address}:${PORTS.storeMetrics}`;
}

/** The addresses every server certificate carries (store, apiserver and kubelets are reached by them). */
export function serverSans(inv: Inventory): string[] {
  return [...inv.controlPlane, ...inv.nodes].flatMap((h) => [h.address, h.name]);
}

export function nodeNetworkName(inv: Inventory, node: Host): string {
  return `${inv.clusterName}-${node.name}`;
}

/** The CNI bridge inside a node; each node is its own machine (or network namespace), so one name fits all. */
export const NODE_BRIDGE = 'kubit0';

function daemon(inv: Inventory, pkg: string, name: string, flags: string[]): Command {
  return {
    name,
    command: inv.nodePath,
    args: [`${inv.kubitRoot}/packages/${pkg}/dist/src/main.js`, ...flags],
  };
}

/**
 * The script that removes what a node host's kubit-proxy and kubit-net leave in the kernel
 * (`--cleanup` in the host's own network namespace, which is the ssh session's): a stopped
 * daemon leaves its nft tables, routes and VXLAN device for the next start to take over, so
 * `down` removes them.
 */
export function nodeCleanupScript(inv: Inventory, h: Host): string {
  const entry = (pkg: string) =>
    inv.kubitRun === 'source'
      ? ['--conditions=kubit-source', '--import', 'tsx', `${inv.kubitRoot}/packages/${pkg}/src/main.ts`]
      : [`${inv.kubitRoot}/packages/${pkg}/dist/src/main.js`];
  const p = hostPaths(h);
  const proxy = [inv.nodePath, ...entry('proxy'), '--cleanup'];
  const net = [
    inv.nodePath,
    ...entry('net'),
    `--kubeconfig=${p.kubeconfigs}/kubit-net.kubeconfig`,
    `--hostname-override=${h.name}`,
    '--cleanup',
  ];
  return `cd ${shQuote(inv.kubitRoot)} && ${proxy.map(shQuote).join(' ')}\n${net.map(shQuote).join(' ')}\n`;
}

function commandsFor(inv: Inventory, h: Host, p: HostPaths): [UnitRef, Command][] {
  const out: [UnitRef, Command][] = [];
  const pki = (n: string) => [`${p.pki}/${n}.crt`, `${p.pki}/${n}.key`] as const;
  const ca = `${p.pki}/ca.crt`;
  const cp = inv.controlPlane.find((c) => c.name === h.name);
  const roles = cp?.roles ?? [];
  const a = h.address;
  if (roles.includes('store')) {
    const peers = storeHosts(inv)
      .map((s) => `${s.name}=https://${s.address}:${PORTS.storePeer}`)
      .join(',');
    const [cert, key] = pki('store');
    out.push([
      unit('kubit-store@.service', h.name),
      daemon(inv, 'store', `kubit-store-${h.name}`, [
        `--name=${h.name}`,
        `--data-dir=${p.data}/store`,
        `--listen-client-urls=https://${a}:${PORTS.storeClient}`,
        `--advertise-client-urls=https://${a}:${PORTS.storeClient}`,
        `--listen-peer-urls=https://${a}:${PORTS.storePeer}`,
        `--initial-advertise-peer-urls=https://${a}:${PORTS.storePeer}`,
        `--listen-metrics-urls=http://${a}:${PORTS.storeMetrics}`,
        `--initial-cluster=${peers}`,
        // etcd ignores "new" once a data dir exists, so the same line both creates and resumes.
        '--initial-cluster-state=new',
        `--initial-cluster-token=kubit-${inv.clusterName}`,
        `--cert-file=${cert}`,
        `--key-file=${key}`,
        `--trusted-ca-file=${ca}`,
        '--client-cert-auth',
        `--peer-cert-file=${cert}`,
        `--peer-key-file=${key}`,
        `--peer-trusted-ca-file=${ca}`,
        '--peer-client-cert-auth',
        '--log-level=warn',
      ]),
    ]);
  }
  if (roles.includes('apiserver')) {
    const [cert, key] = pki('apiserver');
    const [etcdCert, etcdKey] = pki('apiserver-etcd-client');
    const [kCert, kKey] = pki('apiserver-kubelet-client');
    const stores = storeHosts(inv).map((s) => `https://${s.address}:${PORTS.storeClient}`);
    out.push([
      unit('kubit-apiserver.service'),
      daemon(
        inv,
        'apiserver',
        'kubit-apiserver',
        apiserverArgs({
          bindAddress: a,
          // The `kubernetes` Service's endpoint: pods reach the apiserver there through kubit-proxy.
          advertiseAddress: a,
          serviceClusterIpRange: SERVICE_CIDR,
          serviceAccountSigningKeyFile: `${p.pki}/sa.key`,
          serviceAccountKeyFiles: [`${p.pki}/sa.pub`],
          securePort: PORTS.apiserver,
          tlsCertFile: cert,
          tlsPrivateKeyFile: key,
          clientCaFile: ca,
          etcdServers: stores,
          etcdCaFile: ca,
          etcdCertFile: etcdCert,
          etcdKeyFile: etcdKey,
          authorizationModes: ['Node', 'RBAC'],
          kubeletClientCertificate: kCert,
          kubeletClientKey: kKey,
          kubeletCertificateAuthority: ca,
        }),
      ),
    ]);
  }
  if (roles.includes('scheduler')) {
    out.push([
      unit('kubit-scheduler.service'),
      daemon(
        inv,
        'scheduler',
        'kubit-scheduler',
        schedulerArgs({
          kubeconfig: `${p.kubeconfigs}/scheduler.kubeconfig`,
          bindAddress: a,
          securePort: PORTS.scheduler,
        }),
      ),
    ]);
  }
  if (roles.includes('controller-manager')) {
    out.push([
      unit('kubit-controller-manager.service'),
      daemon(
        inv,
        'controllers',
        'kubit-controller-manager',
        controllerManagerArgs({
          kubeconfig: `${p.kubeconfigs}/controller-manager.kubeconfig`,
          bindAddress: a,
          securePort: PORTS.controllerManager,
          clusterCidr: inv.clusterCidr,
        }).concat([`--root-ca-file=${ca}`, `--load-balancer-ip-range=${inv.loadBalancerRange}`]),
      ),
    ]);
  }
  if (inv.nodes.some((n) => n.name === h.name)) {
    out.push([
      unit('containerd-kubit@.service', h.name),
      {
        name: `containerd-${h.name}`,
        command: '/usr/bin/containerd',
        args: [
          '--config',
          p.containerdConfig,
          '--root',
          p.containerdRoot,
          '--state',
          p.containerdState,
          '--address',
          p.socket,
        ],
      },
    ]);
    const [cert, key] = pki(`kubelet-${h.name}-server`);
    out.push([
      unit('kubit-kubelet@.service', h.name),
      daemon(inv, 'kubelet', `kubit-kubelet-${h.name}`, [
        `--kubeconfig=${p.kubeconfigs}/kubelet.kubeconfig`,
        `--container-runtime-endpoint=unix://${p.socket}`,
        `--hostname-override=${h.name}`,
        `--node-ip=${a}`,
        `--address=${a}`,
        `--port=${PORTS.kubelet}`,
        `--root-dir=${p.kubeletRoot}`,
        `--local-storage-dir=${p.kubeletRoot}/storage`,
        `--tls-cert-file=${cert}`,
        `--tls-private-key-file=${key}`,
        `--client-ca-file=${ca}`,
        // The kubelet writes its CNI network from the node's spec.podCIDR (node IPAM).
        `--cni-conf-dir=${p.cniConfDir}`,
        `--cni-conf-template=${p.cniTemplate}`,
        `--cni-bridge-name=${NODE_BRIDGE}`,
        `--cni-network-name=${nodeNetworkName(inv, h)}`,
        `--cluster-dns=${CLUSTER_DNS_IP}`,
        `--cluster-domain=${CLUSTER_DOMAIN}`,
      ]),
    ]);
    // kubit-proxy programs this host's own network namespace (no --network-namespace).
    out.push([
      unit('kubit-proxy.service'),
      daemon(inv, 'proxy', 'kubit-proxy', [
        `--kubeconfig=${p.kubeconfigs}/kube-proxy.kubeconfig`,
        `--hostname-override=${h.name}`,
        `--cluster-cidr=${inv.clusterCidr}`,
        `--healthz-bind-address=${a}:${PORTS.proxyHealthz}`,
        `--metrics-bind-address=127.0.0.1:${PORTS.proxyMetrics}`,
      ]),
    ]);
    // kubit-net: this host's routes or VXLAN to the other nodes' pod subnets, and the
    // NetworkPolicy rules of its pods, in the host's own network namespace.
    out.push([
      unit('kubit-net@.service', h.name),
      daemon(inv, 'net', `kubit-net-${h.name}`, [
        `--kubeconfig=${p.kubeconfigs}/kubit-net.kubeconfig`,
        `--hostname-override=${h.name}`,
        `--overlay-mode=${inv.overlayMode}`,
        `--underlay-address=${a}`,
        `--healthz-bind-address=${a}:${PORTS.netHealthz}`,
      ]),
    ]);
    if (dnsHosts(inv).some((n) => n.name === h.name)) {
      // On the host's address only: a local resolver on 127.0.0.53:53 (systemd-resolved) does not collide.
      out.push([
        unit('kubit-dns@.service', h.name),
        daemon(inv, 'dns', `kubit-dns-${h.name}`, [
          `--kubeconfig=${p.kubeconfigs}/kubit-dns.kubeconfig`,
          `--hostname-override=${h.name}`,
          `--bind-address=${a}`,
          `--port=${PORTS.dns}`,
          `--health-port=${PORTS.dnsHealth}`,
          `--metrics-port=${PORTS.dnsMetrics}`,
          `--advertise-address=${a}`,
          `--cluster-dns-ip=${CLUSTER_DNS_IP}`,
          `--cluster-domain=${CLUSTER_DOMAIN}`,
        ]),
      ]);
    }
  }
  return out;
}

export interface Templates {
  /** deploy/systemd file name -> text */
  units: Map<string, string>;
  containerdConfig: string;
  hostsToml: string;
  conflist: string;
}

/**
 * A unit from deploy/systemd for this host: its env file under the host's
 * prefix, and node as the inventory names it. Everything else is the file as shipped.
 */
export function renderUnit(template: string, inv: Inventory, p: HostPaths): string {
  let text = template
    .replace(/^EnvironmentFile=(-?)\/etc\/kubit\//gm, `EnvironmentFile=$1${p.etc}/`)
    .replace(/^ExecStart=\/usr\/bin\/node /gm, `ExecStart=${inv.nodePath} `);
  if (inv.kubitRun === 'source') {
    // The sources through tsx, which node resolves from the working directory (the repository).
    text = text
      .replace(
        /^(ExecStart=\S+) \$\{KUBIT_ROOT\}\/packages\/([a-z-]+)\/dist\/src\/main\.js /gm,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a systemd variable, expanded by systemd
        '$1 --conditions=kubit-source --import tsx ${KUBIT_ROOT}/packages/$2/src/main.ts ',
      )
      .replace(/^\[Service\]$/m, `[Service]\nWorkingDirectory=${inv.kubitRoot}`);
  }
  return text;
}

export function planHost(inv: Inventory, h: Host, templates: Templates): HostPlan {
  const p = hostPaths(h);
  const files: PlannedFile[] = [];
  const text = (path: string, t: string, mode = 0o644) => files.push({ path, content: { text: t }, mode });
  const cert = (name: string) => {
    files.push({ path: `${p.pki}/${name}.crt`, content: { localPki: `${name}.crt` }, mode: 0o644 });
    files.push({ path: `${p.pki}/${name}.key`, content: { localPki: `${name}.key` }, mode: 0o600 });
  };
  files.push({ path: `${p.pki}/ca.crt`, content: { localPki: 'ca.crt' }, mode: 0o644 });
  const cp = inv.controlPlane.find((c) => c.name === h.name);
  for (const role of cp?.roles ?? []) for (const c of CERTS[role]) cert(c);
  if (cp?.roles.includes('apiserver')) {
    // The ServiceAccount token key pair: the apiserver signs with sa.key and verifies with sa.pub.
    files.push({ path: `${p.pki}/sa.key`, content: { localPki: 'sa.key' }, mode: 0o600 });
    files.push({ path: `${p.pki}/sa.pub`, content: { localPki: 'sa.pub' }, mode: 0o644 });
  }
  const server = apiserverUrl(inv);
  const kubeconfig = (file: string, certName: string, user: string) =>
    text(
      `${p.kubeconfigs}/${file}`,
      certKubeconfigYaml({
        server,
        caFile: `${p.pki}/ca.crt`,
        certFile: `${p.pki}/${certName}.crt`,
        keyFile: `${p.pki}/${certName}.key`,
        user,
      }),
      0o600,
    );
  if (cp?.roles.includes('scheduler'))
    kubeconfig('scheduler.kubeconfig', 'scheduler', 'system:kube-scheduler');
  if (cp?.roles.includes('controller-manager')) {
    kubeconfig('controller-manager.kubeconfig', 'controller-manager', 'system:kube-controller-manager');
  }
  if (inv.nodes.some((n) => n.name === h.name)) {
    cert(`kubelet-${h.name}`);
    cert(`kubelet-${h.name}-server`);
    kubeconfig('kubelet.kubeconfig', `kubelet-${h.name}`, `system:node:${h.name}`);
    cert('kube-proxy');
    kubeconfig('kube-proxy.kubeconfig', 'kube-proxy', 'system:kube-proxy');
    cert('kubit-net');
    kubeconfig('kubit-net.kubeconfig', 'kubit-net', 'system:kubit-net');
    if (dnsHosts(inv).some((n) => n.name === h.name)) {
      cert('kubit-dns');
      kubeconfig('kubit-dns.kubeconfig', 'kubit-dns', 'system:kubit-dns');
    }
    text(
      p.containerdConfig,
      fillTemplate(templates.containerdConfig, {
        ROOT: p.containerdRoot,
        STATE: p.containerdState,
        ADDRESS: p.socket,
        SANDBOX_IMAGE,
        CNI_CONF_DIR: p.cniConfDir,
        REGISTRY_CONFIG_PATH: p.registryConfigDir,
      }),
    );
    if (inv.registryMirror) {
      for (const registry of inv.registryMirrorOf ?? [DOCKER_HUB]) {
        const { path, values } = hostsTomlValues(p.registryConfigDir, inv.registryMirror, { registry });
        text(path, fillTemplate(templates.hostsToml, values));
      }
    }
    text(p.cniTemplate, templates.conflist);
  }
  const runner: DaemonRunner = { repoRoot: inv.kubitRoot, nodePath: inv.nodePath, fromSource: false };
  const units: UnitRef[] = [];
  for (const [u, cmd] of commandsFor(inv, h, p)) {
    text(`${p.etc}/${envName(u)}.env`, envFileText(cmd, runner));
    const template = templates.units.get(u.template);
    if (template === undefined) throw new Error(`deploy/systemd/${u.template} is missing`);
    text(`${p.unitDir}/${u.template}`, renderUnit(template, inv, p));
    units.push(u);
  }
  return { host: h, paths: p, files: dedupe(files), units };
}

/** A template unit is written once per host even when two instances use it. */
function dedupe(files: PlannedFile[]): PlannedFile[] {
  const byPath = new Map<string, PlannedFile>();
  for (const f of files) byPath.set(f.path, f);
  return [...byPath.values()];
}

export function planCluster(inv: Inventory, templates: Templates): HostPlan[] {
  return [...inv.controlPlane, ...inv.nodes].map((h) => planHost(inv, h, templates));
}
