// The Kubernetes object types the controllers read and write, from @kubit/api.
export type {
  DeleteOptions,
  Deployment,
  DeploymentCondition,
  DeploymentSpec,
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
  Taint,
  Toleration,
} from '@kubit/api';

import type { ObjectMeta } from '@kubit/api';

/** Any Kubernetes object: what generic code (GC, namespace cleanup) handles. */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}
