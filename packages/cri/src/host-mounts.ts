// What the host kernel says is mounted and attached: the mount table
// (/proc/self/mountinfo) and the loop devices with their backing files
// (/sys/block/loop*/loop/backing_file). Nobody keeps a list of their own: the
// kubelet after a restart, the cluster's `down` and the test harness all find
// mounts and disks here again, so a mount or disk is "there" only when the
// kernel says so. One copy, below the kubelet and node-teardown, so they read the
// kernel the same way.
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export interface MountEntry {
  /** Where it is mounted (escapes such as \040 decoded). */
  mountPoint: string;
  /** The path inside the source filesystem (a bind mount of a directory shows it here). */
  root: string;
  /** "major:minor" of the filesystem's device. */
  device: string;
  fsType: string;
  /** The mount source (a block device such as /dev/loop3, or tmpfs, …). */
  source: string;
  options: string[];
}

/** mountinfo escapes space, tab, newline and backslash as three octal digits. */
function decodeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Parses mountinfo text (proc(5)): fields up to " - ", then fstype, source, super options. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const [head, tail] = line.split(' - ');
    if (!head || tail === undefined) continue;
    const f = head.split(' ');
    const t = tail.split(' ');
    out.push({
      device: f[2] ?? '',
      root: decodeOctal(f[3] ?? ''),
      mountPoint: decodeOctal(f[4] ?? ''),
      options: (f[5] ?? '').split(','),
      fsType: t[0] ?? '',
      source: decodeOctal(t[1] ?? ''),
    });
  }
  return out;
}

export function readMountTable(): MountEntry[] {
  return parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8'));
}

export function isMountPoint(path: string, table: MountEntry[] = readMountTable()): boolean {
  return table.some((m) => m.mountPoint === path);
}

/** Mounts at or below `dir`, deepest first (the order they must be unmounted in). */
export function mountsUnder(dir: string, table: MountEntry[] = readMountTable()): MountEntry[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return table
    .filter((m) => m.mountPoint === dir || m.mountPoint.startsWith(prefix))
    .sort((a, b) => b.mountPoint.length - a.mountPoint.length);
}

/** Every attached loop device with its backing file (" (deleted)" dropped). */
export function attachedLoopDevices(): { device: string; file: string }[] {
  let names: string[];
  try {
    names = readdirSync('/sys/block').filter((n) => n.startsWith('loop'));
  } catch {
    return [];
  }
  const out: { device: string; file: string }[] = [];
  for (const name of names) {
    try {
      const file = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8')
        .trim()
        .replace(/ \(deleted\)$/, '');
      out.push({ device: `/dev/${name}`, file });
    } catch {
      // not attached
    }
  }
  return out;
}

/** The loop devices attached to `file` (normally one), as /dev/loopN. */
export function loopDevicesOf(file: string): string[] {
  const want = resolve(file);
  return attachedLoopDevices()
    .filter((l) => l.file === want)
    .map((l) => l.device);
}

/** Every loop device whose backing file lies under `dir` (the clean-up of a whole node). */
export function loopDevicesUnder(dir: string): { device: string; file: string }[] {
  const prefix = `${resolve(dir)}/`;
  return attachedLoopDevices().filter((l) => l.file.startsWith(prefix));
}
