// The node's mount table as the kernel reports it (/proc/self/mountinfo). The kubelet
// keeps no list of its own mounts: after a restart it finds them here again, and a
// mount is "there" only when the kernel says so.
import { readFileSync } from 'node:fs';

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
