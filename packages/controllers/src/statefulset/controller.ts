// The StatefulSet controller (Kubernetes' pkg/controller/statefulset): pods
// with stable names, claims and ordered scaling, and a revision history of
// the pod template that rolling updates and `kubectl rollout undo` use. One
// sync adopts and releases pods and revisions, finds the current and update
// revisions, plans (plan.ts) and carries out the plan, trims the history and
// writes the status. It needs no expectations: a pod's name is its identity,
// so creating it twice is refused by the apiserver and deleting it twice is
// stopped by the uid precondition.
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { ControllerRefManager } from '../controller-ref.js';
import { type EventSink, noEvents } from '../events.js';
import { compileSelector } from '../labels.js';
import { controllerOf, isPodReady, ownerRefFor } from '../objects.js';
import type {
  ControllerRevision,
  PersistentVolumeClaim,
  Pod,
  StatefulSet,
  StatefulSetStatus,
} from '../types.js';
import { claimOwnerRefs, claimsFor } from './claims.js';
import { isMemberOf, ordinalOf, revisionOfPod } from './identity.js';
import { type Action, type Plan, planSync } from './plan.js';
import {
  applyRevision,
  byRevision,
  DEFAULT_REVISION_HISTORY_LIMIT,
  newRevision,
  nextRevision,
  revisionsToTruncate,
  sameData,
} from './revisions.js';

export interface StatefulSetControllerOptions {
  now?: () => number;
  events?: EventSink;
  log?: Logger;
  /**
   * Whether the apiserver serves PersistentVolumeClaims: without them the
   * controller watches none and refuses sets with volumeClaimTemplates.
   */
  claimsServed?: boolean;
}

/** At most this many hash collisions are tried before giving up for this sync. */
const MAX_COLLISIONS = 10;

export class StatefulSetController implements Controller {
  readonly name = 'statefulset';
  readonly queue = new RateLimitingQueue<string>();
  private readonly sets: Informer<StatefulSet>;
  private readonly pods: Informer<Pod>;
  private readonly revisions: Informer<ControllerRevision>;
  private readonly claims: Informer<PersistentVolumeClaim> | undefined;
  private readonly now: () => number;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: StatefulSetControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.events = opts.events ?? noEvents;
    this.sets = informers.forResource<StatefulSet>(resources.statefulsets);
    this.pods = informers.forResource<Pod>(resources.pods);
    this.revisions = informers.forResource<ControllerRevision>(resources.controllerrevisions);
    if (opts.claimsServed !== false)
      this.claims = informers.forResource<PersistentVolumeClaim>(resources.persistentvolumeclaims);
    this.sets.addEventHandler({
      onAdd: (s) => this.queue.add(keyOf(s)),
      onUpdate: (_old, s) => this.queue.add(keyOf(s)),
      onDelete: (s) => this.queue.add(keyOf(s)),
    });
    this.pods.addEventHandler({
      onAdd: (p) => this.podChanged(undefined, p),
      onUpdate: (old, p) => this.podChanged(old, p),
      onDelete: (p) => this.podChanged(undefined, p),
    });
  }

  // ---- pod events → set keys ----

  private ownerKey(p: Pod): string | undefined {
    const ref = controllerOf(p);
    if (ref?.kind !== 'StatefulSet' || ref.apiVersion !== 'apps/v1') return undefined;
    const key = `${p.metadata?.namespace}/${ref.name}`;
    return this.sets.store.getByKey(key)?.metadata?.uid === ref.uid ? key : undefined;
  }

  private podChanged(old: Pod | undefined, p: Pod): void {
    for (const pod of old && controllerOf(old)?.uid !== controllerOf(p)?.uid ? [old, p] : [p]) {
      const key = this.ownerKey(pod);
      if (key) {
        this.queue.add(key);
        const minReady = this.sets.store.getByKey(key)?.spec?.minReadySeconds ?? 0;
        // Availability comes with time, not with an event: look again then.
        if (old && minReady > 0 && !isPodReady(old) && isPodReady(p))
          this.queue.addAfter(key, minReady * 1000 + 100);
        continue;
      }
      if (controllerOf(pod)) continue;
      // An orphan: every set that could adopt it.
      for (const s of this.sets.store.listInNamespace(pod.metadata?.namespace ?? '')) {
        if (isMemberOf(s, pod) && compileSelector(s.spec?.selector)(pod.metadata?.labels))
          this.queue.add(keyOf(s));
      }
    }
  }

  // ---- reconcile ----

  async reconcile(key: string): Promise<void> {
    const set = this.sets.store.getByKey(key);
    if (!set) return;
    const { namespace = '' } = splitKey(key);
    const matches = compileSelector(set.spec?.selector);
    const ownership = new ControllerRefManager(this.cluster, set, {
      resource: resources.statefulsets,
      kind: 'StatefulSet',
      apiVersion: 'apps/v1',
    });
    const pods = await ownership.claim(
      resources.pods,
      this.pods.store.listInNamespace(namespace),
      (p) => matches(p.metadata?.labels) && isMemberOf(set, p),
    );
    const revisions = (
      await ownership.claim(
        resources.controllerrevisions,
        this.revisions.store.listInNamespace(namespace),
        (r) => matches(r.metadata?.labels),
      )
    ).sort(byRevision);
    const { current, update, collisionCount, all } = await this.currentAndUpdate(set, revisions);
    const plan = planSync({
      set,
      pods,
      currentSet: applyRevision(set, current),
      updateSet: applyRevision(set, update),
      currentRevision: current.metadata?.name ?? '',
      updateRevision: update.metadata?.name ?? '',
      collisionCount,
      now: this.now(),
    });
    let failure: unknown;
    try {
      if (!set.metadata?.deletionTimestamp) {
        await this.fixClaimOwners(set, pods);
        await this.carryOut(set, plan);
      }
    } catch (err) {
      failure = err;
    }
    await this.truncateHistory(set, pods, all, plan.status);
    await this.writeStatus(set, plan.status);
    if (plan.requeueAfterMs !== undefined) this.queue.addAfter(key, plan.requeueAfterMs);
    if (failure !== undefined) throw failure;
  }

  /**
   * The revision of the set's template now (created, or an older equal one
   * renumbered as the newest: a rollback) and the revision the status names
   * current (the update revision when there is none yet).
   */
  private async currentAndUpdate(
    set: StatefulSet,
    sorted: ControllerRevision[],
  ): Promise<{
    current: ControllerRevision;
    update: ControllerRevision;
    collisionCount: number;
    all: ControllerRevision[];
  }> {
    let collisionCount = set.status?.collisionCount ?? 0;
    let update: ControllerRevision | undefined;
    for (let attempt = 0; !update; attempt++) {
      if (attempt > MAX_COLLISIONS)
        throw new Error(`too many revision hash collisions for StatefulSet ${keyOf(set)}`);
      const wanted = newRevision(set, nextRevision(sorted), collisionCount);
      const equal = sorted.filter((r) => sameData(r, wanted));
      const last = equal[equal.length - 1];
      if (last && last === sorted[sorted.length - 1]) update = last;
      else if (last) {
        update = await this.cluster.update(resources.controllerrevisions, {
          ...last,
          revision: wanted.revision,
        });
        sorted = [...sorted.filter((r) => r !== last), update];
      } else {
        update = await this.createRevision(wanted);
        if (!update) collisionCount++;
        else if (!sorted.some((r) => r.metadata?.name === update?.metadata?.name))
          sorted = [...sorted, update];
      }
    }
    const current = sorted.find((r) => r.metadata?.name === set.status?.currentRevision) ?? update;
    return { current, update, collisionCount, all: sorted };
  }

  /** Creates the revision; undefined when its name is taken by other data (a hash collision). */
  private async createRevision(rev: ControllerRevision): Promise<ControllerRevision | undefined> {
    try {
      return await this.cluster.create(resources.controllerrevisions, rev.metadata?.namespace, rev);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await this.cluster.get<ControllerRevision>(
        resources.controllerrevisions,
        rev.metadata?.namespace,
        rev.metadata?.name ?? '',
      );
      return sameData(existing, rev) ? existing : undefined;
    }
  }

  private async carryOut(set: StatefulSet, plan: Plan): Promise<void> {
    const results = await Promise.allSettled(plan.actions.map((a) => this.act(set, a)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async act(set: StatefulSet, a: Action): Promise<void> {
    const pod = a.pod;
    const name = pod.metadata?.name ?? '';
    const setName = set.metadata?.name;
    if (a.kind === 'create') {
      try {
        await this.createClaims(set, pod);
        await this.cluster.create(resources.pods, set.metadata?.namespace, pod);
      } catch (err) {
        // Its name is taken: the cache has not seen the pod created before.
        if (isAlreadyExists(err)) throw new RetryLater(`pod ${name} exists; waiting for the cache`);
        this.events.event(
          set,
          'Warning',
          'FailedCreate',
          `create Pod ${name} in StatefulSet ${setName} failed error: ${(err as Error).message}`,
        );
        throw err;
      }
      this.events.event(
        set,
        'Normal',
        'SuccessfulCreate',
        `create Pod ${name} in StatefulSet ${setName} successful`,
      );
      return;
    }
    if (a.kind === 'fixIdentity') {
      await this.cluster.update(resources.pods, a.pod);
      this.events.event(
        set,
        'Normal',
        'SuccessfulUpdate',
        `update Pod ${name} in StatefulSet ${setName} successful`,
      );
      return;
    }
    if (a.why === 'failed')
      this.events.event(
        set,
        'Warning',
        'RecreatingFailedPod',
        `StatefulSet ${keyOf(set)} is recreating failed Pod ${name}`,
      );
    try {
      await this.cluster.delete(resources.pods, pod.metadata?.namespace, name, {
        preconditions: { uid: pod.metadata?.uid },
      });
    } catch (err) {
      if (isNotFound(err)) return;
      this.events.event(
        set,
        'Warning',
        'FailedDelete',
        `delete Pod ${name} in StatefulSet ${setName} failed error: ${(err as Error).message}`,
      );
      throw err;
    }
    this.events.event(
      set,
      'Normal',
      'SuccessfulDelete',
      `delete Pod ${name} in StatefulSet ${setName} successful`,
    );
  }

  /** The pod's claims, created before it when missing; a claim being deleted holds the pod back. */
  private async createClaims(set: StatefulSet, pod: Pod): Promise<void> {
    const wanted = claimsFor(set, ordinalOf(pod));
    if (wanted.length === 0) return;
    if (!this.claims)
      throw new Error(
        'the apiserver serves no PersistentVolumeClaims; volumeClaimTemplates cannot be honoured',
      );
    for (const claim of wanted) {
      const name = claim.metadata?.name ?? '';
      const cached = this.claims.store.getByKey(keyOf(claim));
      if (cached?.metadata?.deletionTimestamp) throw new RetryLater(`pvc ${name} is being deleted`);
      // Owned by a pod of this name that is gone (scaled down, whenScaled: Delete): the
      // garbage collector is about to delete it, and the new pod must not bind it.
      if (cached?.metadata?.ownerReferences?.some((r) => r.kind === 'Pod' && r.name === pod.metadata?.name))
        throw new RetryLater(`pvc ${name} is stale: its pod was deleted and so will it be`);
      if (cached) continue;
      // Owned by the set from the start when the set's deletion deletes it.
      if (set.spec?.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete')
        claim.metadata!.ownerReferences = [ownerRefFor(set, 'StatefulSet')];
      try {
        await this.cluster.create(resources.persistentvolumeclaims, set.metadata?.namespace, claim);
      } catch (err) {
        if (isAlreadyExists(err)) continue;
        this.events.event(
          set,
          'Warning',
          'FailedCreate',
          `create Claim ${name} for Pod ${pod.metadata?.name} in StatefulSet ${set.metadata?.name} failed error: ${(err as Error).message}`,
        );
        throw err;
      }
      this.events.event(
        set,
        'Normal',
        'SuccessfulCreate',
        `create Claim ${name} Pod ${pod.metadata?.name} in StatefulSet ${set.metadata?.name} success`,
      );
    }
  }

  /** The claims of live pods: there (for pending pods), with the owners the retention policy wants. */
  private async fixClaimOwners(set: StatefulSet, pods: readonly Pod[]): Promise<void> {
    if (!this.claims || (set.spec?.volumeClaimTemplates ?? []).length === 0) return;
    for (const pod of pods) {
      if (pod.metadata?.deletionTimestamp || ordinalOf(pod) < 0) continue;
      // A pending pod whose claim was deleted would never start: give it a new one.
      if (pod.status?.phase === 'Pending') await this.createClaims(set, pod);
      for (const wanted of claimsFor(set, ordinalOf(pod))) {
        const claim = this.claims.store.getByKey(keyOf(wanted));
        const refs = claim && claimOwnerRefs(claim, set, pod);
        if (!claim || !refs) continue;
        try {
          await this.cluster.update(resources.persistentvolumeclaims, {
            ...claim,
            metadata: { ...claim.metadata, ownerReferences: refs.length > 0 ? refs : undefined },
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    }
  }

  private async truncateHistory(
    set: StatefulSet,
    pods: readonly Pod[],
    revisions: readonly ControllerRevision[],
    status: StatefulSetStatus,
  ): Promise<void> {
    const live = new Set<string>([status.currentRevision ?? '', status.updateRevision ?? '']);
    for (const p of pods) live.add(revisionOfPod(p) ?? '');
    const limit = set.spec?.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT;
    for (const r of revisionsToTruncate([...revisions].sort(byRevision), live, limit)) {
      try {
        await this.cluster.delete(
          resources.controllerrevisions,
          r.metadata?.namespace,
          r.metadata?.name ?? '',
          {
            preconditions: { uid: r.metadata?.uid },
          },
        );
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  private async writeStatus(set: StatefulSet, status: StatefulSetStatus): Promise<void> {
    if (sameStatus(set.status, status)) return;
    let current = set;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.cluster.update(resources.statefulsets, { ...current, status }, 'status');
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (!isConflict(err) || attempt >= 1) throw err;
        current = await this.cluster.get<StatefulSet>(
          resources.statefulsets,
          set.metadata?.namespace,
          set.metadata?.name ?? '',
        );
      }
    }
  }
}

function sameStatus(a: StatefulSetStatus | undefined, b: StatefulSetStatus): boolean {
  const norm = (s: StatefulSetStatus | undefined) => ({
    observedGeneration: s?.observedGeneration ?? 0,
    replicas: s?.replicas ?? 0,
    readyReplicas: s?.readyReplicas ?? 0,
    availableReplicas: s?.availableReplicas ?? 0,
    currentReplicas: s?.currentReplicas ?? 0,
    updatedReplicas: s?.updatedReplicas ?? 0,
    currentRevision: s?.currentRevision ?? '',
    updateRevision: s?.updateRevision ?? '',
    collisionCount: s?.collisionCount ?? 0,
    conditions: s?.conditions ?? [],
  });
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}
