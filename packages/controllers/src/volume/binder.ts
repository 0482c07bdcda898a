// The persistent-volume binder, as Kubernetes' pv_controller (the parts Kubit needs):
// - an unbound claim binds to a volume pre-bound to it or the smallest that fits
//   (matching.ts); claim and volume both record the bind (claimRef, volumeName, the
//   bind-completed and bound-by-controller annotations) and turn Bound;
// - an unbound claim nothing fits whose class names a provisioner gets
//   STORAGE_PROVISIONER_ANNOTATION (and its beta twin), for a WaitForFirstConsumer class
//   only once the scheduler has written SELECTED_NODE_ANNOTATION (the provisioner then
//   creates a volume pre-bound to it, see @kubit/api storage.ts);
// - a volume whose claim is gone turns Released and its reclaim policy applies: Retain
//   keeps it, Delete removes the object unless a provisioner made it (a node-local one's
//   kubelet deletes the data first), Recycle is not supported (Failed);
// - a bound claim whose volume is gone, or bound elsewhere, turns Lost.
import {
  BETA_STORAGE_PROVISIONER_ANNOTATION,
  BIND_COMPLETED_ANNOTATION,
  BOUND_BY_CONTROLLER_ANNOTATION,
  defaultClassOf,
  isConflict,
  isNotFound,
  type PersistentVolume,
  type PersistentVolumeClaim,
  PROVISIONED_BY_ANNOTATION,
  SELECTED_NODE_ANNOTATION,
  STORAGE_PROVISIONER_ANNOTATION,
  type StorageClass,
} from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import type { Node } from '../types.js';
import { claimClass, findBestMatch, isPreBoundTo, mismatch } from './matching.js';

export interface BinderOptions {
  events?: EventSink;
  log?: Logger;
}

const CLAIM = 'claim:';
const VOLUME = 'volume:';

type Phase = 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed' | 'Lost';

export class PersistentVolumeBinder implements Controller {
  readonly name = 'persistentvolume-binder';
  readonly queue = new RateLimitingQueue<string>();
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly volumes: Informer<PersistentVolume>;
  private readonly classes: Informer<StorageClass>;
  private readonly nodes: Informer<Node>;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: BinderOptions = {},
  ) {
    this.events = opts.events ?? noEvents;
    this.claims = informers.forResource<PersistentVolumeClaim>(resources.persistentvolumeclaims);
    this.volumes = informers.forResource<PersistentVolume>(resources.persistentvolumes);
    this.classes = informers.forResource<StorageClass>(resources.storageclasses);
    this.nodes = informers.forResource<Node>(resources.nodes);
    const claimChanged = (c: PersistentVolumeClaim) => {
      this.queue.add(CLAIM + keyOf(c));
      // The volumes naming it learn of its bind or its deletion.
      for (const pv of this.volumes.store.list()) {
        const ref = pv.spec?.claimRef;
        if (ref?.name === c.metadata?.name && ref?.namespace === c.metadata?.namespace)
          this.queue.add(VOLUME + keyOf(pv));
      }
    };
    this.claims.addEventHandler({
      onAdd: claimChanged,
      onUpdate: (_o, c) => claimChanged(c),
      onDelete: claimChanged,
    });
    const volumeChanged = (pv: PersistentVolume) => {
      this.queue.add(VOLUME + keyOf(pv));
      const ref = pv.spec?.claimRef;
      if (ref?.name) this.queue.add(`${CLAIM}${ref.namespace ?? ''}/${ref.name}`);
      // A new Available volume may fit a claim that waits.
      else
        for (const c of this.claims.store.list()) if (!c.spec?.volumeName) this.queue.add(CLAIM + keyOf(c));
    };
    this.volumes.addEventHandler({
      onAdd: volumeChanged,
      onUpdate: (_o, pv) => volumeChanged(pv),
      onDelete: volumeChanged,
    });
    // A class created after its claims lets them provision; a new default class is given
    // to the claims that name none.
    const classChanged = (sc: StorageClass) => {
      for (const c of this.claims.store.list()) {
        if (c.spec?.volumeName) continue;
        if (claimClass(c) === sc.metadata?.name || c.spec?.storageClassName === undefined)
          this.queue.add(CLAIM + keyOf(c));
      }
    };
    this.classes.addEventHandler({ onAdd: classChanged, onUpdate: (_o, sc) => classChanged(sc) });
  }

  async reconcile(key: string): Promise<void> {
    if (key.startsWith(CLAIM)) {
      const c = this.claims.store.getByKey(key.slice(CLAIM.length));
      if (c) await this.syncClaim(c);
    } else if (key.startsWith(VOLUME)) {
      const pv = this.volumes.store.getByKey(key.slice(VOLUME.length));
      if (pv) await this.syncVolume(pv);
    }
  }

  // ---- claims --------------------------------------------------------------------------

  private async syncClaim(claim: PersistentVolumeClaim): Promise<void> {
    if (claim.metadata?.annotations?.[BIND_COMPLETED_ANNOTATION] === undefined)
      return this.syncUnboundClaim(claim);
    return this.syncBoundClaim(claim);
  }

  private async syncUnboundClaim(claim: PersistentVolumeClaim): Promise<void> {
    if (claim.metadata?.deletionTimestamp) return; // nothing to bind a claim on its way out to
    if (await this.assignDefaultClass(claim)) return; // the update comes back as an event
    const volumeName = claim.spec?.volumeName;
    if (volumeName) {
      // The user asked for this volume.
      const pv = this.volumes.store.get(volumeName);
      if (!pv) return this.setClaimPhase(claim, 'Pending');
      if (!pv.spec?.claimRef || isPreBoundTo(pv, claim)) return this.bind(pv, claim);
      this.events.event(
        claim,
        'Warning',
        'FailedBinding',
        `volume "${volumeName}" already bound to a different claim.`,
      );
      return this.setClaimPhase(claim, 'Pending');
    }
    const className = claimClass(claim);
    const sc = className ? this.classes.store.get(className) : undefined;
    const waitForConsumer = sc?.volumeBindingMode === 'WaitForFirstConsumer';
    const selectedNode = claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION];
    // A claim waiting for its consumer binds only where its pod landed (null: unknown node).
    const node = waitForConsumer
      ? selectedNode
        ? (this.nodes.store.get(selectedNode) ?? null)
        : null
      : undefined;
    const all = this.volumes.store.list();
    // A volume pre-bound to the claim is bound whatever the binding mode: one made for
    // this claim (its uid in claimRef, as a provisioner writes it) as it is, one a user
    // reserved by name if it fits.
    const preBound = all.find(
      (pv) =>
        isPreBoundTo(pv, claim) &&
        !pv.metadata?.deletionTimestamp &&
        (pv.spec?.claimRef?.uid || !mismatch(pv, claim)),
    );
    const match =
      preBound ?? (waitForConsumer && !selectedNode ? undefined : findBestMatch(claim, all, node));
    if (match) return this.bind(match, claim);
    if (waitForConsumer && !selectedNode) {
      this.events.event(
        claim,
        'Normal',
        'WaitForFirstConsumer',
        'waiting for first consumer to be created before binding',
      );
      return this.setClaimPhase(claim, 'Pending');
    }
    if (className && !sc) {
      this.events.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `storageclass.storage.k8s.io "${className}" not found`,
      );
      return this.setClaimPhase(claim, 'Pending');
    }
    if (!sc?.provisioner) {
      this.events.event(
        claim,
        'Normal',
        'FailedBinding',
        'no persistent volumes available for this claim and no storage class is set',
      );
      return this.setClaimPhase(claim, 'Pending');
    }
    await this.askProvisioner(claim, sc.provisioner);
  }

  /** Kubernetes' provisionClaimOperationExternal: names the provisioner on the claim and waits. */
  /**
   * Retroactive default class (Kubernetes 1.28+): a claim made while no class was the
   * default, with no class named at all (not even ""), gets the default class once one
   * exists. Returns whether it wrote.
   */
  private async assignDefaultClass(claim: PersistentVolumeClaim): Promise<boolean> {
    if (claim.spec?.storageClassName !== undefined || claim.spec?.volumeName) return false;
    if (claim.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'] !== undefined) return false;
    const sc = defaultClassOf(this.classes.store.list());
    if (!sc?.metadata?.name) return false;
    await this.write(() =>
      this.cluster.update(resources.persistentvolumeclaims, {
        ...claim,
        spec: { ...claim.spec, storageClassName: sc.metadata?.name },
      }),
    );
    return true;
  }

  private async askProvisioner(claim: PersistentVolumeClaim, provisioner: string): Promise<void> {
    const a = claim.metadata?.annotations ?? {};
    if (
      a[STORAGE_PROVISIONER_ANNOTATION] !== provisioner ||
      a[BETA_STORAGE_PROVISIONER_ANNOTATION] !== provisioner
    ) {
      await this.write(() =>
        this.cluster.update(resources.persistentvolumeclaims, {
          ...claim,
          metadata: {
            ...claim.metadata,
            annotations: {
              ...a,
              [STORAGE_PROVISIONER_ANNOTATION]: provisioner,
              [BETA_STORAGE_PROVISIONER_ANNOTATION]: provisioner,
            },
          },
        }),
      );
    }
    this.events.event(
      claim,
      'Normal',
      'ExternalProvisioning',
      `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
    );
    await this.setClaimPhase(claim, 'Pending');
  }

  private async syncBoundClaim(claim: PersistentVolumeClaim): Promise<void> {
    const volumeName = claim.spec?.volumeName;
    if (!volumeName) {
      this.events.event(
        claim,
        'Warning',
        'ClaimLost',
        'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!',
      );
      return this.setClaimPhase(claim, 'Lost');
    }
    const pv = this.volumes.store.get(volumeName);
    if (!pv) {
      if (claim.status?.phase !== 'Lost')
        this.events.event(
          claim,
          'Warning',
          'ClaimLost',
          'Bound claim has lost its PersistentVolume. Data on the volume is lost!',
        );
      return this.setClaimPhase(claim, 'Lost');
    }
    const ref = pv.spec?.claimRef;
    if (!ref || isPreBoundTo(pv, claim)) return this.bind(pv, claim);
    this.events.event(
      claim,
      'Warning',
      'ClaimMisbound',
      'Two claims are bound to the same volume, this one is bound incorrectly',
    );
    await this.setClaimPhase(claim, 'Lost');
  }

  /** Binds both ways, each step only when not already done (a retry resumes where it failed). */
  private async bind(pv: PersistentVolume, claim: PersistentVolumeClaim): Promise<void> {
    const ref = pv.spec?.claimRef;
    let volume = pv;
    if (!ref || ref.uid !== claim.metadata?.uid) {
      const byController = !ref;
      volume = await this.write(() =>
        this.cluster.update(resources.persistentvolumes, {
          ...pv,
          metadata: {
            ...pv.metadata,
            annotations: {
              ...pv.metadata?.annotations,
              ...(byController || pv.metadata?.annotations?.[BOUND_BY_CONTROLLER_ANNOTATION]
                ? { [BOUND_BY_CONTROLLER_ANNOTATION]: 'yes' }
                : {}),
            },
          },
          spec: {
            ...pv.spec,
            claimRef: {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              namespace: claim.metadata?.namespace,
              name: claim.metadata?.name,
              uid: claim.metadata?.uid,
              resourceVersion: claim.metadata?.resourceVersion,
            },
          },
        }),
      );
    }
    if (volume.status?.phase !== 'Bound')
      volume = await this.write(() =>
        this.cluster.update(
          resources.persistentvolumes,
          { ...volume, status: { ...volume.status, phase: 'Bound' } },
          'status',
        ),
      );
    let c = claim;
    const a = claim.metadata?.annotations ?? {};
    if (claim.spec?.volumeName !== pv.metadata?.name || a[BIND_COMPLETED_ANNOTATION] === undefined) {
      const byController = claim.spec?.volumeName !== pv.metadata?.name;
      c = await this.write(() =>
        this.cluster.update(resources.persistentvolumeclaims, {
          ...claim,
          metadata: {
            ...claim.metadata,
            annotations: {
              ...a,
              [BIND_COMPLETED_ANNOTATION]: 'yes',
              ...(byController ? { [BOUND_BY_CONTROLLER_ANNOTATION]: 'yes' } : {}),
            },
          },
          spec: { ...claim.spec, volumeName: pv.metadata?.name },
        }),
      );
    }
    const want = {
      phase: 'Bound',
      accessModes: volume.spec?.accessModes,
      capacity: volume.spec?.capacity,
    };
    const st = c.status ?? {};
    if (
      st.phase !== 'Bound' ||
      JSON.stringify(st.accessModes) !== JSON.stringify(want.accessModes) ||
      // The expander grows status.capacity itself once a resize completes.
      st.capacity === undefined
    ) {
      await this.write(() =>
        this.cluster.update(resources.persistentvolumeclaims, { ...c, status: { ...st, ...want } }, 'status'),
      );
    }
  }

  private async setClaimPhase(claim: PersistentVolumeClaim, phase: Phase): Promise<void> {
    if (claim.status?.phase === phase) return;
    await this.write(() =>
      this.cluster.update(
        resources.persistentvolumeclaims,
        { ...claim, status: { ...claim.status, phase } },
        'status',
      ),
    );
  }

  // ---- volumes -------------------------------------------------------------------------

  private async syncVolume(pv: PersistentVolume): Promise<unknown> {
    const ref = pv.spec?.claimRef;
    if (!ref) return this.setVolumePhase(pv, 'Available');
    if (!ref.uid) {
      // Pre-bound by a user to a claim that is not bound yet: the claim's sync binds it.
      return this.setVolumePhase(pv, 'Available');
    }
    const claim = this.claims.store.get(ref.name ?? '', ref.namespace);
    if (!claim || claim.metadata?.uid !== ref.uid) {
      // The claim the volume was bound to is gone: the live store settles a stale cache.
      const live = await this.cluster
        .get<PersistentVolumeClaim>(resources.persistentvolumeclaims, ref.namespace, ref.name ?? '')
        .catch((err) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
      if (live && live.metadata?.uid === ref.uid) throw new RetryLater('claim cache behind');
      return this.release(pv);
    }
    if (claim.spec?.volumeName === pv.metadata?.name) {
      if (claim.metadata?.annotations?.[BIND_COMPLETED_ANNOTATION] !== undefined)
        return this.setVolumePhase(pv, 'Bound');
      return; // the claim's sync finishes the bind
    }
    if (!claim.spec?.volumeName) return; // binding in progress
    // The claim is bound to another volume: undo this controller's half-bind.
    if (pv.metadata?.annotations?.[BOUND_BY_CONTROLLER_ANNOTATION] !== undefined) {
      const { [BOUND_BY_CONTROLLER_ANNOTATION]: _, ...annotations } = pv.metadata.annotations;
      const { claimRef: __, ...spec } = pv.spec ?? {};
      const updated = await this.write(() =>
        this.cluster.update(resources.persistentvolumes, {
          ...pv,
          metadata: { ...pv.metadata, annotations },
          spec,
        }),
      );
      return this.setVolumePhase(updated, 'Available');
    }
    await this.setVolumePhase(pv, 'Available');
  }

  /** The claim is gone: Released, then the reclaim policy. */
  private async release(pv: PersistentVolume): Promise<void> {
    let volume = pv;
    if (pv.status?.phase !== 'Released' && pv.status?.phase !== 'Failed')
      volume = await this.setVolumePhase(pv, 'Released');
    if (volume.status?.phase !== 'Released') return;
    switch (volume.spec?.persistentVolumeReclaimPolicy ?? 'Retain') {
      case 'Retain':
        return;
      case 'Recycle':
        this.events.event(
          volume,
          'Warning',
          'VolumeFailedRecycle',
          'No recycler plugin found for the volume!',
        );
        await this.setVolumePhase(volume, 'Failed', 'No recycler plugin found for the volume!');
        return;
      case 'Delete':
        // A provisioned volume is deleted by its provisioner (a kubelet for node-local ones).
        if (volume.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION]) return;
        if (volume.metadata?.deletionTimestamp) return;
        try {
          await this.cluster.delete(resources.persistentvolumes, undefined, volume.metadata?.name ?? '');
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        return;
    }
  }

  private async setVolumePhase(
    pv: PersistentVolume,
    phase: Phase,
    message?: string,
  ): Promise<PersistentVolume> {
    if (pv.status?.phase === phase) return pv;
    return this.write(() =>
      this.cluster.update(
        resources.persistentvolumes,
        { ...pv, status: { phase, ...(message ? { message } : {}) } },
        'status',
      ),
    );
  }

  /** A conflict means the cache is behind this write's object: retried once it caught up. */
  private async write<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isConflict(err)) throw new RetryLater('object changed since the cache saw it');
      throw err;
    }
  }
}
