// The object types Kubit serves (from kubernetes-types) and the registry of kinds that
// the apiserver, the client and the CLI share: group, version, plural resource, scope
// and short names of each kind.

export type {
  ControllerRevision,
  ControllerRevisionList,
  DaemonSet,
  DaemonSetCondition,
  DaemonSetList,
  DaemonSetSpec,
  DaemonSetStatus,
  DaemonSetUpdateStrategy,
  Deployment,
  DeploymentCondition,
  DeploymentList,
  DeploymentSpec,
  DeploymentStatus,
  DeploymentStrategy,
  ReplicaSet,
  ReplicaSetCondition,
  ReplicaSetList,
  ReplicaSetSpec,
  ReplicaSetStatus,
  RollingUpdateDaemonSet,
  RollingUpdateDeployment,
  RollingUpdateStatefulSetStrategy,
  StatefulSet,
  StatefulSetCondition,
  StatefulSetList,
  StatefulSetPersistentVolumeClaimRetentionPolicy,
  StatefulSetSpec,
  StatefulSetStatus,
  StatefulSetUpdateStrategy,
} from 'kubernetes-types/apps/v1.js';
export type {
  CronJob,
  CronJobList,
  CronJobSpec,
  CronJobStatus,
  Job,
  JobCondition,
  JobList,
  JobSpec,
  JobStatus,
  JobTemplateSpec,
  PodFailurePolicy,
  PodFailurePolicyOnExitCodesRequirement,
  PodFailurePolicyOnPodConditionsPattern,
  PodFailurePolicyRule,
  SuccessPolicy,
  SuccessPolicyRule,
  UncountedTerminatedPods,
} from 'kubernetes-types/batch/v1.js';
export type { Lease, LeaseList, LeaseSpec } from 'kubernetes-types/coordination/v1.js';
export type {
  Affinity,
  Binding,
  Capabilities,
  ConfigMap,
  ConfigMapList,
  ConfigMapVolumeSource,
  Container,
  ContainerPort,
  ContainerState,
  ContainerStatus,
  EmptyDirVolumeSource,
  EndpointAddress,
  EndpointPort as CoreEndpointPort,
  EndpointSubset,
  Endpoints,
  EndpointsList,
  EnvFromSource,
  EnvVar,
  Event,
  EventList,
  EventSource,
  ExecAction,
  HostPathVolumeSource,
  HTTPGetAction,
  KeyToPath,
  Lifecycle,
  LifecycleHandler,
  LoadBalancerIngress,
  LocalObjectReference,
  Namespace,
  NamespaceList,
  NamespaceSpec,
  NamespaceStatus,
  Node,
  NodeAddress,
  NodeCondition,
  NodeList,
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  NodeSpec,
  NodeStatus,
  NodeSystemInfo,
  ObjectReference,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeClaimCondition,
  PersistentVolumeClaimList,
  PersistentVolumeClaimSpec,
  PersistentVolumeClaimStatus,
  PersistentVolumeClaimTemplate,
  PersistentVolumeClaimVolumeSource,
  PersistentVolumeList,
  PersistentVolumeSpec,
  PersistentVolumeStatus,
  Pod,
  PodCondition,
  PodDNSConfig,
  PodList,
  PodSecurityContext,
  PodSpec,
  PodStatus,
  PodTemplateSpec,
  Probe,
  ProjectedVolumeSource,
  ReplicationController,
  ReplicationControllerCondition,
  ReplicationControllerList,
  ReplicationControllerSpec,
  ReplicationControllerStatus,
  ResourceRequirements,
  Secret,
  SecretList,
  SecretVolumeSource,
  SecurityContext,
  Service,
  ServiceAccount,
  ServiceAccountList,
  ServiceList,
  ServicePort,
  ServiceSpec,
  ServiceStatus,
  Taint,
  TCPSocketAction,
  Toleration,
  Volume,
  VolumeDevice,
  VolumeMount,
  VolumeNodeAffinity,
} from 'kubernetes-types/core/v1.js';
export type {
  Endpoint,
  EndpointConditions,
  EndpointPort,
  EndpointSlice,
  EndpointSliceList,
} from 'kubernetes-types/discovery/v1.js';
export type { Event as EventsV1Event, EventList as EventsV1EventList } from 'kubernetes-types/events/v1.js';
export type {
  Condition,
  DeleteOptions,
  LabelSelectorRequirement as MetaLabelSelectorRequirement,
  ListMeta,
  ObjectMeta,
  OwnerReference,
  Preconditions,
  Status as MetaStatus,
} from 'kubernetes-types/meta/v1.js';
export type {
  IPBlock,
  NetworkPolicy,
  NetworkPolicyEgressRule,
  NetworkPolicyIngressRule,
  NetworkPolicyList,
  NetworkPolicyPeer,
  NetworkPolicyPort,
  NetworkPolicySpec,
} from 'kubernetes-types/networking/v1.js';
export type {
  PodDisruptionBudget,
  PodDisruptionBudgetList,
  PodDisruptionBudgetSpec,
  PodDisruptionBudgetStatus,
} from 'kubernetes-types/policy/v1.js';
export type {
  AggregationRule,
  ClusterRole,
  ClusterRoleBinding,
  ClusterRoleBindingList,
  ClusterRoleList,
  PolicyRule,
  Role,
  RoleBinding,
  RoleBindingList,
  RoleList,
  RoleRef,
  Subject,
} from 'kubernetes-types/rbac/v1.js';

export type {
  CSIStorageCapacity,
  CSIStorageCapacityList,
  StorageClass,
  StorageClassList,
} from 'kubernetes-types/storage/v1.js';

import type { ListMeta, ObjectMeta } from 'kubernetes-types/meta/v1.js';

/** What every stored object has. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/**
 * A Kubernetes object as JSON, before any schema says what it holds: what the
 * apiserver stores, patches and serves (its shape is checked before it is stored).
 */
export type UnstructuredObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

/** A list of objects as the API returns it. */
export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: ListMeta;
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** A watch event on the wire. */
export interface WatchEvent<T> {
  type: WatchEventType;
  /** The object; for ERROR events a Status. */
  object: T;
}

/** A Table as the server returns for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`. */
export interface Table {
  kind: 'Table';
  apiVersion: string;
  metadata: ListMeta;
  columnDefinitions: {
    name: string;
    type: string;
    format?: string;
    description?: string;
    priority: number;
  }[];
  rows: { cells: unknown[]; object?: KubeObject & Record<string, unknown> }[];
}

/** One kind Kubit serves. */
export interface KindInfo {
  /** API group, '' for core. */
  readonly group: string;
  readonly version: string;
  /** "v1" or "apps/v1". */
  readonly apiVersion: string;
  readonly kind: string;
  readonly listKind: string;
  /** Plural resource name used in URLs and store keys. */
  readonly resource: string;
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly verbs: readonly string[];
  readonly subresources: readonly string[];
  readonly categories: readonly string[];
}

const CRUD = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

interface KindSpec {
  group: string;
  version: string;
  kind: string;
  resource: string;
  namespaced: boolean;
  shortNames?: string[];
  verbs?: string[];
  subresources?: string[];
  categories?: string[];
}

function define(spec: KindSpec): KindInfo {
  return Object.freeze({
    group: spec.group,
    version: spec.version,
    apiVersion: spec.group ? `${spec.group}/${spec.version}` : spec.version,
    kind: spec.kind,
    listKind: `${spec.kind}List`,
    resource: spec.resource,
    singular: spec.kind.toLowerCase(),
    namespaced: spec.namespaced,
    shortNames: Object.freeze(spec.shortNames ?? []),
    verbs: Object.freeze(spec.verbs ?? CRUD),
    subresources: Object.freeze(spec.subresources ?? []),
    categories: Object.freeze(spec.categories ?? []),
  });
}

const RBAC = 'rbac.authorization.k8s.io';

/** Every kind Kubit serves. Core kinds come first so they win ambiguous lookups (events). */
export const kinds: readonly KindInfo[] = Object.freeze([
  define({
    group: '',
    version: 'v1',
    kind: 'Namespace',
    resource: 'namespaces',
    namespaced: false,
    shortNames: ['ns'],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: ['status', 'finalize'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'Pod',
    resource: 'pods',
    namespaced: true,
    shortNames: ['po'],
    subresources: ['status', 'binding', 'log', 'exec', 'eviction'],
    categories: ['all'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'ReplicationController',
    resource: 'replicationcontrollers',
    namespaced: true,
    shortNames: ['rc'],
    subresources: ['status', 'scale'],
    categories: ['all'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'Node',
    resource: 'nodes',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'Event',
    resource: 'events',
    namespaced: true,
    shortNames: ['ev'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'Binding',
    resource: 'bindings',
    namespaced: true,
    verbs: ['create'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    resource: 'configmaps',
    namespaced: true,
    shortNames: ['cm'],
  }),
  define({ group: '', version: 'v1', kind: 'Secret', resource: 'secrets', namespaced: true }),
  define({
    group: '',
    version: 'v1',
    kind: 'Service',
    resource: 'services',
    namespaced: true,
    shortNames: ['svc'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'Endpoints',
    resource: 'endpoints',
    namespaced: true,
    shortNames: ['ep'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'PersistentVolume',
    resource: 'persistentvolumes',
    namespaced: false,
    shortNames: ['pv'],
    subresources: ['status'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'PersistentVolumeClaim',
    resource: 'persistentvolumeclaims',
    namespaced: true,
    shortNames: ['pvc'],
    subresources: ['status'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'ServiceAccount',
    resource: 'serviceaccounts',
    namespaced: true,
    shortNames: ['sa'],
    subresources: ['token'],
  }),
  define({
    group: 'coordination.k8s.io',
    version: 'v1',
    kind: 'Lease',
    resource: 'leases',
    namespaced: true,
  }),
  define({ group: RBAC, version: 'v1', kind: 'Role', resource: 'roles', namespaced: true }),
  define({ group: RBAC, version: 'v1', kind: 'ClusterRole', resource: 'clusterroles', namespaced: false }),
  define({ group: RBAC, version: 'v1', kind: 'RoleBinding', resource: 'rolebindings', namespaced: true }),
  define({
    group: RBAC,
    version: 'v1',
    kind: 'ClusterRoleBinding',
    resource: 'clusterrolebindings',
    namespaced: false,
  }),
  define({
    group: 'apps',
    version: 'v1',
    kind: 'ReplicaSet',
    resource: 'replicasets',
    namespaced: true,
    shortNames: ['rs'],
    subresources: ['status', 'scale'],
    categories: ['all'],
  }),
  define({
    group: 'apps',
    version: 'v1',
    kind: 'Deployment',
    resource: 'deployments',
    namespaced: true,
    shortNames: ['deploy'],
    subresources: ['status', 'scale'],
    categories: ['all'],
  }),
  define({
    group: 'apps',
    version: 'v1',
    kind: 'DaemonSet',
    resource: 'daemonsets',
    namespaced: true,
    shortNames: ['ds'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: 'apps',
    version: 'v1',
    kind: 'StatefulSet',
    resource: 'statefulsets',
    namespaced: true,
    shortNames: ['sts'],
    subresources: ['status', 'scale'],
    categories: ['all'],
  }),
  define({
    group: 'apps',
    version: 'v1',
    kind: 'ControllerRevision',
    resource: 'controllerrevisions',
    namespaced: true,
  }),
  define({
    group: 'batch',
    version: 'v1',
    kind: 'Job',
    resource: 'jobs',
    namespaced: true,
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: 'batch',
    version: 'v1',
    kind: 'CronJob',
    resource: 'cronjobs',
    namespaced: true,
    shortNames: ['cj'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'StorageClass',
    resource: 'storageclasses',
    namespaced: false,
    shortNames: ['sc'],
  }),
  define({
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'CSIStorageCapacity',
    resource: 'csistoragecapacities',
    namespaced: true,
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'ResourceQuota',
    resource: 'resourcequotas',
    namespaced: true,
    shortNames: ['quota'],
    subresources: ['status'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'LimitRange',
    resource: 'limitranges',
    namespaced: true,
    shortNames: ['limits'],
  }),
  define({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    resource: 'validatingwebhookconfigurations',
    namespaced: false,
  }),
  define({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    resource: 'mutatingwebhookconfigurations',
    namespaced: false,
  }),
  define({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingAdmissionPolicy',
    resource: 'validatingadmissionpolicies',
    namespaced: false,
  }),
  define({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    resource: 'validatingadmissionpolicybindings',
    namespaced: false,
  }),
  define({
    group: 'discovery.k8s.io',
    version: 'v1',
    kind: 'EndpointSlice',
    resource: 'endpointslices',
    namespaced: true,
  }),
  define({
    group: 'events.k8s.io',
    version: 'v1',
    kind: 'Event',
    resource: 'events',
    namespaced: true,
    shortNames: ['ev'],
  }),
  define({
    group: 'policy',
    version: 'v1',
    kind: 'PodDisruptionBudget',
    resource: 'poddisruptionbudgets',
    namespaced: true,
    shortNames: ['pdb'],
    subresources: ['status'],
  }),
  define({
    group: 'networking.k8s.io',
    version: 'v1',
    kind: 'NetworkPolicy',
    resource: 'networkpolicies',
    namespaced: true,
    shortNames: ['netpol'],
  }),
  define({
    group: '',
    version: 'v1',
    kind: 'PodTemplate',
    resource: 'podtemplates',
    namespaced: true,
  }),
  define({
    group: 'scheduling.k8s.io',
    version: 'v1',
    kind: 'PriorityClass',
    resource: 'priorityclasses',
    namespaced: false,
    shortNames: ['pc'],
  }),
  define({
    group: 'autoscaling',
    version: 'v2',
    kind: 'HorizontalPodAutoscaler',
    resource: 'horizontalpodautoscalers',
    namespaced: true,
    shortNames: ['hpa'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: 'autoscaling',
    version: 'v1',
    kind: 'HorizontalPodAutoscaler',
    resource: 'horizontalpodautoscalers',
    namespaced: true,
    shortNames: ['hpa'],
    subresources: ['status'],
    categories: ['all'],
  }),
  define({
    group: 'apiextensions.k8s.io',
    version: 'v1',
    kind: 'CustomResourceDefinition',
    resource: 'customresourcedefinitions',
    namespaced: false,
    shortNames: ['crd', 'crds'],
    subresources: ['status'],
  }),
]);

const byApiVersionKind = new Map<string, KindInfo>();
const byGroupResource = new Map<string, KindInfo>();
for (const k of kinds) {
  byApiVersionKind.set(`${k.apiVersion}\u0000${k.kind}`, k);
  // A resource served in two versions (autoscaling's HPAs) resolves to the first, preferred one.
  if (!byGroupResource.has(`${k.group}\u0000${k.resource}`))
    byGroupResource.set(`${k.group}\u0000${k.resource}`, k);
}

/** The kind for an apiVersion ("v1", "apps/v1") and kind ("Pod"). */
export function lookupKind(apiVersion: string, kind: string): KindInfo | undefined {
  return byApiVersionKind.get(`${apiVersion}\u0000${kind}`);
}

/** The kind served at a group ('' for core) and plural resource. */
export function lookupResource(group: string, resource: string): KindInfo | undefined {
  return byGroupResource.get(`${group}\u0000${resource}`);
}

/** The kind of an object, from its own apiVersion and kind. */
export function kindOf(obj: KubeObject): KindInfo | undefined {
  if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') return undefined;
  return lookupKind(obj.apiVersion, obj.kind);
}

/** Splits "apps/v1" into group and version; "v1" is the core group. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/**
 * Resolves what a user types on the command line: "pods", "pod", "po", "Pod",
 * "deployments.apps", "deploy", "rolebindings.rbac.authorization.k8s.io". Core wins ties.
 */
export function resolveResource(name: string): KindInfo | undefined {
  const lower = name.toLowerCase();
  const dot = lower.indexOf('.');
  const base = dot < 0 ? lower : lower.slice(0, dot);
  const group = dot < 0 ? undefined : lower.slice(dot + 1);
  for (const k of kinds) {
    if (group !== undefined && k.group !== group) continue;
    if (
      k.resource === base ||
      k.singular === base ||
      k.kind.toLowerCase() === base ||
      k.shortNames.includes(base)
    ) {
      return k;
    }
  }
  return undefined;
}
