import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { CriRuntime } from '@kubit/cri';
import { killStrayShims, removeAllSandboxes, removeCniNetwork, unmountUnder } from '@kubit/cri/node-teardown';
import { DOCKER_HUB, hostsTomlValues, type MirroredRegistry } from '@kubit/cri/registry-hosts';
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
  /** host:port of a registry that serves as docker.io's mirror (and `mirrored`'s). */
  mirror?: string;
  /**
   * The registries whose hosts.toml lists `mirror` first and their upstream
   * after it; by default docker.io with Docker Hub's registry as upstream.
   */
  mirrored?: MirroredRegistry[];
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
      const template = await readFile(join(deploy, 'hosts.toml.tmpl'), 'utf8');
      for (const r of opts.mirrored ?? [{ registry: DOCKER_HUB }]) {
        const { path, values } = hostsTomlValues(registryConfig, opts.mirror, r);
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, fill(template, values));
      }
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
        const cri = new CriRuntime({ endpoint: socket, timeoutMs: 2000 });
        try {
          await cri.version();
          return true;
        } finally {
          cri.close();
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
    if (proc.running) await removeAllSandboxes(socket, 60_000).catch(() => {});
    await proc.stop(10_000);
    killStrayShims(socket);
    await unmountUnder(dir);
    await removeCniNetwork(bridge, networkName);
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
