// What volume binding reads and writes, and the pure rules it decides by: which
// claims a pod uses, whether a PersistentVolume can serve a claim on a node, and
// whether a node has room to provision one. The daemon backs VolumeAccess with
// informers and the apiserver; unit tests back it with plain maps.
import type {
  CSIStorageCapacity,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
} from '@kubit/api';
import { compileLabelSelector } from './labels.js';
import type { NodeInfo } from './node-info.js';
import { nodeSelectorTermMatches } from './plugins/helpers.js';
import { parseValue } from './quantity.js';

export interface VolumeAccess {
  claim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  /** Every PersistentVolume (matching walks them; clusters have hundreds, not millions). */
  volumes(): readonly PersistentVolume[];
  storageClass(name: string): StorageClass | undefined;
  /** The CSIStorageCapacity objects published for a class. */
  capacities(storageClassName: string): readonly CSIStorageCapacity[];
  /** Writes the selected-node annotation on a claim, asking its node's provisioner for a volume. */
  selectNode(claim: PersistentVolumeClaim, nodeName: string): Promise<void>;
  /** Points an available volume's claimRef at the claim; the persistent-volume controller finishes the bind. */
  preBindVolume(volume: PersistentVolume, claim: PersistentVolumeClaim): Promise<void>;
  /**
   * Resolves when every claim is Bound (null), or with why it never will be: a
   * provisioning that gave up (the selected-node annotation was removed), a deleted
   * claim, or the timeout.
   */
  waitForBound(claims: readonly PersistentVolumeClaim[], timeoutMs: number): Promise<string | null>;
}

/** "kubernetes.io/no-provisioner": a class whose volumes an administrator makes by hand. */
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

export interface PodClaim {
  name: string;
  /** A generic ephemeral volume's claim: made by the ephemeral-volume controller, owned by the pod. */
  ephemeral: boolean;
}

/** The claims a pod's volumes name, in volume order (an ephemeral volume's claim is `<pod>-<volume>`). */
export function podClaims(pod: Pod): PodClaim[] {
  const out: PodClaim[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim) out.push({ name: v.persistentVolumeClaim.claimName, ephemeral: false });
    else if (v.ephemeral) out.push({ name: `${pod.metadata?.name ?? ''}-${v.name}`, ephemeral: true });
  }
  return out;
}

/** A claim is bound once it names its volume and the controller has finished (or it is Bound). */
export function isClaimBound(claim: PersistentVolumeClaim): boolean {
  if (!claim.spec?.volumeName) return false;
  return (
    claim.status?.phase === 'Bound' ||
    claim.metadata?.annotations?.['pv.kubernetes.io/bind-completed'] !== undefined
  );
}

export function requestedBytes(claim: PersistentVolumeClaim): number {
  const q = claim.spec?.resources?.requests?.storage;
  return q === undefined ? 0 : parseValue(q);
}

function capacityBytes(pv: PersistentVolume): number {
  const q = pv.spec?.capacity?.storage;
  return q === undefined ? 0 : parseValue(q);
}

/** Whether the volume's required node affinity admits the node (no affinity: every node). */
export function volumeFitsNode(pv: PersistentVolume, node: NodeInfo): boolean {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (!terms) return true;
  for (const t of terms) if (nodeSelectorTermMatches(t, node)) return true;
  return false;
}

/** Whether the volume could be bound to the claim at all, wherever the pod goes. */
export function volumeMatchesClaim(pv: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  if (pv.metadata?.deletionTimestamp) return false;
  const ref = pv.spec?.claimRef;
  if (ref) {
    // Pre-bound (by a user or an earlier cycle): only to this very claim.
    if (ref.name !== claim.metadata?.name || (ref.namespace ?? '') !== (claim.metadata?.namespace ?? ''))
      return false;
    if (ref.uid && ref.uid !== claim.metadata?.uid) return false;
  } else if ((pv.status?.phase ?? 'Available') !== 'Available') return false;
  if ((pv.spec?.storageClassName ?? '') !== (claim.spec?.storageClassName ?? '')) return false;
  if ((pv.spec?.volumeMode ?? 'Filesystem') !== (claim.spec?.volumeMode ?? 'Filesystem')) return false;
  const modes = pv.spec?.accessModes ?? [];
  for (const m of claim.spec?.accessModes ?? []) if (!modes.includes(m)) return false;
  if (capacityBytes(pv) < requestedBytes(claim)) return false;
  const sel = claim.spec?.selector;
  if (sel && !compileLabelSelector(sel).matches(pv.metadata?.labels ?? {})) return false;
  return true;
}

/**
 * The smallest volume that serves the claim on this node and is not already taken
 * by another claim of the same pod (`taken`), as Kubernetes' FindMatchingVolume picks;
 * a volume pre-bound to the claim wins outright.
 */
export function findMatchingVolume(
  claim: PersistentVolumeClaim,
  volumes: readonly PersistentVolume[],
  node: NodeInfo,
  taken: ReadonlySet<string>,
): PersistentVolume | undefined {
  let best: PersistentVolume | undefined;
  for (const pv of volumes) {
    const name = pv.metadata?.name ?? '';
    if (taken.has(name) || !volumeMatchesClaim(pv, claim) || !volumeFitsNode(pv, node)) continue;
    if (pv.spec?.claimRef) return pv;
    if (!best || capacityBytes(pv) < capacityBytes(best)) best = pv;
  }
  return best;
}

/** Whether the class's allowedTopologies admit the node (none: every node). */
export function classAllowsNode(sc: StorageClass, node: NodeInfo): boolean {
  const terms = sc.allowedTopologies;
  if (!terms || terms.length === 0) return true;
  return terms.some((t) =>
    (t.matchLabelExpressions ?? []).every((e) => e.values.includes(node.labels[e.key] ?? '\u0000')),
  );
}

/**
 * Whether the node has room for a new volume of the class: when the provisioner
 * publishes CSIStorageCapacity for the class, one whose topology covers the node must
 * hold the request (maximumVolumeSize, else capacity); when it publishes none, room is
 * assumed (as Kubernetes does for drivers without storageCapacity).
 */
export function nodeHasCapacity(
  capacities: readonly CSIStorageCapacity[],
  node: NodeInfo,
  bytes: number,
): boolean {
  if (capacities.length === 0) return true;
  for (const c of capacities) {
    if (!c.nodeTopology || !compileLabelSelector(c.nodeTopology).matches(node.labels)) continue;
    const limit = c.maximumVolumeSize ?? c.capacity;
    if (limit !== undefined && parseValue(limit) >= bytes) return true;
  }
  return false;
}
