// Where the node-local volumes live: the kubelet's storage dir (--local-storage-dir)
// holds a directory per local-path volume and a backing file per kubit-disk volume.
import { execFile } from 'node:child_process';
import { mkdir, rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export class LocalStorage {
  constructor(readonly dir: string) {}

  /** The directory of a local-path volume (its PersistentVolume's spec.local.path). */
  pathDir(volume: string): string {
    return join(this.dir, 'local-path', volume);
  }

  /** The backing file of a kubit-disk volume (its volumeAttributes[kubit.io/backing-file]). */
  diskFile(volume: string): string {
    return join(this.dir, 'disks', `${volume}.img`);
  }

  async makePathDir(volume: string): Promise<string> {
    const dir = this.pathDir(volume);
    await mkdir(dir, { recursive: true, mode: 0o777 });
    return dir;
  }

  async removePathDir(volume: string): Promise<void> {
    await rm(this.pathDir(volume), { recursive: true, force: true });
  }

  /** Bytes an unprivileged writer may still use on the storage dir's filesystem. */
  async freeBytes(): Promise<number> {
    await mkdir(this.dir, { recursive: true });
    const s = await statfs(this.dir);
    return s.bavail * s.bsize;
  }
}

/** A clone of a local-path volume: everything in `source` copied into `target`, owners, modes and times kept. */
export async function copyTree(source: string, target: string): Promise<void> {
  try {
    await run('cp', ['-a', '--reflink=auto', `${source}/.`, `${target}/`]);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`copying ${source}: ${(e.stderr ?? '').trim() || e.message}`);
  }
}
