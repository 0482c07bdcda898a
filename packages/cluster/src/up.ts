// `up`: brings a cluster to the point where every node is Ready, starting only
// what is not already running, and returns with everything left running in
// the background. Phases run as parallel as their dependencies allow.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KubeClient } from '@kubit/client';
import { registerCluster } from '@kubit/daemon/cluster-registry';
import {
  apiserverCommand,
  type Command,
  containerdCommand,
  controllerManagerCommand,
  type DaemonRunner,
  daemonEnv,
  dnsCommands,
  kubeletCommand,
  NODE_IP,
  netCommands,
  proxyCommand,
  REGISTRY_BIN,
  registryCommand,
  registryConfigText,
  schedulerCommand,
  storeCommands,
} from './commands.js';
import {
  type ClusterSettings,
  clusterPorts,
  DEFAULT_CLUSTER_NAME,
  mergeSettings,
  readSettings,
  writeSettings,
} from './config.js';
import { ensureHostNetwork, hostNetwork } from './host-network.js';
import { type ClusterLayout, clusterLayout } from './layout.js';
import { machineView, placeCluster } from './machine.js';
import { writeContainerdConfig } from './node-runtime.js';
import { ensurePki, writeKubeconfigs } from './pki.js';
import { get, listNodes, loadClientTls, type NodeView, waitUntil } from './probes.js';
import { publishRegistryHosting } from './registry-hosting.js';
import { runningPid, startDetached } from './supervisor.js';

const run = promisify(execFile);

export interface UpOptions {
  stateDir: string;
  runner: DaemonRunner;
  /** Flags a person gave; the rest comes from cluster.json or the defaults. */
  requested: Partial<ClusterSettings>;
  /** How long to wait for the nodes to become Ready. */
  timeoutMs: number;
  say: (line: string) => void;
  /** The name of a new cluster when no --name was given (the state dir decides it: see main.ts). */
  defaultName?: string;
  /** The machine's cluster registry (default: @kubit/daemon's clusterRegistryDir()). */
  registryDir?: string;
}

export interface UpResult {
  layout: ClusterLayout;
  settings: ClusterSettings;
  apiserverUrl: string;
  /** Milliseconds per phase, in order. */
  phases: [string, number][];
  /** Processes this call started (the rest were running already). */
  started: string[];
  totalMs: number;
}

/** The system programs a node needs; the message says what to install. */
function checkHost(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      'the cluster needs root: containerd, CNI bridges and mounts need it. Run it as root (sudo ./scripts/up).',
    );
  }
  const missing = [
    '/usr/bin/containerd',
    REGISTRY_BIN,
    '/usr/lib/cni/bridge',
    '/usr/lib/cni/host-local',
  ].filter((f) => !existsSync(f));
  if (missing.length > 0) {
    throw new Error(
      `missing ${missing.join(', ')}: apt-get install containerd runc containernetworking-plugins docker-registry`,
    );
  }
}

/** Best effort: a process that already exited has no priority to set. */
function setNice(pid: number, nice: number): void {
  try {
    setPriority(pid, nice);
  } catch {
    // gone, or not ours to change: either way nothing to do
  }
}

function tail(file: string, lines = 5): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export async function up(opts: UpOptions): Promise<UpResult> {
  const t0 = Date.now();
  const phases: [string, number][] = [];
  let tPhase = t0;
  const phase = (name: string) => {
    const now = Date.now();
    phases.push([name, now - tPhase]);
    tPhase = now;
  };
  checkHost();
  await mkdir(opts.stateDir, { recursive: true });
  const probeLayout = clusterLayout(opts.stateDir, 1);
  const defaultName = opts.requested.name ?? opts.defaultName ?? DEFAULT_CLUSTER_NAME;
  const saved = readSettings(probeLayout.configFile, defaultName);
  // Apart from every other cluster on the machine: its name, ranges and ports (machine.ts).
  const settings = await placeCluster(
    mergeSettings(saved, opts.requested, defaultName),
    opts.requested,
    saved === undefined,
    hostNetwork(probeLayout).cidr,
    opts.stateDir,
    await machineView(opts.stateDir, opts.registryDir),
  );
  await writeSettings(probeLayout.configFile, settings);
  const layout = clusterLayout(opts.stateDir, settings.nodes);
  const ports = clusterPorts(settings, layout.store.length);
  const apiserverUrl = `https://${NODE_IP}:${ports.apiserver}`;
  const repoRoot = opts.runner.repoRoot;
  registerCluster(
    {
      name: settings.name,
      stateDir: layout.stateDir,
      repoRoot,
      nodes: settings.nodes,
      portOffset: settings.portOffset,
      apiserver: apiserverUrl,
      clusterCidr: settings.clusterCidr,
      serviceCidr: settings.serviceCidr,
      hostCidr: hostNetwork(layout).cidr,
    },
    opts.registryDir,
  );
  const env = daemonEnv(process.env);
  const started: string[] = [];
  const watched = new Map<string, Command>();

  /**
   * Starts `cmd` unless it runs; `watch` makes its death fail the waits from now on.
   * Returns the PID it started, or undefined when it was running already.
   */
  const ensureRunning = async (cmd: Command, watch: boolean): Promise<number | undefined> => {
    if (runningPid(layout.pidFile(cmd.name), layout.stateDir, cmd.command) !== undefined) {
      if (watch) watched.set(cmd.name, cmd);
      return undefined;
    }
    const pid = await startDetached(cmd, layout.logFile(cmd.name), layout.pidFile(cmd.name), env, repoRoot);
    // Watched only once its PID file exists, so a spawn under way never looks like a death.
    if (watch) watched.set(cmd.name, cmd);
    if (!started.includes(cmd.name)) started.push(cmd.name);
    return pid;
  };
  /** The first watched process that is no longer running, with the end of its log. */
  const died = (): string | undefined => {
    for (const cmd of watched.values()) {
      if (runningPid(layout.pidFile(cmd.name), layout.stateDir, cmd.command) === undefined) {
        const log = layout.logFile(cmd.name);
        return `${cmd.name} exited; the end of ${log}:\n${tail(log)}`;
      }
    }
    return undefined;
  };

  if (await ensurePki(layout, repoRoot, settings.serviceCidr))
    opts.say(`generated the PKI in ${layout.pkiDir}`);
  await writeKubeconfigs(layout, apiserverUrl);
  await mkdir(layout.registryData, { recursive: true });
  await writeFile(layout.registryConfig, registryConfigText(layout, ports));
  const mirror = `${NODE_IP}:${ports.registry}`;
  for (const node of layout.nodes) await writeContainerdConfig(node, repoRoot, mirror);
  await ensureHostNetwork(hostNetwork(layout));
  phase('pki, kubeconfigs, configs');

  const runner = opts.runner;
  const storeCmds = storeCommands(layout, ports, runner);
  const runtimeCmds = [registryCommand(layout), ...layout.nodes.map((n) => containerdCommand(n))];
  const apiserverCmd = apiserverCommand(layout, ports, settings, runner);
  const clientCmds = [
    schedulerCommand(layout, ports, runner),
    controllerManagerCommand(layout, ports, settings, runner),
    ...layout.nodes.map((n) => kubeletCommand(layout, n, ports, settings, runner)),
    proxyCommand(layout, ports, settings, runner),
    ...dnsCommands(layout, ports, settings, runner),
    ...netCommands(layout, ports, settings, runner),
  ];
  // Everything starts at once: loading a Node daemon takes longer than a store
  // election, so overlapping them is most of the speed. The critical path is
  // store → apiserver → kubelets posting Ready, so what only matters once the
  // apiserver answers (registry, containerds, scheduler, controller manager,
  // kubelets) starts at a lower CPU priority and gets it back when the
  // apiserver is ready: on two cores, ten processes loading at once otherwise
  // slow the store members down. The daemons wait for the apiserver (a kubelet
  // polls /readyz for a minute; one that gave up is started again at its gate
  // below). The apiserver starts when the members answer; it exits if the
  // store has no leader yet, and is then started again, at most twice. A
  // process only counts as failed once what it needs is up.
  const kubeletStart = Date.now();
  await Promise.all(storeCmds.map((c) => ensureRunning(c, true)));
  // Each one lowered the moment it exists; the stores' health polling need not wait for these spawns.
  const startLowered = async (cmd: Command, watch: boolean) => {
    const pid = await ensureRunning(cmd, watch);
    if (pid !== undefined) setNice(pid, 10);
    return pid;
  };
  const deferredStarts = Promise.all([
    ...runtimeCmds.map((c) => startLowered(c, true)),
    ...clientCmds.map((c) => startLowered(c, false)),
  ]);
  deferredStarts.catch(() => {}); // reported where it is awaited, below
  phase('store processes started');

  // The apiserver starts once the members answer (their election takes about a
  // second more), so its own start-up overlaps the election without taking CPU
  // from the members' start-up, which is the longest step on a busy machine.
  await waitUntil(
    'the store members to start',
    async () => {
      const res = await Promise.all(
        ports.store.map((p) => get(`http://${NODE_IP}:${p.metrics}/health`).catch(() => undefined)),
      );
      return res.every((r) => r !== undefined);
    },
    { timeoutMs: 60_000, intervalMs: 50, failed: died },
  );
  await ensureRunning(apiserverCmd, false);
  phase('store members answering');

  // Every member must see a leader: the apiserver needs a quorum behind whichever it dials.
  await waitUntil(
    'the store members to elect a leader',
    async () => {
      const res = await Promise.all(ports.store.map((p) => get(`http://${NODE_IP}:${p.metrics}/health`)));
      return res.every((r) => r.status === 200);
    },
    { timeoutMs: 60_000, intervalMs: 50, failed: died },
  );
  phase('store leader elected');

  // The images go into the registry once; later ups find them there.
  // Held as a settled value so a failure is reported where it is awaited, not as an unhandled rejection.
  const images = ensureImages(layout, mirror, repoRoot, died).then(
    () => undefined,
    (err: unknown) => err as Error,
  );

  await ensureRunning(apiserverCmd, false);
  const admin = loadClientTls(
    join(layout.pkiDir, 'ca.crt'),
    join(layout.pkiDir, 'admin.crt'),
    join(layout.pkiDir, 'admin.key'),
  );
  let apiserverRestarts = 0;
  let restarting: Promise<unknown> | undefined;
  await waitUntil(
    'kubit-apiserver /readyz',
    async () => (await get(`${apiserverUrl}/readyz`, admin)).status === 200,
    {
      timeoutMs: 60_000,
      intervalMs: 50,
      failed: () => {
        const dead = died();
        if (dead) return dead;
        if (
          runningPid(layout.pidFile(apiserverCmd.name), layout.stateDir, apiserverCmd.command) !== undefined
        )
          return undefined;
        if (restarting) return undefined;
        // It gave up on a store that was still electing: start it again (a third death is real).
        if (apiserverRestarts++ < 2) {
          restarting = ensureRunning(apiserverCmd, false).finally(() => {
            restarting = undefined;
          });
          return undefined;
        }
        const log = layout.logFile(apiserverCmd.name);
        return `${apiserverCmd.name} exited; the end of ${log}:\n${tail(log)}`;
      },
    },
  );
  for (const pid of await deferredStarts) if (pid !== undefined) setNice(pid, 0);
  phase('apiserver ready');
  // kube-public/local-registry-hosting names the cluster's registry (`kubit image load` reads it).
  const hosting = publishLocalRegistry(layout.adminKubeconfig, `${NODE_IP}:${ports.registry}`);

  await Promise.all(clientCmds.map((c) => ensureRunning(c, true)));
  const wanted = new Set(layout.nodes.map((n) => n.name));
  // A Ready condition older than this up is a leftover of the last run, not news from a live kubelet.
  const freshSince = Math.floor(kubeletStart / 1000) * 1000;
  await waitUntil(
    `nodes ${[...wanted].join(', ')} to be Ready`,
    async () => {
      // Each kubelet writes its node's CNI config from spec.podCIDR (node IPAM) itself.
      const nodes = (await listNodes(apiserverUrl, admin)).filter((n) => wanted.has(n.name));
      const fresh = (n: NodeView) =>
        !started.includes(`kubit-kubelet-${n.name}`) || (n.readySince ?? 0) >= freshSince;
      return nodes.length === wanted.size && nodes.every((n) => n.ready && fresh(n));
    },
    { timeoutMs: opts.timeoutMs, intervalMs: 100, failed: died },
  );
  phase('nodes Ready');
  const totalMs = Date.now() - t0;
  const imagesFailed = await images;
  if (imagesFailed) throw imagesFailed;
  await hosting;
  if (Date.now() - tPhase > 50) phase('images in the registry');
  return { layout, settings, apiserverUrl, phases, started, totalMs };
}

async function publishLocalRegistry(kubeconfig: string, host: string): Promise<void> {
  const client = KubeClient.fromKubeconfig({ kubeconfig });
  try {
    await publishRegistryHosting(client, host);
  } finally {
    client.close();
  }
}

async function ensureImages(
  layout: ClusterLayout,
  registry: string,
  repoRoot: string,
  died: () => string | undefined,
): Promise<void> {
  if (existsSync(layout.registryImagesMarker)) return;
  await waitUntil(
    'the registry to answer /v2/',
    async () => (await get(`http://${registry}/v2/`)).status === 200,
    {
      timeoutMs: 30_000,
      intervalMs: 50,
      failed: died,
    },
  );
  try {
    await run(join(repoRoot, 'scripts', 'images'), [registry], { cwd: repoRoot, maxBuffer: 16 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`scripts/images ${registry} failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
  await writeFile(layout.registryImagesMarker, `${new Date().toISOString()}\n`);
}
