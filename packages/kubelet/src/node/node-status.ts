// The Node object this kubelet registers and keeps current, and its Lease
// heartbeat in kube-node-lease.
import { readFileSync } from 'node:fs';
import { arch, cpus, hostname, release, totalmem } from 'node:os';
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { type KubeClient, microTime, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Node, NodeCondition, NodeStatus, Taint } from 'kubernetes-types/core/v1.js';
import type { ContainerRuntime } from '../runtime/types.js';

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
}

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
    runtimeReady = down.length === 0;
    why = down.map((c) => `${c.type}=false reason:${c.reason} message:${c.message}`).join(', ');
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

/** Registers the Node (or adopts an existing one) and keeps its status and Lease fresh. */
export class NodeAgent {
  private statusTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private lastStatus: NodeStatus | undefined;
  private nodeUid = '';

  constructor(
    private readonly client: KubeClient,
    private readonly runtime: ContainerRuntime,
    private readonly id: NodeIdentity,
    private readonly log: Logger,
    private readonly intervalMs = 10_000,
  ) {}

  async register(): Promise<void> {
    const status = await buildNodeStatus(this.id, this.runtime, undefined);
    const node: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: this.id.name, labels: nodeLabels(this.id) },
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
      };
      created = await this.client.update<Node>(resources.nodes, existing);
    }
    this.nodeUid = created.metadata?.uid ?? '';
    await this.updateStatus(status);
    // The Lease is a heartbeat, not a precondition: keep going if its namespace is not there yet.
    await this.renewLease().catch((err) =>
      this.log.warn({ err: (err as Error).message }, 'node lease update failed'),
    );
    this.log.info({ node: this.id.name }, 'node registered');
  }

  start(): void {
    const loop = (fn: () => Promise<void>, set: (t: NodeJS.Timeout) => void) => {
      const t = setTimeout(async () => {
        await fn().catch((err) => this.log.warn({ err }, 'node heartbeat failed'));
        loop(fn, set);
      }, this.intervalMs);
      t.unref();
      set(t);
    };
    loop(
      async () => this.updateStatus(await buildNodeStatus(this.id, this.runtime, this.lastStatus)),
      (t) => {
        this.statusTimer = t;
      },
    );
    loop(
      () => this.renewLease(),
      (t) => {
        this.leaseTimer = t;
      },
    );
  }

  stop(): void {
    if (this.statusTimer) clearTimeout(this.statusTimer);
    if (this.leaseTimer) clearTimeout(this.leaseTimer);
  }

  private async updateStatus(status: NodeStatus): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const node = await this.client.get<Node>(resources.nodes, this.id.name);
      try {
        await this.client.updateStatus<Node>(resources.nodes, {
          ...node,
          status: { ...node.status, ...status },
        });
        this.lastStatus = status;
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
