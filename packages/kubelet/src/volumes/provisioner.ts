// The kubelet as the provisioner of its own node's volumes (local-path, kubit-disk):
// claims the scheduler placed here get a directory or a disk and a PersistentVolume;
// Released volumes with reclaim Delete lose their data, then their finalizer; a
// kubit-disk whose claim grew (FileSystemResizePending, set by the expander) grows
// here, file and filesystem, and the claim gets its new capacity; the node's free
// space is published as one CSIStorageCapacity per class.

import { rm } from 'node:fs/promises';
import {
  DISK_PROVISIONER,
  HOSTNAME_LABEL,
  isNotFound,
  LOCAL_PATH_PROVISIONER,
  NODE_LOCAL_PROVISIONERS,
  PROVISIONED_BY_ANNOTATION,
  PROVISIONER_FINALIZER,
  SELECTED_NODE_ANNOTATION,
  toNumber,
} from '@kubit/api';
import { EventRecorder, Informer, type KubeClient, resources } from '@kubit/client';
import { loopDevicesOf, readMountTable } from '@kubit/cri/host-mounts';
import type { Logger } from '@kubit/daemon';
import type { PersistentVolume, PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import type { StorageClass } from 'kubernetes-types/storage/v1.js';
import { cloneDisk, createBackingFile, detach, grow } from './disk.js';
import type { LocalStorage } from './local-path.js';
import { copyTree } from './local-path.js';
import {
  diskToGrow,
  FILESYSTEM_RESIZE_PENDING,
  provisionerFor,
  requestedBytes,
  toDelete,
  volumeFor,
  volumeNode,
} from './provisioned-volume.js';

/** How often free space is published (the scheduler reads it for WaitForFirstConsumer claims). */
const CAPACITY_REFRESH_MS = 30_000;
/** How soon a volume whose data could not be removed yet (still mounted) is tried again. */
const DELETE_RETRY_MS = 3_000;
/** How often a disk whose filesystem could not grow while mounted is looked at again. */
const RESIZE_RETRY_MS = 10_000;

export class NodeVolumeProvisioner {
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly volumes: Informer<PersistentVolume>;
  private readonly recorder: EventRecorder;
  private readonly busy = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: KubeClient,
    private readonly nodeName: string,
    private readonly storage: LocalStorage,
    private readonly log: Logger,
  ) {
    const onError = (err: unknown) =>
      log.debug({ err: (err as Error).message }, 'volume watch failed, retrying');
    const backoff = { baseDelayMs: 500, maxDelayMs: 10_000 };
    this.claims = new Informer<PersistentVolumeClaim>(client, resources.persistentvolumeclaims, {
      onError,
      backoff,
    });
    this.volumes = new Informer<PersistentVolume>(client, resources.persistentvolumes, { onError, backoff });
    this.recorder = new EventRecorder(client, {
      component: `${LOCAL_PATH_PROVISIONER}_${nodeName}`,
      host: nodeName,
      onError: (err) => log.debug({ err }, 'event write failed'),
    });
  }

  start(): void {
    this.claims.addEventHandler({ onAdd: (c) => this.claim(c), onUpdate: (_o, c) => this.claim(c) });
    this.volumes.addEventHandler({ onAdd: (v) => this.volume(v), onUpdate: (_o, v) => this.volume(v) });
    this.claims.start();
    this.volumes.start();
    const publish = () =>
      void this.publishCapacity().catch((err) =>
        this.log.debug({ err: (err as Error).message }, 'capacity publish failed'),
      );
    publish();
    this.timer = setInterval(publish, CAPACITY_REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.claims.stop();
    this.volumes.stop();
  }

  /** One piece of work per object at a time; a later event finds the result of the first. */
  private once(key: string, work: () => Promise<void>): void {
    if (this.busy.has(key)) return;
    this.busy.add(key);
    void work()
      .catch((err) => this.log.warn({ key, err: (err as Error).message }, 'volume provisioning step failed'))
      .finally(() => this.busy.delete(key));
  }

  private claim(claim: PersistentVolumeClaim): void {
    const provisioner = provisionerFor(claim, this.nodeName);
    if (provisioner) this.once(`claim/${claim.metadata?.uid}`, () => this.provision(claim, provisioner));
    const pv = this.volumes.store.get(claim.spec?.volumeName ?? '');
    const growth = pv && diskToGrow(claim, pv, this.nodeName);
    if (growth)
      this.once(`resize/${claim.metadata?.uid}`, () => this.resize(claim, growth.file, growth.bytes));
  }

  /**
   * Grows a kubit-disk to its claim's allocated size: the file and the loop device, and
   * the ext4 filesystem too (online when mounted). Then the claim's capacity is the new
   * size and FileSystemResizePending is over. Where the filesystem can only grow at the
   * next mount, the condition stays until then.
   */
  private async resize(claim: PersistentVolumeClaim, file: string, bytes: number): Promise<void> {
    const [dev] = loopDevicesOf(file);
    const mounted = !!dev && readMountTable().some((m) => m.source === dev);
    const result = await grow(file, bytes, mounted);
    if (result === 'pending') {
      // Its filesystem grows offline once the pod lets go of it (or at its next mount):
      // look again until then, so the claim learns its new size without another event.
      this.log.info({ file, bytes }, 'disk grown; its filesystem grows when it is next unmounted or mounted');
      const retry = setTimeout(() => {
        const latest = this.claims.store.get(claim.metadata?.name ?? '', claim.metadata?.namespace);
        if (latest) this.claim(latest);
      }, RESIZE_RETRY_MS);
      retry.unref();
      return;
    }
    const status = claim.status ?? {};
    await this.client.patch(
      resources.persistentvolumeclaims,
      claim.metadata?.name ?? '',
      {
        metadata: { resourceVersion: claim.metadata?.resourceVersion },
        status: {
          capacity: { ...status.capacity, storage: status.allocatedResources?.storage },
          conditions: (status.conditions ?? []).filter((c) => c.type !== FILESYSTEM_RESIZE_PENDING),
        },
      },
      { namespace: claim.metadata?.namespace ?? 'default', subresource: 'status', type: 'merge' },
    );
    this.event(
      claim,
      'Normal',
      'FileSystemResizeSuccessful',
      `MountVolume.NodeExpandVolume succeeded for volume "${claim.spec?.volumeName}" ${this.nodeName}`,
    );
  }

  private volume(pv: PersistentVolume): void {
    if (toDelete(pv, this.nodeName)) this.once(`pv/${pv.metadata?.name}`, () => this.deleteOrRetry(pv));
    // The claim may have been seen before its volume was: look at it again.
    const ref = pv.spec?.claimRef;
    const claim = ref?.name ? this.claims.store.get(ref.name, ref.namespace) : undefined;
    if (claim) this.claim(claim);
  }

  private event(
    claim: PersistentVolumeClaim,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): void {
    this.recorder.event(
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: claim.metadata },
      type,
      reason,
      message,
    );
  }

  private async provision(claim: PersistentVolumeClaim, provisioner: string): Promise<void> {
    const ns = claim.metadata?.namespace ?? 'default';
    const key = `${ns}/${claim.metadata?.name}`;
    const className = claim.spec?.storageClassName ?? '';
    this.event(
      claim,
      'Normal',
      'Provisioning',
      `External provisioner is provisioning volume for claim "${key}"`,
    );
    let sc: StorageClass;
    try {
      sc = await this.client.get<StorageClass>(resources.storageclasses, className);
    } catch (err) {
      this.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `storageclass.storage.k8s.io "${className}" not found`,
      );
      throw err;
    }
    const pv = volumeFor(claim, sc, provisioner, this.nodeName, this.storage);
    const name = pv.metadata?.name ?? '';
    const bytes = requestedBytes(claim);
    const free = await this.storage.freeBytes();
    if (bytes > free) {
      this.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `failed to provision volume with StorageClass "${className}": node "${this.nodeName}" has ${free} bytes free, the claim requests ${bytes}`,
      );
      // Let the scheduler choose another node.
      await this.client.patch(
        resources.persistentvolumeclaims,
        claim.metadata?.name ?? '',
        { metadata: { annotations: { [SELECTED_NODE_ANNOTATION]: null } } },
        { namespace: ns },
      );
      return;
    }
    let source: PersistentVolume | undefined;
    try {
      source = await this.cloneSource(claim, provisioner, bytes);
    } catch (err) {
      this.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `failed to provision volume with StorageClass "${className}": ${(err as Error).message}`,
      );
      return;
    }
    try {
      if (provisioner === DISK_PROVISIONER) {
        const file = this.storage.diskFile(name);
        if (source) await cloneDisk(this.storage.diskFile(source.metadata?.name ?? ''), file, bytes);
        // The disk is formatted when first mounted (or left raw for a Block volume).
        else
          await createBackingFile(file, bytes).catch((err: NodeJS.ErrnoException) => {
            if (err.code !== 'EEXIST') throw err; // made by an earlier attempt
          });
      } else {
        const dir = await this.storage.makePathDir(name);
        if (source) await copyTree(this.storage.pathDir(source.metadata?.name ?? ''), dir);
      }
      await this.client.create(resources.persistentvolumes, pv).catch((err) => {
        if ((err as { code?: number }).code !== 409) throw err;
      });
    } catch (err) {
      this.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `failed to provision volume with StorageClass "${className}": ${(err as Error).message}`,
      );
      throw err;
    }
    this.event(claim, 'Normal', 'ProvisioningSucceeded', `Successfully provisioned volume ${name}`);
  }

  /**
   * The volume a claim is to be a clone of (spec.dataSourceRef / dataSource naming a
   * PersistentVolumeClaim), or undefined for an empty volume. Throws, with the reason
   * the claim's event gives, when the source cannot be cloned here: another kind of
   * source, a claim that is missing or unbound, another class, another node (the
   * scheduler places clones on their source's node), or a smaller request.
   */
  private async cloneSource(
    claim: PersistentVolumeClaim,
    provisioner: string,
    bytes: number,
  ): Promise<PersistentVolume | undefined> {
    const ds = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
    if (!ds) return undefined;
    const what = `error getting handle for DataSource Type ${ds.kind} by Name ${ds.name}`;
    if (ds.kind !== 'PersistentVolumeClaim' || (ds.apiGroup ?? '') !== '')
      throw new Error(`${what}: the data source is not supported (Kubit clones PersistentVolumeClaims)`);
    const ns = claim.metadata?.namespace ?? 'default';
    const src = this.claims.store.get(ds.name, ns);
    if (!src) throw new Error(`${what}: persistentvolumeclaim "${ds.name}" not found`);
    if (src.status?.phase !== 'Bound' || !src.spec?.volumeName)
      throw new Error(`${what}: the source claim is not bound`);
    if ((src.spec.storageClassName ?? '') !== (claim.spec?.storageClassName ?? ''))
      throw new Error(`${what}: the source claim's storage class is not the claim's`);
    const pv = this.volumes.store.get(src.spec.volumeName);
    if (!pv || pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== provisioner)
      throw new Error(`${what}: the source volume was not made by ${provisioner}`);
    if (volumeNode(pv) !== this.nodeName)
      throw new Error(`${what}: the source volume is on node "${volumeNode(pv)}", not "${this.nodeName}"`);
    const have = toNumber(pv.spec?.capacity?.storage ?? '0');
    if (bytes < have)
      throw new Error(
        `${what}: requested volume size ${bytes} is less than the size ${have} for the source volume ${pv.metadata?.name}`,
      );
    return pv;
  }

  /**
   * delete(), tried again a little later when it fails (a volume still mounted by a pod
   * on its way out, say): no event may ever come to start it again.
   */
  private async deleteOrRetry(pv: PersistentVolume): Promise<void> {
    try {
      await this.delete(pv);
    } catch (err) {
      const retry = setTimeout(() => {
        const latest = this.volumes.store.get(pv.metadata?.name ?? '');
        if (latest) this.volume(latest);
      }, DELETE_RETRY_MS);
      retry.unref();
      throw err;
    }
  }

  /** Removes a Released volume's data, then its finalizer, then the volume. */
  private async delete(pv: PersistentVolume): Promise<void> {
    const name = pv.metadata?.name ?? '';
    const file = pv.spec?.csi ? this.storage.diskFile(name) : undefined;
    const dir = pv.spec?.local ? this.storage.pathDir(name) : undefined;
    const table = readMountTable();
    if (dir && table.some((m) => m.root === dir || m.mountPoint === dir))
      throw new Error(`volume ${name} is still mounted; not deleting its data`);
    if (file) {
      await detach(file);
      await rm(file, { force: true });
    }
    if (dir) await this.storage.removePathDir(name);
    const finalizers = (pv.metadata?.finalizers ?? []).filter((f) => f !== PROVISIONER_FINALIZER);
    try {
      await this.client.patch(resources.persistentvolumes, name, {
        metadata: { finalizers, resourceVersion: pv.metadata?.resourceVersion },
      });
      await this.client.delete(resources.persistentvolumes, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** One CSIStorageCapacity per node-local class on this node: the storage dir's free bytes. */
  private async publishCapacity(): Promise<void> {
    const free = await this.storage.freeBytes();
    const classes = await this.client.list<StorageClass>(resources.storageclasses);
    for (const sc of classes.items) {
      if (!NODE_LOCAL_PROVISIONERS.includes(sc.provisioner)) continue;
      const name = `${sc.metadata?.name}-${this.nodeName}`.toLowerCase().replace(/[^a-z0-9.-]/g, '-');
      const body = {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIStorageCapacity',
        metadata: { name, namespace: 'kube-system' },
        storageClassName: sc.metadata?.name ?? '',
        nodeTopology: { matchLabels: { [HOSTNAME_LABEL]: this.nodeName } },
        capacity: String(free),
      };
      // Merge-patched when it exists (only capacity moves), created the first time.
      await this.client
        .patch(
          resources.csistoragecapacities,
          name,
          { capacity: body.capacity },
          { namespace: 'kube-system' },
        )
        .catch(async (err) => {
          if (!isNotFound(err)) throw err;
          await this.client.create(resources.csistoragecapacities, body as never, {
            namespace: 'kube-system',
          });
        });
    }
  }
}
