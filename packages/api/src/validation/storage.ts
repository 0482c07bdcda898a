// PersistentVolumes, PersistentVolumeClaims (core/v1), StorageClasses and
// CSIStorageCapacities (storage.k8s.io/v1), as Kubernetes' pkg/apis/core/validation
// (ValidatePersistentVolume*, ValidatePersistentVolumeClaim*) and pkg/apis/storage/validation.

import { type FieldError, fieldErrors } from '../field-errors.js';
import { compareQuantities, tryParseQuantity } from '../quantity.js';
import { immutable } from './meta.js';
import { isDNS1123Subdomain, isQualifiedName } from './names.js';
import { validateLabelSelector } from './policy.js';
import { arrAt, isObj, jsonEqual, nameErrors, type Obj, objAt, oneOf, own, strAt } from './util.js';

export const PV_ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];
export const VOLUME_MODES = ['Block', 'Filesystem'];
export const PV_RECLAIM_POLICIES = ['Delete', 'Recycle', 'Retain'];
export const SC_RECLAIM_POLICIES = ['Delete', 'Retain'];
export const VOLUME_BINDING_MODES = ['Immediate', 'WaitForFirstConsumer'];

/** The volume sources a PersistentVolume may name (PersistentVolumeSource's fields). */
export const PV_SOURCES = [
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'hostPath',
  'glusterfs',
  'nfs',
  'rbd',
  'iscsi',
  'cinder',
  'cephfs',
  'fc',
  'flocker',
  'flexVolume',
  'azureFile',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'portworxVolume',
  'scaleIO',
  'local',
  'storageos',
  'csi',
];

const NODE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'];

const child = (o: Obj, key: string): Obj => {
  const v = own(o, key);
  return isObj(v) ? v : {};
};

function validateAccessModes(v: unknown, path: string, required: string, errs: FieldError[]): void {
  const modes = arrAt(v, path, errs);
  if (modes.length === 0) {
    errs.push(fieldErrors.required(path, required));
    return;
  }
  for (const m of modes) oneOf(String(m), PV_ACCESS_MODES, path, errs);
  if (modes.includes('ReadWriteOncePod') && modes.length > 1)
    errs.push(fieldErrors.forbidden(path, 'may not use ReadWriteOncePod with other access modes'));
}

/** A storage quantity: parsable and greater than zero (ValidatePositiveQuantityValue). */
function validateStorageQuantity(v: unknown, path: string, errs: FieldError[]): void {
  const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : undefined;
  if (!q) {
    errs.push(fieldErrors.invalid(path, v ?? null, 'must be a quantity'));
    return;
  }
  if (compareQuantities(q, '0') <= 0) errs.push(fieldErrors.invalid(path, v, 'must be greater than zero'));
}

function validateClassName(v: unknown, path: string, errs: FieldError[]): void {
  const name = strAt(v, path, errs);
  if (name) nameErrors(name, isDNS1123Subdomain(name), path, errs);
}

/** A required NodeSelector: at least one term, each requirement with a known operator. */
export function validateNodeSelector(v: unknown, path: string, errs: FieldError[]): void {
  const sel = objAt(v, path, errs);
  if (!sel) return;
  const terms = arrAt(own(sel, 'nodeSelectorTerms'), `${path}.nodeSelectorTerms`, errs);
  if (terms.length === 0) {
    errs.push(fieldErrors.required(`${path}.nodeSelectorTerms`, 'must have at least one node selector term'));
  }
  for (const [i, t] of terms.entries()) {
    const tp = `${path}.nodeSelectorTerms[${i}]`;
    const term = objAt(t, tp, errs);
    if (!term) continue;
    for (const field of ['matchExpressions', 'matchFields']) {
      for (const [j, r] of arrAt(own(term, field), `${tp}.${field}`, errs).entries()) {
        const rp = `${tp}.${field}[${j}]`;
        const req = objAt(r, rp, errs);
        if (!req) continue;
        const key = strAt(own(req, 'key'), `${rp}.key`, errs) ?? '';
        nameErrors(key, isQualifiedName(key), `${rp}.key`, errs);
        const op = strAt(own(req, 'operator'), `${rp}.operator`, errs);
        const values = arrAt(own(req, 'values'), `${rp}.values`, errs);
        if (op === 'In' || op === 'NotIn') {
          if (values.length === 0)
            errs.push(
              fieldErrors.required(`${rp}.values`, "must be specified when `operator` is 'In' or 'NotIn'"),
            );
        } else if (op === 'Exists' || op === 'DoesNotExist') {
          if (values.length > 0)
            errs.push(
              fieldErrors.forbidden(
                `${rp}.values`,
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
              ),
            );
        } else if (op === 'Gt' || op === 'Lt') {
          if (values.length !== 1 || !/^-?[0-9]+$/.test(String(values[0])))
            errs.push(
              fieldErrors.required(
                `${rp}.values`,
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
              ),
            );
        } else {
          errs.push(fieldErrors.notSupported(`${rp}.operator`, op ?? '', NODE_SELECTOR_OPERATORS));
        }
      }
    }
  }
}

/** Which of PV_SOURCES a PersistentVolume spec sets. */
export function volumeSourcesOf(spec: Obj): string[] {
  return PV_SOURCES.filter((s) => own(spec, s) !== undefined && own(spec, s) !== null);
}

function validateVolumeSource(spec: Obj, errs: FieldError[]): void {
  const sources = volumeSourcesOf(spec);
  if (sources.length === 0) {
    errs.push(fieldErrors.required('spec', 'must specify a volume type'));
    return;
  }
  for (const extra of sources.slice(1))
    errs.push(fieldErrors.forbidden(`spec.${extra}`, 'may not specify more than 1 volume type'));
  const source = sources[0];
  const s = objAt(own(spec, source), `spec.${source}`, errs);
  if (!s) return;
  const requireStr = (field: string) => {
    if (!strAt(own(s, field), `spec.${source}.${field}`, errs))
      errs.push(fieldErrors.required(`spec.${source}.${field}`));
  };
  if (source === 'hostPath' || source === 'local') requireStr('path');
  if (source === 'nfs') {
    requireStr('server');
    requireStr('path');
  }
  if (source === 'csi') {
    requireStr('driver');
    requireStr('volumeHandle');
  }
  if (source === 'local' && own(spec, 'nodeAffinity') === undefined)
    errs.push(fieldErrors.required('spec.nodeAffinity', 'Local volume requires node affinity'));
}

export function validatePersistentVolume(pv: Obj, errs: FieldError[]): void {
  const spec = objAt(own(pv, 'spec'), 'spec', errs) ?? {};
  validateAccessModes(
    own(spec, 'accessModes'),
    'spec.accessModes',
    'must specify at least 1 access mode',
    errs,
  );
  const capacity = objAt(own(spec, 'capacity'), 'spec.capacity', errs);
  if (!capacity || Object.keys(capacity).length === 0) {
    errs.push(fieldErrors.required('spec.capacity'));
  } else {
    for (const k of Object.keys(capacity)) {
      if (k !== 'storage') errs.push(fieldErrors.notSupported(`spec.capacity`, k, ['storage']));
    }
    if (own(capacity, 'storage') !== undefined)
      validateStorageQuantity(own(capacity, 'storage'), 'spec.capacity[storage]', errs);
  }
  oneOf(
    strAt(own(spec, 'persistentVolumeReclaimPolicy'), 'spec.persistentVolumeReclaimPolicy', errs),
    PV_RECLAIM_POLICIES,
    'spec.persistentVolumeReclaimPolicy',
    errs,
  );
  validateClassName(own(spec, 'storageClassName'), 'spec.storageClassName', errs);
  oneOf(strAt(own(spec, 'volumeMode'), 'spec.volumeMode', errs), VOLUME_MODES, 'spec.volumeMode', errs);
  const claimRef = own(spec, 'claimRef');
  if (claimRef !== undefined && claimRef !== null) {
    const ref = objAt(claimRef, 'spec.claimRef', errs) ?? {};
    if (!strAt(own(ref, 'name'), 'spec.claimRef.name', errs))
      errs.push(fieldErrors.required('spec.claimRef.name'));
    if (!strAt(own(ref, 'namespace'), 'spec.claimRef.namespace', errs))
      errs.push(fieldErrors.required('spec.claimRef.namespace'));
  }
  const affinity = own(spec, 'nodeAffinity');
  if (affinity !== undefined && affinity !== null) {
    const a = objAt(affinity, 'spec.nodeAffinity', errs) ?? {};
    if (own(a, 'required') === undefined)
      errs.push(fieldErrors.required('spec.nodeAffinity.required', 'must specify required node constraints'));
    else validateNodeSelector(own(a, 'required'), 'spec.nodeAffinity.required', errs);
  }
  validateVolumeSource(spec, errs);
}

/** ValidatePersistentVolumeUpdate: the source, the volume mode and a set node affinity stay. */
export function validatePersistentVolumeUpdate(pv: Obj, old: Obj, errs: FieldError[]): void {
  const spec = child(pv, 'spec');
  const oldSpec = child(old, 'spec');
  const source = (s: Obj) => Object.fromEntries(volumeSourcesOf(s).map((k) => [k, own(s, k)]));
  if (!jsonEqual(source(spec), source(oldSpec)))
    errs.push(
      fieldErrors.forbidden(
        'spec.persistentvolumesource',
        'spec.persistentvolumesource is immutable after creation',
      ),
    );
  immutable(own(spec, 'volumeMode'), own(oldSpec, 'volumeMode'), 'spec.volumeMode', errs);
  if (own(oldSpec, 'nodeAffinity') !== undefined)
    immutable(own(spec, 'nodeAffinity'), own(oldSpec, 'nodeAffinity'), 'spec.nodeAffinity', errs);
}

/** ValidatePersistentVolumeClaimSpec, shared with ephemeral volume claim templates. */
export function validatePersistentVolumeClaimSpec(spec: Obj, path: string, errs: FieldError[]): void {
  validateAccessModes(
    own(spec, 'accessModes'),
    `${path}.accessModes`,
    'at least 1 access mode is required',
    errs,
  );
  validateLabelSelector(own(spec, 'selector'), `${path}.selector`, errs);
  const resources = child(spec, 'resources');
  const storage = own(child(resources, 'requests'), 'storage');
  if (storage === undefined) errs.push(fieldErrors.required(`${path}.resources[storage]`, ''));
  else validateStorageQuantity(storage, `${path}.resources.requests[storage]`, errs);
  const limit = own(child(resources, 'limits'), 'storage');
  if (limit !== undefined) validateStorageQuantity(limit, `${path}.resources.limits[storage]`, errs);
  validateClassName(own(spec, 'storageClassName'), `${path}.storageClassName`, errs);
  oneOf(strAt(own(spec, 'volumeMode'), `${path}.volumeMode`, errs), VOLUME_MODES, `${path}.volumeMode`, errs);
  const volumeName = strAt(own(spec, 'volumeName'), `${path}.volumeName`, errs);
  if (volumeName) nameErrors(volumeName, isDNS1123Subdomain(volumeName), `${path}.volumeName`, errs);
  for (const field of ['dataSource', 'dataSourceRef']) {
    const ds = own(spec, field);
    if (ds === undefined || ds === null) continue;
    const ref = objAt(ds, `${path}.${field}`, errs) ?? {};
    if (!strAt(own(ref, 'name'), `${path}.${field}.name`, errs))
      errs.push(fieldErrors.required(`${path}.${field}.name`));
    if (!strAt(own(ref, 'kind'), `${path}.${field}.kind`, errs))
      errs.push(fieldErrors.required(`${path}.${field}.kind`));
  }
}

export function validatePersistentVolumeClaim(pvc: Obj, errs: FieldError[]): void {
  validatePersistentVolumeClaimSpec(objAt(own(pvc, 'spec'), 'spec', errs) ?? {}, 'spec', errs);
}

const storageOf = (spec: Obj): unknown => own(child(child(spec, 'resources'), 'requests'), 'storage');

/**
 * ValidatePersistentVolumeClaimUpdate: the spec is immutable except the storage request
 * of a bound claim (which may only grow) and volumeAttributesClassName; an empty
 * volumeName may be set (binding) and an empty class filled in (default class).
 */
export function validatePersistentVolumeClaimUpdate(pvc: Obj, old: Obj, errs: FieldError[]): void {
  const spec = child(pvc, 'spec');
  const oldSpec = child(old, 'spec');
  const comparable = structuredClone(spec);
  const oldComparable = structuredClone(oldSpec);
  // Binding sets an empty volumeName; the default class fills an empty class.
  for (const field of ['volumeName', 'storageClassName']) {
    if (own(oldSpec, field)) continue;
    delete comparable[field];
    delete oldComparable[field];
  }
  delete comparable.volumeAttributesClassName;
  delete oldComparable.volumeAttributesClassName;
  const bound = own(child(old, 'status'), 'phase') === 'Bound';
  if (bound) {
    // Only the storage request may change; compared apart below.
    const req = child(child(comparable, 'resources'), 'requests');
    const oldReq = child(child(oldComparable, 'resources'), 'requests');
    if ('storage' in oldReq) req.storage = oldReq.storage;
  }
  if (!jsonEqual(comparable, oldComparable)) {
    errs.push(
      fieldErrors.forbidden(
        'spec',
        'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      ),
    );
    return;
  }
  const next = storageOf(spec);
  const prev = storageOf(oldSpec);
  const nq = tryParseQuantity(String(next));
  const pq = tryParseQuantity(String(prev));
  if (bound && nq && pq && compareQuantities(nq, pq) < 0)
    errs.push(
      fieldErrors.forbidden('spec.resources.requests.storage', 'field can not be less than previous value'),
    );
}

export function validateStorageClass(sc: Obj, errs: FieldError[]): void {
  const provisioner = strAt(own(sc, 'provisioner'), 'provisioner', errs) ?? '';
  if (!provisioner) errs.push(fieldErrors.required('provisioner'));
  else {
    if (provisioner.length > 63) errs.push(fieldErrors.tooLong('provisioner', provisioner, 63));
    else nameErrors(provisioner, isQualifiedName(provisioner.toLowerCase()), 'provisioner', errs);
  }
  const params = objAt(own(sc, 'parameters'), 'parameters', errs);
  if (params) {
    const keys = Object.keys(params);
    if (keys.length > 512) errs.push(fieldErrors.tooLong('parameters', keys.length, 512));
    let total = 0;
    for (const k of keys) {
      if (!k) errs.push(fieldErrors.invalid('parameters', k, 'field can not be empty.'));
      total += k.length + String(params[k]).length;
    }
    if (total > 256 * 1024) errs.push(fieldErrors.tooLong('parameters', '', 256 * 1024));
  }
  oneOf(strAt(own(sc, 'reclaimPolicy'), 'reclaimPolicy', errs), SC_RECLAIM_POLICIES, 'reclaimPolicy', errs);
  const mode = strAt(own(sc, 'volumeBindingMode'), 'volumeBindingMode', errs);
  if (mode === undefined) errs.push(fieldErrors.required('volumeBindingMode'));
  else oneOf(mode, VOLUME_BINDING_MODES, 'volumeBindingMode', errs);
  const topologies = arrAt(own(sc, 'allowedTopologies'), 'allowedTopologies', errs);
  for (const [i, t] of topologies.entries()) {
    const term = objAt(t, `allowedTopologies[${i}]`, errs) ?? {};
    const exprs = arrAt(
      own(term, 'matchLabelExpressions'),
      `allowedTopologies[${i}].matchLabelExpressions`,
      errs,
    );
    if (exprs.length === 0)
      errs.push(
        fieldErrors.required(
          `allowedTopologies[${i}].matchLabelExpressions`,
          'must have at least one label expression',
        ),
      );
  }
}

/** ValidateStorageClassUpdate: provisioner, parameters, reclaimPolicy and binding mode stay. */
export function validateStorageClassUpdate(sc: Obj, old: Obj, errs: FieldError[]): void {
  if (own(sc, 'provisioner') !== own(old, 'provisioner'))
    errs.push(fieldErrors.forbidden('provisioner', 'updates to provisioner are forbidden.'));
  if (!jsonEqual(own(sc, 'parameters') ?? {}, own(old, 'parameters') ?? {}))
    errs.push(fieldErrors.forbidden('parameters', 'updates to parameters are forbidden.'));
  if (own(sc, 'reclaimPolicy') !== own(old, 'reclaimPolicy'))
    errs.push(fieldErrors.forbidden('reclaimPolicy', 'updates to reclaimPolicy are forbidden.'));
  immutable(own(sc, 'volumeBindingMode'), own(old, 'volumeBindingMode'), 'volumeBindingMode', errs);
}

export function validateCSIStorageCapacity(c: Obj, errs: FieldError[]): void {
  const className = strAt(own(c, 'storageClassName'), 'storageClassName', errs) ?? '';
  if (!className) errs.push(fieldErrors.required('storageClassName'));
  else nameErrors(className, isDNS1123Subdomain(className), 'storageClassName', errs);
  validateLabelSelector(own(c, 'nodeTopology'), 'nodeTopology', errs);
  for (const field of ['capacity', 'maximumVolumeSize']) {
    const v = own(c, field);
    if (v === undefined) continue;
    const q = typeof v === 'string' || typeof v === 'number' ? tryParseQuantity(String(v)) : undefined;
    if (!q) errs.push(fieldErrors.invalid(field, v, 'must be a quantity'));
    else if (compareQuantities(q, '0') < 0)
      errs.push(fieldErrors.invalid(field, v, 'must be greater than or equal to 0'));
  }
}

/** ValidateCSIStorageCapacityUpdate: everything but capacity and maximumVolumeSize stays. */
export function validateCSIStorageCapacityUpdate(c: Obj, old: Obj, errs: FieldError[]): void {
  immutable(own(c, 'storageClassName'), own(old, 'storageClassName'), 'storageClassName', errs);
  immutable(own(c, 'nodeTopology'), own(old, 'nodeTopology'), 'nodeTopology', errs);
}
