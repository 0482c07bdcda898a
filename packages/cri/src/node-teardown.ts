// Tearing a containerd node down from outside the kubelet: the cluster's `down`
// and the test harness's private containerd both stop every pod sandbox through
// CRI while containerd still runs (so CNI DEL frees the pod IPs and veths), then
// kill the shims containerd left behind, unmount what it left mounted and, when
// asked, remove the node's bridge and host-local leases. One copy here, next to
// the CRI client, so the two cannot drift apart.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CriRuntime } from './cri.js';
import { loopDevicesUnder, mountsUnder } from './host-mounts.js';

const run = promisify(execFile);

/**
 * Stops and removes every pod sandbox of the containerd at `socket`, all at
 * once; a sandbox that fails to stop is still removed. Returns how many there
 * were (none when the socket is gone: no containerd, no sandboxes to free).
 */
export async function removeAllSandboxes(socket: string, timeoutMs = 30_000): Promise<number> {
  if (!existsSync(socket)) return 0;
  const cri = new CriRuntime({ endpoint: socket, timeoutMs });
  try {
    const sandboxes = await cri.listPodSandbox();
    await Promise.all(
      sandboxes.map(async (sb) => {
        await cri.stopPodSandbox(sb.id).catch(() => {});
        await cri.removePodSandbox(sb.id).catch(() => {});
      }),
    );
    return sandboxes.length;
  } finally {
    cri.close();
  }
}

function allPids(): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number);
}

function cmdline(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined; // the process went away
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** containerd-shim processes serving the containerd at `socket`: their command line names it. */
export function shimPids(socket: string): number[] {
  return allPids().filter((pid) => {
    const argv = cmdline(pid);
    return argv !== undefined && (argv[0] ?? '').includes('containerd-shim') && argv.includes(socket);
  });
}

/** SIGKILLs a process and everything under it (stopped first, so none fork away meanwhile). */
function killTree(pid: number): void {
  try {
    process.kill(pid, 'SIGSTOP');
  } catch {
    return;
  }
  for (const child of allPids().filter((p) => parentOf(p) === pid)) killTree(child);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Kills the shims of the containerd at `socket` and their containers. Returns how many shims. */
export function killStrayShims(socket: string): number {
  const pids = shimPids(socket);
  for (const pid of pids) killTree(pid);
  return pids.length;
}

/**
 * Lazily unmounts whatever is still mounted at or under `dir` (containerd's, a killed
 * kubelet's volumes, dockerd's layers), then detaches the loop devices of the disks kept
 * there (the kernel frees a lazily unmounted one once its last user is gone).
 */
export async function unmountUnder(dir: string): Promise<void> {
  for (const m of mountsUnder(dir)) await run('umount', ['-l', m.mountPoint]).catch(() => {});
  for (const l of loopDevicesUnder(dir)) await run('losetup', ['-d', l.device]).catch(() => {});
}

/** The bridge and host-local's leases of a node's CNI network, which live outside its state dir. */
export async function removeCniNetwork(bridge: string, networkName: string): Promise<void> {
  if (existsSync(`/sys/class/net/${bridge}`)) await run('ip', ['link', 'del', bridge]).catch(() => {});
  await rm(join('/var/lib/cni/networks', networkName), { recursive: true, force: true });
  if (existsSync('/var/lib/cni/results')) {
    for (const f of readdirSync('/var/lib/cni/results')) {
      if (f.startsWith(`${networkName}-`)) await rm(join('/var/lib/cni/results', f), { force: true });
    }
  }
}
