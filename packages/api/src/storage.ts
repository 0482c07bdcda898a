// The names persistent volumes are made of, as Kubernetes spells them, and the two
// storage classes every Kubit cluster has. The persistent-volume controller, the
// scheduler's volume binding, the kubelet (which mounts volumes and provisions the
// node-local ones) and kubectl-facing tables all speak through these.
//
// How a node-local volume comes to be (Kubernetes' external-provisioner protocol):
// 1. a claim of class local-path or kubit-disk (WaitForFirstConsumer) waits until a pod
//    using it is scheduled; the scheduler writes SELECTED_NODE_ANNOTATION on the claim;
// 2. the persistent-volume controller writes STORAGE_PROVISIONER_ANNOTATION (and its beta
//    twin) on every unbound claim whose class names a provisioner;
// 3. the kubelet of the selected node provisions (a directory, or a sparse file formatted
//    ext4) and creates the PersistentVolume `pvc-<claim uid>`, pre-bound to the claim
//    (spec.claimRef), with PROVISIONED_BY_ANNOTATION, PROVISIONER_FINALIZER and a
//    required node affinity on HOSTNAME_LABEL; on failure it writes a ProvisioningFailed
//    Event on the claim (and drops SELECTED_NODE_ANNOTATION when the node cannot hold it,
//    so the scheduler may choose again);
// 4. the persistent-volume controller binds the pair; the kubelet mounts it for the pod;
// 5. when the claim is deleted the volume turns Released; with reclaimPolicy Delete the
//    kubelet of the volume's node removes the data, then the PersistentVolume.

export const DEFAULT_STORAGE_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
export const BETA_DEFAULT_STORAGE_CLASS_ANNOTATION = 'storageclass.beta.kubernetes.io/is-default-class';

/** Written by the scheduler on a WaitForFirstConsumer claim: the node its pod landed on. */
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';
/** Written by the persistent-volume controller: which provisioner should make the claim's volume. */
export const STORAGE_PROVISIONER_ANNOTATION = 'volume.kubernetes.io/storage-provisioner';
export const BETA_STORAGE_PROVISIONER_ANNOTATION = 'volume.beta.kubernetes.io/storage-provisioner';
/** On a provisioned PersistentVolume: the provisioner that made it (and must delete it). */
export const PROVISIONED_BY_ANNOTATION = 'pv.kubernetes.io/provisioned-by';
/** On a claim, once the persistent-volume controller has finished binding it. */
export const BIND_COMPLETED_ANNOTATION = 'pv.kubernetes.io/bind-completed';
/** On a claim or volume the controller (not the user) bound. */
export const BOUND_BY_CONTROLLER_ANNOTATION = 'pv.kubernetes.io/bound-by-controller';

/** A claim in use by a pod is not removed until no pod uses it. */
export const PVC_PROTECTION_FINALIZER = 'kubernetes.io/pvc-protection';
/** A volume bound to a claim is not removed until it is unbound. */
export const PV_PROTECTION_FINALIZER = 'kubernetes.io/pv-protection';
/** A provisioned volume is not removed until its provisioner has deleted the data. */
export const PROVISIONER_FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';

/** The well-known node label volume node affinity is written on. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** The default class: a directory on the pod's node (as rancher's local-path-provisioner). */
export const LOCAL_PATH_STORAGE_CLASS = 'local-path';
export const LOCAL_PATH_PROVISIONER = 'kubit.io/local-path';
/** A real virtual disk per volume: a sparse file on the node, a loop device, ext4 (or Block). */
export const DISK_STORAGE_CLASS = 'kubit-disk';
export const DISK_PROVISIONER = 'kubit.io/disk';
/**
 * A kubit-disk PersistentVolume's source is `spec.csi` with this driver; `volumeHandle` is
 * the volume's name and `volumeAttributes[DISK_BACKING_FILE_ATTRIBUTE]` the file on the node.
 * (A local-path volume's source is `spec.local.path`.)
 */
export const DISK_CSI_DRIVER = 'disk.kubit.io';
export const DISK_BACKING_FILE_ATTRIBUTE = 'kubit.io/backing-file';

/** The provisioners the kubelet runs for its own node. */
export const NODE_LOCAL_PROVISIONERS: readonly string[] = Object.freeze([
  LOCAL_PATH_PROVISIONER,
  DISK_PROVISIONER,
]);

/** The name Kubernetes gives a provisioned volume: "pvc-" and the claim's uid. */
export function provisionedVolumeName(claimUid: string): string {
  return `pvc-${claimUid}`;
}

interface ClassLike {
  metadata?: { name?: string; creationTimestamp?: string; annotations?: Record<string, string> };
}

export function isDefaultStorageClass(sc: ClassLike): boolean {
  const a = sc.metadata?.annotations ?? {};
  return (
    a[DEFAULT_STORAGE_CLASS_ANNOTATION] === 'true' || a[BETA_DEFAULT_STORAGE_CLASS_ANNOTATION] === 'true'
  );
}

/**
 * The default class: of several marked default, the newest (then the first by name), as
 * Kubernetes' GetDefaultClass. The admission of new claims and the binder's retroactive
 * assignment (claims made before any class was default) both pick it this way.
 */
export function defaultClassOf<T extends ClassLike>(classes: Iterable<T>): T | undefined {
  let best: T | undefined;
  for (const sc of classes) {
    if (!isDefaultStorageClass(sc)) continue;
    if (!best) {
      best = sc;
      continue;
    }
    const a = Date.parse(sc.metadata?.creationTimestamp ?? '') || 0;
    const b = Date.parse(best.metadata?.creationTimestamp ?? '') || 0;
    if (a > b || (a === b && (sc.metadata?.name ?? '') < (best.metadata?.name ?? ''))) best = sc;
  }
  return best;
}
