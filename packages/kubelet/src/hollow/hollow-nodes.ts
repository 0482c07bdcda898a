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
import { hollowPodIP, hollowPodStatus, isReportedRunning } from './pod-status.js';
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
  const log = opts.log ?? createLogger({ name: 'kubit-hollow' });
  const prefix = opts.namePrefix ?? 'hollow-';
  const first = opts.firstIndex ?? 0;
  const leaseMs = opts.leaseIntervalMs ?? 10_000;
  const statusMs = opts.statusIntervalMs ?? 60_000;
  const shape = {
    cpu: opts.cpu ?? '4',
    memory: opts.memory ?? '16Gi',
    maxPods: opts.maxPods ?? 110,
    nodeIP: opts.nodeIP ?? '127.0.0.1',
  };
  const ownClient = !opts.client;
  const client =
    opts.client ??
    KubeClient.fromKubeconfig(
      { kubeconfig: opts.kubeconfig },
      { userAgent: 'kubit-hollow', timeoutMs: 30_000 },
    );
  const nodeClients: KubeClient[] = [];
  const queue = new WriteQueue(opts.concurrency ?? 16, (err, what) => {
    counters.writeErrors++;
    log.warn({ err: (err as Error).message, what }, 'hollow write failed');
  });
  const counters = { registered: 0, leaseRenewals: 0, statusUpdates: 0, writeErrors: 0 };
  const running = new Set<string>(); // pod uids reported Running
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;

  const nodes = new Map<string, HollowNode>();
  for (let i = 0; i < opts.nodes; i++) {
    const name = `${prefix}${first + i}`;
    let c = client;
    if (opts.nodeKubeconfig) {
      c = KubeClient.fromKubeconfig(
        { kubeconfig: opts.nodeKubeconfig(name) },
        { userAgent: `kubit-hollow/${name}` },
      );
      nodeClients.push(c);
    }
    nodes.set(name, { name, index: first + i, client: c, registered: false, slots: new Map(), nextSlot: 0 });
  }

  /** Runs fn after `delayMs`, then every `periodMs`, until stop. */
  const every = (delayMs: number, periodMs: number, fn: () => void) => {
    const tick = (delay: number) => {
      if (stopped) return;
      const t = setTimeout(() => {
        timers.delete(t);
        if (stopped) return;
        fn();
        tick(periodMs);
      }, delay);
      timers.add(t);
    };
    tick(delayMs);
  };

  async function register(n: HollowNode): Promise<void> {
    const body: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: n.name,
        labels: {
          ...nodeLabels({
            name: n.name,
            nodeIP: shape.nodeIP,
            port: 10250,
            maxPods: shape.maxPods,
            labels: {},
            taints: [],
          }),
          'kubernetes.io/arch': 'amd64',
          'beta.kubernetes.io/arch': 'amd64',
          ...opts.labels,
        },
        annotations: { 'kubit.dev/hollow': 'true' },
      },
      spec: opts.taints?.length ? { taints: opts.taints } : {},
    };
    let node: Node;
    try {
      node = await n.client.create<Node>(resources.nodes, body);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      node = await n.client.get<Node>(resources.nodes, n.name);
    }
    n.node = node;
    await postStatus(n);
    n.registered = true;
    counters.registered++;
  }

  async function postStatus(n: HollowNode): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const current = n.node ?? (await n.client.get<Node>(resources.nodes, n.name));
      try {
        n.node = await n.client.updateStatus<Node>(resources.nodes, {
          ...current,
          status: { ...current.status, ...nodeStatus(shape, n.name, current.status) },
        });
        counters.statusUpdates++;
        return;
      } catch (err) {
        n.node = undefined; // stale (a controller wrote the Node): read it again
        if (!isConflict(err) || attempt >= 3) throw err;
      }
    }
  }

  async function renewLease(n: HollowNode): Promise<void> {
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
        counters.leaseRenewals++;
        return;
      } catch (err) {
        n.lease = undefined;
        if (!(isConflict(err) || isAlreadyExists(err)) || attempt >= 3) throw err;
      }
    }
  }

  // The Lease namespace may not exist on a fresh cluster; an admin identity can make it.
  await client
    .create<Namespace>(resources.namespaces, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: LEASE_NAMESPACE },
    })
    .catch(() => undefined);

  // One watch for all bound pods, indexed by node.
  const informer = new Informer<Pod>(client, resources.pods, {
    fieldSelector: 'spec.nodeName!=',
    indexers: { node: (p) => [p.spec?.nodeName ?? ''] },
    onError: (err) => log.warn({ err: (err as Error).message }, 'hollow pod watch failed, retrying'),
  });
  const inFlight = new Set<string>();
  function onPod(pod: Pod): void {
    const n = nodes.get(pod.spec?.nodeName ?? '');
    const uid = pod.metadata?.uid ?? '';
    if (!n?.registered || !uid || inFlight.has(uid)) return;
    const namespace = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    if (pod.metadata?.deletionTimestamp) {
      // Nothing to stop: finish the graceful deletion the way a kubelet does once its containers are gone.
      inFlight.add(uid);
      queue.push(`delete pod ${namespace}/${name}`, async () => {
        try {
          await n.client
            .delete(resources.pods, name, { namespace, gracePeriodSeconds: 0, preconditions: { uid } })
            .catch((err) => (isNotFound(err) || isConflict(err) ? undefined : Promise.reject(err)));
          running.delete(uid);
        } finally {
          inFlight.delete(uid);
        }
      });
      return;
    }
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    if (isReportedRunning(pod)) {
      running.add(uid);
      return;
    }
    let slot = n.slots.get(uid);
    if (slot === undefined) {
      slot = n.nextSlot++;
      n.slots.set(uid, slot);
    }
    const podIP = pod.status?.podIP || hollowPodIP(n.index, slot);
    inFlight.add(uid);
    queue.push(`status pod ${namespace}/${name}`, async () => {
      try {
        let current = pod;
        for (let attempt = 0; ; attempt++) {
          try {
            await n.client.updateStatus<Pod>(
              resources.pods,
              { ...current, status: hollowPodStatus(current, shape.nodeIP, podIP) },
              { namespace },
            );
            running.add(uid);
            return;
          } catch (err) {
            if (isNotFound(err)) return;
            if (!isConflict(err) || attempt >= 3) throw err;
            current = await n.client.get<Pod>(resources.pods, name, { namespace });
            if (current.metadata?.uid !== uid) return;
          }
        }
      } finally {
        inFlight.delete(uid);
      }
    });
  }
  informer.addEventHandler({
    onAdd: (p) => onPod(p),
    onUpdate: (_old, p) => onPod(p),
    onDelete: (p) => {
      const uid = p.metadata?.uid ?? '';
      running.delete(uid);
      nodes.get(p.spec?.nodeName ?? '')?.slots.delete(uid);
    },
  });
  // Register everyone through the bounded queue; each node's heartbeats start
  // at its own offset in the interval so renewals arrive as a steady stream.
  const total = nodes.size;
  let i = 0;
  for (const n of nodes.values()) {
    const offset = Math.floor((i++ * leaseMs) / total);
    queue.push(`register ${n.name}`, async () => {
      // Retried until it works: the apiserver may still be starting.
      for (let attempt = 0; !stopped; attempt++) {
        try {
          await register(n);
          break;
        } catch (err) {
          if (attempt % 10 === 0)
            log.warn(
              { node: n.name, err: (err as Error).message },
              'hollow node registration failed, retrying',
            );
          await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** Math.min(attempt, 5))));
        }
      }
      if (stopped) return;
      await renewLease(n).catch((err) =>
        log.warn({ node: n.name, err: (err as Error).message }, 'node lease create failed'),
      );
      every(offset, leaseMs, () => queue.push(`lease ${n.name}`, () => renewLease(n)));
      every(statusMs + Math.floor((offset * statusMs) / leaseMs), statusMs, () =>
        queue.push(`status ${n.name}`, () => postStatus(n)),
      );
      // Pods that were bound before the node finished registering.
      for (const p of informer.store.byIndex('node', n.name)) onPod(p);
    });
  }

  informer.start();
  log.info({ nodes: total, prefix, first }, 'hollow nodes starting');

  return {
    names: [...nodes.keys()],
    stats: () => ({
      nodes: total,
      ...counters,
      podsRunning: running.size,
      queued: queue.size,
    }),
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      queue.clear();
      await informer.stop();
      await queue.drain();
      for (const t of timers) clearTimeout(t); // any a task still running had set
      timers.clear();
      for (const c of nodeClients) c.close();
      if (ownClient) client.close();
    },
  };
}
