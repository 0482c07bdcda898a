// Small ObjectMeta helpers the controllers, the garbage collector and informers share:
// controller owner references and the namespace/name key of an object.

import type { OwnerReference } from 'kubernetes-types/meta/v1.js';
import type { KubeObject } from './types.js';

/** The owner reference marked controller: true, if any. */
export function getControllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/** Whether the object's controller is the owner with this uid. */
export function isControlledBy(obj: KubeObject, ownerUid: string): boolean {
  return getControllerOf(obj)?.uid === ownerUid;
}

/** A controller reference to `owner` (which must have apiVersion, kind, name and uid). */
export function newControllerRef(owner: KubeObject): OwnerReference {
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!owner.apiVersion || !owner.kind || !name || !uid) {
    throw new Error(
      'a controller reference needs the owner apiVersion, kind, metadata.name and metadata.uid',
    );
  }
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** "namespace/name", or "name" for cluster-scoped objects (client-go's cache key). */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** Splits an objectKey back into namespace ('' if none) and name. */
export function splitObjectKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
