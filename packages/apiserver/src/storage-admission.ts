// The storage admission plugins, as Kubernetes' plugin/pkg/admission/storage:
// - DefaultStorageClass: a new claim without spec.storageClassName gets the default
//   class (of several marked default, the newest; "" stays: it asks for no class);
// - StorageObjectInUseProtection: new claims and volumes carry their protection
//   finalizer, so the pvc-protection and pv-protection controllers decide their removal;
// - PersistentVolumeClaimResize: a claim's storage request grows only when it is bound
//   and its class allows expansion (403 otherwise; shrinking is validation's 422).
import {
  compareQuantities,
  defaultClassOf,
  forbiddenWithMessage,
  PV_PROTECTION_FINALIZER,
  PVC_PROTECTION_FINALIZER,
  tryParseQuantity,
} from '@kubit/api';
import { type KindDef, obj, str } from './kinds/types.js';
import type { CreateAdmission, UpdateAdmission } from './rest.js';
import type { KObject, Store } from './storage.js';
import type { WatchCache } from './watchcache.js';

/** The pre-GA annotation a claim may name its class with instead of the field. */
const BETA_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

const isClaims = (def: KindDef) => def.group === '' && def.resource === 'persistentvolumeclaims';
const isVolumes = (def: KindDef) => def.group === '' && def.resource === 'persistentvolumes';

function addFinalizer(o: KObject, finalizer: string): void {
  const m = o.metadata ?? {};
  o.metadata = m;
  const fins = Array.isArray(m.finalizers) ? (m.finalizers as string[]) : [];
  if (!fins.includes(finalizer)) m.finalizers = [...fins, finalizer];
}

/** Mutating admission of a create: the default class and the protection finalizers. */
export function admitStorageCreate(def: KindDef, o: KObject, storageClasses: WatchCache): void {
  if (isVolumes(def)) {
    addFinalizer(o, PV_PROTECTION_FINALIZER);
    return;
  }
  if (!isClaims(def)) return;
  addFinalizer(o, PVC_PROTECTION_FINALIZER);
  const spec = obj(o.spec);
  const annotations = obj(o.metadata?.annotations);
  if (spec.storageClassName !== undefined || annotations[BETA_CLASS_ANNOTATION] !== undefined) return;
  const sc = defaultClassOf(storageClasses.objects.values());
  if (sc) o.spec = { ...spec, storageClassName: str(sc.metadata?.name) };
}

const requestOf = (o: KObject) => tryParseQuantity(str(obj(obj(obj(o.spec).resources).requests).storage));

/** Validating admission of an update: PersistentVolumeClaimResize. */
export async function admitStorageUpdate(
  def: KindDef,
  subresource: string,
  o: KObject,
  old: KObject,
  storageClasses: WatchCache,
  store: Store,
): Promise<void> {
  if (!isClaims(def) || subresource !== '') return;
  const next = requestOf(o);
  const prev = requestOf(old);
  if (!next || !prev || compareQuantities(next, prev) <= 0) return;
  const name = str(o.metadata?.name);
  const forbid = (why: string) =>
    forbiddenWithMessage({ group: '', resource: 'persistentvolumeclaims' }, name, why);
  if (obj(old.status).phase !== 'Bound') throw forbid('Only bound persistent volume claims can be expanded');
  const cls = str(obj(o.spec).storageClassName);
  const oldCls = str(obj(old.spec).storageClassName);
  let allowed = false;
  if (cls && cls === oldCls) {
    const key = `/registry/storageclasses/${cls}`;
    // The cache may lag a class created a moment ago: ask the store before saying no.
    const sc = storageClasses.objects.get(key) ?? (await store.get(key))?.obj;
    allowed = sc?.allowVolumeExpansion === true;
  }
  if (!allowed)
    throw forbid(
      'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
    );
}

/** The storage plugins as the REST layer's create and update admission, over the class cache. */
export function storageAdmission(
  storageClasses: WatchCache,
  store: Store,
): { create: CreateAdmission; update: UpdateAdmission } {
  return {
    create: async (def, o) => admitStorageCreate(def, o, storageClasses),
    update: (def, sub, next, current) => admitStorageUpdate(def, sub, next, current, storageClasses, store),
  };
}
