// The node's CNI network, owned by the kubelet: written from the node's pod
// subnet (node.spec.podCIDR from node IPAM, or --pod-cidr) into the CNI conf
// dir containerd reads, before any pod sandbox is created. Until it is there,
// pods wait in ContainerCreating and the runtime reports NetworkReady=false.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CONFLIST_FILE = '10-kubit.conflist';
export const DEFAULT_CNI_BRIDGE = 'kubit0';
export const DEFAULT_CNI_NETWORK = 'kubit';
/**
 * The MTU pods must use, published on the Node by kubit-net (the VXLAN overlay
 * costs 50 bytes of the underlay's MTU). Spelled here, not imported: the
 * kubelet depends on no other daemon's package.
 */
export const POD_MTU_ANNOTATION = 'net.kubit.dev/pod-mtu';

/** The pod MTU a Node's annotation asks for, or undefined when absent or not a sane MTU. */
export function podMtuOf(annotations: Record<string, string> | undefined): number | undefined {
  const v = annotations?.[POD_MTU_ANNOTATION];
  if (!v || !/^\d{2,5}$/.test(v)) return undefined;
  const n = Number(v);
  return n >= 576 && n <= 65535 ? n : undefined;
}

export interface CniConfigOptions {
  /** --cni-conf-dir: where containerd's CRI plugin reads networks from. */
  confDir: string;
  /** --cni-conf-template: the conflist with {{NETWORK_NAME}} {{BRIDGE}} {{POD_CIDR}} {{IP_MASQ}}. */
  templatePath: string;
  bridge: string;
  networkName: string;
  /** Masquerade traffic leaving the pod subnet (off: pods and nodes talk without NAT). */
  ipMasq: boolean;
}

/** Fills {{NAME}} placeholders; a placeholder without a value is an error, never left in. */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_m, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template placeholder {{${key}}} has no value`);
    return v;
  });
}

/**
 * deploy/containerd/10-kubit.conflist.tmpl of the checkout this kubelet runs
 * from (src/ under tsx, dist/src/ when built), or undefined.
 */
export function defaultCniTemplatePath(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'deploy', 'containerd', `${CONFLIST_FILE}.tmpl`);
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

const IPV4_CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

export function checkPodCidr(cidr: string): void {
  const m = IPV4_CIDR.exec(cidr);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) > 32) {
    throw new Error(`pod CIDR "${cidr}" is not an IPv4 CIDR such as 10.244.1.0/24`);
  }
}

export class CniConfig {
  private written: string | undefined;
  private writtenMtu: number | undefined;

  constructor(private readonly opts: CniConfigOptions) {}

  get path(): string {
    return join(this.opts.confDir, CONFLIST_FILE);
  }

  /** The subnet the conflist on disk was written for (by this kubelet or an earlier one). */
  get podCidr(): string | undefined {
    return this.written;
  }

  /** The pod MTU the conflist on disk was written with (undefined: the bridge plugin's default). */
  get mtu(): number | undefined {
    return this.writtenMtu;
  }

  conflist(template: string, podCidr: string, mtu?: number): string {
    checkPodCidr(podCidr);
    const text = fillTemplate(template, {
      NETWORK_NAME: this.opts.networkName,
      BRIDGE: this.opts.bridge,
      POD_CIDR: podCidr,
      IP_MASQ: String(this.opts.ipMasq),
    });
    if (mtu === undefined) return text;
    // The bridge plugin gives the pod's veth (both ends) this MTU; the template need not know.
    const conf = JSON.parse(text) as { plugins?: { type?: string; mtu?: number }[] };
    const bridge = conf.plugins?.find((p) => p.type === 'bridge');
    if (!bridge) throw new Error('the CNI template has no bridge plugin to set the pod MTU on');
    bridge.mtu = mtu;
    return `${JSON.stringify(conf, null, 2)}\n`;
  }

  /** Writes the conflist for `podCidr` (and pod MTU) unless the same text is there. Returns whether it wrote. */
  async ensure(podCidr: string, mtu?: number): Promise<boolean> {
    let template: string;
    try {
      template = await readFile(this.opts.templatePath, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the CNI template ${this.opts.templatePath}: ${(err as Error).message}`);
    }
    const text = this.conflist(template, podCidr, mtu);
    const path = this.path;
    if (existsSync(path) && readFileSync(path, 'utf8') === text) {
      this.written = podCidr;
      this.writtenMtu = mtu;
      return false;
    }
    await mkdir(this.opts.confDir, { recursive: true });
    // Write then rename, so containerd never loads half a file. The temporary name is
    // this writer's own (two kubelets, or two calls, never write into one file), and
    // does not end in .conflist/.conf/.json, so containerd never loads it either.
    const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, text);
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    this.written = podCidr;
    this.writtenMtu = mtu;
    return true;
  }
}
