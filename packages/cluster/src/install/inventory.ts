// The installer's inventory: which hosts make up the cluster, how to reach them
// over ssh and what each runs. Parsed from YAML and checked field by field, so
// a mistake is reported with the path of the field that is wrong.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { invalidRegistryName } from '@kubit/cri/registry-hosts';
import * as yaml from 'js-yaml';

export const CONTROL_PLANE_ROLES = ['store', 'apiserver', 'scheduler', 'controller-manager'] as const;
export type ControlPlaneRole = (typeof CONTROL_PLANE_ROLES)[number];

export interface SshTarget {
  user: string;
  port: number;
  /** Private key file (absolute). */
  key: string;
}

export interface Host {
  name: string;
  address: string;
  ssh: SshTarget;
  /**
   * Prepended to every path the installer writes or runs with on this host
   * ('' on a real machine). Network-namespace labs share one filesystem, so each
   * "host" there gets its own prefix.
   */
  prefix: string;
}

export interface ControlPlaneHost extends Host {
  roles: ControlPlaneRole[];
}

export const OVERLAY_MODES = ['host-gw', 'vxlan', 'auto'] as const;
export type OverlayMode = (typeof OVERLAY_MODES)[number];

export interface Inventory {
  /** Names the store's cluster token and each node's CNI network. */
  clusterName: string;
  clusterCidr: string;
  /**
   * The LoadBalancer address pool (the controller manager's
   * --load-balancer-ip-range): a CIDR or first-last. Default: .200-.250 of the
   * apiserver host's /24. Every node's kubit-proxy answers on these addresses,
   * so the hosts' network must route them to a node (a route, or ARP).
   */
  loadBalancerRange: string;
  /**
   * How the nodes reach each other's pod subnets (kubit-net's --overlay-mode): host-gw
   * routes (every node on one segment), vxlan, or auto (routes to the nodes on a node's own
   * segment, VXLAN to the rest), the default.
   */
  overlayMode: OverlayMode;
  /** Where the built Kubit repository is (or is copied to) on every host. */
  kubitRoot: string;
  /** A local built tree to copy to kubitRoot on every host; absent: it is installed there already. */
  kubitCopyFrom?: string;
  /**
   * What the units run: the built daemons (dist, the default) or the TypeScript
   * sources through tsx (a development tree, as the tests run them).
   */
  kubitRun: 'dist' | 'source';
  nodePath: string;
  /** host:port of a registry the nodes pull docker.io images through (plain HTTP). */
  registryMirror?: string;
  /**
   * The registries whose pulls try registryMirror first and then the registry
   * itself (registry.mirrorOf; docker.io when not given).
   */
  registryMirrorOf?: string[];
  /** known_hosts file for ssh; absent: ssh's own, accepting a new host's key once. */
  knownHosts?: string;
  controlPlane: ControlPlaneHost[];
  nodes: Host[];
}

export class InventoryError extends Error {
  constructor(source: string, field: string, problem: string) {
    super(`${source}: ${field}: ${problem}`);
    this.name = 'InventoryError';
  }
}

const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function isIpv4(s: string): boolean {
  const m = IPV4.exec(s);
  return Boolean(m?.slice(1).every((x) => Number(x) <= 255));
}

type Obj = Record<string, unknown>;

/** Reads fields of one YAML mapping, reporting errors with the field's full path. */
class Fields {
  constructor(
    private readonly source: string,
    readonly path: string,
    private readonly obj: Obj,
  ) {}

  static of(source: string, path: string, value: unknown): Fields {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new InventoryError(source, path || '(top level)', `must be a mapping, not ${describe(value)}`);
    }
    return new Fields(source, path, value as Obj);
  }

  field(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  fail(key: string, problem: string): never {
    throw new InventoryError(this.source, this.field(key), problem);
  }

  has(key: string): boolean {
    return this.obj[key] !== undefined && this.obj[key] !== null;
  }

  string(key: string, fallback?: string): string {
    const v = this.obj[key];
    if (v === undefined || v === null) {
      if (fallback !== undefined) return fallback;
      this.fail(key, 'is required');
    }
    if (typeof v !== 'string' || v === '') this.fail(key, `must be a non-empty string, not ${describe(v)}`);
    return v;
  }

  optionalString(key: string): string | undefined {
    return this.has(key) ? this.string(key) : undefined;
  }

  port(key: string, fallback: number): number {
    const v = this.obj[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 65535) {
      this.fail(key, `must be a port number from 1 to 65535, not ${describe(v)}`);
    }
    return v;
  }

  list(key: string): unknown[] {
    const v = this.obj[key];
    if (!Array.isArray(v)) this.fail(key, `must be a list, not ${describe(v)}`);
    return v;
  }

  sub(key: string): Fields {
    return Fields.of(this.source, this.field(key), this.obj[key] ?? {});
  }

  /** Rejects keys this level does not know: a typo must not be silently ignored. */
  only(keys: string[]): void {
    for (const k of Object.keys(this.obj)) {
      if (!keys.includes(k)) this.fail(k, `is not a known field (known: ${keys.join(', ')})`);
    }
  }
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return JSON.stringify(v);
}

function expandHome(p: string): string {
  return p === '~' || p.startsWith('~/') ? `${homedir()}${p.slice(1)}` : p;
}

/** A host's ssh settings over the inventory's defaults (its top-level `ssh`). */
function sshTarget(f: Fields, defaults: Partial<SshTarget>, baseDir: string): SshTarget {
  f.only(['user', 'port', 'key']);
  const key = f.has('key') || defaults.key === undefined ? f.string('key') : defaults.key;
  return {
    user: f.string('user', defaults.user ?? 'root'),
    port: f.port('port', defaults.port ?? 22),
    key: resolve(baseDir, expandHome(key)),
  };
}

function host(f: Fields, sshDefaults: Partial<SshTarget>, prefixDefault: string, baseDir: string): Host {
  const name = f.string('name');
  if (!NAME.test(name)) f.fail('name', `"${name}" must be a lowercase DNS label (a-z, 0-9, "-")`);
  const address = f.string('address');
  if (!isIpv4(address)) f.fail('address', `"${address}" is not an IPv4 address`);
  const prefix = f.string('prefix', prefixDefault || '/');
  if (!prefix.startsWith('/')) f.fail('prefix', `"${prefix}" must be an absolute path`);
  if (/\s/.test(prefix)) f.fail('prefix', 'must not contain whitespace (systemd splits on it)');
  return {
    name,
    address,
    ssh: sshTarget(f.sub('ssh'), sshDefaults, baseDir),
    prefix: prefix === '/' ? '' : prefix.replace(/\/+$/, ''),
  };
}

function cidr(f: Fields, key: string, fallback: string): string {
  const v = f.string(key, fallback);
  const [ip, bits] = v.split('/');
  const n = Number(bits);
  if (!isIpv4(ip ?? '') || !Number.isInteger(n) || n < 8 || n > 22) {
    f.fail(key, `"${v}" must be an IPv4 CIDR from /8 to /22 (each node gets a /24 of it)`);
  }
  return v;
}

function ipv4Number(s: string): number {
  return s.split('.').reduce((n, x) => n * 256 + Number(x), 0);
}

/** A pool of addresses: a CIDR (10.0.0.192/27) or a range (10.0.0.200-10.0.0.250), as the controller manager takes it. */
function addressRange(f: Fields, key: string, fallback: string): string {
  const v = f.string(key, fallback);
  const range = /^([\d.]+)-([\d.]+)$/.exec(v);
  if (range) {
    const [, first = '', last = ''] = range;
    if (isIpv4(first) && isIpv4(last) && ipv4Number(first) <= ipv4Number(last)) return v;
  } else {
    const [ip, bits] = v.split('/');
    const n = Number(bits);
    if (isIpv4(ip ?? '') && Number.isInteger(n) && n >= 16 && n <= 32) return v;
  }
  f.fail(key, `"${v}" must be an IPv4 range FIRST-LAST (FIRST <= LAST) or a CIDR from /16 to /32`);
}

/** Parses and checks an inventory; relative paths (ssh keys) are resolved against `baseDir`. */
export function parseInventory(text: string, source: string, baseDir: string): Inventory {
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    throw new InventoryError(source, '(YAML)', (err as Error).message.split('\n')[0] ?? 'cannot parse');
  }
  const top = Fields.of(source, '', doc);
  top.only(['cluster', 'kubit', 'registry', 'ssh', 'prefix', 'controlPlane', 'nodes']);
  const cluster = top.sub('cluster');
  cluster.only(['name', 'clusterCidr', 'loadBalancerRange', 'overlayMode']);
  const overlayMode = cluster.string('overlayMode', 'auto');
  if (!(OVERLAY_MODES as readonly string[]).includes(overlayMode)) {
    cluster.fail('overlayMode', `"${overlayMode}" is not one of ${OVERLAY_MODES.join(', ')}`);
  }
  const clusterName = cluster.string('name', 'kubit');
  if (!NAME.test(clusterName) || clusterName.length > 20) {
    cluster.fail('name', `"${clusterName}" must be a lowercase DNS label of at most 20 characters`);
  }
  const kubit = top.sub('kubit');
  kubit.only(['root', 'copyFrom', 'node', 'run']);
  const kubitRun = kubit.string('run', 'dist');
  if (kubitRun !== 'dist' && kubitRun !== 'source')
    kubit.fail('run', `must be dist or source, not "${kubitRun}"`);
  const kubitRoot = kubit.string('root', '/opt/kubit');
  if (!kubitRoot.startsWith('/')) kubit.fail('root', `"${kubitRoot}" must be an absolute path`);
  const copyFrom = kubit.optionalString('copyFrom');
  const kubitCopyFrom = copyFrom === undefined ? undefined : resolve(baseDir, expandHome(copyFrom));
  if (kubitCopyFrom !== undefined && !existsSync(kubitCopyFrom)) {
    kubit.fail('copyFrom', `${kubitCopyFrom} does not exist`);
  }
  const registry = top.sub('registry');
  registry.only(['mirror', 'mirrorOf']);
  const registryMirror = registry.optionalString('mirror');
  if (registryMirror !== undefined && !/^[A-Za-z0-9.-]+:\d{1,5}$/.test(registryMirror)) {
    registry.fail('mirror', `"${registryMirror}" must be host:port`);
  }
  const registryMirrorOf = registry.has('mirrorOf')
    ? registry.list('mirrorOf').map((r, i) => {
        const why =
          typeof r === 'string' ? invalidRegistryName(r) : `must be a registry host, not ${describe(r)}`;
        if (why) registry.fail(`mirrorOf[${i}]`, why);
        return r as string;
      })
    : undefined;
  if (registryMirrorOf && !registryMirror) registry.fail('mirrorOf', 'needs registry.mirror');
  const sshDefaultsField = top.sub('ssh');
  sshDefaultsField.only(['user', 'port', 'key', 'knownHosts']);
  const defaultKey = sshDefaultsField.optionalString('key');
  const sshDefaults: Partial<SshTarget> = {
    user: sshDefaultsField.string('user', 'root'),
    port: sshDefaultsField.port('port', 22),
    ...(defaultKey ? { key: resolve(baseDir, expandHome(defaultKey)) } : {}),
  };
  const knownHostsRaw = sshDefaultsField.optionalString('knownHosts');
  const prefix = top.string('prefix', '/');

  const cpList = top.list('controlPlane');
  if (cpList.length === 0) top.fail('controlPlane', 'must list at least one host');
  const controlPlane = cpList.map((raw, i) => {
    const f = Fields.of(source, `controlPlane[${i}]`, raw);
    f.only(['name', 'address', 'ssh', 'roles', 'prefix']);
    const roles = f.list('roles').map((r, j) => {
      if (typeof r !== 'string' || !(CONTROL_PLANE_ROLES as readonly string[]).includes(r)) {
        f.fail(`roles[${j}]`, `${describe(r)} is not one of ${CONTROL_PLANE_ROLES.join(', ')}`);
      }
      return r as ControlPlaneRole;
    });
    return { ...host(f, sshDefaults, prefix, baseDir), roles };
  });
  const nodeList = top.list('nodes');
  if (nodeList.length === 0) top.fail('nodes', 'must list at least one node host');
  const nodes = nodeList.map((raw, i) => {
    const f = Fields.of(source, `nodes[${i}]`, raw);
    f.only(['name', 'address', 'ssh', 'prefix']);
    return host(f, sshDefaults, prefix, baseDir);
  });

  const apiserverHost = controlPlane.find((h) => h.roles.includes('apiserver'));
  const lan = (apiserverHost?.address ?? '10.0.0.1').split('.').slice(0, 3).join('.');
  const inv: Inventory = {
    clusterName,
    clusterCidr: cidr(cluster, 'clusterCidr', '10.244.0.0/16'),
    loadBalancerRange: addressRange(cluster, 'loadBalancerRange', `${lan}.200-${lan}.250`),
    overlayMode: overlayMode as OverlayMode,
    kubitRoot,
    ...(kubitCopyFrom ? { kubitCopyFrom } : {}),
    kubitRun: kubitRun as Inventory['kubitRun'],
    nodePath: kubit.string('node', '/usr/bin/node'),
    ...(registryMirror ? { registryMirror } : {}),
    ...(registryMirrorOf ? { registryMirrorOf } : {}),
    ...(knownHostsRaw ? { knownHosts: resolve(baseDir, expandHome(knownHostsRaw)) } : {}),
    controlPlane,
    nodes,
  };
  checkTopology(inv, source);
  return inv;
}

/** The cluster as a whole: unique names and addresses, one host per singleton role, an odd store. */
function checkTopology(inv: Inventory, source: string): void {
  const all: [string, Host][] = [
    ...inv.controlPlane.map((h, i): [string, Host] => [`controlPlane[${i}]`, h]),
    ...inv.nodes.map((h, i): [string, Host] => [`nodes[${i}]`, h]),
  ];
  const seen = new Map<string, string>();
  for (const [path, h] of all) {
    for (const [what, value] of [
      ['name', h.name],
      ['address', h.address],
    ] as const) {
      const key = `${what}=${value}`;
      const other = seen.get(key);
      if (other) throw new InventoryError(source, `${path}.${what}`, `"${value}" is also ${other}'s ${what}`);
      seen.set(key, path);
    }
  }
  for (const role of ['apiserver', 'scheduler', 'controller-manager'] as const) {
    const holders = inv.controlPlane.filter((h) => h.roles.includes(role));
    if (holders.length !== 1) {
      throw new InventoryError(
        source,
        'controlPlane[*].roles',
        `exactly one control-plane host must have the role ${role} (found ${holders.length})`,
      );
    }
  }
  const stores = inv.controlPlane.filter((h) => h.roles.includes('store')).length;
  if (stores % 2 === 0) {
    throw new InventoryError(
      source,
      'controlPlane[*].roles',
      `the store needs an odd number of members (a quorum survives a failure), found ${stores}`,
    );
  }
  for (const [path, h] of all) {
    if (!existsSync(h.ssh.key))
      throw new InventoryError(source, `${path}.ssh.key`, `${h.ssh.key} does not exist`);
  }
}

/** The one control-plane host with `role` (checkTopology guarantees there is exactly one). */
export function hostWithRole(inv: Inventory, role: ControlPlaneRole): ControlPlaneHost {
  const h = inv.controlPlane.find((c) => c.roles.includes(role));
  if (!h) throw new Error(`no control-plane host has the role ${role}`);
  return h;
}

export function storeHosts(inv: Inventory): ControlPlaneHost[] {
  return inv.controlPlane.filter((h) => h.roles.includes('store'));
}
