// The Kubernetes object shapes the scheduler reads: from @kubit/api where it
// re-exports them, the rest straight from kubernetes-types (the same types).
export type {
  Affinity,
  Container,
  ContainerPort,
  Node,
  Pod,
  PodCondition,
  Taint,
  Toleration,
} from '@kubit/api';
export type {
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PodAffinityTerm,
  TopologySpreadConstraint,
} from 'kubernetes-types/core/v1.js';
export type { LabelSelector, LabelSelectorRequirement } from 'kubernetes-types/meta/v1.js';
export type { PodDisruptionBudget } from 'kubernetes-types/policy/v1.js';
