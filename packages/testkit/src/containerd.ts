import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PAUSE_IMAGE } from './images.js';
import {
  claimForTestProcess,
  repoRoot,
  startProcess,
  type TestProcess,
  tempDir,
  waitFor,
} from './process.js';

const run = promisify(execFile);

export interface ContainerdOptions {
  /** host:port of a registry that serves as docker.io's mirror. */
  mirror?: string;
  /** e.g. "10.244.77.0/24"; by default a free 10.244.x.0/24. */
  podCidr?: string;
  sandboxImage?: string;
  /** Masquerade pod traffic leaving the node (adds iptables rules). Off by default. */
  ipMasq?: boolean;
  /**
   * Edits the filled-in config.toml before containerd starts (experiments: a
   * wrapped CNI bin_dir or runc binary, a debug log level).
   */
  patchConfig?: (toml: string) => string;
  /** Edits the filled-in conflist before containerd starts (experiments with the CNI chain). */
  patchConflist?: (json: string) => string;
}

/** A private containerd with its own root, state, socket, CNI network and bridge. */
export interface TestContainerd {
  /** "unix:///.../containerd.sock", for --container-runtime-endpoint. */
  readonly endpoint: string;
  readonly socket: string;
  readonly dir: string;
  readonly root: string;
  readonly state: string;
  readonly podCidr: string;
  readonly bridge: string;
  readonly networkName: string;
  readonly process: TestProcess;
  /** Removes every sandbox, stops containerd (by PID) and its shims, and cleans up network state. */
  stop(): Promise<void>;
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (_m, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template placeholder {{${key}}} has no value`);
    return v;
  });
}

/**
 * A 10.244.x.0/24 that no interface address or route on this machine touches,
 * and that no other containerd of a running test was given (its bridge only
 * gets the address once a pod runs).
 */
async function pickPodCidr(): Promise<string> {
  const { stdout: addrs } = await run('ip', ['-4', '-o', 'addr']);
  const { stdout: routes } = await run('ip', ['-4', 'route']);
  for (let i = 0; i < 200; i++) {
    const x = 100 + Math.floor(Math.random() * 150);
    const prefix = `10.244.${x}.`;
    if (addrs.includes(prefix) || routes.includes(prefix)) continue;
    if (claimForTestProcess(`podcidr-10.244.${x}`)) return `${prefix}0/24`;
  }
  throw new Error('no free 10.244.x.0/24 for a test pod network');
}

/** The CRI client the harness uses for clean-up, loaded from the kubelet's proto file. */
function criRuntimeClient(
  socket: string,
): grpc.Client & Record<string, grpc.MethodDefinition<unknown, unknown>> {
  const def = protoLoader.loadSync(join(repoRoot, 'packages', 'kubelet', 'proto', 'runtime.proto'), {
    keepCase: false,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
  };
  return new pkg.runtime.v1.RuntimeService(`unix:${socket}`, grpc.credentials.createInsecure()) as never;
}

function unary<T>(client: grpc.Client, method: string, req: unknown, timeoutMs = 60_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
    fn.call(client, req, { deadline: Date.now() + timeoutMs }, (err: Error | null, res: T) =>
      err ? reject(err) : resolve(res),
    );
  });
}

/** Stops and removes every sandbox: CNI DEL runs, netns and shims go away. */
async function removeAllSandboxes(socket: string): Promise<void> {
  const client = criRuntimeClient(socket);
  try {
    const res = await unary<{ items: { id: string }[] }>(client, 'ListPodSandbox', {}, 10_000);
    for (const sb of res.items) {
      await unary(client, 'StopPodSandbox', { podSandboxId: sb.id }).catch(() => {});
      await unary(client, 'RemovePodSandbox', { podSandboxId: sb.id }).catch(() => {});
    }
  } finally {
    client.close();
  }
}

/** PIDs of containerd-shim processes serving this instance (their command line names our socket). */
function shimPids(socket: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmd[0]?.includes('containerd-shim') && cmd.includes(socket)) pids.push(Number(entry));
    } catch {
      // the process went away
    }
  }
  return pids;
}

/** Children of `pid` (from /proc), so a shim's containers can be killed with it. */
function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // the process went away
    }
  }
  return out;
}

/** SIGKILLs a process and everything under it, children first seen before the parent dies. */
function killTree(pid: number): void {
  const children = childPids(pid);
  try {
    process.kill(pid, 'SIGSTOP'); // no new children while we collect them
  } catch {
    return;
  }
  for (const c of children) killTree(c);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Mount points under `prefix`, deepest first, so they can be unmounted in order. */
function mountsUnder(prefix: string): string[] {
  const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const out = lines
    .map((l) => l.split(' ')[4])
    .filter((m): m is string => typeof m === 'string' && (m === prefix || m.startsWith(`${prefix}/`)));
  return [...new Set(out)].sort((a, b) => b.length - a.length);
}

export async function startContainerd(opts: ContainerdOptions = {}): Promise<TestContainerd> {
  if (process.getuid?.() !== 0) throw new Error('a test containerd needs root (CNI, mounts, cgroups)');
  const tmp = await tempDir('kubit-containerd-');
  const dir = tmp.path;
  const suffix = randomBytes(3).toString('hex');
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const socket = join(dir, 'containerd.sock');
  const cniConfDir = join(dir, 'cni');
  const registryConfig = join(dir, 'certs.d');
  const podCidr = opts.podCidr ?? (await pickPodCidr());
  const bridge = `kbt${suffix}`;
  const networkName = `kubit-test-${suffix}`;
  try {
    await writeConfigs();
  } catch (err) {
    await tmp.cleanup();
    throw err;
  }

  async function writeConfigs(): Promise<void> {
    for (const d of [root, state, cniConfDir, registryConfig]) await mkdir(d, { recursive: true });
    const deploy = join(repoRoot, 'deploy', 'containerd');
    const config = fill(await readFile(join(deploy, 'config.toml.tmpl'), 'utf8'), {
      ROOT: root,
      STATE: state,
      ADDRESS: socket,
      SANDBOX_IMAGE: opts.sandboxImage ?? PAUSE_IMAGE,
      CNI_CONF_DIR: cniConfDir,
      REGISTRY_CONFIG_PATH: registryConfig,
    });
    await writeFile(join(dir, 'config.toml'), opts.patchConfig ? opts.patchConfig(config) : config);
    const conflist = fill(await readFile(join(deploy, '10-kubit.conflist.tmpl'), 'utf8'), {
      NETWORK_NAME: networkName,
      BRIDGE: bridge,
      POD_CIDR: podCidr,
      IP_MASQ: opts.ipMasq ? 'true' : 'false',
    });
    await writeFile(
      join(cniConfDir, '10-kubit.conflist'),
      opts.patchConflist ? opts.patchConflist(conflist) : conflist,
    );
    if (opts.mirror) {
      await mkdir(join(registryConfig, 'docker.io'), { recursive: true });
      await writeFile(
        join(registryConfig, 'docker.io', 'hosts.toml'),
        fill(await readFile(join(deploy, 'hosts.toml.tmpl'), 'utf8'), {
          REGISTRY_CONFIG_PATH: registryConfig,
          MIRROR: opts.mirror,
        }),
      );
    }
  }

  const launch = () =>
    startProcess({
      command: 'containerd',
      args: ['--config', join(dir, 'config.toml'), '--root', root, '--state', state, '--address', socket],
      logFile: join(dir, 'containerd.log'),
      name: `containerd-${suffix}`,
    });
  const waitServing = (p: TestProcess) =>
    waitFor(
      'containerd to serve CRI',
      async () => {
        if (!p.running)
          throw new Error(`containerd exited; log: ${await readFile(join(dir, 'containerd.log'), 'utf8')}`);
        if (!existsSync(socket)) return false;
        const client = criRuntimeClient(socket);
        try {
          await unary(client, 'Version', { version: 'v1' }, 2000);
          return true;
        } finally {
          client.close();
        }
      },
      30_000,
      200,
    );
  let proc = launch();

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (!proc.running) {
      // Someone stopped containerd early: start it again on the same state, so the
      // sandboxes (their processes, netns and CNI addresses) are torn down properly.
      proc = launch();
      await waitServing(proc).catch(() => {});
    }
    if (proc.running) await removeAllSandboxes(socket).catch(() => {});
    await proc.stop(10_000);
    for (const pid of shimPids(socket)) killTree(pid);
    for (const m of mountsUnder(dir)) await run('umount', ['-l', m]).catch(() => {});
    if (existsSync(`/sys/class/net/${bridge}`)) await run('ip', ['link', 'del', bridge]).catch(() => {});
    await rm(join('/var/lib/cni/networks', networkName), { recursive: true, force: true });
    if (existsSync('/var/lib/cni/results')) {
      for (const f of readdirSync('/var/lib/cni/results')) {
        if (f.startsWith(`${networkName}-`)) await rm(join('/var/lib/cni/results', f), { force: true });
      }
    }
    if (process.env.KUBIT_KEEP_CONTAINERD_LOG) {
      process.stderr.write(`containerd log kept at ${join(dir, 'containerd.log')}\n`);
      return;
    }
    await tmp.cleanup();
  };

  try {
    await waitServing(proc);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    endpoint: `unix://${socket}`,
    socket,
    dir,
    root,
    state,
    podCidr,
    bridge,
    networkName,
    get process() {
      return proc;
    },
    stop,
  };
}
