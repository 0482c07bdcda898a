// A kubelet killed with SIGKILL cannot unmount its pods' volumes (tmpfs for
// secrets and service-account tokens), so a test removes them before deleting
// the kubelet's root directory.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Unmounts (lazily, deepest first) every mount point under `dir`. */
export async function unmountUnder(dir: string): Promise<void> {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const table = await readFile('/proc/self/mounts', 'utf8');
  const points = table
    .split('\n')
    // Fields are space-separated with spaces inside paths written as \040.
    .map((line) => line.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((p): p is string => p?.startsWith(prefix) === true)
    .sort((a, b) => b.length - a.length);
  for (const p of points) await run('umount', ['-l', p]).catch(() => {});
}
