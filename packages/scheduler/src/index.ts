// @kubit/scheduler: the scheduling core (cache, queue, plugin framework, plugins)
// and the Scheduler that wires it to informers and the apiserver.
export { numFeasibleNodesToFind, type ScheduleResult, SchedulingAlgorithm } from './algorithm.js';
export { SchedulerCache, type Snapshot } from './cache.js';
export { FitError, formatFitError } from './fit-error.js';
export { Framework } from './framework/framework.js';
export {
  buildFramework,
  defaultConfig,
  defaultSchedulerName,
  loadSchedulerConfig,
  parseSchedulerConfig,
  type SchedulerConfig,
} from './framework/profile.js';
export * from './framework/types.js';
export { KubeSchedulerApi } from './kube-api.js';
export { createSchedulerMetrics, type SchedulerMetrics } from './metrics.js';
export { NodeInfo } from './node-info.js';
export { newPodInfo, type PodInfo } from './pod-info.js';
export { type QueuedPodInfo, SchedulingQueue } from './queue.js';
export { Scheduler, type SchedulerApi } from './scheduler.js';
