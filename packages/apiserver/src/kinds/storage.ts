// The storage kinds: core/v1 PersistentVolumes (cluster-scoped) and
// PersistentVolumeClaims, with status kept apart from spec (the persistent-volume
// controller writes it); storage.k8s.io/v1 StorageClasses and CSIStorageCapacities.
// The columns are Kubernetes' printers' (`kubectl get pv,pvc,sc,csistoragecapacities`).
// Defaulting and validation come from @kubit/api; admission (default class, protection
// finalizers, resize) is storage-admission.ts.
import {
  BETA_DEFAULT_STORAGE_CLASS_ANNOTATION,
  DEFAULT_STORAGE_CLASS_ANNOTATION,
  defaultPersistentVolume,
  defaultPersistentVolumeClaim,
  defaultStorageClass,
} from '@kubit/api';
import { schemas } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, meta, obj, str } from './types.js';

const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 };
const VOLUME_MODE: Column = {
  name: 'VolumeMode',
  type: 'string',
  description: 'volumeMode defines what type of volume is required by the claim.',
  priority: 1,
};
const VOLUME_ATTRIBUTES_CLASS: Column = {
  name: 'VolumeAttributesClass',
  type: 'string',
  description: 'volumeAttributesClassName is the name of the VolumeAttributesClass this volume belongs to.',
  priority: 0,
};

const SHORT_ACCESS_MODES: Record<string, string> = {
  ReadWriteOnce: 'RWO',
  ReadOnlyMany: 'ROX',
  ReadWriteMany: 'RWX',
  ReadWriteOncePod: 'RWOP',
};

/** Kubernetes' GetAccessModesAsString: each mode once, in this fixed order. */
export function accessModesText(modes: unknown): string {
  const set = new Set(arr(modes).map(str));
  return Object.keys(SHORT_ACCESS_MODES)
    .filter((m) => set.has(m))
    .map((m) => SHORT_ACCESS_MODES[m])
    .join(',');
}

/** A claim's or volume's class: the field, else the beta annotation. */
function className(o: KObject): string {
  const v = str(obj(o.spec).storageClassName);
  return v || str(obj(meta(o).annotations)['volume.beta.kubernetes.io/storage-class']);
}

const attributesClass = (o: KObject): string => str(obj(o.spec).volumeAttributesClassName) || '<unset>';

/** Whether a StorageClass is marked default (either annotation, "true"). */
export function isDefaultClass(sc: KObject): boolean {
  const a = obj(meta(sc).annotations);
  return (
    a[DEFAULT_STORAGE_CLASS_ANNOTATION] === 'true' || a[BETA_DEFAULT_STORAGE_CLASS_ANNOTATION] === 'true'
  );
}

/** Spec and status are written apart: status only through /status. */
const withStatus = {
  subresources: [statusSubresource],
  prepareForUpdate(o: KObject, old: KObject) {
    o.status = old.status;
  },
  prepareForStatusUpdate(o: KObject, old: KObject) {
    o.spec = old.spec;
  },
};

export const persistentvolumes: KindDef = {
  ...withStatus,
  group: '',
  version: 'v1',
  kind: 'PersistentVolume',
  resource: 'persistentvolumes',
  singular: 'persistentvolume',
  namespaced: false,
  shortNames: ['pv'],
  schema: schemas.persistentVolume,
  nameRule: 'subdomain',
  example: {
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      hostPath: { path: '/tmp/kubit-example-volume' },
    },
  },
  defaults: (pv) => void defaultPersistentVolume(pv),
  prepareForCreate(pv) {
    pv.status = { phase: 'Pending' };
  },
  fields: (pv) => ({ 'status.phase': str(obj(pv.status).phase) }),
  table: {
    columns: [
      {
        name: 'Capacity',
        type: 'string',
        description: "capacity is the description of the persistent volume's resources and capacity.",
        priority: 0,
      },
      {
        name: 'Access Modes',
        type: 'string',
        description: 'accessModes contains all ways the volume can be mounted.',
        priority: 0,
      },
      {
        name: 'Reclaim Policy',
        type: 'string',
        description:
          'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.',
        priority: 0,
      },
      {
        name: 'Status',
        type: 'string',
        description: 'phase indicates if a volume is available, bound to a claim, or released by a claim.',
        priority: 0,
      },
      {
        name: 'Claim',
        type: 'string',
        description:
          'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.',
        priority: 0,
      },
      {
        name: 'StorageClass',
        type: 'string',
        description: 'storageClassName is the name of StorageClass to which this persistent volume belongs.',
        priority: 0,
      },
      VOLUME_ATTRIBUTES_CLASS,
      {
        name: 'Reason',
        type: 'string',
        description: 'reason is a brief CamelCase string that describes any failure.',
        priority: 0,
      },
      AGE,
      VOLUME_MODE,
    ],
    cells(pv, now) {
      const spec = obj(pv.spec);
      const ref = obj(spec.claimRef);
      const claim = str(ref.name) ? `${str(ref.namespace)}/${str(ref.name)}` : '';
      const status = pv.metadata?.deletionTimestamp ? 'Terminating' : str(obj(pv.status).phase);
      return [
        str(obj(spec.capacity).storage),
        accessModesText(spec.accessModes),
        str(spec.persistentVolumeReclaimPolicy),
        status,
        claim,
        className(pv),
        attributesClass(pv),
        str(obj(pv.status).reason),
        age(pv, now),
        str(spec.volumeMode),
      ];
    },
  },
};

export const persistentvolumeclaims: KindDef = {
  ...withStatus,
  group: '',
  version: 'v1',
  kind: 'PersistentVolumeClaim',
  resource: 'persistentvolumeclaims',
  singular: 'persistentvolumeclaim',
  namespaced: true,
  shortNames: ['pvc'],
  schema: schemas.persistentVolumeClaim,
  nameRule: 'subdomain',
  example: {
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: '',
    },
  },
  defaults: (pvc) => void defaultPersistentVolumeClaim(pvc),
  prepareForCreate(pvc) {
    pvc.status = { phase: 'Pending' };
  },
  table: {
    columns: [
      {
        name: 'Status',
        type: 'string',
        description: 'phase represents the current phase of PersistentVolumeClaim.',
        priority: 0,
      },
      {
        name: 'Volume',
        type: 'string',
        description: 'volumeName is the binding reference to the PersistentVolume backing this claim.',
        priority: 0,
      },
      {
        name: 'Capacity',
        type: 'string',
        description: 'capacity represents the actual resources of the underlying volume.',
        priority: 0,
      },
      {
        name: 'Access Modes',
        type: 'string',
        description: 'accessModes contains the actual access modes the volume backing the PVC has.',
        priority: 0,
      },
      {
        name: 'StorageClass',
        type: 'string',
        description: 'storageClassName is the name of the StorageClass required by the claim.',
        priority: 0,
      },
      VOLUME_ATTRIBUTES_CLASS,
      AGE,
      VOLUME_MODE,
    ],
    cells(pvc, now) {
      const spec = obj(pvc.spec);
      const status = obj(pvc.status);
      const phase = pvc.metadata?.deletionTimestamp ? 'Terminating' : str(status.phase);
      // As Kubernetes prints it: capacity and modes only once the claim names its volume.
      const named = str(spec.volumeName) !== '';
      return [
        phase,
        str(spec.volumeName),
        named ? str(obj(status.capacity).storage) : '',
        named ? accessModesText(status.accessModes) : '',
        className(pvc),
        attributesClass(pvc),
        age(pvc, now),
        str(spec.volumeMode),
      ];
    },
  },
};

export const storageclasses: KindDef = {
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'StorageClass',
  resource: 'storageclasses',
  singular: 'storageclass',
  namespaced: false,
  shortNames: ['sc'],
  schema: schemas.storageClass,
  nameRule: 'subdomain',
  subresources: [],
  example: { provisioner: 'example.com/example' },
  defaults: (sc) => void defaultStorageClass(sc),
  table: {
    columns: [
      {
        name: 'Provisioner',
        type: 'string',
        description: 'provisioner indicates the type of the provisioner.',
        priority: 0,
      },
      {
        name: 'ReclaimPolicy',
        type: 'string',
        description:
          'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.',
        priority: 0,
      },
      {
        name: 'VolumeBindingMode',
        type: 'string',
        description:
          'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.',
        priority: 0,
      },
      {
        name: 'AllowVolumeExpansion',
        type: 'string',
        description: 'allowVolumeExpansion shows whether the storage class allow volume expand.',
        priority: 0,
      },
      AGE,
    ],
    nameCell: (sc) => (isDefaultClass(sc) ? `${str(meta(sc).name)} (default)` : str(meta(sc).name)),
    cells(sc, now) {
      return [
        str(sc.provisioner),
        str(sc.reclaimPolicy) || 'Delete',
        str(sc.volumeBindingMode) || 'Immediate',
        String(sc.allowVolumeExpansion === true),
        age(sc, now),
      ];
    },
  },
};

export const csistoragecapacities: KindDef = {
  group: 'storage.k8s.io',
  version: 'v1',
  kind: 'CSIStorageCapacity',
  resource: 'csistoragecapacities',
  singular: 'csistoragecapacity',
  namespaced: true,
  schema: schemas.csiStorageCapacity,
  nameRule: 'subdomain',
  subresources: [],
  example: { storageClassName: 'local-path', capacity: '1Gi' },
  table: {
    columns: [
      {
        name: 'StorageClassName',
        type: 'string',
        description: 'The storage class the capacity is for.',
        priority: 0,
      },
      {
        name: 'Capacity',
        type: 'string',
        description: 'The capacity available for volumes of this class.',
        priority: 0,
      },
      AGE,
    ],
    cells(c, now) {
      return [str(c.storageClassName), str(c.capacity), age(c, now)];
    },
  },
};
