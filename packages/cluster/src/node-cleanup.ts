// Tearing a node's pods down when the cluster stops: every sandbox is stopped
// and removed through CRI while containerd still runs (so CNI DEL frees the
// pod IPs and veths), then stray shims of this containerd (found by the socket
// path on their command line) are killed, and mounts under the node dir go.
// The pods themselves stay in the store: on the next `up` the kubelet runs them again.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { NodeLayout } from './layout.js';
import { realProcFs } from './supervisor.js';

const run = promisify(execFile);

type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: Error | null, res: unknown) => void,
) => void;

function runtimeClient(repoRoot: string, socket: string): grpc.Client {
  // The CRI messages Kubit uses live with the kubelet, the package that speaks CRI.
  const def = protoLoader.loadSync(join(repoRoot, 'packages', 'kubelet', 'proto', 'runtime.proto'), {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
  };
  return new pkg.runtime.v1.RuntimeService(`unix:${socket}`, grpc.credentials.createInsecure());
}

function call<T>(client: grpc.Client, method: string, req: unknown, timeoutMs: number): Promise<T> {
  const fn = (client as unknown as Record<string, Unary>)[method];
  return new Promise((resolve, reject) => {
    fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) =>
      err ? reject(err) : resolve(res as T),
    );
  });
}

/** Stops and removes every pod sandbox of the node's containerd. Returns how many. */
export async function removeAllSandboxes(node: NodeLayout, repoRoot: string): Promise<number> {
  if (!existsSync(node.socket)) return 0;
  const client = runtimeClient(repoRoot, node.socket);
  try {
    const res = await call<{ items: { id: string }[] }>(client, 'ListPodSandbox', {}, 5000);
    await Promise.all(
      res.items.map(async (sb) => {
        await call(client, 'StopPodSandbox', { podSandboxId: sb.id }, 30_000).catch(() => {});
        await call(client, 'RemovePodSandbox', { podSandboxId: sb.id }, 30_000).catch(() => {});
      }),
    );
    return res.items.length;
  } finally {
    client.close();
  }
}

function allPids(): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .map(Number);
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** containerd-shim processes serving this node's containerd: their command line names its socket. */
export function shimPids(node: NodeLayout): number[] {
  return allPids().filter((pid) => {
    const argv = realProcFs.cmdline(pid);
    return argv !== undefined && (argv[0] ?? '').includes('containerd-shim') && argv.includes(node.socket);
  });
}

/** SIGKILLs a shim and the containers under it (stopped first, so none fork away meanwhile). */
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

export function killStrayShims(node: NodeLayout): number {
  const pids = shimPids(node);
  for (const pid of pids) killTree(pid);
  return pids.length;
}

function mountsUnder(prefix: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((m): m is string => typeof m === 'string' && (m === prefix || m.startsWith(`${prefix}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Lazily unmounts whatever containerd left mounted under the node's directory. */
export async function unmountNode(node: NodeLayout): Promise<void> {
  for (const m of mountsUnder(node.dir)) await run('umount', ['-l', m]).catch(() => {});
}

/** For --purge: the bridge and host-local's leases, which live outside the state dir. */
export async function removeNodeNetwork(node: NodeLayout): Promise<void> {
  if (existsSync(`/sys/class/net/${node.bridge}`))
    await run('ip', ['link', 'del', node.bridge]).catch(() => {});
  await rm(join('/var/lib/cni/networks', node.networkName), { recursive: true, force: true });
  if (existsSync('/var/lib/cni/results')) {
    for (const f of readdirSync('/var/lib/cni/results')) {
      if (f.startsWith(`${node.networkName}-`)) await rm(join('/var/lib/cni/results', f), { force: true });
    }
  }
}
