// `down`: stops every process of the cluster by its PID file, in the reverse
// order of start: kubelets and controllers first (so nothing recreates pods
// while they are torn down), then each node's pods and containerd, then the
// apiserver and the store. `--purge` also removes the state.
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { killStrayShims, removeAllSandboxes, removeCniNetwork, unmountUnder } from '@kubit/cri/node-teardown';
import { unregisterCluster } from '@kubit/daemon/cluster-registry';
import {
  apiserverCommand,
  type Command,
  clusterCommands,
  containerdCommand,
  controllerManagerCommand,
  type DaemonRunner,
  dnsCommands,
  kubeletCommand,
  netCleanupCommands,
  netCommands,
  proxyCleanupCommand,
  proxyCommand,
  readCluster,
  registryCommand,
  schedulerCommand,
  storeCommands,
} from './commands.js';
import { hostNetwork, removeHostNetwork } from './host-network.js';
import { clusterLayout } from './layout.js';
import { runningPid, stopByPidFile } from './supervisor.js';

const run = promisify(execFile);

export interface DownOptions {
  stateDir: string;
  runner: DaemonRunner;
  purge: boolean;
  say: (line: string) => void;
  /** The machine's cluster registry (default: @kubit/daemon's clusterRegistryDir()). */
  registryDir?: string;
}

export async function down(opts: DownOptions): Promise<{ stopped: string[] }> {
  const cluster = readCluster(opts.stateDir);
  if (!cluster) {
    const { stateDir } = clusterLayout(opts.stateDir, 1);
    if (opts.purge) await rm(stateDir, { recursive: true, force: true });
    opts.say(`no cluster in ${stateDir}`);
    return { stopped: [] };
  }
  const { settings, layout, ports } = cluster;
  const runner = opts.runner;
  const stopped: string[] = [];
  const stop = async (cmd: Command, graceMs = 10_000) => {
    const r = await stopByPidFile(layout.pidFile(cmd.name), layout.stateDir, cmd.command, graceMs);
    if (r !== 'not-running') stopped.push(cmd.name);
    if (r === 'killed') opts.say(`${cmd.name} did not stop in ${graceMs / 1000} s; killed`);
  };

  await Promise.all([
    ...layout.nodes.map((n) => stop(kubeletCommand(layout, n, ports, settings, runner))),
    stop(schedulerCommand(layout, ports, runner)),
    stop(controllerManagerCommand(layout, ports, settings, runner)),
    stop(proxyCommand(layout, ports, settings, runner)),
    ...dnsCommands(layout, ports, settings, runner).map((c) => stop(c)),
    ...netCommands(layout, ports, settings, runner).map((c) => stop(c)),
  ]);
  // kubit-proxy leaves its rules in the kernel when it stops (a restart takes them over); down removes them.
  const cleanup = proxyCleanupCommand(settings, runner);
  await run(cleanup.command, cleanup.args, { timeout: 30_000 }).catch((err: Error) =>
    opts.say(`kubit-proxy --cleanup failed: ${err.message}`),
  );
  // So does kubit-net (its NetworkPolicy tables and routes).
  await Promise.all(
    netCleanupCommands(layout, ports, settings, runner).map((c) =>
      run(c.command, c.args, { timeout: 30_000 }).catch((err: Error) =>
        opts.say(`${c.name} failed: ${err.message}`),
      ),
    ),
  );
  if (await removeHostNetwork(hostNetwork(layout)).catch(() => false)) {
    opts.say(`removed the host bridge ${layout.hostBridge}`);
  }
  await Promise.all(
    layout.nodes.map(async (node) => {
      const cmd = containerdCommand(node);
      if (runningPid(layout.pidFile(cmd.name), layout.stateDir, cmd.command) !== undefined) {
        // Through CRI while containerd still runs, so CNI releases each pod's address.
        const n = await removeAllSandboxes(node.socket).catch((err: Error) => {
          opts.say(`${node.name}: could not remove pod sandboxes through CRI: ${err.message}`);
          return 0;
        });
        if (n > 0) opts.say(`${node.name}: removed ${n} pod sandbox(es)`);
      }
      await stop(cmd);
      const shims = killStrayShims(node.socket);
      if (shims > 0) opts.say(`${node.name}: killed ${shims} leftover containerd shim(s)`);
      await unmountUnder(node.dir);
      if (opts.purge) await removeCniNetwork(node.bridge, node.networkName);
    }),
  );
  await stop(apiserverCommand(layout, ports, settings, runner));
  await Promise.all([
    ...storeCommands(layout, ports, runner).map((c) => stop(c)),
    stop(registryCommand(layout)),
  ]);
  if (opts.purge) {
    await rm(layout.stateDir, { recursive: true, force: true });
    unregisterCluster(settings.name, layout.stateDir, opts.registryDir);
    opts.say(`removed ${layout.stateDir}; cluster "${settings.name}" is gone from this machine`);
  } else {
    // The bridges, routes, nft tables and mounts went with the processes; the state stays for the next up.
    opts.say(
      `left ${layout.stateDir} (certificates, store data, images, logs) and the name "${settings.name}" for the next up; ` +
        `down --purge${settings.name === 'kubit' ? '' : ` --name ${settings.name}`} removes them`,
    );
  }
  return { stopped };
}

/** Which of the cluster's processes run now: name → PID (undefined when stopped). */
export function status(stateDir: string, runner: DaemonRunner): Map<string, number | undefined> | undefined {
  const cluster = readCluster(stateDir);
  if (!cluster) return undefined;
  const { settings, layout, ports } = cluster;
  const cmds = clusterCommands(layout, ports, settings, runner);
  return new Map(cmds.map((c) => [c.name, runningPid(layout.pidFile(c.name), layout.stateDir, c.command)]));
}
