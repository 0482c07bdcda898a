// The node IPAM controller (range allocator): gives every node a pod subnet
// (spec.podCIDR and spec.podCIDRs) carved from --cluster-cidr in
// /--node-cidr-mask-size pieces. At start it marks the subnets existing nodes
// already hold, so it never hands one out twice; a deleted node's subnet is
// free again.
import { isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { parseCidr, SubnetSet } from './cidr.js';
import { type Cluster, keyOf } from './cluster.js';
import type { Controller } from './controller.js';
import type { Node } from './types.js';

export interface NodeIpamOptions {
  clusterCIDR: string;
  nodeCIDRMaskSize: number;
  log?: Logger;
}

export class NodeIpamController implements Controller {
  readonly name = 'nodeipam';
  readonly queue = new RateLimitingQueue<string>();
  private readonly nodes: Informer<Node>;
  readonly subnets: SubnetSet;
  /** Node name → subnet index it holds (as we last saw or assigned it). */
  private readonly held = new Map<string, number>();
  private primed = false;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: NodeIpamOptions,
  ) {
    this.subnets = new SubnetSet(parseCidr(opts.clusterCIDR), opts.nodeCIDRMaskSize);
    this.nodes = informers.forResource<Node>(resources.nodes);
    this.nodes.addEventHandler({
      onAdd: (n) => this.queue.add(keyOf(n)),
      onUpdate: (_o, n) => this.queue.add(keyOf(n)),
      onDelete: (n) => this.queue.add(keyOf(n)),
    });
  }

  /** Rebuilds the allocation map from the nodes that exist (call once the cache has synced). */
  private prime(): void {
    if (this.primed) return;
    this.primed = true;
    for (const n of this.nodes.store.list()) {
      const i = this.ours(n);
      if (i === undefined) continue;
      if (this.subnets.isUsed(i)) {
        this.opts.log?.warn(
          { node: n.metadata?.name, podCIDR: n.spec?.podCIDR },
          'two nodes hold the same podCIDR',
        );
        continue;
      }
      this.subnets.occupy(i);
      this.held.set(n.metadata?.name ?? '', i);
    }
  }

  private ours(n: Node): number | undefined {
    const cidr = n.spec?.podCIDR ?? n.spec?.podCIDRs?.[0];
    return cidr ? this.subnets.indexOf(cidr) : undefined;
  }

  async reconcile(name: string): Promise<void> {
    this.prime();
    const node = this.nodes.store.getByKey(name);
    const held = this.held.get(name);
    if (!node) {
      if (held !== undefined) {
        this.subnets.release(held);
        this.held.delete(name);
      }
      return;
    }
    if (node.spec?.podCIDR || (node.spec?.podCIDRs?.length ?? 0) > 0) {
      const i = this.ours(node);
      if (i !== undefined && held === undefined && !this.subnets.isUsed(i)) {
        this.subnets.occupy(i);
        this.held.set(name, i);
      }
      return;
    }
    if (node.metadata?.deletionTimestamp) return;
    let i = held;
    if (i === undefined) {
      i = this.subnets.allocate();
      if (i === undefined) {
        throw new Error(
          `failed to allocate cidr from cluster cidr ${this.opts.clusterCIDR}: CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range`,
        );
      }
      this.held.set(name, i);
    }
    const cidr = this.subnets.subnet(i);
    const next = structuredClone(node);
    next.spec = { ...next.spec, podCIDR: cidr, podCIDRs: [cidr] };
    try {
      await this.cluster.update(resources.nodes, next);
      this.opts.log?.info({ node: name, podCIDR: cidr }, 'allocated podCIDR');
    } catch (err) {
      if (isNotFound(err)) {
        this.subnets.release(i);
        this.held.delete(name);
        return;
      }
      // Keep the reservation: the retry writes the same subnet.
      if (isConflict(err)) throw err;
      throw err;
    }
  }
}
