// The cluster's registry: the one every node lists first for docker.io
// (deploy/containerd/hosts.toml.tmpl). Found as --registry, KUBIT_REGISTRY, or
// the ConfigMap kube-public/local-registry-hosting that clusters with a local
// registry publish (KEP-1755, as kind's documentation sets it up).

import { load } from 'js-yaml';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';

export const REGISTRY_CONFIGMAP = { namespace: 'kube-public', name: 'local-registry-hosting' };

const HOST_PORT = /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$/;

function checkHost(host: string, from: string): string {
  if (!HOST_PORT.test(host)) throw new CliError(`${from}: "${host}" is not a registry HOST:PORT`);
  return host;
}

/** The registry's host:port, for requests from this machine. */
export async function clusterRegistry(f: Factory, flag: string | undefined): Promise<string> {
  if (flag) return checkHost(flag, '--registry');
  const env = f.io.env.KUBIT_REGISTRY;
  if (env) return checkHost(env, 'KUBIT_REGISTRY');
  const client = await f.client();
  let cm: { data?: Record<string, string> } | undefined;
  try {
    cm = await client.request<{ data?: Record<string, string> }>({
      method: 'GET',
      path: `/api/v1/namespaces/${REGISTRY_CONFIGMAP.namespace}/configmaps/${REGISTRY_CONFIGMAP.name}`,
    });
  } catch (e) {
    if ((e as { code?: number }).code !== 404) throw e;
  }
  const doc = cm?.data?.['localRegistryHosting.v1'];
  const host = doc ? (load(doc) as { host?: unknown } | null)?.host : undefined;
  if (typeof host === 'string' && host) return checkHost(host, 'local-registry-hosting');
  throw new CliError(
    "the cluster's registry is unknown: pass --registry HOST:PORT or set KUBIT_REGISTRY " +
      `(a cluster names it in ConfigMap ${REGISTRY_CONFIGMAP.namespace}/${REGISTRY_CONFIGMAP.name}, localRegistryHosting.v1 host)`,
  );
}

/** Fails clearly unless the registry answers its API root. */
export async function checkRegistryUp(host: string): Promise<void> {
  let status: number;
  try {
    status = (await fetch(`http://${host}/v2/`, { signal: AbortSignal.timeout(5000) })).status;
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    throw new CliError(`the cluster's registry at ${host} does not answer (${why}): is the cluster up?`);
  }
  if (status === 401)
    throw new CliError(`the registry at ${host} asks for authentication, which kubit image does not send`);
  if (status !== 200)
    throw new CliError(`the registry at ${host} answered /v2/ with HTTP ${status}: not a registry?`);
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new CliError(`GET ${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Every repository, page by page (the registry caps a page at 1000 and links the next). */
async function catalog(host: string): Promise<string[]> {
  const all: string[] = [];
  let next: string | undefined = `/v2/_catalog?n=1000`;
  for (let page = 0; next && page < 1000; page++) {
    const res = await fetch(`http://${host}${next}`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new CliError(`GET http://${host}${next}: HTTP ${res.status}`);
    all.push(...(((await res.json()) as { repositories?: string[] }).repositories ?? []));
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return all;
}

export interface RegistryImage {
  repository: string;
  tag: string;
  digest: string;
  size: number;
}

const MANIFEST_TYPES = [
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

/** Every repository and tag of the registry, with the manifest digest and the layers' size. */
export async function listRegistry(host: string): Promise<RegistryImage[]> {
  const out: RegistryImage[] = [];
  for (const repository of await catalog(host)) {
    const { tags } = await getJson<{ tags?: string[] | null }>(`http://${host}/v2/${repository}/tags/list`);
    for (const tag of tags ?? []) {
      const res = await fetch(`http://${host}/v2/${repository}/manifests/${tag}`, {
        headers: { accept: MANIFEST_TYPES },
        signal: AbortSignal.timeout(10_000),
      });
      if (!res.ok) continue; // a tag deleted between the list and now
      const manifest = (await res.json()) as { layers?: { size?: number }[]; config?: { size?: number } };
      const size = (manifest.layers ?? []).reduce((n, l) => n + (l.size ?? 0), manifest.config?.size ?? 0);
      out.push({ repository, tag, digest: res.headers.get('docker-content-digest') ?? '', size });
    }
  }
  return out;
}
