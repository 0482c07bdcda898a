import type { ObjectMeta } from '../src/types.js';

export type { KubeObject, OwnerReference, Pod, ReplicaSet } from '../src/types.js';

/** Any simple namespaced object (a ConfigMap) for owner/dependent graphs. */
export interface ConfigMapLike {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  data?: { [k: string]: string };
}
