// VolumeAccess over informers and the apiserver: what VolumeBinding reads comes from
// the scheduler's caches (claims, volumes, classes, capacities), its two writes go
// to the apiserver, and waiting for a claim to be bound is woken by the claim
// informer's events rather than by polling.
import type { CSIStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@kubit/api';
import { type Informer, type KubeClient, resources, type SharedInformerFactory } from '@kubit/client';
import { isClaimBound, type VolumeAccess } from './volumes.js';

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
const BY_CLASS = 'storageClassName';

type Waiter = { check: () => string | null | undefined; done: (why: string | null) => void };

export class InformerVolumeAccess implements VolumeAccess {
  readonly claims: Informer<PersistentVolumeClaim & { metadata?: object }>;
  readonly pvs: Informer<PersistentVolume & { metadata?: object }>;
  readonly classes: Informer<StorageClass & { metadata?: object }>;
  readonly capacityInformer: Informer<CSIStorageCapacity & { metadata?: object }>;
  private volumeList: PersistentVolume[] | null = null;
  private readonly waiters = new Set<Waiter>();

  constructor(
    factory: SharedInformerFactory,
    private readonly client: KubeClient,
  ) {
    this.claims = factory.forResource(resources.persistentvolumeclaims);
    this.pvs = factory.forResource(resources.persistentvolumes);
    this.classes = factory.forResource(resources.storageclasses);
    this.capacityInformer = factory.forResource(resources.csistoragecapacities);
    this.capacityInformer.addIndexers({ [BY_CLASS]: (c) => [c.storageClassName ?? ''] });
    const dropList = () => {
      this.volumeList = null;
    };
    this.pvs.addEventHandler({ onAdd: dropList, onUpdate: dropList, onDelete: dropList });
    const wake = () => this.wakeWaiters();
    this.claims.addEventHandler({ onAdd: wake, onUpdate: wake, onDelete: wake });
  }

  claim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.claims.store.get(name, namespace);
  }

  volume(name: string): PersistentVolume | undefined {
    return this.pvs.store.get(name);
  }

  volumes(): readonly PersistentVolume[] {
    this.volumeList ??= this.pvs.store.list();
    return this.volumeList;
  }

  storageClass(name: string): StorageClass | undefined {
    return name ? this.classes.store.get(name) : undefined;
  }

  capacities(storageClassName: string): readonly CSIStorageCapacity[] {
    return this.capacityInformer.store.byIndex(BY_CLASS, storageClassName);
  }

  async selectNode(claim: PersistentVolumeClaim, nodeName: string): Promise<void> {
    if (claim.metadata?.annotations?.[SELECTED_NODE] === nodeName) return;
    await this.client.patch(
      resources.persistentvolumeclaims,
      claim.metadata?.name ?? '',
      { metadata: { annotations: { [SELECTED_NODE]: nodeName } } },
      { namespace: claim.metadata?.namespace ?? 'default', type: 'merge' },
    );
  }

  async preBindVolume(volume: PersistentVolume, claim: PersistentVolumeClaim): Promise<void> {
    if (volume.spec?.claimRef?.uid === claim.metadata?.uid) return;
    // Guarded on the version read: a volume another scheduler took meanwhile is a 409, not a steal.
    await this.client.patch(
      resources.persistentvolumes,
      volume.metadata?.name ?? '',
      {
        metadata: {
          resourceVersion: volume.metadata?.resourceVersion,
          annotations: { [BOUND_BY_CONTROLLER]: 'yes' },
        },
        spec: {
          claimRef: {
            kind: 'PersistentVolumeClaim',
            apiVersion: 'v1',
            namespace: claim.metadata?.namespace,
            name: claim.metadata?.name,
            uid: claim.metadata?.uid,
            resourceVersion: claim.metadata?.resourceVersion,
          },
        },
      },
      { type: 'merge' },
    );
  }

  waitForBound(claims: readonly PersistentVolumeClaim[], timeoutMs: number): Promise<string | null> {
    const keys = new Set(
      claims.map((c) => `${c.metadata?.namespace ?? 'default'}/${c.metadata?.name ?? ''}`),
    );
    // Claims whose selected-node the cache has shown: losing it later means the node's
    // provisioner gave up (no room), and the pod must be scheduled again.
    const selectedSeen = new Set<string>();
    // undefined: keep waiting; null: all bound; a string: why they never will be.
    const check = (): string | null | undefined => {
      let all = true;
      for (const key of keys) {
        const c = this.claims.store.getByKey(key);
        if (!c || c.metadata?.deletionTimestamp) return `persistentvolumeclaim "${key}" was deleted`;
        if (isClaimBound(c)) continue;
        all = false;
        if (c.metadata?.annotations?.[SELECTED_NODE] !== undefined) selectedSeen.add(key);
        else if (selectedSeen.has(key))
          return `provisioning persistentvolumeclaim "${key}" failed on its node`;
      }
      return all ? null : undefined;
    };
    return new Promise((resolve) => {
      const first = check();
      if (first !== undefined) {
        resolve(first);
        return;
      }
      const finish = (why: string | null) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        resolve(why);
      };
      const timer = setTimeout(
        () => finish(`timed out waiting for the condition (${timeoutMs / 1000}s)`),
        timeoutMs,
      );
      timer.unref?.();
      const waiter: Waiter = { check, done: finish };
      this.waiters.add(waiter);
    });
  }

  private wakeWaiters(): void {
    for (const w of [...this.waiters]) {
      const r = w.check();
      if (r !== undefined) w.done(r);
    }
  }
}
