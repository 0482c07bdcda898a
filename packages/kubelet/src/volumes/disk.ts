// A kubit-disk volume's disk: a sparse file on the node, attached as a loop device and
// formatted ext4. Nothing is remembered in memory: the loop device of a file is found
// again from /sys/block/loop*/loop/backing_file (@kubit/cri/host-mounts), so a restarted kubelet (or `down`)
// finds the devices an earlier one attached.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, open, rename, stat, truncate } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { loopDevicesOf } from '@kubit/cri/host-mounts';

const run = promisify(execFile);

async function tool(cmd: string, args: string[]): Promise<string> {
  try {
    return (await run(cmd, args)).stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}

/** Creates a sparse file of `bytes` (no blocks are written until the filesystem uses them). */
export async function createBackingFile(file: string, bytes: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const fd = await open(file, 'wx');
  await fd.close();
  await truncate(file, bytes);
}

/**
 * A new disk with the content of `source` (a clone): the file copied sparse, then grown to
 * `bytes` when larger (its filesystem grows when it is first mounted). A source in use is
 * copied as it is on disk, as a crash would leave it: ext4's journal makes that consistent.
 */
export async function cloneDisk(source: string, file: string, bytes: number): Promise<void> {
  if (existsSync(file)) return; // made by an earlier attempt
  await mkdir(dirname(file), { recursive: true });
  const partial = `${file}.partial`;
  await tool('cp', ['--sparse=always', source, partial]);
  if ((await fileSize(partial)) < bytes) await truncate(partial, bytes);
  await rename(partial, file);
}

export async function fileSize(file: string): Promise<number> {
  return (await stat(file)).size;
}

/**
 * Attaches `file` as a loop device, or returns the one already attached. Direct I/O
 * keeps the page cache from holding every block twice (the loop device's and the
 * file's), which is what brings a disk's writes near the node filesystem's.
 */
export async function attach(file: string): Promise<string> {
  const existing = loopDevicesOf(file)[0];
  if (existing) return existing;
  if (!existsSync(file)) throw new Error(`backing file ${file} does not exist`);
  return tool('losetup', ['--find', '--show', '--direct-io=on', file]);
}

/** Detaches every loop device of `file`. Idempotent. */
export async function detach(file: string): Promise<void> {
  for (const dev of loopDevicesOf(file)) await detachDevice(dev);
}

export async function detachDevice(device: string): Promise<void> {
  await tool('losetup', ['-d', device]).catch((err: Error) => {
    // Already gone (detached by someone else in between) is what we wanted.
    if (!/No such device|No such file/.test(err.message)) throw err;
  });
}

/** The filesystem type on a device ('' when it has none yet); probed (-p), never from blkid's cache, which remembers what a reused loop device held before. */
export async function fsTypeOf(device: string): Promise<string> {
  try {
    return (await run('blkid', ['-p', '-o', 'value', '-s', 'TYPE', device])).stdout.trim();
  } catch {
    return ''; // blkid exits 2 when it finds nothing
  }
}

/**
 * ext4 without zeroing the inode tables and journal up front (the kernel does it
 * lazily): mkfs of a new disk stays a few milliseconds whatever its size.
 */
export async function formatExt4(device: string): Promise<void> {
  await tool('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1', device]);
}

/** Bytes the device holds, and bytes its ext4 filesystem spans. */
async function sizes(device: string): Promise<{ device: number; fs: number }> {
  const dev = Number(await tool('blockdev', ['--getsize64', device]));
  const out = await tool('dumpe2fs', ['-h', device]).catch(() => '');
  const count = Number(/^Block count:\s+(\d+)/m.exec(out)?.[1] ?? 0);
  const block = Number(/^Block size:\s+(\d+)/m.exec(out)?.[1] ?? 0);
  return { device: dev, fs: count * block };
}

/**
 * Grows the filesystem of an unmounted device to the device's size (a disk grown while
 * it could not be resized online). resize2fs wants a fresh fsck first.
 */
export async function expandOffline(device: string): Promise<void> {
  const s = await sizes(device);
  if (s.fs === 0 || s.fs >= s.device) return;
  await run('e2fsck', ['-f', '-p', device]).catch((err: { code?: number }) => {
    // 1: errors corrected; anything above means the filesystem needs a human.
    if ((err.code ?? 8) > 1) throw new Error(`e2fsck -f -p ${device} failed (exit ${err.code})`);
  });
  await tool('resize2fs', [device]);
}

/** Attaches the disk, formats it when new, and grows its filesystem when its file grew. */
export async function prepareDisk(file: string): Promise<string> {
  const dev = await attach(file);
  if ((await fsTypeOf(dev)) === '') await formatExt4(dev);
  else await expandOffline(dev);
  return dev;
}

/**
 * Grows the disk to `bytes`: the file, then the loop device's idea of its size, then
 * the filesystem, online when it is mounted. Online growth needs CAP_SYS_RESOURCE; where
 * the kubelet lacks it the filesystem grows on the next mount (Kubernetes' "resize
 * pending on the node"), and this answers 'pending'. Never shrinks.
 */
export async function grow(file: string, bytes: number, mounted: boolean): Promise<'resized' | 'pending'> {
  if ((await fileSize(file)) < bytes) await truncate(file, bytes);
  const dev = loopDevicesOf(file)[0];
  if (!dev) return 'resized'; // its filesystem grows when it is next prepared
  await tool('losetup', ['-c', dev]);
  if ((await fsTypeOf(dev)) !== 'ext4') return 'resized'; // a Block volume: the device is all there is
  if (!mounted) {
    await expandOffline(dev);
    return 'resized';
  }
  try {
    await tool('resize2fs', [dev]);
    return 'resized';
  } catch (err) {
    if (/Permission denied|Operation not permitted/.test((err as Error).message)) return 'pending';
    throw err;
  }
}
