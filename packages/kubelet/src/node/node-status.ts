// The Node object this kubelet registers and keeps current, and its Lease
// heartbeat in kube-node-lease.
import { readFileSync } from 'node:fs';
import { arch, cpus, hostname, release, totalmem } from 'node:os';
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { Informer, type KubeClient, microTime, resources } from '@kubit/client';
import type { ContainerRuntime } from '@kubit/cri';
import type { Logger } from '@kubit/daemon';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Node, NodeCondition, NodeStatus, Taint } from 'kubernetes-types/core/v1.js';
import { type CniConfig, podMtuOf } from './cni-config.js';

export const KUBELET_VERSION = 'v1.32.0-kubit';
export const LEASE_NAMESPACE = 'kube-node-lease';
export const LEASE_DURATION_SECONDS = 40;

export interface NodeIdentity {
  name: string;
  nodeIP: string;
  port: number;
  maxPods: number;
  labels: Record<string, string>;
  taints: Taint[];
  podCIDR?: string;
  /** --container-runtime-endpoint, published as kubeadm does (`kubit image load --nodes` finds containerd by it). */
  criSocket?: string;
}

/** The annotation kubeadm writes with the node's CRI endpoint. */
export const CRI_SOCKET_ANNOTATION = 'kubeadm.alpha.kubernetes.io/cri-socket';

function readTrimmed(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '';
  }
}

function osImage(): string {
  const text = readTrimmed('/etc/os-release');
  return /^PRETTY_NAME="?([^"\n]*)"?/m.exec(text)?.[1] ?? 'Linux';
}

const goArch = () => ({ x64: 'amd64', arm64: 'arm64' })[arch() as 'x64' | 'arm64'] ?? arch();

/** Labels every node carries, plus --node-labels. */
export function nodeLabels(id: NodeIdentity): Record<string, string> {
  return {
    'kubernetes.io/hostname': id.name,
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': goArch(),
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': goArch(),
    ...id.labels,
  };
}

export async function buildNodeStatus(
  id: NodeIdentity,
  runtime: ContainerRuntime,
  previous: NodeStatus | undefined,
  /** Why the kubelet's own part of the pod network is not ready (no pod CIDR yet), if it is not. */
  networkProblem?: string,
): Promise<NodeStatus> {
  const now = new Date();
  const ts = `${now.toISOString().slice(0, 19)}Z`;
  let runtimeVersion = 'unknown';
  let runtimeReady = false;
  let why = 'container runtime is down';
  try {
    const v = await runtime.version();
    runtimeVersion = `${v.runtimeName}://${v.runtimeVersion}`;
    const conditions = await runtime.status();
    const down = conditions.filter(
      (c) => !c.status && (c.type === 'RuntimeReady' || c.type === 'NetworkReady'),
    );
    const problems = down.map((c) => `${c.type}=false reason:${c.reason} message:${c.message}`);
    if (networkProblem) problems.push(networkProblem);
    runtimeReady = problems.length === 0;
    why = problems.join(', ');
  } catch (err) {
    why = `container runtime is down: ${(err as Error).message}`;
  }
  const cond = (type: string, status: boolean, reason: string, message: string): NodeCondition => {
    const prev = previous?.conditions?.find((c) => c.type === type);
    const s = status ? 'True' : 'False';
    return {
      type,
      status: s,
      reason,
      message,
      lastHeartbeatTime: ts,
      lastTransitionTime: prev?.status === s && prev.lastTransitionTime ? prev.lastTransitionTime : ts,
    };
  };
  const capacity = {
    cpu: String(cpus().length),
    memory: `${Math.floor(totalmem() / 1024)}Ki`,
    pods: String(id.maxPods),
    'ephemeral-storage': '100Gi',
  };
  return {
    capacity,
    allocatable: { ...capacity },
    addresses: [
      { type: 'InternalIP', address: id.nodeIP },
      { type: 'Hostname', address: id.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: id.port } },
    nodeInfo: {
      machineID: readTrimmed('/etc/machine-id'),
      systemUUID: readTrimmed('/sys/class/dmi/id/product_uuid') || readTrimmed('/etc/machine-id'),
      bootID: readTrimmed('/proc/sys/kernel/random/boot_id'),
      kernelVersion: release(),
      osImage: osImage(),
      containerRuntimeVersion: runtimeVersion,
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: goArch(),
    },
    conditions: [
      cond('MemoryPressure', false, 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      cond('DiskPressure', false, 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      cond('PIDPressure', false, 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      runtimeReady
        ? cond('Ready', true, 'KubeletReady', 'kubelet is posting ready status')
        : cond('Ready', false, 'KubeletNotReady', why),
    ],
  };
}

/** The parts of a status that matter for "did anything change" (not the heartbeat times). */
export function statusSignature(s: NodeStatus | undefined): string {
  if (!s) return '';
  return JSON.stringify({
    conditions: (s.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message]),
    addresses: s.addresses,
    capacity: s.capacity,
    allocatable: s.allocatable,
    daemonEndpoints: s.daemonEndpoints,
    nodeInfo: s.nodeInfo,
  });
}

export interface NodeAgentOptions {
  /** Lease renewal period (Kubernetes: 10 s). */
  leaseIntervalMs?: number;
  /** How often the status is recomputed; it is posted at once when it changed. */
  statusCheckMs?: number;
  /** Longest time between two posts of an unchanged status (Kubernetes: 1 min; 5 min in newer releases). */
  statusReportMs?: number;
  /** When the kubelet owns the node's CNI conflist (--cni-conf-dir). */
  cni?: CniConfig;
}

/**
 * Registers the Node (or adopts an existing one), keeps its Lease fresh every
 * 10 s, and posts its status as soon as something in it changes (the runtime's
 * NetworkReady, the pod network) and at least every minute otherwise. It also
 * watches its own Node for spec.podCIDR (node IPAM) to write the CNI conflist.
 */
export class NodeAgent {
  private statusTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private lastStatus: NodeStatus | undefined;
  private lastPostedAt = 0;
  private nodeUid = '';
  private checking: Promise<void> | undefined;
  private recheck = false;
  private stopped = false;
  private nodeInformer: Informer<Node> | undefined;
  private readonly leaseMs: number;
  private readonly checkMs: number;
  private readonly reportMs: number;
  private readonly cni: CniConfig | undefined;
  private podCidrHandler: ((cidr: string) => void) | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly runtime: ContainerRuntime,
    private readonly id: NodeIdentity,
    private readonly log: Logger,
    opts: NodeAgentOptions = {},
  ) {
    this.leaseMs = opts.leaseIntervalMs ?? 10_000;
    this.checkMs = opts.statusCheckMs ?? 1000;
    this.reportMs = opts.statusReportMs ?? 60_000;
    this.cni = opts.cni;
  }

  /**
   * Why pods may not get a sandbox yet, or undefined when they may: with a
   * kubelet-owned CNI config, the conflist must have been written for the node's subnet.
   */
  networkNotReady(): string | undefined {
    if (!this.cni || this.cni.podCidr) return undefined;
    return 'network is not ready: the node has no pod CIDR yet (node IPAM or --pod-cidr), so no CNI config';
  }

  /** Called after the CNI config was written for a (new) pod CIDR. */
  onPodCidr(handler: (cidr: string) => void): void {
    this.podCidrHandler = handler;
  }

  async register(): Promise<void> {
    const node: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: this.id.name,
        labels: nodeLabels(this.id),
        ...(this.id.criSocket ? { annotations: { [CRI_SOCKET_ANNOTATION]: this.id.criSocket } } : {}),
      },
      spec: {
        ...(this.id.taints.length ? { taints: this.id.taints } : {}),
        ...(this.id.podCIDR ? { podCIDR: this.id.podCIDR, podCIDRs: [this.id.podCIDR] } : {}),
      },
    };
    let created: Node;
    try {
      created = await this.client.create<Node>(resources.nodes, node);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await this.client.get<Node>(resources.nodes, this.id.name);
      existing.metadata = {
        ...existing.metadata,
        labels: { ...existing.metadata?.labels, ...nodeLabels(this.id) },
        ...(this.id.criSocket
          ? { annotations: { ...existing.metadata?.annotations, [CRI_SOCKET_ANNOTATION]: this.id.criSocket } }
          : {}),
      };
      created = await this.client.update<Node>(resources.nodes, existing);
    }
    this.nodeUid = created.metadata?.uid ?? '';
    // A subnet already known (a restart, or --pod-cidr): the network can be ready before the first status.
    await this.applyPodCidr(
      created.spec?.podCIDR ?? this.id.podCIDR,
      podMtuOf(created.metadata?.annotations),
    );
    await this.postStatus(await this.computeStatus());
    // The Lease is a heartbeat, not a precondition: keep going if its namespace is not there yet.
    await this.renewLease().catch((err) =>
      this.log.warn({ err: (err as Error).message }, 'node lease update failed'),
    );
    this.log.info({ node: this.id.name }, 'node registered');
  }

  start(): void {
    const leaseLoop = () => {
      this.leaseTimer = setTimeout(async () => {
        await this.renewLease().catch((err) =>
          this.log.warn({ err: (err as Error).message }, 'node lease update failed'),
        );
        if (!this.stopped) leaseLoop();
      }, this.leaseMs);
      this.leaseTimer.unref();
    };
    leaseLoop();
    const statusLoop = () => {
      this.statusTimer = setTimeout(async () => {
        await this.checkStatus();
        if (!this.stopped) statusLoop();
      }, this.checkMs);
      this.statusTimer.unref();
    };
    statusLoop();
    // Our own Node: spec.podCIDR arrives from node IPAM after registration.
    this.nodeInformer = new Informer<Node>(this.client, resources.nodes, {
      fieldSelector: `metadata.name=${this.id.name}`,
      onError: (err) => this.log.warn({ err: (err as Error).message }, 'node watch failed, retrying'),
    });
    const seen = (n: Node) => {
      if (n.metadata?.name !== this.id.name) return;
      void this.applyPodCidr(n.spec?.podCIDR, podMtuOf(n.metadata?.annotations)).catch((err) =>
        this.log.error({ err: (err as Error).message }, 'cannot write the CNI config'),
      );
    };
    this.nodeInformer.addEventHandler({ onAdd: seen, onUpdate: (_o, n) => seen(n) });
    this.nodeInformer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.statusTimer) clearTimeout(this.statusTimer);
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
    await this.nodeInformer?.stop();
  }

  /** Recompute the status now and post it if it changed (or is due). Calls overlapping one run coalesce. */
  checkStatus(): Promise<void> {
    if (this.checking) {
      this.recheck = true;
      return this.checking;
    }
    this.checking = (async () => {
      try {
        do {
          this.recheck = false;
          const status = await this.computeStatus();
          const changed = statusSignature(status) !== statusSignature(this.lastStatus);
          if (changed || Date.now() - this.lastPostedAt >= this.reportMs) {
            if (changed) this.log.debug({ node: this.id.name }, 'node status changed, posting it');
            await this.postStatus(status);
          }
        } while (this.recheck && !this.stopped);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'node status update failed');
      } finally {
        this.checking = undefined;
      }
    })();
    return this.checking;
  }

  private computeStatus(): Promise<NodeStatus> {
    return buildNodeStatus(this.id, this.runtime, this.lastStatus, this.networkNotReady());
  }

  /** Writes the conflist for the pod subnet and kubit-net's pod MTU (net.kubit.dev/pod-mtu) when either changed. */
  private async applyPodCidr(cidr: string | undefined, mtu: number | undefined): Promise<void> {
    if (!cidr || !this.cni || (this.cni.podCidr === cidr && this.cni.mtu === mtu)) return;
    const wrote = await this.cni.ensure(cidr, mtu);
    this.log.info({ podCIDR: cidr, mtu, conflist: this.cni.path, wrote }, 'pod network configured');
    this.podCidrHandler?.(cidr);
    // containerd loads the conflist within moments: look again soon, and post the change at once.
    void this.checkStatus();
    for (const ms of [100, 300, 600]) setTimeout(() => void this.checkStatus(), ms).unref();
  }

  private async postStatus(status: NodeStatus): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const node = await this.client.get<Node>(resources.nodes, this.id.name);
      try {
        await this.client.updateStatus<Node>(resources.nodes, {
          ...node,
          status: { ...node.status, ...status },
        });
        this.lastStatus = status;
        this.lastPostedAt = Date.now();
        return;
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
  }

  private async renewLease(): Promise<void> {
    const now = microTime();
    try {
      const lease = await this.client.get<Lease>(resources.leases, this.id.name, {
        namespace: LEASE_NAMESPACE,
      });
      lease.spec = {
        ...lease.spec,
        holderIdentity: this.id.name,
        leaseDurationSeconds: LEASE_DURATION_SECONDS,
        renewTime: now,
      };
      await this.client.update<Lease>(resources.leases, lease, { namespace: LEASE_NAMESPACE });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.client.create<Lease>(
        resources.leases,
        {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: {
            name: this.id.name,
            namespace: LEASE_NAMESPACE,
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.id.name, uid: this.nodeUid }],
          },
          spec: {
            holderIdentity: this.id.name,
            leaseDurationSeconds: LEASE_DURATION_SECONDS,
            renewTime: now,
          },
        },
        { namespace: LEASE_NAMESPACE },
      );
    }
  }
}

export function defaultHostname(): string {
  return hostname().toLowerCase();
}
