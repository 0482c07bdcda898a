// The ConfigMap through which a cluster names its local registry (KEP-1755,
// "localRegistryHosting.v1" in kube-public/local-registry-hosting, as kind's
// local-registry guide writes it): `kubit image load` and `kubit image ls`
// read it to find where to push, so users need no --registry flag.
import { type KubeClient, resources } from '@kubit/client';

export const REGISTRY_HOSTING = { namespace: 'kube-public', name: 'local-registry-hosting' } as const;

/** The ConfigMap's data: `host` for clients on this machine; containers pull through the docker.io mirror. */
export function registryHostingData(host: string): Record<string, string> {
  return {
    'localRegistryHosting.v1': [
      `host: "${host}"`,
      'help: "kubit image load IMAGE|ARCHIVE pushes here; nodes pull docker.io/* from it first"',
      '',
    ].join('\n'),
  };
}

/** Creates (or updates) kube-public/local-registry-hosting, creating kube-public if it is missing. */
export async function publishRegistryHosting(client: KubeClient, host: string): Promise<void> {
  const { namespace, name } = REGISTRY_HOSTING;
  const ignoreExists = (e: { code?: number }) => {
    if (e.code !== 409) throw e;
  };
  await client
    .create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
    .catch(ignoreExists);
  const body = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace },
    data: registryHostingData(host),
  };
  try {
    await client.create(resources.configmaps, body);
  } catch (e) {
    if ((e as { code?: number }).code !== 409) throw e;
    const current = await client.get(resources.configmaps, name, { namespace });
    await client.update(resources.configmaps, { ...current, data: body.data });
  }
}
