// Which resource a request is about: the parts of a REST path (group, version,
// plural resource) plus whether it lives in a namespace. The well-known built-in
// resources are listed so components can write `client.list(resources.pods)`.

export interface ResourceRef {
  /** API group; '' is the core group. */
  group: string;
  version: string;
  /** Plural, lower-case resource name as it appears in the URL ("pods"). */
  resource: string;
  namespaced: boolean;
  /** The kind of the objects ("Pod"); used for messages and for building objects. */
  kind?: string;
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

/** The built-in resources Kubit components use. */
export const resources = {
  pods: ref('', 'v1', 'pods', 'Pod', true),
  nodes: ref('', 'v1', 'nodes', 'Node', false),
  namespaces: ref('', 'v1', 'namespaces', 'Namespace', false),
  events: ref('', 'v1', 'events', 'Event', true),
  services: ref('', 'v1', 'services', 'Service', true),
  endpoints: ref('', 'v1', 'endpoints', 'Endpoints', true),
  configmaps: ref('', 'v1', 'configmaps', 'ConfigMap', true),
  secrets: ref('', 'v1', 'secrets', 'Secret', true),
  serviceaccounts: ref('', 'v1', 'serviceaccounts', 'ServiceAccount', true),
  bindings: ref('', 'v1', 'bindings', 'Binding', true),
  replicationcontrollers: ref('', 'v1', 'replicationcontrollers', 'ReplicationController', true),
  persistentvolumes: ref('', 'v1', 'persistentvolumes', 'PersistentVolume', false),
  persistentvolumeclaims: ref('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true),
  resourcequotas: ref('', 'v1', 'resourcequotas', 'ResourceQuota', true),
  limitranges: ref('', 'v1', 'limitranges', 'LimitRange', true),
  replicasets: ref('apps', 'v1', 'replicasets', 'ReplicaSet', true),
  deployments: ref('apps', 'v1', 'deployments', 'Deployment', true),
  daemonsets: ref('apps', 'v1', 'daemonsets', 'DaemonSet', true),
  statefulsets: ref('apps', 'v1', 'statefulsets', 'StatefulSet', true),
  controllerrevisions: ref('apps', 'v1', 'controllerrevisions', 'ControllerRevision', true),
  jobs: ref('batch', 'v1', 'jobs', 'Job', true),
  cronjobs: ref('batch', 'v1', 'cronjobs', 'CronJob', true),
  storageclasses: ref('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false),
  csistoragecapacities: ref('storage.k8s.io', 'v1', 'csistoragecapacities', 'CSIStorageCapacity', true),
  leases: ref('coordination.k8s.io', 'v1', 'leases', 'Lease', true),
} as const satisfies Record<string, ResourceRef>;

/** "v1" for the core group, "apps/v1" otherwise. */
export function apiVersionOf(r: Pick<ResourceRef, 'group' | 'version'>): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** Splits "apps/v1" into group and version ("v1" → core group). */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  if (slash < 0) return { group: '', version: apiVersion };
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}
