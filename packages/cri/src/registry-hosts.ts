// What goes into containerd's per-registry hosts.toml files (config_path): for
// each registry a node pulls from, the cluster's local registry first and the
// registry itself after it. One place for the names, so the launcher, the
// installer, the compose nodes' entrypoint and the test containerd agree.

/** Docker Hub as image references name it (`nginx` is docker.io/library/nginx). */
export const DOCKER_HUB = 'docker.io';
/** Docker Hub's registry API: it answers at registry-1.docker.io, not at the name references use. */
export const DOCKER_HUB_UPSTREAM = 'https://registry-1.docker.io';

/** The registry API behind a registry name: Docker Hub's own host, any other over HTTPS. */
export function upstreamOf(registry: string): string {
  return registry === DOCKER_HUB ? DOCKER_HUB_UPSTREAM : `https://${registry}`;
}

/** A registry name as it may lead an image reference: host, optional :port. */
const REGISTRY_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$/;

/** Why `name` cannot be a mirrored registry's directory under config_path, or undefined. */
export function invalidRegistryName(name: string): string | undefined {
  if (!REGISTRY_NAME.test(name)) return `"${name}" is not a registry host (HOST or HOST:PORT, lower case)`;
  return undefined;
}

export interface MirroredRegistry {
  /** The registry as image references name it: docker.io, quay.io, registry.example:5000. */
  registry: string;
  /** Its API's base URL; by default upstreamOf(registry). */
  upstream?: string;
}

/**
 * The placeholder values of deploy/containerd/hosts.toml.tmpl for one
 * registry, whose file is `<configPath>/<registry>/hosts.toml`.
 */
export function hostsTomlValues(
  configPath: string,
  mirror: string,
  r: MirroredRegistry,
): { path: string; values: Record<string, string> } {
  const bad = invalidRegistryName(r.registry);
  if (bad) throw new Error(bad);
  return {
    path: `${configPath}/${r.registry}/hosts.toml`,
    values: {
      REGISTRY_CONFIG_PATH: configPath,
      REGISTRY: r.registry,
      MIRROR: mirror,
      UPSTREAM: r.upstream ?? upstreamOf(r.registry),
    },
  };
}
