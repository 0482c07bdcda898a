// The DaemonSet controller: one pod per eligible node, as Kubernetes' daemon
// controller. Each pod is created with a required node affinity on its node's
// name, so the real scheduler binds it there; pods on nodes that no longer
// want them (or are gone) are deleted, failed pods are replaced with a back-off
// per node, and a template change rolls out by RollingUpdate (maxUnavailable or
// maxSurge) or waits for pods to be deleted (OnDelete). Every template is kept
// as a ControllerRevision (history.ts), which `kubectl rollout undo` reads.
import { type ControllerRevision, type DaemonSet, isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { ControllerRefManager } from '../controller-ref.js';
import { type EventSink, noEvents } from '../events.js';
import { Expectations } from '../expectations.js';
import { compileSelector } from '../labels.js';
import { controllerOf, isPodAvailable, isPodReady, ownerRefFor } from '../objects.js';
import { OwnedPodEvents } from '../owned-pod-events.js';
import type { Node, Pod } from '../types.js';
import { FailedPodBackoff } from './backoff.js';
import {
  affinityForNode,
  nodeShouldRunDaemonPod,
  targetNodeName,
  withDaemonTolerations,
} from './eligibility.js';
import {
  hashOf,
  matchesRevision,
  maxRevision,
  newRevision,
  revisionHash,
  revisionsToPrune,
} from './history.js';
import {
  allowsSurge,
  byAge,
  CONTROLLER_REVISION_HASH,
  isPodUpdated,
  isRollingUpdate,
  POD_TEMPLATE_GENERATION,
  planRollingUpdate,
  updatedDesiredNodeCounts,
} from './update.js';

/** At most this many creates or deletes per sync (Kubernetes' BurstReplicas). */
export const BURST_REPLICAS = 250;

/** The annotation Kubernetes' apiserver keeps the template generation in. */
const TEMPLATE_GENERATION_ANNOTATION = 'deprecated.daemonset.template.generation';

export interface DaemonSetControllerOptions {
  now?: () => number;
  burstReplicas?: number;
  events?: EventSink;
  log?: Logger;
}

type DSStatus = NonNullable<DaemonSet['status']>;

/** One sync's view of the nodes and of the DaemonSet's pods on them. */
interface NodeView {
  nodes: Node[];
  byName: Map<string, Node>;
  /** Each node's daemon pods (terminating ones included: a node with one waits for it to go). */
  nodeToPods: Map<string, Pod[]>;
  /** Pods on (or meant for) a node that does not exist. */
  orphaned: Pod[];
}

export class DaemonSetController implements Controller {
  readonly name = 'daemonset';
  readonly queue = new RateLimitingQueue<string>();
  readonly expectations: Expectations;
  private readonly dsInformer: Informer<DaemonSet>;
  private readonly podInformer: Informer<Pod>;
  private readonly nodeInformer: Informer<Node>;
  private readonly crInformer: Informer<ControllerRevision>;
  private readonly now: () => number;
  private readonly burst: number;
  private readonly events: EventSink;
  private readonly backoff: FailedPodBackoff;
  private readonly podEvents: OwnedPodEvents<DaemonSet>;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: DaemonSetControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.burst = opts.burstReplicas ?? BURST_REPLICAS;
    this.events = opts.events ?? noEvents;
    this.expectations = new Expectations(this.now);
    this.backoff = new FailedPodBackoff(this.now);
    this.dsInformer = informers.forResource<DaemonSet>(resources.daemonsets);
    this.podInformer = informers.forResource<Pod>(resources.pods);
    this.nodeInformer = informers.forResource<Node>(resources.nodes);
    this.crInformer = informers.forResource<ControllerRevision>(resources.controllerrevisions);
    this.dsInformer.addEventHandler({
      onAdd: (ds) => this.queue.add(keyOf(ds)),
      onUpdate: (_old, ds) => this.queue.add(keyOf(ds)),
      onDelete: (ds) => {
        this.expectations.delete(keyOf(ds));
        this.queue.add(keyOf(ds));
      },
    });
    this.podEvents = new OwnedPodEvents<DaemonSet>(
      {
        kind: 'DaemonSet',
        apiVersion: 'apps/v1',
        owners: this.dsInformer,
        selector: (ds) => ds.spec?.selector,
        minReadySeconds: (ds) => ds.spec?.minReadySeconds ?? 0,
      },
      this.queue,
      this.expectations,
    );
    this.podInformer.addEventHandler(this.podEvents.handlers());
    this.nodeInformer.addEventHandler({
      onAdd: () => this.enqueueAll(),
      onUpdate: (old, n) => {
        // Heartbeats change only the status; what decides eligibility is the rest.
        if (nodeShapeChanged(old, n)) this.enqueueAll();
      },
      onDelete: () => this.enqueueAll(),
    });
    this.crInformer.addEventHandler({
      onDelete: (cr) => {
        const key = this.podEvents.ownerKey(cr);
        if (key) this.queue.add(key);
      },
    });
  }

  private enqueueAll(): void {
    for (const ds of this.dsInformer.store.list()) this.queue.add(keyOf(ds));
  }

  // ---- reconcile ----

  async reconcile(key: string): Promise<void> {
    const ds = this.dsInformer.store.getByKey(key);
    if (!ds) {
      this.expectations.delete(key);
      return;
    }
    // A DaemonSet being deleted leaves its pods to the garbage collector.
    if (ds.metadata?.deletionTimestamp) return;
    const { namespace } = splitKey(key);
    const pods = await this.claimPods(ds, this.podInformer.store.listInNamespace(namespace ?? ''));
    const { current, old } = await this.constructHistory(ds);
    const hash = hashOf(current);
    let view = this.nodeView(pods);
    let syncError: unknown;
    if (this.expectations.satisfied(key)) {
      try {
        const acted = await this.manage(key, ds, view, hash);
        if (!acted && isRollingUpdate(ds)) await this.rollingUpdate(key, ds, view, hash);
        await this.cleanupHistory(ds, old, pods);
      } catch (err) {
        syncError = err;
      }
      view = this.nodeView(pods.filter((p) => !this.expectations.deletionPending(key, keyOf(p))));
    }
    const status = this.calculateStatus(ds, view, hash);
    await this.updateStatus(ds, status);
    const minReady = ds.spec?.minReadySeconds ?? 0;
    if (minReady > 0 && status.numberReady !== status.numberAvailable)
      this.queue.addAfter(key, minReady * 1000);
    const wait = this.backoff.nextRetryIn(ds.metadata?.uid ?? '');
    if (wait !== undefined) this.queue.addAfter(key, wait);
    if (syncError !== undefined) throw syncError;
  }

  private nodeView(pods: readonly Pod[]): NodeView {
    const nodes = this.nodeInformer.store.list();
    const byName = new Map(nodes.map((n) => [n.metadata?.name ?? '', n]));
    const nodeToPods = new Map<string, Pod[]>();
    const orphaned: Pod[] = [];
    for (const p of pods) {
      const node = targetNodeName(p);
      // A pod it adopted that names no node is left alone, as Kubernetes does.
      if (node === undefined) continue;
      if (!byName.has(node)) {
        orphaned.push(p);
        continue;
      }
      const list = nodeToPods.get(node);
      if (list) list.push(p);
      else nodeToPods.set(node, [p]);
    }
    for (const list of nodeToPods.values()) list.sort(byAge);
    return { nodes, byName, nodeToPods, orphaned };
  }

  /** Creates pods where they are missing, deletes them where they must not be. True if it did anything. */
  private async manage(key: string, ds: DaemonSet, view: NodeView, hash: string): Promise<boolean> {
    const needPods: string[] = [];
    const toDelete: Pod[] = [];
    const surge = allowsSurge(ds);
    for (const node of view.nodes) {
      const name = node.metadata?.name ?? '';
      const { shouldRun, shouldContinueRunning } = nodeShouldRunDaemonPod(node, ds);
      const pods = view.nodeToPods.get(name) ?? [];
      if (shouldRun && pods.length === 0) {
        needPods.push(name);
      } else if (shouldContinueRunning) {
        const running: Pod[] = [];
        for (const p of pods) {
          if (p.metadata?.deletionTimestamp) continue;
          if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') {
            // Replace a dead pod, but not in a tight loop when it keeps failing.
            if (!this.backoff.mayReplace(ds.metadata?.uid ?? '', name)) continue;
            if (p.status.phase === 'Failed')
              this.events.event(
                ds,
                'Warning',
                'FailedDaemonPod',
                `Found failed daemon pod ${p.metadata?.namespace}/${p.metadata?.name} on node ${name}, will try to kill it`,
              );
            toDelete.push(p);
            continue;
          }
          running.push(p);
        }
        toDelete.push(...extraPods(running, ds, hash, surge, this.now()));
      } else {
        toDelete.push(...pods.filter((p) => !p.metadata?.deletionTimestamp));
      }
    }
    toDelete.push(...view.orphaned.filter((p) => !p.metadata?.deletionTimestamp));
    if (needPods.length === 0 && toDelete.length === 0) return false;
    await this.syncNodes(key, ds, toDelete, needPods, hash);
    return true;
  }

  private async rollingUpdate(key: string, ds: DaemonSet, view: NodeView, hash: string): Promise<void> {
    const shouldRun = (name: string) => {
      const n = view.byName.get(name);
      return n !== undefined && nodeShouldRunDaemonPod(n, ds).shouldRun;
    };
    const desired = view.nodes.filter((n) => nodeShouldRunDaemonPod(n, ds).shouldRun).length;
    const { maxSurge, maxUnavailable } = updatedDesiredNodeCounts(ds, desired);
    const plan = planRollingUpdate({
      nodeToPods: view.nodeToPods,
      hash,
      generation: templateGeneration(ds),
      maxSurge,
      maxUnavailable,
      minReadySeconds: ds.spec?.minReadySeconds ?? 0,
      now: this.now(),
      shouldRun,
    });
    if (plan.podsToDelete.length === 0 && plan.nodesToCreate.length === 0) return;
    const byName = new Map([...view.nodeToPods.values()].flat().map((p) => [p.metadata?.name ?? '', p]));
    const toDelete = plan.podsToDelete.flatMap((n) => byName.get(n) ?? []);
    await this.syncNodes(key, ds, toDelete, plan.nodesToCreate, hash);
  }

  /** Deletes and creates (within the burst), with expectations for both. */
  private async syncNodes(
    key: string,
    ds: DaemonSet,
    toDelete: Pod[],
    nodes: string[],
    hash: string,
  ): Promise<void> {
    const creates = nodes.slice(0, this.burst);
    const deletes = toDelete.slice(0, this.burst);
    this.expectations.expect(
      key,
      creates.length,
      deletes.map((p) => keyOf(p)),
    );
    let firstError: unknown;
    const results = await Promise.allSettled(
      deletes.map((p) =>
        this.cluster.delete(resources.pods, p.metadata?.namespace, p.metadata?.name ?? '', {
          preconditions: { uid: p.metadata?.uid },
        }),
      ),
    );
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        this.events.event(ds, 'Normal', 'SuccessfulDelete', `Deleted pod: ${deletes[i].metadata?.name}`);
        return;
      }
      // A failed delete never shows up in the watch: stop waiting for it.
      this.expectations.deletionObserved(key, keyOf(deletes[i]));
      if (isNotFound(r.reason)) return;
      this.events.event(ds, 'Warning', 'FailedDelete', `Error deleting: ${(r.reason as Error).message}`);
      firstError ??= r.reason;
    });
    try {
      await this.createInBatches(key, ds, creates, hash);
    } catch (err) {
      firstError ??= err;
    }
    if (firstError !== undefined) throw firstError;
  }

  /** Batches of 1, 2, 4, ... (slow start): a template the apiserver refuses fails once, not per node. */
  private async createInBatches(key: string, ds: DaemonSet, nodes: string[], hash: string): Promise<void> {
    let start = 0;
    let batch = 1;
    while (start < nodes.length) {
      const chunk = nodes.slice(start, start + batch);
      const results = await Promise.allSettled(
        chunk.map((node) =>
          this.cluster.create(resources.pods, ds.metadata?.namespace, daemonPod(ds, node, hash)),
        ),
      );
      const failed: unknown[] = [];
      results.forEach((r) => {
        if (r.status === 'fulfilled') {
          this.events.event(ds, 'Normal', 'SuccessfulCreate', `Created pod: ${r.value.metadata?.name}`);
          return;
        }
        failed.push(r.reason);
        this.events.event(ds, 'Warning', 'FailedCreate', `Error creating: ${(r.reason as Error).message}`);
      });
      start += chunk.length;
      if (failed.length > 0) {
        this.expectations.lowerCreations(key, failed.length + (nodes.length - start));
        throw failed[0];
      }
      batch *= 2;
    }
  }

  // ---- ownership ----

  /** Adopts matching orphans and releases owned pods that stopped matching; returns the pods it owns. */
  private claimPods(ds: DaemonSet, pods: readonly Pod[]): Promise<Pod[]> {
    const matches = compileSelector(ds.spec?.selector);
    return this.refs(ds).claim(resources.pods, pods, (p) => matches(p.metadata?.labels));
  }

  // ---- history ----

  private claimRevisions(ds: DaemonSet): Promise<ControllerRevision[]> {
    const matches = compileSelector(ds.spec?.selector);
    return this.refs(ds).claim(
      resources.controllerrevisions,
      this.crInformer.store.listInNamespace(ds.metadata?.namespace ?? ''),
      (cr) => matches(cr.metadata?.labels),
    );
  }

  private refs(ds: DaemonSet): ControllerRefManager<DaemonSet> {
    return new ControllerRefManager(this.cluster, ds, {
      resource: resources.daemonsets,
      kind: 'DaemonSet',
      apiVersion: 'apps/v1',
    });
  }

  /**
   * Finds the revision of the current template (creating it, or renumbering an
   * old one the template went back to, as the newest) and the old ones.
   */
  private async constructHistory(
    ds: DaemonSet,
  ): Promise<{ current: ControllerRevision; old: ControllerRevision[] }> {
    const all = await this.claimRevisions(ds);
    const matching = all
      .filter((cr) => matchesRevision(ds, cr))
      .sort((a, b) => (b.revision ?? 0) - (a.revision ?? 0));
    const old = all.filter((cr) => !matching.includes(cr));
    // Two revisions of one template (a race of two controllers): keep the newest.
    for (const dup of matching.slice(1)) {
      await this.cluster
        .delete(resources.controllerrevisions, dup.metadata?.namespace, dup.metadata?.name ?? '')
        .catch((err) => {
          if (!isNotFound(err)) throw err;
        });
    }
    const next = maxRevision(old) + 1;
    let current = matching[0];
    if (!current) {
      current = await this.createRevision(ds, next);
    } else if ((current.revision ?? 0) < next) {
      current = await this.cluster.update(resources.controllerrevisions, { ...current, revision: next });
    }
    return { current, old };
  }

  private async createRevision(ds: DaemonSet, revision: number): Promise<ControllerRevision> {
    const hash = revisionHash(ds);
    const cr = newRevision(ds, hash, revision);
    try {
      return await this.cluster.create(resources.controllerrevisions, ds.metadata?.namespace, cr);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const existing = await this.cluster.get<ControllerRevision>(
      resources.controllerrevisions,
      ds.metadata?.namespace,
      cr.metadata?.name ?? '',
    );
    if (controllerOf(existing)?.uid === ds.metadata?.uid && matchesRevision(ds, existing)) return existing;
    // Another template (or owner) has this name: count the collision so the next hash differs.
    const collisionCount = (ds.status?.collisionCount ?? 0) + 1;
    await this.updateStatus(ds, {
      currentNumberScheduled: 0,
      desiredNumberScheduled: 0,
      numberMisscheduled: 0,
      numberReady: 0,
      ...ds.status,
      collisionCount,
    });
    throw new Error(
      `hash collision for ControllerRevision ${cr.metadata?.name}; retrying with collisionCount ${collisionCount}`,
    );
  }

  /** Deletes the oldest revisions beyond revisionHistoryLimit that no pod still runs. */
  private async cleanupHistory(ds: DaemonSet, old: ControllerRevision[], pods: Pod[]): Promise<void> {
    const live = new Set(pods.flatMap((p) => p.metadata?.labels?.[CONTROLLER_REVISION_HASH] ?? []));
    for (const cr of revisionsToPrune(old, ds.spec?.revisionHistoryLimit ?? 10, live)) {
      try {
        await this.cluster.delete(
          resources.controllerrevisions,
          cr.metadata?.namespace,
          cr.metadata?.name ?? '',
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  // ---- status ----

  private calculateStatus(ds: DaemonSet, view: NodeView, hash: string): DSStatus {
    const minReady = ds.spec?.minReadySeconds ?? 0;
    const now = this.now();
    const generation = templateGeneration(ds);
    let desired = 0;
    let current = 0;
    let misscheduled = 0;
    let ready = 0;
    let available = 0;
    let updated = 0;
    for (const node of view.nodes) {
      const pods = (view.nodeToPods.get(node.metadata?.name ?? '') ?? []).filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      const { shouldRun } = nodeShouldRunDaemonPod(node, ds);
      if (!shouldRun) {
        if (pods.length > 0) misscheduled++;
        continue;
      }
      desired++;
      if (pods.length === 0) continue;
      current++;
      // The oldest pod speaks for the node.
      const pod = pods[0];
      if (isPodReady(pod)) {
        ready++;
        if (isPodAvailable(pod, minReady, now)) available++;
      }
      if (isPodUpdated(pod, hash, generation)) updated++;
    }
    const status: DSStatus = {
      desiredNumberScheduled: desired,
      currentNumberScheduled: current,
      numberMisscheduled: misscheduled,
      numberReady: ready,
      numberAvailable: available,
      updatedNumberScheduled: updated,
      numberUnavailable: desired - available,
      observedGeneration: ds.metadata?.generation,
    };
    if (ds.status?.collisionCount !== undefined) status.collisionCount = ds.status.collisionCount;
    if (ds.status?.conditions?.length) status.conditions = ds.status.conditions;
    return status;
  }

  private async updateStatus(ds: DaemonSet, status: DSStatus): Promise<void> {
    if (JSON.stringify(normalize(ds.status)) === JSON.stringify(normalize(status))) return;
    let current = ds;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.cluster.update(resources.daemonsets, { ...current, status }, 'status');
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= 1) throw err;
        current = await this.cluster.get<DaemonSet>(
          resources.daemonsets,
          ds.metadata?.namespace,
          ds.metadata?.name ?? '',
        );
      }
    }
  }
}

/**
 * The running pods (oldest first) beyond what a node should have. Without surge
 * the oldest stays. With surge the oldest new and the oldest old pod may stay
 * together, but the old one goes once it is not ready or the new one is
 * available (Kubernetes' podsShouldBeOnNode).
 */
function extraPods(running: Pod[], ds: DaemonSet, hash: string, surge: boolean, now: number): Pod[] {
  if (running.length <= 1) return [];
  if (!surge) return running.slice(1);
  let oldestNew: Pod | undefined;
  let oldestOld: Pod | undefined;
  const extra: Pod[] = [];
  for (const p of running) {
    if (p.metadata?.labels?.[CONTROLLER_REVISION_HASH] === hash) {
      if (!oldestNew) oldestNew = p;
      else extra.push(p);
    } else if (!oldestOld) oldestOld = p;
    else extra.push(p);
  }
  if (
    oldestNew &&
    oldestOld &&
    (!isPodReady(oldestOld) || isPodAvailable(oldestNew, ds.spec?.minReadySeconds ?? 0, now))
  ) {
    extra.push(oldestOld);
  }
  return extra;
}

/** The generation of the template: the annotation Kubernetes' apiserver keeps, else the object's generation. */
export function templateGeneration(ds: DaemonSet): number | undefined {
  const v = Number(ds.metadata?.annotations?.[TEMPLATE_GENERATION_ANNOTATION]);
  if (Number.isInteger(v) && v > 0) return v;
  return ds.metadata?.generation;
}

/** The pod a DaemonSet runs on `node`: its template, the daemon tolerations, bound to the node by affinity. */
export function daemonPod(ds: DaemonSet, node: string, hash: string): Pod {
  const t = ds.spec?.template;
  const meta = t?.metadata ?? {};
  const generation = templateGeneration(ds);
  const spec = structuredClone(t?.spec ?? { containers: [] });
  spec.tolerations = withDaemonTolerations(spec);
  spec.affinity = affinityForNode(spec.affinity, node);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${ds.metadata?.name}-`,
      namespace: ds.metadata?.namespace,
      labels: {
        ...meta.labels,
        ...(generation !== undefined ? { [POD_TEMPLATE_GENERATION]: String(generation) } : {}),
        ...(hash ? { [CONTROLLER_REVISION_HASH]: hash } : {}),
      },
      annotations: meta.annotations ? { ...meta.annotations } : undefined,
      finalizers: meta.finalizers ? [...meta.finalizers] : undefined,
      ownerReferences: [ownerRefFor(ds, 'DaemonSet')],
    },
    spec,
  };
}

function nodeShapeChanged(a: Node, b: Node): boolean {
  return (
    JSON.stringify(a.metadata?.labels) !== JSON.stringify(b.metadata?.labels) ||
    JSON.stringify(a.spec) !== JSON.stringify(b.spec)
  );
}

function normalize(s: DSStatus | undefined) {
  return {
    desiredNumberScheduled: s?.desiredNumberScheduled ?? 0,
    currentNumberScheduled: s?.currentNumberScheduled ?? 0,
    numberMisscheduled: s?.numberMisscheduled ?? 0,
    numberReady: s?.numberReady ?? 0,
    numberAvailable: s?.numberAvailable ?? 0,
    updatedNumberScheduled: s?.updatedNumberScheduled ?? 0,
    numberUnavailable: s?.numberUnavailable ?? 0,
    observedGeneration: s?.observedGeneration ?? 0,
    collisionCount: s?.collisionCount ?? 0,
    conditions: s?.conditions ?? [],
  };
}
