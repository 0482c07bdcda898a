// service-lb-ipam: LoadBalancer Services without a cloud. Kubit has no cloud
// provider to provision load balancers (Kubernetes' service-lb-controller
// lives in cloud-controller-manager); what it can do everywhere is what
// MetalLB's controller and k3s's servicelb do: hand each LoadBalancer Service
// an address from a pool the operator owns (--load-balancer-ip-range) and
// write it to status.loadBalancer.ingress, where every node's kubit-proxy
// answers on it. The name says it manages addresses (IPAM) for Services'
// load balancers, and does no balancing itself.
//
// Services with spec.loadBalancerClass belong to another implementation and
// are never touched. The assignment is recomputed from every Service's status
// on each sync (pool.ts), so nothing is kept but what the apiserver holds:
// a restart or a new leader keeps every address where it is.

import type { Service } from '@kubit/api';
import { isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { timeOf } from '../objects.js';
import { type Assignment, assign, type Claim, inPool, type Pool } from './pool.js';

export interface LoadBalancerIpamOptions {
  pool: Pool;
  events?: EventSink;
  log?: Logger;
}

/** A Service this controller gives an address to. */
export const wantsPoolAddress = (s: Service) =>
  s.spec?.type === 'LoadBalancer' && !s.spec.loadBalancerClass && !s.metadata?.deletionTimestamp;

const ingressIPs = (s: Service) =>
  (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip).filter(Boolean) as string[];

export class LoadBalancerIpamController implements Controller {
  readonly name = 'service-lb-ipam';
  readonly queue = new RateLimitingQueue<string>();
  private readonly services: Informer<Service>;
  private readonly events: EventSink;
  /**
   * Addresses written (or cleared, '') whose echo the cache has not shown yet,
   * by Service uid: they count as held, so no two syncs hand one address out twice.
   */
  private readonly inFlight = new Map<string, string>();
  /** The last failure reported per Service, so a pending Service is not warned about on every sync. */
  private readonly lastFailure = new Map<string, string>();

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: LoadBalancerIpamOptions,
  ) {
    this.events = opts.events ?? noEvents;
    this.services = informers.forResource<Service>(resources.services);
    this.services.addEventHandler({
      onAdd: (s) => this.changed(s),
      onUpdate: (_o, s) => this.changed(s),
      onDelete: (s) => {
        this.inFlight.delete(s.metadata?.uid ?? '');
        this.lastFailure.delete(keyOf(s));
        this.enqueueWaiting();
      },
    });
  }

  private changed(s: Service): void {
    const uid = s.metadata?.uid ?? '';
    const want = this.inFlight.get(uid);
    if (want !== undefined && (ingressIPs(s)[0] ?? '') === want) this.inFlight.delete(uid);
    this.queue.add(keyOf(s));
    // Any change may free or take an address another Service waits for (or holds twice).
    this.enqueueWaiting();
  }

  /** Services without an address of the pool, or sharing one: an address may have become free. */
  private enqueueWaiting(): void {
    const seen = new Map<string, number>();
    const all = this.services.store.list().filter(wantsPoolAddress);
    for (const s of all) for (const ip of ingressIPs(s)) seen.set(ip, (seen.get(ip) ?? 0) + 1);
    for (const s of all) {
      const ips = ingressIPs(s);
      if (ips.length !== 1 || !inPool(this.opts.pool, ips[0]) || (seen.get(ips[0]) ?? 0) > 1)
        this.queue.add(keyOf(s));
    }
  }

  private claims(): Claim[] {
    return this.services.store
      .list()
      .filter(wantsPoolAddress)
      .map((s) => {
        const uid = s.metadata?.uid ?? '';
        const pending = this.inFlight.get(uid);
        return {
          key: keyOf(s),
          uid,
          created: timeOf(s.metadata?.creationTimestamp),
          requested: s.spec?.loadBalancerIP || undefined,
          current: pending !== undefined ? pending || undefined : ingressIPs(s)[0],
        };
      });
  }

  async reconcile(key: string): Promise<void> {
    const svc = this.services.store.getByKey(key);
    if (!svc) return;
    if (!wantsPoolAddress(svc)) {
      // No longer a LoadBalancer (a type change): give the address back.
      const held = ingressIPs(svc).filter((ip) => inPool(this.opts.pool, ip));
      if (svc.spec?.type !== 'LoadBalancer' && !svc.metadata?.deletionTimestamp && held.length > 0) {
        await this.writeStatus(svc, '');
        this.events.event(
          svc,
          'Normal',
          'IPReleased',
          `Released IP ${JSON.stringify(held)}: the Service is no longer of type LoadBalancer`,
        );
      }
      return;
    }
    const result: Assignment = assign(this.opts.pool, this.claims()).get(key) ?? { error: 'not assigned' };
    const ips = ingressIPs(svc);
    if ('error' in result) {
      if (ips.length > 0) await this.writeStatus(svc, '');
      if (this.lastFailure.get(key) !== result.error) {
        this.lastFailure.set(key, result.error);
        this.events.event(
          svc,
          'Warning',
          'AllocationFailed',
          `Failed to allocate IP for "${key}": ${result.error}`,
        );
        this.opts.log?.warn({ service: key, reason: result.error }, 'no load-balancer address');
      }
      return;
    }
    this.lastFailure.delete(key);
    const ingress = svc.status?.loadBalancer?.ingress ?? [];
    if (
      ingress.length === 1 &&
      ingress[0].ip === result.ip &&
      ingress[0].ipMode === 'VIP' &&
      !ingress[0].hostname
    )
      return;
    await this.writeStatus(svc, result.ip);
    this.events.event(svc, 'Normal', 'IPAllocated', `Assigned IP ["${result.ip}"]`);
    this.opts.log?.info({ service: key, ip: result.ip }, 'load-balancer address assigned');
  }

  /** Writes the address ('' clears it) through services/status, guarded on the cached resourceVersion. */
  private async writeStatus(svc: Service, ip: string): Promise<void> {
    const uid = svc.metadata?.uid ?? '';
    // Held from now on, before the write returns: a sync of another Service meanwhile sees it taken.
    this.inFlight.set(uid, ip);
    const status = { ...svc.status, loadBalancer: ip ? { ingress: [{ ip, ipMode: 'VIP' }] } : {} };
    try {
      await this.cluster.update(resources.services, { ...svc, status }, 'status');
    } catch (err) {
      this.inFlight.delete(uid);
      // A deleted Service needs nothing; a stale copy (409) is retried once the cache has the new one.
      if (isNotFound(err)) return;
      throw err;
    }
  }
}
