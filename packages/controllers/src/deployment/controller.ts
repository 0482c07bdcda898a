// The Deployment controller: owns ReplicaSets (one per pod template, named by
// its pod-template-hash) and moves replicas from the old ones to the new one,
// by RollingUpdate within maxSurge/maxUnavailable or by Recreate. Keeps
// revisions, cleans up old history, reports progress and availability.
import { isAlreadyExists, isConflict, isNotFound } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf, splitKey } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { compileSelector } from '../labels.js';
import { MutationCache } from '../mutation-cache.js';
import { controllerOf, isoNow, ownerRefFor } from '../objects.js';
import { ensureIndex } from '../shared-informers.js';
import type { Deployment, OwnerReference, Pod, ReplicaSet } from '../types.js';
import {
  condition,
  deploymentComplete,
  deploymentProgressing,
  deploymentTimedOut,
  getCondition,
  progressDeadlineSeconds,
  Reason,
  setCondition,
} from './conditions.js';
import {
  byCreation,
  DEFAULT_REVISION_HISTORY_LIMIT,
  DESIRED_REPLICAS_ANNOTATION,
  equalIgnoreHash,
  isRollingUpdate,
  keptAvailable,
  MAX_REPLICAS_ANNOTATION,
  maxRevision,
  maxSurge,
  maxUnavailable,
  newRSNewReplicas,
  POD_TEMPLATE_HASH,
  podTemplateHash,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  revisionOf,
  specReplicas,
  sumKeptAvailable,
  sumSpec,
  sumStatus,
} from './util.js';

type DStatus = NonNullable<Deployment['status']>;

export interface DeploymentControllerOptions {
  now?: () => number;
  events?: EventSink;
  log?: Logger;
}

/** One sync's view: the deployment, the RS for its current template (if any) and the others. */
interface Rollout {
  d: Deployment;
  newRS: ReplicaSet | undefined;
  oldRSs: ReplicaSet[];
  /** A condition the sync decided on before computing status (new RS created/found). */
  progress?: { reason: string; message: string };
}

const OWNER_UID_INDEX = 'controllerUID';
const byControllerUID = (o: Pod | ReplicaSet): string[] => {
  const ref = controllerOf(o);
  return ref ? [ref.uid] : [];
};

export class DeploymentController implements Controller {
  readonly name = 'deployment';
  readonly queue = new RateLimitingQueue<string>();
  private readonly dInformer: Informer<Deployment>;
  private readonly rsInformer: Informer<ReplicaSet>;
  private readonly podInformer: Informer<Pod>;
  private readonly now: () => number;
  private readonly events: EventSink;
  /** The ReplicaSets this controller wrote, ahead of the informer. */
  private readonly ownRS: MutationCache<ReplicaSet>;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: DeploymentControllerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.events = opts.events ?? noEvents;
    this.ownRS = new MutationCache(this.now);
    this.dInformer = informers.forResource<Deployment>(resources.deployments);
    this.rsInformer = informers.forResource<ReplicaSet>(resources.replicasets);
    this.podInformer = informers.forResource<Pod>(resources.pods);
    ensureIndex(this.podInformer, OWNER_UID_INDEX, byControllerUID);
    const enqueue = (d: Deployment) => this.queue.add(keyOf(d));
    this.dInformer.addEventHandler({ onAdd: enqueue, onUpdate: (_o, d) => enqueue(d), onDelete: enqueue });
    this.rsInformer.addEventHandler({
      onAdd: (rs) => this.rsChanged(rs),
      onUpdate: (old, rs) => {
        if (controllerOf(old)?.uid !== controllerOf(rs)?.uid) this.rsChanged(old);
        this.rsChanged(rs);
      },
      onDelete: (rs) => this.rsChanged(rs),
    });
    // Recreate waits for old pods to be gone; their deletion must wake it up.
    this.podInformer.addEventHandler({ onDelete: (p) => this.podDeleted(p) });
  }

  private ownerOf(ns: string | undefined, ref: OwnerReference | undefined): Deployment | undefined {
    if (ref?.kind !== 'Deployment' || ref.apiVersion !== 'apps/v1') return undefined;
    const d = this.dInformer.store.getByKey(`${ns}/${ref.name}`);
    return d?.metadata?.uid === ref.uid ? d : undefined;
  }

  private rsChanged(rs: ReplicaSet): void {
    const ref = controllerOf(rs);
    if (ref) {
      const d = this.ownerOf(rs.metadata?.namespace, ref);
      if (d) this.queue.add(keyOf(d));
      return;
    }
    for (const d of this.dInformer.store.listInNamespace(rs.metadata?.namespace ?? '')) {
      if (compileSelector(d.spec?.selector)(rs.metadata?.labels)) this.queue.add(keyOf(d));
    }
  }

  private podDeleted(p: Pod): void {
    const ref = controllerOf(p);
    if (ref?.kind !== 'ReplicaSet') return;
    const rs = this.rsInformer.store.getByKey(`${p.metadata?.namespace}/${ref.name}`);
    const d = rs && this.ownerOf(rs.metadata?.namespace, controllerOf(rs));
    if (d && !isRollingUpdate(d)) this.queue.add(keyOf(d));
  }

  // ---- reconcile ----

  async reconcile(key: string): Promise<void> {
    const cached = this.dInformer.store.getByKey(key);
    if (!cached) return;
    const d = structuredClone(cached);
    const matches = compileSelector(d.spec?.selector);
    if (Object.keys(d.spec?.selector ?? {}).length === 0) return; // validation forbids it; never select everything
    const rss = await this.claimReplicaSets(d, matches);
    if (d.metadata?.deletionTimestamp) {
      await this.syncStatusOnly(d, rss);
      return;
    }
    await this.checkPausedConditions(d);
    if (d.spec?.paused) {
      await this.syncScale(d, rss);
      return;
    }
    if (this.isScalingEvent(d, rss)) {
      await this.syncScale(d, rss);
      return;
    }
    if (isRollingUpdate(d)) await this.rolloutRolling(d, rss);
    else await this.rolloutRecreate(d, rss, key);
  }

  /** Adopts orphan RSs matching the selector and releases owned ones that stop matching. */
  private async claimReplicaSets(
    d: Deployment,
    matches: (l: { [k: string]: string } | undefined) => boolean,
  ) {
    const { namespace } = splitKey(keyOf(d));
    const out: ReplicaSet[] = [];
    for (const rs of this.ownRS.view(this.rsInformer.store.listInNamespace(namespace ?? ''), namespace)) {
      const ref = controllerOf(rs);
      if (ref && ref.uid !== d.metadata?.uid) continue;
      const ok = matches(rs.metadata?.labels);
      if (ref && ok) out.push(rs);
      else if (ref && !d.metadata?.deletionTimestamp) {
        const next = structuredClone(rs);
        next.metadata!.ownerReferences = rs.metadata?.ownerReferences?.filter(
          (r) => r.uid !== d.metadata?.uid,
        );
        await this.writeRS(next);
      } else if (!ref && ok && !d.metadata?.deletionTimestamp && !rs.metadata?.deletionTimestamp) {
        const next = structuredClone(rs);
        next.metadata!.ownerReferences = [
          ...(rs.metadata?.ownerReferences ?? []),
          ownerRefFor(d, 'Deployment'),
        ];
        const adopted = await this.writeRS(next);
        if (adopted) out.push(adopted);
      }
    }
    return out;
  }

  private async writeRS(rs: ReplicaSet): Promise<ReplicaSet | undefined> {
    try {
      return this.ownRS.wrote(await this.cluster.update(resources.replicasets, rs));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Spec replicas differ from what the active RSs were last sized for. */
  private isScalingEvent(d: Deployment, rss: ReplicaSet[]): boolean {
    const want = String(d.spec?.replicas ?? 1);
    const { newRS, oldRSs } = this.split(d, rss);
    const active = [newRS, ...oldRSs].filter(
      (rs): rs is ReplicaSet => rs !== undefined && specReplicas(rs) > 0,
    );
    return active.some((rs) => {
      const desired = rs.metadata?.annotations?.[DESIRED_REPLICAS_ANNOTATION];
      return desired !== undefined && desired !== want;
    });
  }

  private split(d: Deployment, rss: ReplicaSet[]): { newRS?: ReplicaSet; oldRSs: ReplicaSet[] } {
    const sorted = [...rss].sort(byCreation);
    const newRS = sorted.find((rs) => equalIgnoreHash(rs.spec?.template, d.spec?.template));
    return { newRS, oldRSs: sorted.filter((rs) => rs !== newRS) };
  }

  /**
   * Finds the new RS (bumping its revision to the newest) or creates it, and
   * records the revision on the Deployment.
   */
  private async getRollout(d: Deployment, rss: ReplicaSet[], create: boolean): Promise<Rollout> {
    const { newRS: existing, oldRSs } = this.split(d, rss);
    const newRevision = maxRevision(oldRSs) + 1;
    const r: Rollout = { d, newRS: existing, oldRSs };
    if (existing) {
      const rev = revisionOf(existing);
      const annotations = { ...existing.metadata?.annotations };
      let changed = false;
      if (rev < newRevision) {
        // A rollback to an old template: the old RS becomes the newest revision.
        annotations[REVISION_ANNOTATION] = String(newRevision);
        if (rev > 0) {
          const hist = annotations[REVISION_HISTORY_ANNOTATION];
          annotations[REVISION_HISTORY_ANNOTATION] = hist ? `${hist},${rev}` : String(rev);
        }
        changed = true;
      }
      changed = setReplicaAnnotations(annotations, d) || changed;
      changed = copyDeploymentAnnotations(annotations, d) || changed;
      if ((existing.spec?.minReadySeconds ?? 0) !== (d.spec?.minReadySeconds ?? 0)) changed = true;
      if (changed) {
        const next = structuredClone(existing);
        next.metadata!.annotations = annotations;
        next.spec!.minReadySeconds = d.spec?.minReadySeconds;
        r.newRS = (await this.writeRS(next)) ?? existing;
      }
      if (!getCondition(d.status, 'Progressing')) {
        r.progress = {
          reason: Reason.FoundNewRS,
          message: `Found new replica set "${existing.metadata?.name}"`,
        };
      }
    } else if (create) {
      r.newRS = await this.createNewRS(d, rss, newRevision);
      if (r.newRS) {
        r.progress = {
          reason: Reason.NewRSCreated,
          message: `Created new replica set "${r.newRS.metadata?.name}"`,
        };
      }
    }
    const rev = r.newRS ? String(revisionOf(r.newRS)) : undefined;
    if (rev && d.metadata?.annotations?.[REVISION_ANNOTATION] !== rev) {
      const next = structuredClone(d);
      next.metadata!.annotations = { ...d.metadata?.annotations, [REVISION_ANNOTATION]: rev };
      const updated = await this.cluster.update(resources.deployments, next);
      r.d = { ...updated, status: d.status };
    }
    return r;
  }

  private async createNewRS(
    d: Deployment,
    rss: ReplicaSet[],
    revision: number,
  ): Promise<ReplicaSet | undefined> {
    const collisionCount = d.status?.collisionCount;
    const hash = podTemplateHash(d.spec?.template, collisionCount);
    const template = structuredClone(d.spec!.template);
    template.metadata = {
      ...template.metadata,
      labels: { ...template.metadata?.labels, [POD_TEMPLATE_HASH]: hash },
    };
    const selector = structuredClone(d.spec!.selector);
    selector.matchLabels = { ...selector.matchLabels, [POD_TEMPLATE_HASH]: hash };
    const annotations: { [k: string]: string } = { [REVISION_ANNOTATION]: String(revision) };
    copyDeploymentAnnotations(annotations, d);
    setReplicaAnnotations(annotations, d);
    const rs: ReplicaSet = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${d.metadata?.name}-${hash}`,
        namespace: d.metadata?.namespace,
        labels: { ...template.metadata.labels },
        annotations,
        ownerReferences: [ownerRefFor(d, 'Deployment')],
      },
      spec: { replicas: 0, minReadySeconds: d.spec?.minReadySeconds, selector, template },
    };
    rs.spec!.replicas = newRSNewReplicas(d, rss, undefined);
    try {
      const created = this.ownRS.wrote(
        await this.cluster.create(resources.replicasets, d.metadata?.namespace, rs),
      );
      const n = specReplicas(created);
      if (n > 0) {
        this.events.event(
          d,
          'Normal',
          'ScalingReplicaSet',
          `Scaled up replica set ${created.metadata?.name} from 0 to ${n}`,
        );
      }
      return created;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const found = await this.cluster.get<ReplicaSet>(
        resources.replicasets,
        d.metadata?.namespace,
        rs.metadata!.name!,
      );
      if (
        controllerOf(found)?.uid === d.metadata?.uid &&
        equalIgnoreHash(found.spec?.template, d.spec?.template)
      ) {
        return found;
      }
      // A different RS has this name: bump collisionCount so the next hash differs.
      const next = structuredClone(d);
      next.status = { ...d.status, collisionCount: (collisionCount ?? 0) + 1 };
      await this.cluster.update(resources.deployments, next, 'status');
      throw new Error(
        `hash collision for ReplicaSet ${rs.metadata!.name}; retrying with collisionCount ${(collisionCount ?? 0) + 1}`,
      );
    }
  }

  private async scaleRS(rs: ReplicaSet, replicas: number, d: Deployment): Promise<ReplicaSet> {
    const annotations = { ...rs.metadata?.annotations };
    const annotationsChanged = setReplicaAnnotations(annotations, d);
    if (specReplicas(rs) === replicas && !annotationsChanged) return rs;
    const next = structuredClone(rs);
    next.spec!.replicas = replicas;
    next.metadata!.annotations = annotations;
    const updated = this.ownRS.wrote(await this.cluster.update(resources.replicasets, next));
    const from = specReplicas(rs);
    if (from !== replicas) {
      const dir = replicas > from ? 'up' : 'down';
      this.events.event(
        d,
        'Normal',
        'ScalingReplicaSet',
        `Scaled ${dir} replica set ${rs.metadata?.name} from ${from} to ${replicas}`,
      );
    }
    return updated;
  }

  // ---- strategies ----

  private async rolloutRolling(d0: Deployment, rss: ReplicaSet[]): Promise<void> {
    const r = await this.getRollout(d0, rss, true);
    const { d, newRS } = r;
    let oldRSs = r.oldRSs;
    const all = () => [...(r.newRS ? [r.newRS] : []), ...oldRSs];
    // Grow the new RS as far as maxSurge allows.
    if (newRS) {
      const want = d.spec?.replicas ?? 1;
      const cur = specReplicas(newRS);
      const target = cur > want ? want : newRSNewReplicas(d, all(), newRS);
      if (target !== cur) {
        r.newRS = await this.scaleRS(newRS, target, d);
        return this.syncRolloutStatus(r, all());
      }
    }
    // Shrink old RSs as far as maxUnavailable allows.
    const scaled = await this.reconcileOldReplicaSets(d, all(), oldRSs, r.newRS);
    if (scaled) {
      oldRSs = scaled;
      return this.syncRolloutStatus({ ...r, oldRSs }, all());
    }
    const status = this.calculateStatus(d, all(), r.newRS);
    if (deploymentComplete(d, status)) await this.cleanup(d, oldRSs);
    return this.syncRolloutStatus(r, all());
  }

  /** Scales down old RSs: unhealthy replicas first, then healthy ones down to minAvailable. Returns the new list if it scaled. */
  private async reconcileOldReplicaSets(
    d: Deployment,
    all: ReplicaSet[],
    oldRSs: ReplicaSet[],
    newRS: ReplicaSet | undefined,
  ): Promise<ReplicaSet[] | undefined> {
    if (sumSpec(oldRSs) === 0) return undefined;
    const replicas = d.spec?.replicas ?? 1;
    const minAvailable = replicas - maxUnavailable(d);
    const newUnavailable = specReplicas(newRS) - keptAvailable(newRS);
    let budget = sumSpec(all) - minAvailable - newUnavailable;
    if (budget <= 0) return undefined;
    const olds = [...oldRSs].sort(byCreation);
    let changed = false;
    // 1. Unhealthy old replicas cost no availability: remove them first.
    for (let i = 0; i < olds.length && budget > 0; i++) {
      const rs = olds[i];
      const unhealthy = specReplicas(rs) - keptAvailable(rs);
      if (unhealthy <= 0) continue;
      const down = Math.min(unhealthy, budget);
      olds[i] = await this.scaleRS(rs, specReplicas(rs) - down, d);
      budget -= down;
      changed = true;
    }
    // 2. Healthy ones, as long as enough pods stay available.
    const allNow = [...(newRS ? [newRS] : []), ...olds];
    // As Kubernetes: healthy replicas may go as long as minAvailable stay
    // available; counted as what each ReplicaSet keeps, not a stale status.
    const available = sumKeptAvailable(allNow);
    let removable = available - minAvailable;
    for (let i = 0; i < olds.length && removable > 0; i++) {
      const rs = olds[i];
      const cur = specReplicas(rs);
      if (cur === 0) continue;
      const down = Math.min(cur, removable);
      olds[i] = await this.scaleRS(rs, cur - down, d);
      removable -= down;
      changed = true;
    }
    return changed ? olds : undefined;
  }

  private async rolloutRecreate(d0: Deployment, rss: ReplicaSet[], key: string): Promise<void> {
    let r = await this.getRollout(d0, rss, false);
    const active = r.oldRSs.filter((rs) => specReplicas(rs) > 0);
    if (active.length > 0) {
      const olds = [];
      for (const rs of r.oldRSs) olds.push(specReplicas(rs) > 0 ? await this.scaleRS(rs, 0, r.d) : rs);
      return this.syncRolloutStatus({ ...r, oldRSs: olds }, [...(r.newRS ? [r.newRS] : []), ...olds]);
    }
    if (this.oldPodsRunning(r.oldRSs)) {
      return this.syncRolloutStatus(r, [...(r.newRS ? [r.newRS] : []), ...r.oldRSs]);
    }
    if (!r.newRS) r = await this.getRollout(r.d, rss, true);
    if (r.newRS) r.newRS = await this.scaleRS(r.newRS, r.d.spec?.replicas ?? 1, r.d);
    const all = [...(r.newRS ? [r.newRS] : []), ...r.oldRSs];
    if (deploymentComplete(r.d, this.calculateStatus(r.d, all, r.newRS))) await this.cleanup(r.d, r.oldRSs);
    void key;
    return this.syncRolloutStatus(r, all);
  }

  /** Any pod of an old RS that has not terminated (Recreate waits for all of them). */
  private oldPodsRunning(oldRSs: ReplicaSet[]): boolean {
    for (const rs of oldRSs) {
      if ((rs.status?.replicas ?? 0) > 0) return true;
      for (const p of this.podInformer.store.byIndex(OWNER_UID_INDEX, rs.metadata?.uid ?? '')) {
        const phase = p.status?.phase;
        if (phase !== 'Failed' && phase !== 'Succeeded') return true;
      }
    }
    return false;
  }

  /** A replica-count change (or pause): resize the active RSs without rolling out. */
  private async syncScale(d0: Deployment, rss: ReplicaSet[]): Promise<void> {
    const r = await this.getRollout(d0, rss, false);
    const { d } = r;
    let { newRS, oldRSs } = r;
    const replicas = d.spec?.replicas ?? 1;
    const active = [newRS, ...oldRSs].filter(
      (rs): rs is ReplicaSet => rs !== undefined && specReplicas(rs) > 0,
    );
    const replace = (rs: ReplicaSet) => {
      if (rs === newRS || rs.metadata?.uid === newRS?.metadata?.uid) newRS = rs;
      else oldRSs = oldRSs.map((o) => (o.metadata?.uid === rs.metadata?.uid ? rs : o));
    };
    if (active.length <= 1) {
      const target = active[0] ?? newRS ?? [...oldRSs].sort((a, b) => revisionOf(b) - revisionOf(a))[0];
      if (target) replace(await this.scaleRS(target, replicas, d));
    } else if (
      newRS &&
      specReplicas(newRS) === replicas &&
      sumStatus([newRS], (s) => s.availableReplicas) === replicas
    ) {
      for (const rs of oldRSs) if (specReplicas(rs) > 0) replace(await this.scaleRS(rs, 0, d));
    } else if (isRollingUpdate(d)) {
      for (const [rs, size] of proportionalSizes(active, replicas + maxSurge(d)))
        replace(await this.scaleRS(rs, size, d));
    }
    const all = [...(newRS ? [newRS] : []), ...oldRSs];
    if (d.spec?.paused) await this.cleanup(d, oldRSs);
    await this.writeStatus(d, this.calculateStatus(d, all, newRS));
  }

  private async syncStatusOnly(d: Deployment, rss: ReplicaSet[]): Promise<void> {
    const { newRS } = this.split(d, rss);
    await this.writeStatus(d, this.calculateStatus(d, rss, newRS));
  }

  /** Paused ⇄ resumed shows on the Progressing condition (status Unknown). */
  private async checkPausedConditions(d: Deployment): Promise<void> {
    const c = getCondition(d.status, 'Progressing');
    if (c?.reason === Reason.TimedOut) return;
    const paused = d.spec?.paused === true;
    const showsPaused = c?.reason === Reason.Paused;
    if (paused === showsPaused) return;
    const status = structuredClone(d.status ?? {});
    const now = isoNow(this.now());
    setCondition(
      status,
      paused
        ? condition('Progressing', 'Unknown', Reason.Paused, 'Deployment is paused', now)
        : condition('Progressing', 'Unknown', Reason.Resumed, 'Deployment is resumed', now),
    );
    const written = await this.writeStatus(d, status);
    // The spec writes later in this sync (the revision annotation) must not conflict with this one.
    d.status = written.status;
    if (written.resourceVersion) d.metadata = { ...d.metadata, resourceVersion: written.resourceVersion };
  }

  // ---- status ----

  private calculateStatus(d: Deployment, all: ReplicaSet[], newRS: ReplicaSet | undefined): DStatus {
    const available = sumStatus(all, (s) => s.availableReplicas);
    const status: DStatus = {
      ...structuredClone(d.status ?? {}),
      observedGeneration: d.metadata?.generation,
      replicas: sumStatus(all, (s) => s.replicas),
      updatedReplicas: newRS ? (newRS.status?.replicas ?? 0) : 0,
      readyReplicas: sumStatus(all, (s) => s.readyReplicas),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, sumSpec(all) - available),
    };
    const now = isoNow(this.now());
    // A ReplicaSet that cannot create or delete pods makes the Deployment say so.
    const failure = all
      .map((rs) => rs.status?.conditions?.find((c) => c.type === 'ReplicaFailure'))
      .find((c) => c?.status === 'True');
    if (failure) {
      setCondition(
        status,
        condition('ReplicaFailure', 'True', failure.reason ?? 'FailedCreate', failure.message ?? '', now),
      );
    } else if (status.conditions?.some((c) => c.type === 'ReplicaFailure')) {
      status.conditions = status.conditions.filter((c) => c.type !== 'ReplicaFailure');
    }
    const minAvailable = (d.spec?.replicas ?? 1) - maxUnavailable(d);
    setCondition(
      status,
      available >= minAvailable
        ? condition('Available', 'True', Reason.MinimumAvailable, 'Deployment has minimum availability.', now)
        : condition(
            'Available',
            'False',
            Reason.MinimumUnavailable,
            'Deployment does not have minimum availability.',
            now,
          ),
    );
    return status;
  }

  /** Status plus the Progressing condition; re-checks at the progress deadline. */
  private async syncRolloutStatus(r: Rollout, all: ReplicaSet[]): Promise<void> {
    const { d, newRS } = r;
    const status = this.calculateStatus(d, all, newRS);
    const now = this.now();
    const stamp = isoNow(now);
    const deadline = progressDeadlineSeconds(d);
    const name = newRS?.metadata?.name ?? '';
    if (deadline !== undefined) {
      const cur = getCondition(d.status, 'Progressing');
      const completeBefore =
        cur?.reason === Reason.NewRSAvailable && status.replicas === status.updatedReplicas;
      if (r.progress) {
        setCondition(status, condition('Progressing', 'True', r.progress.reason, r.progress.message, stamp));
      } else if (deploymentComplete(d, status)) {
        setCondition(
          status,
          condition(
            'Progressing',
            'True',
            Reason.NewRSAvailable,
            `ReplicaSet "${name}" has successfully progressed.`,
            stamp,
          ),
        );
      } else if (!completeBefore && deploymentProgressing(d, status)) {
        setProgressing(status, cur, `ReplicaSet "${name}" is progressing.`, stamp);
      } else if (!completeBefore && deploymentTimedOut(d, status, now)) {
        setCondition(
          status,
          condition(
            'Progressing',
            'False',
            Reason.TimedOut,
            `ReplicaSet "${name}" has timed out progressing.`,
            stamp,
          ),
        );
      }
    }
    await this.writeStatus(d, status);
    // Nothing will happen at the deadline by itself: look again then.
    const c = getCondition(status, 'Progressing');
    if (
      deadline !== undefined &&
      !deploymentComplete(d, status) &&
      c?.status === 'True' &&
      c.reason !== Reason.NewRSAvailable
    ) {
      const at = Date.parse(c.lastUpdateTime ?? '') + deadline * 1000;
      if (Number.isFinite(at)) this.queue.addAfter(keyOf(d), Math.max(0, at - now) + 1000);
    }
  }

  /**
   * Writes the status if it changed. Returns it with the Deployment's new
   * resourceVersion, which a later write in the same sync must use (or it
   * conflicts with this very write).
   */
  private async writeStatus(
    d: Deployment,
    status: DStatus,
  ): Promise<{ status: DStatus; resourceVersion?: string }> {
    const resourceVersion = d.metadata?.resourceVersion;
    if (JSON.stringify(status) === JSON.stringify(d.status ?? {})) return { status, resourceVersion };
    try {
      const written = await this.cluster.update(resources.deployments, { ...d, status }, 'status');
      return { status, resourceVersion: written.metadata?.resourceVersion };
    } catch (err) {
      if (isNotFound(err)) return { status, resourceVersion };
      if (!isConflict(err)) throw err;
      const fresh = await this.cluster.get<Deployment>(
        resources.deployments,
        d.metadata?.namespace,
        d.metadata?.name ?? '',
      );
      const written = await this.cluster.update(resources.deployments, { ...fresh, status }, 'status');
      return { status, resourceVersion: written.metadata?.resourceVersion };
    }
  }

  /** Deletes the oldest idle RSs beyond revisionHistoryLimit. */
  private async cleanup(d: Deployment, oldRSs: ReplicaSet[]): Promise<void> {
    const limit = d.spec?.revisionHistoryLimit ?? DEFAULT_REVISION_HISTORY_LIMIT;
    const idle = oldRSs
      .filter(
        (rs) =>
          specReplicas(rs) === 0 &&
          (rs.status?.replicas ?? 0) === 0 &&
          !rs.metadata?.deletionTimestamp &&
          (rs.status?.observedGeneration ?? 0) >= (rs.metadata?.generation ?? 0),
      )
      .sort((a, b) => revisionOf(a) - revisionOf(b) || byCreation(a, b));
    for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) {
      try {
        await this.cluster.delete(resources.replicasets, rs.metadata?.namespace, rs.metadata?.name ?? '', {
          preconditions: { uid: rs.metadata?.uid },
        });
        this.ownRS.deleted(rs);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
}

function setProgressing(
  status: DStatus,
  cur: ReturnType<typeof getCondition>,
  message: string,
  now: string,
): void {
  const c = condition('Progressing', 'True', Reason.RSUpdated, message, now);
  if (cur?.status === 'True') c.lastTransitionTime = cur.lastTransitionTime;
  status.conditions = [...(status.conditions ?? []).filter((x) => x.type !== 'Progressing'), c];
}

/**
 * Annotations a Deployment never hands to its ReplicaSets: the controller's own
 * bookkeeping, and kubectl's last-applied copy of the Deployment itself.
 */
const NOT_COPIED_TO_RS = new Set([
  'kubectl.kubernetes.io/last-applied-configuration',
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  DESIRED_REPLICAS_ANNOTATION,
  MAX_REPLICAS_ANNOTATION,
  'deprecated.deployment.rollback.to',
]);

/**
 * Copies the Deployment's other annotations onto its new ReplicaSet, as
 * Kubernetes does: that is how `kubernetes.io/change-cause` reaches the
 * revision history (`kubit rollout history`). True if anything changed.
 */
function copyDeploymentAnnotations(a: { [k: string]: string }, d: Deployment): boolean {
  let changed = false;
  for (const [k, v] of Object.entries(d.metadata?.annotations ?? {})) {
    if (NOT_COPIED_TO_RS.has(k) || a[k] === v) continue;
    a[k] = v;
    changed = true;
  }
  return changed;
}

/** Writes desired/max replicas annotations; true if anything changed. */
function setReplicaAnnotations(a: { [k: string]: string }, d: Deployment): boolean {
  const desired = String(d.spec?.replicas ?? 1);
  const max = String((d.spec?.replicas ?? 1) + maxSurge(d));
  const changed = a[DESIRED_REPLICAS_ANNOTATION] !== desired || a[MAX_REPLICAS_ANNOTATION] !== max;
  a[DESIRED_REPLICAS_ANNOTATION] = desired;
  a[MAX_REPLICAS_ANNOTATION] = max;
  return changed;
}

/**
 * Spreads a new total over several active RSs in proportion to their sizes
 * (a scale during a rollout); the rounding leftover goes to the largest.
 */
export function proportionalSizes(active: ReplicaSet[], total: number): [ReplicaSet, number][] {
  const current = sumSpec(active);
  if (current === 0) return [];
  const sorted = [...active].sort((a, b) => specReplicas(b) - specReplicas(a) || -byCreation(a, b));
  const sizes = sorted.map((rs) => Math.floor((specReplicas(rs) * total) / current));
  const leftover = total - sizes.reduce((a, b) => a + b, 0);
  sizes[0] += leftover;
  return sorted.map((rs, i) => [rs, Math.max(0, sizes[i])]);
}
