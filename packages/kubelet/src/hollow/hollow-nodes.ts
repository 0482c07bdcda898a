// Many hollow kubelets in one process, for load tests: each registers a Ready
// Node, renews its Lease every 10 s and reports the pods bound to it as Running.
// Nothing runs: there is no runtime at all, only the apiserver side. To stay
// cheap at 1,000 nodes × 10 pods on 2 cores, the nodes share ONE client, ONE pod
// informer (all bound pods, indexed by node) and ONE bounded write queue, and
// their heartbeats are spread evenly over the interval instead of firing together.
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { Informer, KubeClient, microTime, resources } from '@kubit/client';
import { createLogger, type Logger } from '@kubit/daemon';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Namespace, Node, NodeStatus, Pod, Taint } from 'kubernetes-types/core/v1.js';
import { KUBELET_VERSION, LEASE_DURATION_SECONDS, LEASE_NAMESPACE, nodeLabels } from '../node/node-status.js';
import {
  hollowExit,
  hollowFinishedStatus,
  hollowPodIP,
  hollowPodStatus,
  isReportedRunning,
} from './pod-status.js';
import { WriteQueue } from './write-queue.js';

export interface HollowNodesOptions {
  /** How many nodes (≥ 1). */
  nodes: number;
  /** Node names are `${namePrefix}${index}` (default "hollow-"). */
  namePrefix?: string;
  /** First index (default 0), so several processes can share a cluster. */
  firstIndex?: number;
  /** Admin kubeconfig (or one allowed to watch all pods and write every node). */
  kubeconfig?: string;
  /** A ready client instead of `kubeconfig` (tests). */
  client?: KubeClient;
  /**
   * Optional kubeconfig per node (its system:node:<name> identity) for the
   * node's own writes, as NodeRestriction wants; the shared pod watch still uses `kubeconfig`.
   */
  nodeKubeconfig?: (nodeName: string) => string;
  labels?: Record<string, string>;
  taints?: Taint[];
  cpu?: string;
  memory?: string;
  maxPods?: number;
  /** The address every hollow node reports (default 127.0.0.1). */
  nodeIP?: string;
  /** Lease renewal period (default 10 s). */
  leaseIntervalMs?: number;
  /** Node status refresh when nothing changed (default 60 s). */
  statusIntervalMs?: number;
  /** Most apiserver writes in flight at once (default 16). */
  concurrency?: number;
  log?: Logger;
}

export interface HollowNodesStats {
  nodes: number;
  registered: number;
  leaseRenewals: number;
  statusUpdates: number;
  podsRunning: number;
  writeErrors: number;
  queued: number;
}

export interface HollowNodes {
  readonly names: string[];
  stats(): HollowNodesStats;
  /** Stops heartbeats and the pod watch; the Nodes stay (and go NotReady like a dead node). */
  stop(): Promise<void>;
}

interface HollowNode {
  name: string;
  index: number;
  client: KubeClient;
  node?: Node;
  lease?: Lease;
  registered: boolean;
  /** Pod uid → slot, for stable fake IPs. */
  slots: Map<string, number>;
  nextSlot: number;
}

const ts = () => `${new Date().toISOString().slice(0, 19)}Z`;

function nodeStatus(
  o: Required<Pick<HollowNodesOptions, 'cpu' | 'memory' | 'maxPods' | 'nodeIP'>>,
  name: string,
  prev?: NodeStatus,
): NodeStatus {
  const now = ts();
  const capacity = { cpu: o.cpu, memory: o.memory, pods: String(o.maxPods), 'ephemeral-storage': '100Gi' };
  const cond = (type: string, status: string, reason: string, message: string) => {
    const before = prev?.conditions?.find((c) => c.type === type);
    return {
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime:
        before?.status === status && before.lastTransitionTime ? before.lastTransitionTime : now,
    };
  };
  return {
    capacity,
    allocatable: { ...capacity },
    addresses: [
      { type: 'InternalIP', address: o.nodeIP },
      { type: 'Hostname', address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
    nodeInfo: {
      machineID: name,
      systemUUID: name,
      bootID: 'hollow',
      kernelVersion: 'hollow',
      osImage: 'Kubit hollow node',
      containerRuntimeVersion: 'fake://0.1.0',
      kubeletVersion: KUBELET_VERSION,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    },
    conditions: [
      cond(
        'MemoryPressure',
        'False',
        'KubeletHasSufficientMemory',
        'kubelet has sufficient memory available',
      ),
      cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      cond('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status (hollow)'),
    ],
  };
}

export async function startHollowNodes(opts: HollowNodesOptions): Promise<HollowNodes> {
  if (!Number.isInteger(opts.nodes) || opts.nodes < 1) {
    throw new Error(`hollow nodes: nodes must be a positive integer, got ${opts.nodes}`);
  }
  const fleet = new HollowFleet(opts);
  await fleet.ensureLeaseNamespace();
  fleet.watchBoundPods();
  fleet.registerAll();
  fleet.start();
  return fleet.handle();
}

/** The shared parts of one process's hollow nodes: client, pod informer, write queue, timers, counters. */
class HollowFleet {
  private readonly log: Logger;
  private readonly prefix: string;
  private readonly first: number;
  private readonly leaseMs: number;
  private readonly statusMs: number;
  private readonly shape: Required<Pick<HollowNodesOptions, 'cpu' | 'memory' | 'maxPods' | 'nodeIP'>>;
  private readonly ownClient: boolean;
  private readonly client: KubeClient;
  private readonly nodeClients: KubeClient[] = [];
  private readonly counters = { registered: 0, leaseRenewals: 0, statusUpdates: 0, writeErrors: 0 };
  private readonly queue: WriteQueue;
  /** Pod uids reported Running. */
  private readonly running = new Set<string>();
  /** Pod uids with a write queued or in flight: one write per pod at a time. */
  private readonly inFlight = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Pod uid → the timer that ends it (pods annotated with kubit.dev/hollow-exit-code). */
  private readonly exits = new Map<string, NodeJS.Timeout>();
  private readonly nodes = new Map<string, HollowNode>();
  private readonly informer: Informer<Pod>;
  private stopped = false;

  constructor(private readonly opts: HollowNodesOptions) {
    this.log = opts.log ?? createLogger({ name: 'kubit-hollow' });
    this.prefix = opts.namePrefix ?? 'hollow-';
    this.first = opts.firstIndex ?? 0;
    this.leaseMs = opts.leaseIntervalMs ?? 10_000;
    this.statusMs = opts.statusIntervalMs ?? 60_000;
    this.shape = {
      cpu: opts.cpu ?? '4',
      memory: opts.memory ?? '16Gi',
      maxPods: opts.maxPods ?? 110,
      nodeIP: opts.nodeIP ?? '127.0.0.1',
    };
    this.ownClient = !opts.client;
    this.client =
      opts.client ??
      KubeClient.fromKubeconfig(
        { kubeconfig: opts.kubeconfig },
        { userAgent: 'kubit-hollow', timeoutMs: 30_000 },
      );
    this.queue = new WriteQueue(opts.concurrency ?? 16, (err, what) => {
      this.counters.writeErrors++;
      this.log.warn({ err: (err as Error).message, what }, 'hollow write failed');
    });
    this.createNodes();
    // One watch for all bound pods, indexed by node.
    this.informer = new Informer<Pod>(this.client, resources.pods, {
      fieldSelector: 'spec.nodeName!=',
      indexers: { node: (p) => [p.spec?.nodeName ?? ''] },
      onError: (err) => this.log.warn({ err: (err as Error).message }, 'hollow pod watch failed, retrying'),
    });
  }

  /** One HollowNode per name, each with its own client when nodes have their own identities. */
  private createNodes(): void {
    for (let i = 0; i < this.opts.nodes; i++) {
      const name = `${this.prefix}${this.first + i}`;
      let c = this.client;
      if (this.opts.nodeKubeconfig) {
        c = KubeClient.fromKubeconfig(
          { kubeconfig: this.opts.nodeKubeconfig(name) },
          { userAgent: `kubit-hollow/${name}` },
        );
        this.nodeClients.push(c);
      }
      this.nodes.set(name, {
        name,
        index: this.first + i,
        client: c,
        registered: false,
        slots: new Map(),
        nextSlot: 0,
      });
    }
  }

  /** The Lease namespace may not exist on a fresh cluster; an admin identity can make it. */
  async ensureLeaseNamespace(): Promise<void> {
    await this.client
      .create<Namespace>(resources.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: LEASE_NAMESPACE },
      })
      .catch(() => undefined);
  }

  watchBoundPods(): void {
    this.informer.addEventHandler({
      onAdd: (p) => this.onPod(p),
      onUpdate: (_old, p) => this.onPod(p),
      onDelete: (p) => {
        const uid = p.metadata?.uid ?? '';
        this.running.delete(uid);
        this.cancelExit(uid);
        this.nodes.get(p.spec?.nodeName ?? '')?.slots.delete(uid);
      },
    });
  }

  /**
   * Registers everyone through the bounded queue; each node's heartbeats start
   * at its own offset in the interval so renewals arrive as a steady stream.
   */
  registerAll(): void {
    const total = this.nodes.size;
    let i = 0;
    for (const n of this.nodes.values()) {
      const offset = Math.floor((i++ * this.leaseMs) / total);
      this.queue.push(`register ${n.name}`, () => this.bringUp(n, offset));
    }
  }

  start(): void {
    this.informer.start();
    this.log.info(
      { nodes: this.nodes.size, prefix: this.prefix, first: this.first },
      'hollow nodes starting',
    );
  }

  handle(): HollowNodes {
    return {
      names: [...this.nodes.keys()],
      stats: () => ({
        nodes: this.nodes.size,
        ...this.counters,
        podsRunning: this.running.size,
        queued: this.queue.size,
      }),
      stop: () => this.stop(),
    };
  }

  private async stop(): Promise<void> {
    this.stopped = true;
    this.clearTimers();
    this.queue.clear();
    await this.informer.stop();
    await this.queue.drain();
    this.clearTimers(); // any a task still running had set
    for (const c of this.nodeClients) c.close();
    if (this.ownClient) this.client.close();
  }

  private clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const t of this.exits.values()) clearTimeout(t);
    this.exits.clear();
  }

  private cancelExit(uid: string): void {
    const t = this.exits.get(uid);
    if (t) clearTimeout(t);
    this.exits.delete(uid);
  }

  /** A running pod that asked to exit: ends it after its run time (once). */
  private scheduleExit(n: HollowNode, pod: Pod, uid: string): void {
    const exit = hollowExit(pod);
    if (!exit || this.exits.has(uid) || this.stopped) return;
    const t = setTimeout(() => {
      if (this.stopped) return;
      this.queue.push(`exit pod ${pod.metadata?.namespace}/${pod.metadata?.name}`, () =>
        this.reportExited(n, pod, uid, exit.exitCode),
      );
    }, exit.runMs);
    this.exits.set(uid, t);
  }

  /** Writes the pod's terminal status, from its latest copy (never over a deleted or replaced pod). */
  private async reportExited(n: HollowNode, pod: Pod, uid: string, exitCode: number): Promise<void> {
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    let current = this.informer.store.getByKey(`${namespace}/${name}`) ?? pod;
    for (let attempt = 0; ; attempt++) {
      if (current.metadata?.uid !== uid || current.metadata?.deletionTimestamp) return;
      const phase = current.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') return;
      try {
        await n.client.updateStatus<Pod>(
          resources.pods,
          { ...current, status: hollowFinishedStatus(current, exitCode) },
          { namespace },
        );
        this.running.delete(uid);
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= 3) throw err;
        current = await n.client.get<Pod>(resources.pods, name, { namespace });
      }
    }
  }

  /** Registers a node (retried until it works: the apiserver may still be starting), then starts its heartbeats. */
  private async bringUp(n: HollowNode, offset: number): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        await this.register(n);
        break;
      } catch (err) {
        if (attempt % 10 === 0)
          this.log.warn(
            { node: n.name, err: (err as Error).message },
            'hollow node registration failed, retrying',
          );
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** Math.min(attempt, 5))));
      }
    }
    if (this.stopped) return;
    await this.renewLease(n).catch((err) =>
      this.log.warn({ node: n.name, err: (err as Error).message }, 'node lease create failed'),
    );
    this.every(offset, this.leaseMs, () => this.queue.push(`lease ${n.name}`, () => this.renewLease(n)));
    this.every(this.statusMs + Math.floor((offset * this.statusMs) / this.leaseMs), this.statusMs, () =>
      this.queue.push(`status ${n.name}`, () => this.postStatus(n)),
    );
    // Pods that were bound before the node finished registering.
    for (const p of this.informer.store.byIndex('node', n.name)) this.onPod(p);
  }

  /** Runs fn after `delayMs`, then every `periodMs`, until stop. */
  private every(delayMs: number, periodMs: number, fn: () => void): void {
    const tick = (delay: number) => {
      if (this.stopped) return;
      const t = setTimeout(() => {
        this.timers.delete(t);
        if (this.stopped) return;
        fn();
        tick(periodMs);
      }, delay);
      this.timers.add(t);
    };
    tick(delayMs);
  }

  private async register(n: HollowNode): Promise<void> {
    const body: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: n.name,
        labels: {
          ...nodeLabels({
            name: n.name,
            nodeIP: this.shape.nodeIP,
            port: 10250,
            maxPods: this.shape.maxPods,
            labels: {},
            taints: [],
          }),
          'kubernetes.io/arch': 'amd64',
          'beta.kubernetes.io/arch': 'amd64',
          ...this.opts.labels,
        },
        annotations: { 'kubit.dev/hollow': 'true' },
      },
      spec: this.opts.taints?.length ? { taints: this.opts.taints } : {},
    };
    let node: Node;
    try {
      node = await n.client.create<Node>(resources.nodes, body);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      node = await n.client.get<Node>(resources.nodes, n.name);
    }
    n.node = node;
    await this.postStatus(n);
    n.registered = true;
    this.counters.registered++;
  }

  private async postStatus(n: HollowNode): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = n.node ?? (await n.client.get<Node>(resources.nodes, n.name));
      try {
        n.node = await n.client.updateStatus<Node>(resources.nodes, {
          ...current,
          status: { ...current.status, ...nodeStatus(this.shape, n.name, current.status) },
        });
        this.counters.statusUpdates++;
        return;
      } catch (err) {
        n.node = undefined; // stale (a controller wrote the Node): read it again
        if (!isConflict(err) || attempt >= 3) throw err;
      }
    }
  }

  private async renewLease(n: HollowNode): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (!n.lease) {
          n.lease = await n.client
            .get<Lease>(resources.leases, n.name, { namespace: LEASE_NAMESPACE })
            .catch((err) => (isNotFound(err) ? undefined : Promise.reject(err)));
        }
        const spec = {
          holderIdentity: n.name,
          leaseDurationSeconds: LEASE_DURATION_SECONDS,
          renewTime: microTime(),
        };
        n.lease = n.lease
          ? await n.client.update<Lease>(
              resources.leases,
              { ...n.lease, spec: { ...n.lease.spec, ...spec } },
              { namespace: LEASE_NAMESPACE },
            )
          : await n.client.create<Lease>(
              resources.leases,
              {
                apiVersion: 'coordination.k8s.io/v1',
                kind: 'Lease',
                metadata: {
                  name: n.name,
                  namespace: LEASE_NAMESPACE,
                  ownerReferences: n.node?.metadata?.uid
                    ? [{ apiVersion: 'v1', kind: 'Node', name: n.name, uid: n.node.metadata.uid }]
                    : undefined,
                },
                spec,
              },
              { namespace: LEASE_NAMESPACE },
            );
        this.counters.leaseRenewals++;
        return;
      } catch (err) {
        n.lease = undefined;
        if (!(isConflict(err) || isAlreadyExists(err)) || attempt >= 3) throw err;
      }
    }
  }

  /** What a kubelet would do for a bound pod it saw change: finish its deletion, or report it Running. */
  private onPod(pod: Pod): void {
    const n = this.nodes.get(pod.spec?.nodeName ?? '');
    const uid = pod.metadata?.uid ?? '';
    if (!n?.registered || !uid || this.inFlight.has(uid)) return;
    if (pod.metadata?.deletionTimestamp) {
      this.finishDeletion(n, pod, uid);
      return;
    }
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    if (isReportedRunning(pod)) {
      this.running.add(uid);
      this.scheduleExit(n, pod, uid);
      return;
    }
    this.reportRunning(n, pod, uid);
  }

  /** Nothing to stop: finish the graceful deletion the way a kubelet does once its containers are gone. */
  private finishDeletion(n: HollowNode, pod: Pod, uid: string): void {
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    this.inFlight.add(uid);
    this.queue.push(`delete pod ${namespace}/${name}`, async () => {
      try {
        await n.client
          .delete(resources.pods, name, { namespace, gracePeriodSeconds: 0, preconditions: { uid } })
          .catch((err) => (isNotFound(err) || isConflict(err) ? undefined : Promise.reject(err)));
        this.running.delete(uid);
      } finally {
        this.inFlight.delete(uid);
      }
    });
  }

  /** Writes the pod's Running status, with a fake IP that stays the same for the pod's life. */
  private reportRunning(n: HollowNode, pod: Pod, uid: string): void {
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    let slot = n.slots.get(uid);
    if (slot === undefined) {
      slot = n.nextSlot++;
      n.slots.set(uid, slot);
    }
    const podIP = pod.status?.podIP || hollowPodIP(n.index, slot);
    this.inFlight.add(uid);
    this.queue.push(`status pod ${namespace}/${name}`, async () => {
      try {
        let current = pod;
        for (let attempt = 0; ; attempt++) {
          try {
            await n.client.updateStatus<Pod>(
              resources.pods,
              { ...current, status: hollowPodStatus(current, this.shape.nodeIP, podIP) },
              { namespace },
            );
            this.running.add(uid);
            // Its echo may arrive while this write is still in flight, and be skipped.
            this.scheduleExit(n, current, uid);
            return;
          } catch (err) {
            if (isNotFound(err)) return;
            if (!isConflict(err) || attempt >= 3) throw err;
            current = await n.client.get<Pod>(resources.pods, name, { namespace });
            if (current.metadata?.uid !== uid) return;
          }
        }
      } finally {
        this.inFlight.delete(uid);
      }
    });
  }
}
