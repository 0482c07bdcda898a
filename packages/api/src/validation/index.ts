// Entry points: validate a whole object (on create) or an update against the old object,
// for every kind Kubit serves. Objects are expected to be defaulted first, as the
// apiserver does (decode -> default -> validate), because Kubernetes requires fields
// such as restartPolicy that only defaulting fills in.

import { type FieldError, fieldErrors } from '../field-errors.js';
import { invalid, type StatusError } from '../status.js';
import { type KindInfo, type KubeObject, kindOf, parseApiVersion } from '../types.js';
import {
  validateControllerRevision,
  validateControllerRevisionUpdate,
  validateDaemonSet,
  validateDaemonSetUpdate,
  validateStatefulSet,
  validateStatefulSetUpdate,
} from './apps-workloads.js';
import { validateHorizontalPodAutoscaler, validateHorizontalPodAutoscalerStatus } from './autoscaling.js';
import {
  validateCronJobCreate,
  validateCronJobUpdate,
  validateJob,
  validateJobCreate,
  validateJobUpdate,
} from './batch.js';
import { validateCustomResourceDefinition, validateCustomResourceDefinitionUpdate } from './crd.js';
import {
  validateBinding,
  validateBindingUpdate,
  validateConfigMap,
  validateCoreEvent,
  validateDataUpdate,
  validateDeployment,
  validateEventsV1Event,
  validateLease,
  validateNamespace,
  validateNode,
  validateNodeUpdate,
  validateReplicaSet,
  validateReplicationController,
  validateRules,
  validateSecret,
  validateSecretUpdate,
  validateSelectorUpdate,
  validateServiceAccount,
} from './kinds.js';
import {
  type NameValidator,
  nameIsDNSLabel,
  nameIsDNSSubdomain,
  nameIsPathSegment,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from './meta.js';
import { validateNetworkPolicy } from './networking.js';
import {
  validateBindingTarget,
  validateEphemeralContainersAdditions,
  validatePodCreate,
  validatePodSpec,
  validatePodSpecUpdate,
} from './pod.js';
import { validatePodTemplate } from './pod-template.js';
import { validatePodDisruptionBudget } from './policy.js';
import {
  validateEndpointSlice,
  validateEndpointSliceUpdate,
  validateEndpoints,
  validateService,
  validateServiceUpdate,
} from './service.js';
import {
  validateCSIStorageCapacity,
  validateCSIStorageCapacityUpdate,
  validatePersistentVolume,
  validatePersistentVolumeClaim,
  validatePersistentVolumeClaimUpdate,
  validatePersistentVolumeUpdate,
  validateStorageClass,
  validateStorageClassUpdate,
} from './storage.js';
import { isObj, type Obj, own } from './util.js';

interface KindValidator {
  name: NameValidator;
  /** Rules for the object, run on create and on update. */
  create(obj: Obj, errs: FieldError[]): void;
  /** Rules only a new object must pass (a Job's generated selector). */
  createOnly?(obj: Obj, errs: FieldError[]): void;
  update?(newObj: Obj, oldObj: Obj, errs: FieldError[]): void;
}

const validators: Record<string, KindValidator> = {
  '/Namespace': { name: nameIsDNSLabel, create: validateNamespace },
  '/Pod': {
    name: nameIsDNSSubdomain,
    create: (o, errs) => validatePodSpec(own(o, 'spec'), 'spec', errs),
    createOnly: validatePodCreate,
    update: (n, o, errs) => validatePodSpecUpdate(own(n, 'spec'), own(o, 'spec'), errs),
  },
  '/Node': { name: nameIsDNSSubdomain, create: validateNode, update: validateNodeUpdate },
  '/Event': { name: nameIsDNSSubdomain, create: validateCoreEvent },
  '/Binding': { name: nameIsDNSSubdomain, create: validateBindingTarget },
  '/ConfigMap': {
    name: nameIsDNSSubdomain,
    create: validateConfigMap,
    update: (n, o, errs) => validateDataUpdate(n, o, ['data', 'binaryData'], errs),
  },
  '/Secret': { name: nameIsDNSSubdomain, create: validateSecret, update: validateSecretUpdate },
  '/ServiceAccount': { name: nameIsDNSSubdomain, create: validateServiceAccount },
  '/Service': { name: nameIsDNSLabel, create: validateService, update: validateServiceUpdate },
  '/Endpoints': { name: nameIsDNSSubdomain, create: validateEndpoints },
  'discovery.k8s.io/EndpointSlice': {
    name: nameIsDNSSubdomain,
    create: validateEndpointSlice,
    update: validateEndpointSliceUpdate,
  },
  'coordination.k8s.io/Lease': { name: nameIsDNSSubdomain, create: validateLease },
  'rbac.authorization.k8s.io/Role': {
    name: nameIsPathSegment,
    create: (o, errs) => validateRules(o, true, errs),
  },
  'rbac.authorization.k8s.io/ClusterRole': {
    name: nameIsPathSegment,
    create: (o, errs) => validateRules(o, false, errs),
  },
  'rbac.authorization.k8s.io/RoleBinding': {
    name: nameIsPathSegment,
    create: (o, errs) => validateBinding(o, false, errs),
    update: validateBindingUpdate,
  },
  'rbac.authorization.k8s.io/ClusterRoleBinding': {
    name: nameIsPathSegment,
    create: (o, errs) => validateBinding(o, true, errs),
    update: validateBindingUpdate,
  },
  '/ReplicationController': { name: nameIsDNSSubdomain, create: validateReplicationController },
  'apps/ReplicaSet': { name: nameIsDNSSubdomain, create: validateReplicaSet, update: validateSelectorUpdate },
  'apps/Deployment': { name: nameIsDNSSubdomain, create: validateDeployment, update: validateSelectorUpdate },
  'apps/DaemonSet': { name: nameIsDNSSubdomain, create: validateDaemonSet, update: validateDaemonSetUpdate },
  'apps/StatefulSet': {
    name: nameIsDNSSubdomain,
    create: validateStatefulSet,
    update: validateStatefulSetUpdate,
  },
  'apps/ControllerRevision': {
    name: nameIsDNSSubdomain,
    create: validateControllerRevision,
    update: validateControllerRevisionUpdate,
  },
  'batch/Job': {
    name: nameIsDNSSubdomain,
    create: validateJob,
    createOnly: validateJobCreate,
    update: validateJobUpdate,
  },
  // The spec rules depend on the old spec on update (a TZ it had may stay), so the create
  // and update rules are apart.
  'batch/CronJob': {
    name: nameIsDNSSubdomain,
    create: () => {},
    createOnly: validateCronJobCreate,
    update: validateCronJobUpdate,
  },
  'events.k8s.io/Event': { name: nameIsDNSSubdomain, create: validateEventsV1Event },
  'policy/PodDisruptionBudget': { name: nameIsDNSSubdomain, create: validatePodDisruptionBudget },
  'networking.k8s.io/NetworkPolicy': { name: nameIsDNSSubdomain, create: validateNetworkPolicy },
  'autoscaling/HorizontalPodAutoscaler': {
    name: nameIsDNSSubdomain,
    create: (o, errs) => {
      validateHorizontalPodAutoscaler(o, errs);
      validateHorizontalPodAutoscalerStatus(o, errs);
    },
  },
  '/PersistentVolume': {
    name: nameIsDNSSubdomain,
    create: validatePersistentVolume,
    update: validatePersistentVolumeUpdate,
  },
  '/PersistentVolumeClaim': {
    name: nameIsDNSSubdomain,
    create: validatePersistentVolumeClaim,
    update: validatePersistentVolumeClaimUpdate,
  },
  'storage.k8s.io/StorageClass': {
    name: nameIsDNSSubdomain,
    create: validateStorageClass,
    update: validateStorageClassUpdate,
  },
  'apiextensions.k8s.io/CustomResourceDefinition': {
    name: nameIsDNSSubdomain,
    create: validateCustomResourceDefinition,
    update: validateCustomResourceDefinitionUpdate,
  },
  'storage.k8s.io/CSIStorageCapacity': {
    name: nameIsDNSSubdomain,
    create: validateCSIStorageCapacity,
    update: validateCSIStorageCapacityUpdate,
  },
  // Their rules are the apiserver's (kinds/quota.ts), the only one that writes them.
  '/ResourceQuota': { name: nameIsDNSSubdomain, create: () => {} },
  '/LimitRange': { name: nameIsDNSSubdomain, create: () => {} },
  '/PodTemplate': { name: nameIsDNSSubdomain, create: validatePodTemplate },
  // Its rules are the apiserver's (kinds/scheduling.ts), the only one that writes them.
  'scheduling.k8s.io/PriorityClass': { name: nameIsDNSSubdomain, create: () => {} },
  // The webhooks' own rules are the apiserver's (kinds/admissionregistration.ts): only the apiserver calls them.
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': {
    name: nameIsDNSSubdomain,
    create: () => {},
  },
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': { name: nameIsDNSSubdomain, create: () => {} },
  // So are the policies' (kinds/admissionpolicies.ts): their expressions compile in the apiserver's CEL environment.
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy': { name: nameIsDNSSubdomain, create: () => {} },
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding': {
    name: nameIsDNSSubdomain,
    create: () => {},
  },
};

function validatorFor(info: KindInfo): KindValidator | undefined {
  const key = `${info.group}/${info.kind}`;
  return Object.hasOwn(validators, key) ? validators[key] : undefined;
}

function resolve(obj: unknown, errs: FieldError[]): { info: KindInfo; v: KindValidator; o: Obj } | undefined {
  if (!isObj(obj)) {
    errs.push(fieldErrors.typeInvalid('', obj, 'must be an object'));
    return undefined;
  }
  const apiVersion = own(obj, 'apiVersion');
  const kind = own(obj, 'kind');
  if (typeof apiVersion !== 'string' || !apiVersion) {
    errs.push(fieldErrors.required('apiVersion'));
    return undefined;
  }
  if (typeof kind !== 'string' || !kind) {
    errs.push(fieldErrors.required('kind'));
    return undefined;
  }
  const info = kindOf(obj as KubeObject);
  const v = info && validatorFor(info);
  if (!info || !v) {
    errs.push(fieldErrors.notSupported('kind', `${apiVersion}/${kind}`, []));
    return undefined;
  }
  return { info, v, o: obj };
}

/** Everything wrong with a new object, each with its field path. */
export function validateObject(obj: unknown): FieldError[] {
  const errs: FieldError[] = [];
  const r = resolve(obj, errs);
  if (!r) return errs;
  validateObjectMeta(r.o, r.info.namespaced, r.v.name, errs);
  r.v.create(r.o, errs);
  r.v.createOnly?.(r.o, errs);
  return errs;
}

/** Everything wrong with an update: the new object on its own plus what may not change. */
export function validateUpdate(newObj: unknown, oldObj: unknown): FieldError[] {
  const errs: FieldError[] = [];
  const r = resolve(newObj, errs);
  if (!r) return errs;
  const old = isObj(oldObj) ? oldObj : {};
  validateObjectMetaUpdate(r.o, old, r.info.namespaced, r.v.name, errs);
  r.v.create(r.o, errs);
  if (own(old, 'apiVersion') !== undefined && own(old, 'kind') !== own(r.o, 'kind')) {
    errs.push(fieldErrors.invalid('kind', own(r.o, 'kind'), 'field is immutable'));
  }
  r.v.update?.(r.o, old, errs);
  return errs;
}

/** The 422 Invalid StatusError Kubernetes returns for these errors (`Pod "x" is invalid: ...`). */
/**
 * A write through pods/ephemeralcontainers: the pod as any update checks it, except that
 * its ephemeral containers may change (only by additions), which no other update may.
 */
export function validateEphemeralContainersUpdate(newPod: unknown, oldPod: unknown): FieldError[] {
  const n = isObj(newPod) ? newPod : {};
  const o = isObj(oldPod) ? oldPod : {};
  const newSpec = isObj(own(n, 'spec')) ? (own(n, 'spec') as Obj) : {};
  const oldSpec = isObj(own(o, 'spec')) ? (own(o, 'spec') as Obj) : {};
  // The spec-change rule compares with the old ephemeral containers in place; the new ones
  // are checked on their own (validatePodSpec, through the new pod's create rules).
  const errs = validateUpdate(
    { ...n, spec: { ...newSpec, ephemeralContainers: own(oldSpec, 'ephemeralContainers') } },
    o,
  );
  const own_ = errs.length;
  validatePodSpec(newSpec, 'spec', errs);
  // Only what concerns the ephemeral containers is new: the rest was just reported.
  const added = errs.splice(own_).filter((e) => e.field.startsWith('spec.ephemeralContainers'));
  errs.push(...added);
  validateEphemeralContainersAdditions(n, o, errs);
  return errs;
}

export function invalidError(obj: unknown, errs: readonly FieldError[]): StatusError {
  const o = isObj(obj) ? obj : {};
  const apiVersion = typeof own(o, 'apiVersion') === 'string' ? (own(o, 'apiVersion') as string) : '';
  const kind = typeof own(o, 'kind') === 'string' ? (own(o, 'kind') as string) : '';
  const meta = isObj(own(o, 'metadata')) ? (own(o, 'metadata') as Obj) : {};
  const name = own(meta, 'name');
  const generateName = own(meta, 'generateName');
  const shown =
    typeof name === 'string' && name ? name : typeof generateName === 'string' ? generateName : '';
  return invalid({ group: parseApiVersion(apiVersion).group, kind }, shown, errs);
}

/** Throws the Invalid StatusError if the object is invalid. */
export function assertValid(obj: unknown): void {
  const errs = validateObject(obj);
  if (errs.length > 0) throw invalidError(obj, errs);
}

/** Throws the Invalid StatusError if the update is invalid. */
export function assertValidUpdate(newObj: unknown, oldObj: unknown): void {
  const errs = validateUpdate(newObj, oldObj);
  if (errs.length > 0) throw invalidError(newObj, errs);
}

export {
  type AnyCidr,
  isStrictSubnet,
  NETWORK_POLICY_PROTOCOLS,
  NETWORK_POLICY_TYPES,
  parseAnyCidr,
} from './networking.js';
export { UNHEALTHY_POD_EVICTION_POLICIES, validateLabelSelector } from './policy.js';
export { validateObjectMeta, validateObjectMetaUpdate, validatePodSpec, validatePodSpecUpdate };
