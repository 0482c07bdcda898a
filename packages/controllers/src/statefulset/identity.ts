// A StatefulSet pod's stable identity, as Kubernetes' stateful_set_utils.go
// gives it: the name `<set>-<ordinal>`, the pod-name and pod-index labels, the
// revision label, hostname and subdomain, and a volume per claim template
// naming the claim `<template>-<pod>` (which outlives the pod, so a recreated
// pod gets its data back).
import { ownerRefFor } from '../objects.js';
import type { Pod, StatefulSet } from '../types.js';

export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';
export const REVISION_LABEL = 'controller-revision-hash';

const ORDINAL_NAME = /^(.*)-([0-9]+)$/;

/** The set a pod's name says it belongs to, and its ordinal (-1 when the name has none). */
export function parentAndOrdinal(pod: Pod): { parent: string; ordinal: number } {
  const m = ORDINAL_NAME.exec(pod.metadata?.name ?? '');
  if (!m) return { parent: '', ordinal: -1 };
  const ordinal = Number(m[2]);
  return { parent: m[1], ordinal: Number.isSafeInteger(ordinal) && ordinal <= 2 ** 31 - 1 ? ordinal : -1 };
}

export const ordinalOf = (pod: Pod): number => parentAndOrdinal(pod).ordinal;

/** Whether the pod's name makes it one of the set's pods (only such orphans are adopted). */
export function isMemberOf(set: StatefulSet, pod: Pod): boolean {
  return parentAndOrdinal(pod).parent === set.metadata?.name;
}

export const podName = (set: StatefulSet, ordinal: number): string => `${set.metadata?.name}-${ordinal}`;

export const startOrdinal = (set: StatefulSet): number => set.spec?.ordinals?.start ?? 0;
export const replicasOf = (set: StatefulSet): number => set.spec?.replicas ?? 1;

/** Whether the ordinal is one the set wants: [start, start + replicas). */
export function inOrdinalRange(set: StatefulSet, ordinal: number): boolean {
  const start = startOrdinal(set);
  return ordinal >= start && ordinal < start + replicasOf(set);
}

export const claimName = (set: StatefulSet, template: string, ordinal: number): string =>
  `${template}-${podName(set, ordinal)}`;

export const revisionOfPod = (pod: Pod): string | undefined => pod.metadata?.labels?.[REVISION_LABEL];

/** Name, namespace and the identity labels (which a pod that lost them gets back). */
function setIdentity(set: StatefulSet, pod: Pod, ordinal: number): void {
  const meta = pod.metadata!;
  meta.name = podName(set, ordinal);
  meta.namespace = set.metadata?.namespace;
  meta.labels = { ...meta.labels, [POD_NAME_LABEL]: meta.name, [POD_INDEX_LABEL]: String(ordinal) };
}

/** The pod's volumes with one per claim template (replacing a pod volume of the same name). */
function withClaimVolumes(set: StatefulSet, pod: Pod, ordinal: number): void {
  const templates = set.spec?.volumeClaimTemplates ?? [];
  if (templates.length === 0) return;
  const names = new Set(templates.map((t) => t.metadata?.name ?? ''));
  const spec = pod.spec!;
  spec.volumes = [
    ...templates.map((t) => ({
      name: t.metadata?.name ?? '',
      persistentVolumeClaim: { claimName: claimName(set, t.metadata?.name ?? '', ordinal) },
    })),
    ...(spec.volumes ?? []).filter((v) => !names.has(v.name)),
  ];
}

/**
 * The pod for `ordinal` from `template` (the set's template at one revision,
 * named `revision`): owned by the set, with its identity and claims.
 */
export function newStatefulPod(
  set: StatefulSet,
  template: StatefulSet,
  ordinal: number,
  revision: string,
): Pod {
  const t = template.spec?.template;
  const meta = t?.metadata ?? {};
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      labels: { ...meta.labels, [REVISION_LABEL]: revision },
      annotations: meta.annotations ? { ...meta.annotations } : undefined,
      finalizers: meta.finalizers ? [...meta.finalizers] : undefined,
      ownerReferences: [ownerRefFor(set, 'StatefulSet')],
    },
    spec: structuredClone(t?.spec ?? { containers: [] }),
  };
  setIdentity(set, pod, ordinal);
  // Hostname and subdomain are immutable: set once, at creation.
  pod.spec!.hostname = pod.metadata!.name;
  if (set.spec?.serviceName) pod.spec!.subdomain = set.spec.serviceName;
  withClaimVolumes(set, pod, ordinal);
  return pod;
}

/** Whether the pod is in the set's namespace with its name and identity labels. */
export function identityMatches(set: StatefulSet, pod: Pod): boolean {
  const { parent, ordinal } = parentAndOrdinal(pod);
  const labels = pod.metadata?.labels ?? {};
  return (
    ordinal >= 0 &&
    parent === set.metadata?.name &&
    pod.metadata?.namespace === set.metadata?.namespace &&
    labels[POD_NAME_LABEL] === pod.metadata?.name &&
    labels[POD_INDEX_LABEL] === String(ordinal)
  );
}

/** Whether the pod has a volume for each claim template, naming its claim. */
export function storageMatches(set: StatefulSet, pod: Pod): boolean {
  const ordinal = ordinalOf(pod);
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  return (
    ordinal >= 0 &&
    (set.spec?.volumeClaimTemplates ?? []).every(
      (t) =>
        volumes.get(t.metadata?.name ?? '')?.persistentVolumeClaim?.claimName ===
        claimName(set, t.metadata?.name ?? '', ordinal),
    )
  );
}

/** The pod with its identity labels restored (volumes cannot change on a live pod). */
export function withIdentity(set: StatefulSet, pod: Pod): Pod {
  const next = structuredClone(pod);
  setIdentity(set, next, ordinalOf(pod));
  return next;
}
