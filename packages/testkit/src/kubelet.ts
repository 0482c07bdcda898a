// A real kubit-kubelet for a test or a benchmark: the flags that make it the
// node `node` of a test control plane (its identity's kubeconfig from the
// control plane's PKI, a test containerd, loopback addresses, a free port, its
// own root dir), started as a process and stopped by its PID.
import { join } from 'node:path';
import type { Node } from '@kubit/api';
import { type KubeClient, resources } from '@kubit/client';
import type { TestContainerd } from './containerd.js';
import type { ControlPlane } from './controlplane.js';
import { daemonCommand, freePort, startProcess, type TestProcess, waitFor } from './process.js';

export interface TestKubeletOptions {
  /** The node's name (--hostname-override); the control plane must have been started with it in `nodes`. */
  node: string;
  /** The containerd it runs pods on; without one the kubelet is hollow (--container-runtime-endpoint=fake://). */
  containerd?: TestContainerd;
  /** Where the kubelet keeps its files: --root-dir is <dir>/root and the log <dir>/kubelet.log unless given below. */
  dir: string;
  rootDir?: string;
  logFile?: string;
  /** The process's name in failure messages; "kubit-kubelet" by default. */
  name?: string;
  /** --node-ip; 127.0.0.1 by default. */
  nodeIp?: string;
  /**
   * Serve the kubelet API with the node's serving cert from the control plane's
   * PKI and accept the control plane's clients (what logs and exec through the
   * apiserver need); on by default.
   */
  tls?: boolean;
  /**
   * --pod-cidr: containerd's pod subnet by default (its CNI config is already
   * written for it); false for none, as a node that waits for node IPAM.
   */
  podCidr?: string | false;
  /** Let the kubelet write its own CNI config into this directory for containerd's bridge and network. */
  cniConfDir?: string;
  /** More flags, after the others. */
  extraArgs?: string[];
  /** More environment (KUBIT_LOG_FORMAT=json is always set). */
  env?: NodeJS.ProcessEnv;
  /** Another way to run the kubelet (e.g. an older entry point); testkit's daemonCommand by default. */
  command?: { command: string; args: string[] };
}

/** A kubit-kubelet process and what a test needs to reach, restart or wait on it. */
export interface TestKubelet {
  readonly node: string;
  /** The flags it was started with (without the command's own). */
  readonly args: string[];
  readonly logFile: string;
  /** The current process; a new one after restart(). */
  readonly process: TestProcess;
  /** Starts the kubelet again with the same flags, e.g. after process.kill(); the old process must be gone. */
  restart(): TestProcess;
  /** Polls until the node reports Ready=True (failing with the log's path when the kubelet has exited). */
  waitReady(client: KubeClient, timeoutMs?: number, intervalMs?: number): Promise<void>;
  /** Stops the current process by its PID (SIGTERM, then SIGKILL). */
  stop(): Promise<void>;
}

/** The kubelet's flags for `opts` (a fresh free port each call). */
async function testKubeletArgs(cp: ControlPlane, opts: TestKubeletOptions): Promise<string[]> {
  const { containerd, node } = opts;
  const args = [
    `--kubeconfig=${await cp.kubeconfigForNode(node)}`,
    `--container-runtime-endpoint=${containerd?.endpoint ?? 'fake://'}`,
    `--hostname-override=${node}`,
    `--node-ip=${opts.nodeIp ?? '127.0.0.1'}`,
    '--address=127.0.0.1',
    `--port=${await freePort()}`,
    `--root-dir=${opts.rootDir ?? join(opts.dir, 'root')}`,
  ];
  if (opts.tls ?? true) {
    const server = cp.pki.kubeletServer(node);
    args.push(
      `--tls-cert-file=${server.cert}`,
      `--tls-private-key-file=${server.key}`,
      `--client-ca-file=${cp.caFile}`,
    );
  }
  const podCidr = opts.podCidr ?? containerd?.podCidr;
  if (podCidr) args.push(`--pod-cidr=${podCidr}`);
  if (opts.cniConfDir !== undefined) {
    if (!containerd)
      throw new Error('startTestKubelet: cniConfDir needs a containerd (its bridge and network)');
    args.push(
      `--cni-conf-dir=${opts.cniConfDir}`,
      `--cni-bridge-name=${containerd.bridge}`,
      `--cni-network-name=${containerd.networkName}`,
    );
  }
  return [...args, ...(opts.extraArgs ?? [])];
}

/**
 * Starts kubit-kubelet as the node `opts.node` of `cp`. It does not wait for
 * the node: call waitReady() when the test needs it Ready (some tests look at
 * it NotReady first).
 */
export async function startTestKubelet(cp: ControlPlane, opts: TestKubeletOptions): Promise<TestKubelet> {
  const args = await testKubeletArgs(cp, opts);
  const logFile = opts.logFile ?? join(opts.dir, 'kubelet.log');
  const cmd = opts.command ?? daemonCommand('kubelet', 'main.ts');
  const spawn = () =>
    startProcess({
      name: opts.name ?? 'kubit-kubelet',
      command: cmd.command,
      args: [...cmd.args, ...args],
      env: { KUBIT_LOG_FORMAT: 'json', ...opts.env },
      logFile,
    });
  let current = spawn();
  return {
    node: opts.node,
    args,
    logFile,
    get process() {
      return current;
    },
    restart() {
      if (current.running) throw new Error(`the kubelet of ${opts.node} is still running; stop it first`);
      current = spawn();
      return current;
    },
    async waitReady(client, timeoutMs = 60_000, intervalMs = 250) {
      await waitFor(
        `the node ${opts.node} to be Ready`,
        async () => {
          if (!current.running) throw new Error(`the kubelet exited; see ${logFile}`);
          const n = await client.get<Node>(resources.nodes, opts.node).catch(() => undefined);
          return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
        },
        timeoutMs,
        intervalMs,
      );
    },
    stop: () => current.stop(),
  };
}
