// The Kubernetes object types the controllers read and write, from @kubit/api;
// KubeObject is any object, what generic code (GC, namespace cleanup) handles.
export type {
  ConfigMap,
  DeleteOptions,
  Deployment,
  DeploymentCondition,
  DeploymentSpec,
  KubeObject,
  LabelSelector,
  LabelSelectorRequirement,
  Lease,
  Namespace,
  Node,
  NodeCondition,
  ObjectMeta,
  OwnerReference,
  Pod,
  PodTemplateSpec,
  ReplicaSet,
  ServiceAccount,
  Taint,
  Toleration,
} from '@kubit/api';
