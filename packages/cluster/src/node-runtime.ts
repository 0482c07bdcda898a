// Each node's container runtime: a private containerd configured from the
// templates in deploy/containerd (own root, state, socket, CNI conf dir and
// bridge), a docker.io mirror pointing at the cluster's registry, and the CNI
// network written from the pod subnet node IPAM gave the node.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { NodeLayout } from './layout.js';

/** The sandbox image scripts/images pushes; containerd must find it under exactly this name. */
export const SANDBOX_IMAGE = 'docker.io/local/pause:1';

/** Fills {{NAME}} placeholders; a placeholder without a value is an error, never left in. */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_m, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template placeholder {{${key}}} has no value`);
    return v;
  });
}

function templateDir(repoRoot: string): string {
  return join(repoRoot, 'deploy', 'containerd');
}

async function template(repoRoot: string, file: string): Promise<string> {
  const path = join(templateDir(repoRoot), file);
  try {
    return await readFile(path, 'utf8');
  } catch {
    throw new Error(`${path} is missing: the containerd templates come with the repository`);
  }
}

/** Writes the node's containerd config and its docker.io mirror (the cluster's registry). */
export async function writeContainerdConfig(
  node: NodeLayout,
  repoRoot: string,
  mirror: string,
): Promise<void> {
  for (const d of [node.containerdRoot, node.containerdState, node.cniConfDir, node.registryConfigDir]) {
    await mkdir(d, { recursive: true });
  }
  const config = fillTemplate(await template(repoRoot, 'config.toml.tmpl'), {
    ROOT: node.containerdRoot,
    STATE: node.containerdState,
    ADDRESS: node.socket,
    SANDBOX_IMAGE,
    CNI_CONF_DIR: node.cniConfDir,
    REGISTRY_CONFIG_PATH: node.registryConfigDir,
  });
  await writeFile(node.containerdConfig, config);
  await mkdir(join(node.registryConfigDir, 'docker.io'), { recursive: true });
  await writeFile(
    join(node.registryConfigDir, 'docker.io', 'hosts.toml'),
    fillTemplate(await template(repoRoot, 'hosts.toml.tmpl'), {
      REGISTRY_CONFIG_PATH: node.registryConfigDir,
      MIRROR: mirror,
    }),
  );
}

export function conflistText(templateText: string, node: NodeLayout, podCidr: string): string {
  return fillTemplate(templateText, {
    NETWORK_NAME: node.networkName,
    BRIDGE: node.bridge,
    POD_CIDR: podCidr,
    // Pods talk to each other and to the host without NAT; nothing here leaves the machine.
    IP_MASQ: 'false',
  });
}

/**
 * Writes the node's CNI network for `podCidr` (its node.spec.podCIDR) when it
 * differs from what is there. containerd watches the conf dir and loads it;
 * until then the runtime reports NetworkReady=false and the node is not Ready.
 * Returns whether it wrote.
 */
export async function writeCniConfig(node: NodeLayout, repoRoot: string, podCidr: string): Promise<boolean> {
  const text = conflistText(await template(repoRoot, '10-kubit.conflist.tmpl'), node, podCidr);
  if (existsSync(node.cniConflist) && readFileSync(node.cniConflist, 'utf8') === text) return false;
  await mkdir(node.cniConfDir, { recursive: true });
  // Write then rename, so containerd never loads half a file.
  const tmp = `${node.cniConflist}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, node.cniConflist);
  return true;
}
