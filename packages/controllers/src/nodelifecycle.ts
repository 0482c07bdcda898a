// The node lifecycle controller: watches each node's heartbeat (its Lease in
// kube-node-lease, and the Ready condition's lastHeartbeatTime). A node silent
// for longer than the grace period gets every condition set to Unknown; Ready
// not True earns the NoSchedule and NoExecute taints (unreachable for Unknown,
// not-ready for False), which go away when the node recovers. Pods on a node
// with NoExecute taints are deleted when their tolerations run out.
import { isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from './cluster.js';
import type { Controller } from './controller.js';
import { type EventSink, noEvents } from './events.js';
import { isoNow } from './objects.js';
import { ensureIndex } from './shared-informers.js';
import { evictionTime, TAINT_NOT_READY, TAINT_UNREACHABLE } from './taints.js';
import type { Lease, Node, NodeCondition, Pod, Taint } from './types.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
const NODE_NAME_INDEX = 'nodeName';

export interface NodeLifecycleOptions {
  /** --node-monitor-grace-period (ms): silence after which a node is Unknown. */
  gracePeriodMs?: number;
  /** --node-monitor-period (ms): how often every node is checked. */
  monitorPeriodMs?: number;
  now?: () => number;
  events?: EventSink;
  log?: Logger;
}

/** What we last saw of a node's heartbeat, and when (by our own clock, immune to skew). */
interface Health {
  lease?: string;
  heartbeat?: string;
  probedAt: number;
}

export class NodeLifecycleController implements Controller {
  readonly name = 'nodelifecycle';
  readonly queue = new RateLimitingQueue<string>();
  private readonly nodes: Informer<Node>;
  private readonly leases: Informer<Lease>;
  private readonly pods: Informer<Pod>;
  private readonly health = new Map<string, Health>();
  private readonly now: () => number;
  private readonly graceMs: number;
  private readonly events: EventSink;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: NodeLifecycleOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.graceMs = opts.gracePeriodMs ?? 40_000;
    this.events = opts.events ?? noEvents;
    this.nodes = informers.forResource<Node>(resources.nodes);
    this.leases = informers.forResource<Lease>(resources.leases);
    this.pods = informers.forResource<Pod>(resources.pods);
    ensureIndex(this.pods, NODE_NAME_INDEX, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    this.nodes.addEventHandler({
      onAdd: (n) => this.queue.add(keyOf(n)),
      onUpdate: (_o, n) => this.queue.add(keyOf(n)),
      onDelete: (n) => {
        this.health.delete(n.metadata?.name ?? '');
      },
    });
    this.leases.addEventHandler({
      onUpdate: (_o, l) => {
        if (l.metadata?.namespace === NODE_LEASE_NAMESPACE) this.queue.add(l.metadata?.name ?? '');
      },
    });
    // A pod landing on a tainted node may have to go.
    this.pods.addEventHandler({
      onAdd: (p) => p.spec?.nodeName && this.queue.add(p.spec.nodeName),
      onUpdate: (o, p) =>
        p.spec?.nodeName && o.spec?.nodeName !== p.spec.nodeName && this.queue.add(p.spec.nodeName),
    });
  }

  start(): void {
    const period = this.opts.monitorPeriodMs ?? 5000;
    this.timer = setInterval(() => {
      for (const n of this.nodes.store.list()) this.queue.add(keyOf(n));
    }, period);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async reconcile(name: string): Promise<void> {
    let node = this.nodes.store.getByKey(name);
    if (!node) return;
    const now = this.now();
    const silentFor = now - this.probe(node, now);
    if (silentFor > this.graceMs) {
      node = await this.markUnknown(node, now);
      await this.markPodsNotReady(node, now);
    }
    node = await this.syncTaints(node, now);
    await this.evictPods(node, now);
    // Check again when the grace period would run out.
    if (silentFor <= this.graceMs) this.queue.addAfter(name, this.graceMs - silentFor + 1000);
  }

  /** The local time of the node's last heartbeat we noticed. */
  private probe(node: Node, now: number): number {
    const name = node.metadata?.name ?? '';
    const lease = this.leases.store.getByKey(`${NODE_LEASE_NAMESPACE}/${name}`)?.spec?.renewTime ?? undefined;
    const heartbeat = readyCondition(node)?.lastHeartbeatTime ?? undefined;
    const h = this.health.get(name);
    if (!h || h.lease !== lease || h.heartbeat !== heartbeat) {
      this.health.set(name, { lease, heartbeat, probedAt: now });
      return now;
    }
    return h.probedAt;
  }

  private async markUnknown(node: Node, now: number): Promise<Node> {
    const stamp = isoNow(now);
    const conds = node.status?.conditions ?? [];
    const ready = conds.find((c) => c.type === 'Ready');
    const never = ready === undefined;
    const reason = never ? 'NodeStatusNeverUpdated' : 'NodeStatusUnknown';
    const message = never ? 'Kubelet never posted node status.' : 'Kubelet stopped posting node status.';
    const types = new Set([
      'Ready',
      'MemoryPressure',
      'DiskPressure',
      'PIDPressure',
      ...conds.map((c) => c.type),
    ]);
    let changed = false;
    const next: NodeCondition[] = [];
    for (const type of types) {
      const c = conds.find((x) => x.type === type);
      if (type === 'NetworkUnavailable' && c) {
        next.push(c); // set by the network plugin, not the kubelet
        continue;
      }
      if (c?.status === 'Unknown') {
        next.push(c);
        continue;
      }
      changed = true;
      next.push({
        type,
        status: 'Unknown',
        reason,
        message,
        lastHeartbeatTime: c?.lastHeartbeatTime ?? node.metadata?.creationTimestamp,
        lastTransitionTime: stamp,
      });
    }
    if (!changed) return node;
    this.opts.log?.warn({ node: node.metadata?.name }, 'node stopped posting status; marking it Unknown');
    this.events.event(
      node,
      'Normal',
      'NodeNotReady',
      `Node ${node.metadata?.name} status is now: NodeNotReady`,
    );
    try {
      const updated = await this.cluster.update(
        resources.nodes,
        { ...node, status: { ...node.status, conditions: next } },
        'status',
      );
      // Our own write is not a heartbeat.
      const h = this.health.get(node.metadata?.name ?? '');
      if (h) h.heartbeat = readyCondition(updated)?.lastHeartbeatTime ?? undefined;
      return updated;
    } catch (err) {
      if (isNotFound(err)) return node;
      throw err;
    }
  }

  /**
   * Pods on a node that stopped reporting are not known to be ready: say so,
   * so Services and Deployments stop counting them (the kubelet cannot).
   */
  private async markPodsNotReady(node: Node, now: number): Promise<void> {
    for (const pod of this.pods.store.byIndex(NODE_NAME_INDEX, node.metadata?.name ?? '')) {
      const conds = pod.status?.conditions ?? [];
      const ready = conds.find((c) => c.type === 'Ready');
      if (ready?.status !== 'True' || pod.metadata?.deletionTimestamp) continue;
      const next = conds.map((c) =>
        c.type === 'Ready' ? { ...c, status: 'False', lastTransitionTime: isoNow(now) } : c,
      );
      try {
        await this.cluster.update(
          resources.pods,
          { ...pod, status: { ...pod.status, conditions: next } },
          'status',
        );
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
  }

  /** Ready Unknown → unreachable taints; False → not-ready taints; True → neither. */
  private async syncTaints(node: Node, now: number): Promise<Node> {
    const status = readyCondition(node)?.status;
    const wanted =
      status === 'Unknown' ? TAINT_UNREACHABLE : status === 'False' ? TAINT_NOT_READY : undefined;
    const taints = node.spec?.taints ?? [];
    const ours = (t: Taint) => t.key === TAINT_UNREACHABLE || t.key === TAINT_NOT_READY;
    const keep = taints.filter((t) => !ours(t) || t.key === wanted);
    const next = [...keep];
    for (const effect of ['NoSchedule', 'NoExecute']) {
      if (wanted && !keep.some((t) => t.key === wanted && t.effect === effect)) {
        next.push({ key: wanted, effect, ...(effect === 'NoExecute' ? { timeAdded: isoNow(now) } : {}) });
      }
    }
    if (next.length === taints.length && keep.length === taints.length) return node;
    this.opts.log?.info({ node: node.metadata?.name, taint: wanted ?? 'none' }, 'updating node taints');
    try {
      return await this.cluster.update(resources.nodes, {
        ...node,
        spec: { ...node.spec, taints: next.length ? next : undefined },
      });
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) {
        this.queue.add(node.metadata?.name ?? '');
        return node;
      }
      throw err;
    }
  }

  private async evictPods(node: Node, now: number): Promise<void> {
    const taints = node.spec?.taints ?? [];
    if (!taints.some((t) => t.effect === 'NoExecute')) return;
    let nextCheck: number | undefined;
    for (const pod of this.pods.store.byIndex(NODE_NAME_INDEX, node.metadata?.name ?? '')) {
      if (pod.metadata?.deletionTimestamp) continue;
      const at = evictionTime(pod, taints, now);
      if (at === undefined) continue;
      if (at === 'now' || at <= now) {
        this.opts.log?.info({ pod: keyOf(pod), node: node.metadata?.name }, 'evicting pod from tainted node');
        this.events.event(pod, 'Normal', 'TaintManagerEviction', `Marking for deletion Pod ${keyOf(pod)}`);
        try {
          await this.cluster.delete(resources.pods, pod.metadata?.namespace, pod.metadata?.name ?? '', {
            preconditions: { uid: pod.metadata?.uid },
          });
        } catch (err) {
          if (!isNotFound(err) && !isConflict(err)) throw err;
        }
      } else {
        nextCheck = nextCheck === undefined ? at : Math.min(nextCheck, at);
      }
    }
    if (nextCheck !== undefined) this.queue.addAfter(node.metadata?.name ?? '', nextCheck - now + 10);
  }
}

function readyCondition(n: Node): NodeCondition | undefined {
  return n.status?.conditions?.find((c) => c.type === 'Ready');
}
