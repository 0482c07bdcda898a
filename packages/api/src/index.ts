// @kubit/api: the resource model every Kubit component shares. No I/O.

export * from './autoscaling.js';
export * from './cron-schedule.js';
export * from './defaults.js';
export * from './duration.js';
export * from './field-errors.js';
export * from './fieldmanager/index.js';
export * from './fields.js';
export * from './ipv4.js';
export * from './labels.js';
export * from './meta.js';
export * from './patch/index.js';
export * from './quantity.js';
export * from './quota.js';
export * from './services.js';
export * from './status.js';
export * from './storage.js';
export * from './taints.js';
export * from './types.js';
export {
  POD_MANAGEMENT_POLICIES,
  PVC_RETENTION_POLICIES,
  validateControllerRevision,
  validateDaemonSet,
  validateStatefulSet,
} from './validation/apps-workloads.js';
export {
  COMPLETION_MODES,
  CONCURRENCY_POLICIES,
  MAX_CRONJOB_NAME_LENGTH,
  POD_REPLACEMENT_POLICIES,
} from './validation/batch.js';
export * from './validation/cel-rules.js';
export * from './validation/crd.js';
export * from './validation/index.js';
export {
  MAX_DATA_SIZE,
  validateCoreEvent,
  validateDeployment,
  validateNode,
  validateReplicaSet,
  validateReplicationController,
} from './validation/kinds.js';
export {
  immutable,
  type NameValidator,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  nameIsPathSegment,
  TOTAL_ANNOTATION_SIZE_LIMIT,
  validateAnnotations,
  validateLabels,
} from './validation/meta.js';
export * from './validation/names.js';
export * from './validation/openapi-schema.js';
export {
  DNS_POLICIES,
  POD_UPDATE_FORBIDDEN,
  PROTOCOLS,
  PULL_POLICIES,
  RESTART_POLICIES,
  TAINT_EFFECTS,
  TERMINATION_MESSAGE_POLICIES,
  VOLUME_SOURCES,
  validateBindingTarget,
} from './validation/pod.js';
export {
  PV_ACCESS_MODES,
  PV_RECLAIM_POLICIES,
  VOLUME_BINDING_MODES,
  VOLUME_MODES,
  validatePersistentVolumeClaimSpec,
  volumeSourcesOf,
} from './validation/storage.js';
