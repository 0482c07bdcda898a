// The pod garbage collector: force-deletes pods nobody will ever finish —
// pods bound to a node that no longer exists (after a quarantine, in case the
// node is only late to appear in the cache), and pods being deleted that were
// never scheduled (no kubelet will confirm their end).
import { isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from './cluster.js';
import type { Controller } from './controller.js';
import type { Node, Pod } from './types.js';

export interface PodGCOptions {
  /** How long a node must stay missing before its pods go (ms). */
  quarantineMs?: number;
  /** How often every pod is checked (ms). */
  periodMs?: number;
  now?: () => number;
  log?: Logger;
}

export class PodGarbageCollector implements Controller {
  readonly name = 'podgc';
  readonly queue = new RateLimitingQueue<string>();
  private readonly pods: Informer<Pod>;
  private readonly nodes: Informer<Node>;
  /** Node name → when we first saw it missing. */
  private readonly missingSince = new Map<string, number>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: PodGCOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.pods = informers.forResource<Pod>(resources.pods);
    this.nodes = informers.forResource<Node>(resources.nodes);
    this.pods.addEventHandler({
      onAdd: (p) => this.queue.add(keyOf(p)),
      onUpdate: (_o, p) => this.queue.add(keyOf(p)),
    });
    this.nodes.addEventHandler({
      onAdd: (n) => this.missingSince.delete(n.metadata?.name ?? ''),
      onDelete: () => this.enqueueAll(),
    });
  }

  private enqueueAll(): void {
    for (const p of this.pods.store.list()) this.queue.add(keyOf(p));
  }

  start(): void {
    this.timer = setInterval(() => this.enqueueAll(), this.opts.periodMs ?? 20_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  async reconcile(key: string): Promise<void> {
    const pod = this.pods.store.getByKey(key);
    if (!pod) return;
    const node = pod.spec?.nodeName;
    if (!node) {
      if (pod.metadata?.deletionTimestamp) await this.forceDelete(pod, 'unscheduled and terminating');
      return;
    }
    if (this.nodes.store.getByKey(node)) {
      this.missingSince.delete(node);
      return;
    }
    const quarantine = this.opts.quarantineMs ?? 40_000;
    const now = this.now();
    const since = this.missingSince.get(node) ?? now;
    this.missingSince.set(node, since);
    if (now - since < quarantine) {
      this.queue.addAfter(key, quarantine - (now - since) + 100);
      return;
    }
    // The cache could lag: confirm with the apiserver that the node is really gone.
    try {
      await this.cluster.get(resources.nodes, undefined, node);
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await this.forceDelete(pod, `node ${node} does not exist`);
  }

  private async forceDelete(pod: Pod, why: string): Promise<void> {
    this.opts.log?.info({ pod: keyOf(pod), why }, 'force-deleting pod');
    try {
      await this.cluster.delete(resources.pods, pod.metadata?.namespace, pod.metadata?.name ?? '', {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata?.uid },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}
