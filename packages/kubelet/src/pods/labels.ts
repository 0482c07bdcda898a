// The labels and annotations the kubelet puts on what it creates in the runtime.
// They are how a restarted kubelet finds (adopts) its pods' sandboxes and
// containers; the keys are Kubernetes' own, so crictl users recognize them.
import type { Pod } from 'kubernetes-types/core/v1.js';

export const POD_NAME_LABEL = 'io.kubernetes.pod.name';
export const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';
export const POD_UID_LABEL = 'io.kubernetes.pod.uid';
export const CONTAINER_NAME_LABEL = 'io.kubernetes.container.name';
/** Marks objects this kubelet manages, so orphan clean-up never touches anything else. */
export const MANAGED_LABEL = 'io.kubit.managed';
export const RESTART_COUNT_ANNOTATION = 'io.kubernetes.container.restartCount';
export const CONTAINER_HASH_ANNOTATION = 'io.kubernetes.container.hash';
export const INIT_CONTAINER_ANNOTATION = 'io.kubit.container.init';
export const GRACE_PERIOD_ANNOTATION = 'io.kubernetes.pod.terminationGracePeriod';

export interface PodRef {
  namespace: string;
  name: string;
  uid: string;
}

export function podRef(pod: Pod): PodRef {
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
  };
}

export function podKey(ref: PodRef): string {
  return `${ref.namespace}/${ref.name}`;
}

export function podLabels(ref: PodRef): Record<string, string> {
  return {
    [POD_NAME_LABEL]: ref.name,
    [POD_NAMESPACE_LABEL]: ref.namespace,
    [POD_UID_LABEL]: ref.uid,
    [MANAGED_LABEL]: 'true',
  };
}
