// The disruption controller: keeps each PodDisruptionBudget's status (expectedPods,
// desiredHealthy, currentHealthy, disruptionsAllowed, the DisruptionAllowed condition,
// observedGeneration) true to the pods it selects and their controllers' scale, and
// drops the evictions of status.disruptedPods once their pods are being deleted, or
// two minutes after the eviction if they never were. The eviction subresource reads
// disruptionsAllowed; a budget this controller cannot compute allows none (SyncFailed).
import { isConflict, isNotFound, type PodDisruptionBudget } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { compileSelector } from '../labels.js';
import { controllerOf, isoNow } from '../objects.js';
import type { Deployment, Pod, ReplicaSet } from '../types.js';
import {
  countHealthy,
  expectedPods,
  failSafeStatus,
  nextStatus,
  pdbResource,
  type ScaleOf,
  standingDisruptions,
} from './budget.js';

export interface DisruptionControllerOptions {
  now?: () => number;
  events?: EventSink;
  log?: Logger;
}

export class DisruptionController implements Controller {
  readonly name = 'disruption';
  readonly queue = new RateLimitingQueue<string>();
  private readonly pdbs: Informer<PodDisruptionBudget>;
  private readonly pods: Informer<Pod>;
  private readonly replicaSets: Informer<ReplicaSet>;
  private readonly deployments: Informer<Deployment>;
  private readonly now: () => number;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: DisruptionControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.events = opts.events ?? noEvents;
    this.pdbs = informers.forResource<PodDisruptionBudget>(pdbResource);
    this.pods = informers.forResource<Pod>(resources.pods);
    this.replicaSets = informers.forResource<ReplicaSet>(resources.replicasets);
    this.deployments = informers.forResource<Deployment>(resources.deployments);
    this.pdbs.addEventHandler({
      onAdd: (b) => this.queue.add(keyOf(b)),
      onUpdate: (_o, b) => this.queue.add(keyOf(b)),
      onDelete: (b) => this.queue.add(keyOf(b)),
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.podChanged(p),
      onUpdate: (old, p) => {
        this.podChanged(p);
        // A pod that stopped matching a budget changes that budget's counts too.
        if (JSON.stringify(old.metadata?.labels) !== JSON.stringify(p.metadata?.labels)) this.podChanged(old);
      },
      onDelete: (p) => this.podChanged(p),
    });
    // A controller's scale is a budget's expectedPods: resync the budgets over its pods.
    const scaled = (o: ReplicaSet | Deployment) => {
      for (const b of this.pdbs.store.listInNamespace(o.metadata?.namespace ?? '')) this.queue.add(keyOf(b));
    };
    this.replicaSets.addEventHandler({ onAdd: scaled, onUpdate: (_o, rs) => scaled(rs), onDelete: scaled });
    this.deployments.addEventHandler({ onAdd: scaled, onUpdate: (_o, d) => scaled(d), onDelete: scaled });
  }

  /** Queues the budgets selecting the pod (Kubernetes picks one; every match is as cheap here). */
  private podChanged(p: Pod): void {
    for (const b of this.budgetsFor(p)) this.queue.add(keyOf(b));
  }

  private budgetsFor(p: Pod): PodDisruptionBudget[] {
    return this.pdbs.store
      .listInNamespace(p.metadata?.namespace ?? '')
      .filter((b) => safeMatch(b, p.metadata?.labels));
  }

  /** The scale of a pod's controller: a ReplicaSet's replicas, or its Deployment's. */
  private readonly scaleOf: ScaleOf = (pod) => {
    const ref = controllerOf(pod);
    const ns = pod.metadata?.namespace;
    if (ref?.kind !== 'ReplicaSet' || !ref.apiVersion.startsWith('apps/')) return undefined;
    const rs = this.replicaSets.store.get(ref.name, ns);
    if (!rs || rs.metadata?.uid !== ref.uid) return undefined;
    const owner = controllerOf(rs);
    if (owner?.kind === 'Deployment') {
      const d = this.deployments.store.get(owner.name, ns);
      if (!d || d.metadata?.uid !== owner.uid) return undefined;
      return { uid: owner.uid, replicas: d.spec?.replicas ?? 1 };
    }
    return { uid: ref.uid, replicas: rs.spec?.replicas ?? 1 };
  };

  async reconcile(key: string): Promise<void> {
    const pdb = this.pdbs.store.getByKey(key);
    if (!pdb) return;
    const ns = pdb.metadata?.namespace ?? '';
    let matcher: ReturnType<typeof compileSelector>;
    try {
      matcher = compileSelector(pdb.spec?.selector);
    } catch (err) {
      return this.failSafe(pdb, err as Error);
    }
    const pods = this.pods.store.listInNamespace(ns).filter((p) => matcher(p.metadata?.labels));
    if (pods.length === 0) this.events.event(pdb, 'Normal', 'NoPods', 'No matching pods found');
    let expected: ReturnType<typeof expectedPods>;
    try {
      expected = expectedPods(pdb, pods, this.scaleOf);
    } catch (err) {
      this.events.event(
        pdb,
        'Warning',
        'CalculateExpectedPodCountFailed',
        `Failed to calculate the number of expected pods: ${(err as Error).message}`,
      );
      return this.failSafe(pdb, err as Error);
    }
    if (expected.unmanaged.length > 0) {
      this.events.event(
        pdb,
        'Warning',
        'UnmanagedPods',
        `Pods selected by this PodDisruptionBudget (selector: ${JSON.stringify(pdb.spec?.selector)}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`,
      );
    }
    const now = this.now();
    const { disrupted, recheckAt, expired } = standingDisruptions(pdb, pods, now);
    for (const p of expired) {
      this.events.event(
        p,
        'Warning',
        'NotDeleted',
        `Pod was expected by PDB ${ns}/${pdb.metadata?.name ?? ''} to be deleted but it wasn't`,
      );
    }
    const currentHealthy = countHealthy(pods, disrupted);
    const status = nextStatus(
      pdb,
      { currentHealthy, desiredHealthy: expected.desiredHealthy, expectedCount: expected.expectedCount },
      disrupted,
      isoNow(now),
    );
    if (status) await this.writeStatus(pdb, status);
    if (recheckAt !== undefined) this.queue.addAfter(key, Math.max(0, recheckAt - now) + 100);
  }

  private async failSafe(pdb: PodDisruptionBudget, err: Error): Promise<void> {
    this.opts.log?.warn({ pdb: keyOf(pdb), err: err.message }, 'cannot compute the disruption budget');
    await this.writeStatus(pdb, failSafeStatus(pdb, err, isoNow(this.now())));
  }

  private async writeStatus(pdb: PodDisruptionBudget, status: NonNullable<PodDisruptionBudget['status']>) {
    try {
      await this.cluster.update(pdbResource, { ...pdb, status }, 'status');
    } catch (err) {
      // Gone: nothing to keep. A conflict (an eviction wrote first) is retried from the
      // cache, which the eviction's write reaches soon.
      if (isNotFound(err)) return;
      if (isConflict(err)) throw new RetryLater(`${keyOf(pdb)} changed since the cache saw it`);
      throw err;
    }
  }
}

function safeMatch(b: PodDisruptionBudget, labels: Record<string, string> | undefined): boolean {
  try {
    return compileSelector(b.spec?.selector)(labels);
  } catch {
    return false;
  }
}
