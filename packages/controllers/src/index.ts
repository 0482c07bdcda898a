// @kubit/controllers: the controllers of kubit-controller-manager and the parts
// they are built from (informers, work queue, expectations), usable in-process.
export * from './cidr.js';
export * from './cluster.js';
export * from './controller.js';
export * from './controller-names.js';
export * from './deployment/conditions.js';
export {
  DeploymentController,
  type DeploymentControllerOptions,
  proportionalSizes,
} from './deployment/controller.js';
export * from './deployment/util.js';
export {
  type BudgetStatus,
  countHealthy,
  DELETION_TIMEOUT_MS,
  expectedPods,
  nextStatus,
  pdbResource,
  standingDisruptions,
} from './disruption/budget.js';
export * from './disruption/controller.js';
export * from './endpoints/endpoints-controller.js';
export * from './endpoints/endpointslice-controller.js';
export * from './endpoints/mirroring.js';
export * from './endpoints/mirroring-controller.js';
export * from './endpoints/shared.js';
export * from './endpoints/slices.js';
export * from './endpoints/subsets.js';
export * from './events.js';
export * from './expectations.js';
export * from './garbagecollector.js';
export * from './labels.js';
export * from './loadbalancer/controller.js';
export * from './loadbalancer/pool.js';
export * from './manager.js';
export * from './namespace.js';
export * from './nodeipam.js';
export * from './nodelifecycle.js';
export * from './objects.js';
export * from './pod-ranking.js';
export * from './podgc.js';
export * from './replicaset.js';
export * from './rest-cluster.js';
export * from './served.js';
export * from './shared-informers.js';
export * from './taints.js';
