// What the kubelet provisions for a claim, decided without I/O: the PersistentVolume
// `pvc-<claim uid>` as packages/api/src/storage.ts describes it, and whether a claim or a
// volume is this node's to act on.
import {
  DISK_BACKING_FILE_ATTRIBUTE,
  DISK_CSI_DRIVER,
  DISK_PROVISIONER,
  HOSTNAME_LABEL,
  NODE_LOCAL_PROVISIONERS,
  PROVISIONED_BY_ANNOTATION,
  PROVISIONER_FINALIZER,
  provisionedVolumeName,
  SELECTED_NODE_ANNOTATION,
  STORAGE_PROVISIONER_ANNOTATION,
  toNumber,
} from '@kubit/api';
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { StorageClass } from 'kubernetes-types/storage/v1.js';
import type { LocalStorage } from './local-path.js';

const MiB = 1024 * 1024;

/** The claim's request in bytes, rounded up to whole MiB (what a disk is made of). */
export function requestedBytes(claim: PersistentVolumeClaim): number {
  const req = claim.spec?.resources?.requests?.storage;
  const bytes = req === undefined ? 0 : toNumber(req);
  return Math.max(MiB, Math.ceil(bytes / MiB) * MiB);
}

/** The provisioner this node should run for the claim, or undefined when it is not ours. */
export function provisionerFor(claim: PersistentVolumeClaim, nodeName: string): string | undefined {
  const a = claim.metadata?.annotations ?? {};
  const p = a[STORAGE_PROVISIONER_ANNOTATION];
  if (!p || !NODE_LOCAL_PROVISIONERS.includes(p)) return undefined;
  if (a[SELECTED_NODE_ANNOTATION] !== nodeName) return undefined;
  if (claim.spec?.volumeName || claim.metadata?.deletionTimestamp) return undefined;
  return p;
}

/** The node a provisioned volume's required node affinity names. */
export function volumeNode(pv: PersistentVolume): string | undefined {
  for (const term of pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? []) {
    for (const e of term.matchExpressions ?? []) {
      if (e.key === HOSTNAME_LABEL && e.operator === 'In') return e.values?.[0];
    }
  }
  return undefined;
}

export function volumeFor(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  provisioner: string,
  nodeName: string,
  storage: LocalStorage,
): PersistentVolume {
  const name = provisionedVolumeName(claim.metadata?.uid ?? '');
  const bytes = requestedBytes(claim);
  const source: PersistentVolume['spec'] =
    provisioner === DISK_PROVISIONER
      ? {
          csi: {
            driver: DISK_CSI_DRIVER,
            volumeHandle: name,
            ...(claim.spec?.volumeMode === 'Block' ? {} : { fsType: 'ext4' }),
            volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: storage.diskFile(name) },
          },
        }
      : { local: { path: storage.pathDir(name) } };
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      annotations: { [PROVISIONED_BY_ANNOTATION]: provisioner },
      finalizers: [PROVISIONER_FINALIZER],
    },
    spec: {
      ...source,
      capacity: { storage: `${bytes / MiB}Mi` },
      accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
      volumeMode: claim.spec?.volumeMode ?? 'Filesystem',
      storageClassName: storageClass.metadata?.name ?? '',
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
      ...(storageClass.mountOptions ? { mountOptions: storageClass.mountOptions } : {}),
      claimRef: {
        kind: 'PersistentVolumeClaim',
        apiVersion: 'v1',
        namespace: claim.metadata?.namespace ?? 'default',
        name: claim.metadata?.name ?? '',
        uid: claim.metadata?.uid ?? '',
        resourceVersion: claim.metadata?.resourceVersion,
      },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [nodeName] }] },
          ],
        },
      },
    },
  };
}

/** A volume this node provisioned that is Released with reclaim Delete: its data is to go. */
export function toDelete(pv: PersistentVolume, nodeName: string): boolean {
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  return (
    !!by &&
    NODE_LOCAL_PROVISIONERS.includes(by) &&
    volumeNode(pv) === nodeName &&
    pv.status?.phase === 'Released' &&
    pv.spec?.persistentVolumeReclaimPolicy === 'Delete'
  );
}

/** The claim condition the expander sets on a kubit-disk claim that grew. */
export const FILESYSTEM_RESIZE_PENDING = 'FileSystemResizePending';

/**
 * The disk to grow on this node, and to what size: a bound kubit-disk claim whose
 * volume is here, waiting for FileSystemResizePending, with an allocated size.
 */
export function diskToGrow(
  claim: PersistentVolumeClaim,
  pv: PersistentVolume,
  nodeName: string,
): { file: string; bytes: number } | undefined {
  if (!claim.status?.conditions?.some((c) => c.type === FILESYSTEM_RESIZE_PENDING && c.status === 'True'))
    return undefined;
  const allocated = claim.status.allocatedResources?.storage;
  const file =
    pv.spec?.csi?.driver === DISK_CSI_DRIVER
      ? pv.spec.csi.volumeAttributes?.[DISK_BACKING_FILE_ATTRIBUTE]
      : undefined;
  if (!allocated || !file || volumeNode(pv) !== nodeName) return undefined;
  return { file, bytes: toNumber(allocated) };
}
