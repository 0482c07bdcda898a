// Which of the resources the controllers would like to watch the apiserver
// actually serves. @kubit/client's informers retry a list that answers 404
// forever and never report synced, so the controller manager would wait for
// its caches for ever if the garbage collector or the namespace controller
// watched a resource this apiserver does not have. Asking discovery first and
// leaving such resources out keeps them from blocking the others.
import { discoverResources, type KubeClient, type ResourceRef, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';

export type ServedFilter = (r: ResourceRef) => boolean;

const id = (r: Pick<ResourceRef, 'group' | 'version' | 'resource'>) =>
  `${r.group}/${r.version}/${r.resource}`;

/** Reads discovery, retrying until the apiserver answers (or `signal` aborts). */
export async function servedResources(
  client: KubeClient,
  log: Logger,
  signal?: AbortSignal,
  retryMs = 1000,
): Promise<ServedFilter> {
  for (let attempt = 1; ; attempt++) {
    try {
      const all = await discoverResources(client);
      const ids = new Set(all.filter((r) => !r.subresource && r.verbs.includes('watch')).map(id));
      return (r) => ids.has(id(r));
    } catch (err) {
      if (signal?.aborted) throw err;
      if (attempt % 10 === 1) log.warn({ err, attempt }, 'API discovery failed; retrying');
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}

const known = new Set(Object.values(resources).map((r) => `${r.group}/${r.resource}`));
const builtinGroups = new Set(Object.values(resources).map((r) => r.group));
/** A group of Kubernetes' own API (the core group, *.k8s.io), never a CRD's unless approved. */
const isBuiltinGroup = (g: string) => builtinGroups.has(g) || g.endsWith('.k8s.io') || !g.includes('.');

/**
 * The resources discovery lists that the controllers do not know (custom
 * resources a CRD added), with the verbs the garbage collector and a namespace
 * deletion need.
 */
export async function customResources(client: KubeClient): Promise<ResourceRef[]> {
  const all = await discoverResources(client);
  return all
    .filter(
      (r) =>
        !r.subresource &&
        r.preferred &&
        r.verbs.includes('list') &&
        r.verbs.includes('delete') &&
        r.verbs.includes('watch') &&
        !known.has(`${r.group}/${r.resource}`) &&
        !isBuiltinGroup(r.group),
    )
    .map((r) => ({
      group: r.group,
      version: r.version,
      resource: r.resource,
      namespaced: true,
      kind: r.kind,
    }));
}
