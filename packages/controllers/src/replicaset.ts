// The ReplicaSet controller: keeps `spec.replicas` pods matching the selector
// alive, adopting orphans and releasing pods that stopped matching, and reports
// status. Expectations keep it from acting twice on a cache that has not yet
// seen its own creates and deletes. The same implementation, over a
// `ReplicatedKind`, is the replication controller (core/v1
// ReplicationControllers, whose label-map selector becomes matchLabels), as
// Kubernetes' ReplicationManager wraps its ReplicaSet controller.
import { isConflict, isNotFound } from '@kubit/api';
import {
  type Informer,
  RateLimitingQueue,
  type ResourceRef,
  resources,
  type SharedInformerFactory,
} from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from './cluster.js';
import type { Controller } from './controller.js';
import { ControllerRefManager } from './controller-ref.js';
import { type EventSink, noEvents } from './events.js';
import { Expectations } from './expectations.js';
import { compileSelector, labelsContain } from './labels.js';
import { isPodActive, isPodAvailable, isPodReady, ownerRefFor } from './objects.js';
import { OwnedPodEvents } from './owned-pod-events.js';
import { podsToDelete } from './pod-ranking.js';

import type { LabelSelector, Pod, ReplicaSet } from './types.js';

/** At most this many creates or deletes per sync (Kubernetes' burstReplicas). */
export const BURST_REPLICAS = 500;

/** The kind a replica controller keeps pods for, and how to read its selector. */
export interface ReplicatedKind {
  /** The controller's name (--controllers). */
  name: string;
  resource: ResourceRef;
  kind: string;
  apiVersion: string;
  /** The pod selector as a LabelSelector; undefined selects nothing. */
  selector(o: ReplicaSet): LabelSelector | undefined;
}

export const REPLICA_SETS: ReplicatedKind = {
  name: 'replicaset',
  resource: resources.replicasets,
  kind: 'ReplicaSet',
  apiVersion: 'apps/v1',
  selector: (rs) => rs.spec?.selector,
};

// One LabelSelector per (never mutated) cached selector map, so compiled matchers are reused.
const asMatchLabels = new WeakMap<object, LabelSelector>();

export const REPLICATION_CONTROLLERS: ReplicatedKind = {
  name: 'replicationcontroller',
  resource: resources.replicationcontrollers,
  kind: 'ReplicationController',
  apiVersion: 'v1',
  selector(rc) {
    const map = rc.spec?.selector as unknown as Record<string, string> | undefined;
    // An empty map is refused by validation; never let it select every pod.
    if (!map || typeof map !== 'object' || Object.keys(map).length === 0) return undefined;
    let sel = asMatchLabels.get(map);
    if (!sel) {
      sel = { matchLabels: map };
      asMatchLabels.set(map, sel);
    }
    return sel;
  },
};

export interface ReplicaSetControllerOptions {
  /** The kind it keeps pods for: ReplicaSets unless told. */
  kind?: ReplicatedKind;
  now?: () => number;
  burstReplicas?: number;
  events?: EventSink;
  log?: Logger;
}

type RSStatus = NonNullable<ReplicaSet['status']>;

export class ReplicaSetController implements Controller {
  readonly name: string;
  readonly queue = new RateLimitingQueue<string>();
  readonly expectations: Expectations;
  private readonly rsInformer: Informer<ReplicaSet>;
  private readonly podInformer: Informer<Pod>;
  private readonly now: () => number;
  private readonly burst: number;
  private readonly events: EventSink;
  private readonly kind: ReplicatedKind;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: ReplicaSetControllerOptions = {},
  ) {
    this.kind = opts.kind ?? REPLICA_SETS;
    this.name = this.kind.name;
    this.now = opts.now ?? Date.now;
    this.burst = opts.burstReplicas ?? BURST_REPLICAS;
    this.events = opts.events ?? noEvents;
    this.expectations = new Expectations(this.now);
    this.rsInformer = informers.forResource<ReplicaSet>(this.kind.resource);
    this.podInformer = informers.forResource<Pod>(resources.pods);
    this.rsInformer.addEventHandler({
      onAdd: (rs) => this.queue.add(keyOf(rs)),
      onUpdate: (_old, rs) => this.queue.add(keyOf(rs)),
      onDelete: (rs) => {
        this.expectations.delete(keyOf(rs));
        this.queue.add(keyOf(rs));
      },
    });
    const podEvents = new OwnedPodEvents<ReplicaSet>(
      {
        kind: this.kind.kind,
        apiVersion: this.kind.apiVersion,
        owners: this.rsInformer,
        selector: (rs) => this.kind.selector(rs),
        minReadySeconds: (rs) => rs.spec?.minReadySeconds ?? 0,
      },
      this.queue,
      this.expectations,
    );
    this.podInformer.addEventHandler(podEvents.handlers());
  }

  // ---- reconcile ----

  async reconcile(key: string): Promise<void> {
    const rs = this.rsInformer.store.getByKey(key);
    if (!rs) {
      this.expectations.delete(key);
      return;
    }
    const needsSync = this.expectations.satisfied(key);
    const { namespace } = splitKey(key);
    const allPods = this.podInformer.store.listInNamespace(namespace ?? '').filter(isPodActive);
    const owned = await this.claimPods(rs, allPods);
    let manageError: unknown;
    if (needsSync && !rs.metadata?.deletionTimestamp) {
      try {
        await this.manageReplicas(key, rs, owned);
      } catch (err) {
        manageError = err;
      }
    }
    // The status counts only the pods that stay: a status written from the
    // pods seen before this sync's deletions (as Kubernetes' is) would tell a
    // Deployment rolling out that pods are available which are going away.
    const staying = owned.filter((p) => !this.expectations.deletionPending(key, keyOf(p)));
    const status = this.calculateStatus(rs, staying, manageError);
    const updated = await this.updateStatus(rs, status);
    const minReady = rs.spec?.minReadySeconds ?? 0;
    if (
      manageError === undefined &&
      minReady > 0 &&
      updated.readyReplicas === (rs.spec?.replicas ?? 1) &&
      updated.availableReplicas !== updated.readyReplicas
    ) {
      this.queue.addAfter(key, minReady * 1000);
    }
    if (manageError !== undefined) throw manageError;
  }

  /** Adopts matching orphans, releases owned pods that no longer match; returns the pods it owns. */
  private claimPods(rs: ReplicaSet, pods: Pod[]): Promise<Pod[]> {
    const matches = compileSelector(this.kind.selector(rs));
    const refs = new ControllerRefManager(this.cluster, rs, this.kind);
    return refs.claim(resources.pods, pods, (p) => matches(p.metadata?.labels));
  }

  private async manageReplicas(key: string, rs: ReplicaSet, pods: Pod[]): Promise<void> {
    const diff = pods.length - (rs.spec?.replicas ?? 1);
    if (diff < 0) {
      const n = Math.min(-diff, this.burst);
      this.expectations.expectCreations(key, n);
      await this.createInBatches(key, rs, n);
    } else if (diff > 0) {
      const victims = podsToDelete(pods, Math.min(diff, this.burst));
      this.expectations.expectDeletions(
        key,
        victims.map((p) => keyOf(p)),
      );
      const results = await Promise.allSettled(
        victims.map((p) =>
          this.cluster.delete(resources.pods, p.metadata?.namespace, p.metadata?.name ?? '', {
            preconditions: { uid: p.metadata?.uid },
          }),
        ),
      );
      let firstError: unknown;
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') {
          this.events.event(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${victims[i].metadata?.name}`);
          return;
        }
        // A failed delete will never show up in the watch: stop waiting for it.
        this.expectations.deletionObserved(key, keyOf(victims[i]));
        if (isNotFound(r.reason)) return;
        this.events.event(rs, 'Warning', 'FailedDelete', `Error deleting: ${(r.reason as Error).message}`);
        firstError ??= r.reason;
      });
      if (firstError !== undefined) throw firstError;
    }
  }

  /**
   * Creates pods in batches of 1, 2, 4, ... (slow start): when the first pods fail
   * (quota, bad template), it stops without flooding the apiserver.
   */
  private async createInBatches(key: string, rs: ReplicaSet, n: number): Promise<void> {
    let remaining = n;
    let batch = 1;
    while (remaining > 0) {
      const size = Math.min(batch, remaining);
      const results = await Promise.allSettled(
        Array.from({ length: size }, () =>
          this.cluster.create(resources.pods, rs.metadata?.namespace, podFromTemplate(rs, this.kind)),
        ),
      );
      const failed: PromiseRejectedResult[] = [];
      for (const r of results) {
        if (r.status === 'fulfilled') {
          this.events.event(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${r.value.metadata?.name}`);
        } else {
          failed.push(r);
          this.events.event(rs, 'Warning', 'FailedCreate', `Error creating: ${(r.reason as Error).message}`);
        }
      }
      remaining -= size;
      if (failed.length > 0) {
        this.expectations.lowerCreations(key, failed.length + remaining);
        throw failed[0].reason;
      }
      batch *= 2;
    }
  }

  private calculateStatus(rs: ReplicaSet, pods: Pod[], manageError: unknown): RSStatus {
    const templateLabels = rs.spec?.template?.metadata?.labels;
    const minReady = rs.spec?.minReadySeconds ?? 0;
    const now = this.now();
    const status: RSStatus = {
      replicas: pods.length,
      fullyLabeledReplicas: pods.filter((p) => labelsContain(p.metadata?.labels, templateLabels)).length,
      readyReplicas: pods.filter(isPodReady).length,
      availableReplicas: pods.filter((p) => isPodAvailable(p, minReady, now)).length,
      observedGeneration: rs.metadata?.generation,
    };
    const others = (rs.status?.conditions ?? []).filter((c) => c.type !== 'ReplicaFailure');
    const old = rs.status?.conditions?.find((c) => c.type === 'ReplicaFailure');
    if (manageError !== undefined) {
      const creating = pods.length < (rs.spec?.replicas ?? 1);
      others.push({
        type: 'ReplicaFailure',
        status: 'True',
        reason: creating ? 'FailedCreate' : 'FailedDelete',
        message: (manageError as Error).message ?? String(manageError),
        lastTransitionTime: old?.lastTransitionTime ?? new Date(now).toISOString(),
      });
    }
    if (others.length > 0) status.conditions = others;
    return status;
  }

  private async updateStatus(rs: ReplicaSet, status: RSStatus): Promise<RSStatus> {
    const same = (a: RSStatus | undefined) =>
      JSON.stringify(normalize(a)) === JSON.stringify(normalize(status));
    if (same(rs.status)) return status;
    let current = rs;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.cluster.update(this.kind.resource, { ...current, status }, 'status');
        return status;
      } catch (err) {
        if (!isConflict(err) || attempt >= 1) {
          if (isNotFound(err)) return status;
          throw err;
        }
        current = await this.cluster.get<ReplicaSet>(
          this.kind.resource,
          rs.metadata?.namespace,
          rs.metadata?.name ?? '',
        );
      }
    }
  }
}

function normalize(s: RSStatus | undefined) {
  return {
    replicas: s?.replicas ?? 0,
    fullyLabeledReplicas: s?.fullyLabeledReplicas ?? 0,
    readyReplicas: s?.readyReplicas ?? 0,
    availableReplicas: s?.availableReplicas ?? 0,
    observedGeneration: s?.observedGeneration ?? 0,
    conditions: s?.conditions ?? [],
  };
}

/** The pod a ReplicaSet (or ReplicationController) creates: its template, named `<rs>-xxxxx`, owned by it. */
export function podFromTemplate(rs: ReplicaSet, kind: ReplicatedKind = REPLICA_SETS): Pod {
  const t = rs.spec?.template;
  const meta = t?.metadata ?? {};
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${rs.metadata?.name}-`,
      namespace: rs.metadata?.namespace,
      labels: meta.labels ? { ...meta.labels } : undefined,
      annotations: meta.annotations ? { ...meta.annotations } : undefined,
      finalizers: meta.finalizers ? [...meta.finalizers] : undefined,
      ownerReferences: [ownerRefFor(rs, kind.kind, kind.apiVersion)],
    },
    spec: structuredClone(t?.spec ?? { containers: [] }),
  };
}

/** The replication controller: the ReplicaSet controller over core/v1 ReplicationControllers. */
export class ReplicationManager extends ReplicaSetController {
  constructor(
    cluster: Cluster,
    informers: SharedInformerFactory,
    opts: Omit<ReplicaSetControllerOptions, 'kind'> = {},
  ) {
    super(cluster, informers, { ...opts, kind: REPLICATION_CONTROLLERS });
  }
}
