// A pod's persistentVolumeClaim (and ephemeral) volumes: the claim must be Bound; its
// PersistentVolume says what to mount: a directory on the node (spec.local, spec.hostPath,
// bind-mounted) or a kubit-disk (spec.csi of disk.kubit.io: its backing file attached as
// a loop device, ext4 mounted). Every failure is a MountError, so the pod stays
// ContainerCreating with a FailedMount event and the worker tries again.
import { existsSync, statSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { BIND_COMPLETED_ANNOTATION, DISK_BACKING_FILE_ATTRIBUTE, DISK_CSI_DRIVER } from '@kubit/api';
import { loopDevicesOf } from '@kubit/cri/host-mounts';
import type { PersistentVolume, Pod, Volume } from 'kubernetes-types/core/v1.js';
import type { ObjectSource } from '../pods/sinks.js';
import { attach, detach, prepareDisk } from './disk.js';
import { bindMount, mountDevice } from './mounter.js';

export class PersistentMountError extends Error {}

/** The claim a volume names: its own, or for an ephemeral volume the pod's generated one. */
export function claimNameOf(pod: Pod, v: Volume): string | undefined {
  if (v.persistentVolumeClaim) return v.persistentVolumeClaim.claimName;
  if (v.ephemeral) return `${pod.metadata?.name ?? ''}-${v.name}`;
  return undefined;
}

async function volumeOfClaim(
  objects: ObjectSource,
  ns: string,
  claimName: string,
): Promise<PersistentVolume> {
  const claim = await objects.persistentVolumeClaim(ns, claimName);
  if (!claim) throw new PersistentMountError(`persistentvolumeclaim "${claimName}" not found`);
  // Bound, or as good as: the binder has named the volume and marked the bind complete (its
  // status write follows), which is when the scheduler lets the pod go.
  const bound =
    claim.status?.phase === 'Bound' || claim.metadata?.annotations?.[BIND_COMPLETED_ANNOTATION] !== undefined;
  if (!bound || !claim.spec?.volumeName)
    throw new PersistentMountError(`error processing PVC ${ns}/${claimName}: PVC is not bound`);
  const pv = await objects.persistentVolume(claim.spec.volumeName);
  if (!pv) throw new PersistentMountError(`persistentvolume "${claim.spec.volumeName}" not found`);
  return pv;
}

/**
 * Kubernetes' SetVolumeOwnership: every file gets the pod's fsGroup as its group and
 * group read-write (directories also setgid, so new files keep the group).
 * OnRootMismatch skips the walk when the root already has the group.
 */
async function setOwnership(dir: string, fsGroup: number, policy: string | undefined): Promise<void> {
  const root = statSync(dir);
  if (policy === 'OnRootMismatch' && root.gid === fsGroup && (root.mode & 0o2070) === 0o2070) return;
  const walk = async (path: string): Promise<void> => {
    const st = await lstat(path);
    if (st.isSymbolicLink()) return;
    await chown(path, st.uid, fsGroup);
    const extra = st.isDirectory() ? 0o2070 : 0o060;
    await chmod(path, (st.mode & 0o7777) | extra);
    if (st.isDirectory()) for (const e of await readdir(path)) await walk(join(path, e));
  };
  await walk(dir);
}

/**
 * Mounts the claim's volume under the pod's volumes dir and returns the host path the
 * containers' mounts point at.
 */
export async function setUpClaimVolume(
  pod: Pod,
  v: Volume,
  claimName: string,
  objects: ObjectSource,
  podVolumesDir: string,
): Promise<string> {
  const ns = pod.metadata?.namespace ?? 'default';
  const pv = await volumeOfClaim(objects, ns, claimName);
  const readOnly = !!v.persistentVolumeClaim?.readOnly;
  if (pv.spec?.volumeMode === 'Block') return setUpBlockDevice(pv, v, podVolumesDir);
  let target: string;
  const source = pv.spec?.local?.path ?? pv.spec?.hostPath?.path;
  if (source) {
    if (!existsSync(source)) throw new PersistentMountError(`path "${source}" does not exist`);
    target = join(podVolumesDir, 'kubernetes.io~local-volume', v.name);
    await mkdir(target, { recursive: true });
    await bindMount(source, target, readOnly);
  } else if (pv.spec?.csi?.driver === DISK_CSI_DRIVER) {
    const file = pv.spec.csi.volumeAttributes?.[DISK_BACKING_FILE_ATTRIBUTE] ?? '';
    if (!file || !existsSync(file))
      throw new PersistentMountError(
        `backing file "${file}" of volume "${pv.metadata?.name}" does not exist`,
      );
    target = join(podVolumesDir, 'kubernetes.io~csi', v.name, 'mount');
    await mkdir(target, { recursive: true });
    const attachedBefore = loopDevicesOf(file).length > 0;
    try {
      await mountDevice(
        await prepareDisk(file),
        target,
        pv.spec.csi.fsType || 'ext4',
        readOnly || !!pv.spec.csi.readOnly,
      );
    } catch (err) {
      // Leave nothing behind: a device this attempt attached is detached again.
      if (!attachedBefore) await detach(file).catch(() => {});
      throw new PersistentMountError((err as Error).message);
    }
  } else {
    throw new PersistentMountError(
      `persistentvolume "${pv.metadata?.name}" has a source Kubit cannot mount (local, hostPath, csi ${DISK_CSI_DRIVER})`,
    );
  }
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  if (fsGroup !== undefined && !readOnly)
    await setOwnership(target, fsGroup, pod.spec?.securityContext?.fsGroupChangePolicy);
  return target;
}

/**
 * A volumeMode Block volume: the raw device (a kubit-disk's loop device, never
 * formatted; or a local volume's device node), bind-mounted onto a file in the pod's
 * volumeDevices directory. Containers get that file as a device (CRI devices). The bind
 * mount is the record teardown finds in the mount table, even after a restart, to
 * release the device again.
 */
async function setUpBlockDevice(pv: PersistentVolume, v: Volume, podVolumesDir: string): Promise<string> {
  let device: string;
  let kind: string;
  let attachedHere = false;
  if (pv.spec?.csi?.driver === DISK_CSI_DRIVER) {
    const file = pv.spec.csi.volumeAttributes?.[DISK_BACKING_FILE_ATTRIBUTE] ?? '';
    if (!file || !existsSync(file))
      throw new PersistentMountError(
        `backing file "${file}" of volume "${pv.metadata?.name}" does not exist`,
      );
    attachedHere = loopDevicesOf(file).length === 0;
    device = await attach(file);
    kind = 'kubernetes.io~csi';
  } else if (pv.spec?.local?.path) {
    device = pv.spec.local.path;
    if (!existsSync(device) || !statSync(device).isBlockDevice())
      throw new PersistentMountError(`path "${device}" is not a block device`);
    kind = 'kubernetes.io~local-volume';
  } else {
    throw new PersistentMountError(
      `persistentvolume "${pv.metadata?.name}" cannot be a block device here (local device, csi ${DISK_CSI_DRIVER})`,
    );
  }
  // <pod>/volumeDevices/<plugin>/<volume>, beside <pod>/volumes.
  const target = join(dirname(podVolumesDir), 'volumeDevices', kind, v.name);
  try {
    await mkdir(dirname(target), { recursive: true });
    if (!existsSync(target)) await writeFile(target, '');
    await bindMount(device, target);
  } catch (err) {
    if (attachedHere && pv.spec?.csi)
      await detach(pv.spec.csi.volumeAttributes?.[DISK_BACKING_FILE_ATTRIBUTE] ?? '').catch(() => {});
    throw new PersistentMountError((err as Error).message);
  }
  return target;
}
