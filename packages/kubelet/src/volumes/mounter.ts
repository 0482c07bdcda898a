// mount(8) and umount(8) for the kubelet's volumes: bind mounts of directories, a
// block device's filesystem, and unmounting that may be asked twice (after a crash the
// kubelet does not know which half of a tear-down already happened).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { isMountPoint, mountsUnder } from '@kubit/cri/host-mounts';

const run = promisify(execFile);

async function mount(args: string[]): Promise<void> {
  try {
    await run('mount', args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error((e.stderr ?? '').trim() || e.message);
  }
}

/** Bind-mounts `source` on `target` (read-only needs a second, remounting step). */
export async function bindMount(source: string, target: string, readOnly = false): Promise<void> {
  if (!isMountPoint(target)) await mount(['--bind', source, target]);
  if (readOnly) await mount(['-o', 'remount,bind,ro', target]);
}

/** Mounts the filesystem on `device` at `target`, unless something is mounted there already. */
export async function mountDevice(
  device: string,
  target: string,
  fsType: string,
  readOnly = false,
): Promise<void> {
  if (isMountPoint(target)) return;
  await mount(['-t', fsType, '-o', readOnly ? 'ro' : 'rw', device, target]);
}

/** Unmounts `target` if it is mounted; a busy mount is detached lazily. Idempotent. */
export async function unmount(target: string): Promise<void> {
  while (isMountPoint(target)) {
    try {
      await run('umount', [target]);
    } catch {
      await run('umount', ['-l', target]).catch((err: { stderr?: string; message: string }) => {
        if (isMountPoint(target))
          throw new Error(`umount ${target}: ${(err.stderr ?? '').trim() || err.message}`);
      });
    }
  }
}

/** Unmounts everything at or below `dir`, deepest first. */
export async function unmountAll(dir: string): Promise<void> {
  for (const m of mountsUnder(dir)) await unmount(m.mountPoint);
}
