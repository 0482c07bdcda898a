// The resources the controllers touch, in the same shape as @kubit/client's
// ResourceRef so a Cluster built on the client can take them unchanged.

export interface ResourceRef {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
  kind: string;
}

function ref(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
): ResourceRef {
  return { group, version, resource, kind, namespaced };
}

export const res = {
  pods: ref('', 'v1', 'pods', 'Pod', true),
  nodes: ref('', 'v1', 'nodes', 'Node', false),
  namespaces: ref('', 'v1', 'namespaces', 'Namespace', false),
  events: ref('', 'v1', 'events', 'Event', true),
  services: ref('', 'v1', 'services', 'Service', true),
  endpoints: ref('', 'v1', 'endpoints', 'Endpoints', true),
  configmaps: ref('', 'v1', 'configmaps', 'ConfigMap', true),
  secrets: ref('', 'v1', 'secrets', 'Secret', true),
  serviceaccounts: ref('', 'v1', 'serviceaccounts', 'ServiceAccount', true),
  replicasets: ref('apps', 'v1', 'replicasets', 'ReplicaSet', true),
  deployments: ref('apps', 'v1', 'deployments', 'Deployment', true),
  leases: ref('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
} as const satisfies Record<string, ResourceRef>;

export function apiVersionOf(r: Pick<ResourceRef, 'group' | 'version'>): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** "replicasets.apps", "pods": how Kubernetes names a resource in messages. */
export function resourceName(r: ResourceRef): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

/** Finds the resource an ownerReference (apiVersion + kind) points at, among known ones. */
export function resourceForKind(
  apiVersion: string,
  kind: string,
  known: readonly ResourceRef[],
): ResourceRef | undefined {
  return known.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
}

/** Namespaced resources a namespace deletion empties, in an order that lets owners go first. */
export const namespacedForCleanup: readonly ResourceRef[] = [
  res.deployments,
  res.replicasets,
  res.pods,
  res.services,
  res.endpoints,
  res.configmaps,
  res.secrets,
  res.serviceaccounts,
  res.leases,
  res.events,
];
