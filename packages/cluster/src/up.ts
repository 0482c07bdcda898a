// `up`: brings a cluster to the point where every node is Ready, starting only
// what is not already running, and returns with everything left running in
// the background. Phases run as parallel as their dependencies allow.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  apiserverCommand,
  type Command,
  containerdCommand,
  controllerManagerCommand,
  type DaemonRunner,
  daemonEnv,
  kubeletCommand,
  NODE_IP,
  REGISTRY_BIN,
  registryCommand,
  registryConfigText,
  schedulerCommand,
  storeCommands,
} from './commands.js';
import { type ClusterSettings, clusterPorts, mergeSettings, readSettings, writeSettings } from './config.js';
import { type ClusterLayout, clusterLayout } from './layout.js';
import { writeCniConfig, writeContainerdConfig } from './node-runtime.js';
import { ensurePki, writeKubeconfigs } from './pki.js';
import { get, listNodes, loadClientTls, type NodeView, waitUntil } from './probes.js';
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
  const settings = mergeSettings(readSettings(probeLayout.configFile), opts.requested);
  await writeSettings(probeLayout.configFile, settings);
  const layout = clusterLayout(opts.stateDir, settings.nodes);
  const ports = clusterPorts(settings, layout.store.length);
  const apiserverUrl = `https://${NODE_IP}:${ports.apiserver}`;
  const repoRoot = opts.runner.repoRoot;
  const env = daemonEnv(process.env);
  const started: string[] = [];
  const watched = new Map<string, Command>();

  /** Starts `cmd` unless it runs; `watch` makes its death fail the waits from now on. */
  const ensureRunning = async (cmd: Command, watch: boolean): Promise<void> => {
    if (watch) watched.set(cmd.name, cmd);
    if (runningPid(layout.pidFile(cmd.name), layout.stateDir, cmd.command) !== undefined) return;
    await startDetached(cmd, layout.logFile(cmd.name), layout.pidFile(cmd.name), env, repoRoot);
    if (!started.includes(cmd.name)) started.push(cmd.name);
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

  if (await ensurePki(layout, repoRoot)) opts.say(`generated the PKI in ${layout.pkiDir}`);
  await writeKubeconfigs(layout, apiserverUrl);
  await mkdir(layout.registryData, { recursive: true });
  await writeFile(layout.registryConfig, registryConfigText(layout, ports));
  const mirror = `${NODE_IP}:${ports.registry}`;
  for (const node of layout.nodes) await writeContainerdConfig(node, repoRoot, mirror);
  phase('pki, kubeconfigs, configs');

  const runner = opts.runner;
  const storeCmds = storeCommands(layout, ports, runner);
  const runtimeCmds = [registryCommand(layout), ...layout.nodes.map((n) => containerdCommand(n))];
  const apiserverCmd = apiserverCommand(layout, ports, runner);
  const clientCmds = [
    schedulerCommand(layout, ports, runner),
    controllerManagerCommand(layout, ports, settings, runner),
    ...layout.nodes.map((n) => kubeletCommand(layout, n, ports, runner)),
  ];
  // Everything but the apiserver starts at once: loading a Node daemon takes
  // longer than a store election, so overlapping them is most of the speed.
  // The scheduler, controller manager and kubelets retry until the apiserver
  // answers (kubelets give up after ~20 s and are started again at their gate
  // below). The apiserver waits for a store leader, because it exits at once
  // when the store has none. A process only counts as failed once what it
  // needs is up.
  const kubeletStart = Date.now();
  await Promise.all([...storeCmds, ...runtimeCmds].map((c) => ensureRunning(c, true)));
  await Promise.all(clientCmds.map((c) => ensureRunning(c, false)));
  phase('processes started');

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

  await ensureRunning(apiserverCmd, true);
  const admin = loadClientTls(
    join(layout.pkiDir, 'ca.crt'),
    join(layout.pkiDir, 'admin.crt'),
    join(layout.pkiDir, 'admin.key'),
  );
  await waitUntil(
    'kubit-apiserver /readyz',
    async () => (await get(`${apiserverUrl}/readyz`, admin)).status === 200,
    { timeoutMs: 60_000, intervalMs: 50, failed: died },
  );
  phase('apiserver ready');

  await Promise.all(clientCmds.map((c) => ensureRunning(c, true)));
  const wanted = new Set(layout.nodes.map((n) => n.name));
  // A Ready condition older than this up is a leftover of the last run, not news from a live kubelet.
  const freshSince = Math.floor(kubeletStart / 1000) * 1000;
  await waitUntil(
    `nodes ${[...wanted].join(', ')} to be Ready`,
    async () => {
      const nodes = (await listNodes(apiserverUrl, admin)).filter((n) => wanted.has(n.name));
      // The pod network follows node IPAM: each node's CNI config is written from its spec.podCIDR.
      for (const n of nodes) {
        const node = layout.nodes.find((l) => l.name === n.name);
        if (node && n.podCidr && (await writeCniConfig(node, repoRoot, n.podCidr))) {
          opts.say(`${n.name}: pod network ${n.podCidr} on bridge ${node.bridge}`);
        }
      }
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
  if (Date.now() - tPhase > 50) phase('images in the registry');
  return { layout, settings, apiserverUrl, phases, started, totalMs };
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
