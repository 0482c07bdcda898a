// Each node's container runtime: a private containerd configured from the
// templates in deploy/containerd (own root, state, socket, CNI conf dir and
// bridge) and a docker.io mirror pointing at the cluster's registry. The CNI
// network in the conf dir is the kubelet's to write (--cni-conf-dir), from the
// pod subnet node IPAM gives the node.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DOCKER_HUB, hostsTomlValues } from '@kubit/cri/registry-hosts';
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

/**
 * Writes the node's containerd config and docker.io's hosts.toml: the cluster's
 * registry first, Docker Hub after it (a miss falls through when the machine
 * is online; offline a hit never asks upstream).
 */
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
  const { path, values } = hostsTomlValues(node.registryConfigDir, mirror, { registry: DOCKER_HUB });
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, fillTemplate(await template(repoRoot, 'hosts.toml.tmpl'), values));
}
