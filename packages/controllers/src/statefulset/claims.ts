// The claims of a StatefulSet's pods (Kubernetes' getPersistentVolumeClaims and
// the retention policy of KEP-1847): claim `<template>-<pod>` from each
// volumeClaimTemplate, labelled with the set's selector labels. Who owns a
// claim says when the garbage collector deletes it:
//   whenDeleted: Delete  → the set owns it (gone with the set);
//   whenScaled:  Delete  → the pod owns it once its ordinal is past the end
//                          (gone with the pod the scale-down deletes).
// Retain on both leaves it unowned; it outlives everything and a recreated
// pod of that ordinal binds it again.
import { ownerRefFor } from '../objects.js';
import type { OwnerReference, PersistentVolumeClaim, Pod, StatefulSet } from '../types.js';
import { claimName, inOrdinalRange, ordinalOf } from './identity.js';

/** The claims the pod of `ordinal` needs, as they are created. */
export function claimsFor(set: StatefulSet, ordinal: number): PersistentVolumeClaim[] {
  return (set.spec?.volumeClaimTemplates ?? []).map((t) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: claimName(set, t.metadata?.name ?? '', ordinal),
      namespace: set.metadata?.namespace,
      labels: { ...t.metadata?.labels, ...set.spec?.selector?.matchLabels },
      annotations: t.metadata?.annotations ? { ...t.metadata.annotations } : undefined,
    },
    spec: structuredClone(t.spec ?? {}),
  }));
}

type Owner = { kind: string; apiVersion: string; name?: string; uid?: string };

/** The owners the policy gives a claim of this pod: set, pod, or neither. */
export function wantedClaimOwners(set: StatefulSet, pod: Pod): Owner[] {
  const policy = set.spec?.persistentVolumeClaimRetentionPolicy;
  const whenDeleted = policy?.whenDeleted ?? 'Retain';
  const whenScaled = policy?.whenScaled ?? 'Retain';
  const scaledDown = !inOrdinalRange(set, ordinalOf(pod));
  const setOwner = { kind: 'StatefulSet', apiVersion: 'apps/v1', ...set.metadata };
  const podOwner = { kind: 'Pod', apiVersion: 'v1', ...pod.metadata };
  if (whenScaled === 'Delete' && scaledDown) return [podOwner];
  if (whenDeleted === 'Delete') return [setOwner];
  return [];
}

const refersTo = (r: OwnerReference, o: Owner) =>
  r.kind === o.kind && r.apiVersion === o.apiVersion && r.name === o.name;

/**
 * The claim's owner references as the policy wants them, or undefined when
 * they already are. References to the set and pod are replaced; others kept.
 * A claim some other controller owns is left to it.
 */
export function claimOwnerRefs(
  claim: PersistentVolumeClaim,
  set: StatefulSet,
  pod: Pod,
): OwnerReference[] | undefined {
  const refs = claim.metadata?.ownerReferences ?? [];
  const setOwner: Owner = { kind: 'StatefulSet', apiVersion: 'apps/v1', ...set.metadata };
  const podOwner: Owner = { kind: 'Pod', apiVersion: 'v1', ...pod.metadata };
  const ours = (r: OwnerReference) => refersTo(r, setOwner) || refersTo(r, podOwner);
  // A reference of ours with another uid is a previous set's or pod's: hands off.
  if (refs.some((r) => ours(r) && r.uid !== (refersTo(r, setOwner) ? set : pod).metadata?.uid))
    return undefined;
  const foreignController = refs.some((r) => r.controller === true && !ours(r));
  const kept = refs.filter((r) => !ours(r));
  const wanted = foreignController
    ? []
    : wantedClaimOwners(set, pod).map((o) =>
        ownerRefFor({ metadata: { name: o.name, uid: o.uid } }, o.kind, o.apiVersion),
      );
  const next = [...kept, ...wanted];
  const key = (rs: OwnerReference[]) =>
    JSON.stringify(rs.map((r) => [r.apiVersion, r.kind, r.name, r.uid, r.controller === true]).sort());
  return key(next) === key(refs) ? undefined : next;
}
