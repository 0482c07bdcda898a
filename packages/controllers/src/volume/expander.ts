// The persistent-volume expander, as Kubernetes' expand controller and external-resizer
// do it for Kubit's own classes: when a bound claim's storage request grows past its
// status capacity (admission allowed it only for a class with allowVolumeExpansion),
// - the PersistentVolume's capacity grows to the request;
// - a local-path claim (a directory: nothing on the node to grow) is done at once: its
//   status capacity is the request;
// - a kubit-disk claim gets status.allocatedResources and the FileSystemResizePending
//   condition: its disk and filesystem grow on its node (the kubelet's disk.ts: grow()
//   for the backing file, prepareDisk() for the ext4 filesystem at the next mount),
//   which then reports the new capacity.
// Claims of other provisioners wait for an external resizer (ExternalExpanding).
import {
  compareQuantities,
  DISK_PROVISIONER,
  isConflict,
  isNotFound,
  LOCAL_PATH_PROVISIONER,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type StorageClass,
  tryParseQuantity,
} from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import { type Cluster, keyOf } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import { isoNow } from '../objects.js';
import { claimClass } from './matching.js';

export const FILESYSTEM_RESIZE_PENDING = 'FileSystemResizePending';
const RESIZE_PENDING_MESSAGE =
  'Waiting for user to (re-)start a pod to finish file system resize of volume on node.';

const quantity = (v: string | number | undefined) =>
  v === undefined ? undefined : tryParseQuantity(String(v));

/** The storage a bound claim asks for beyond what it has, or undefined when it has it. */
export function pendingGrowth(claim: PersistentVolumeClaim): string | undefined {
  if (claim.status?.phase !== 'Bound' || !claim.spec?.volumeName) return undefined;
  const want = claim.spec.resources?.requests?.storage;
  const wantQ = quantity(want);
  const haveQ = quantity(claim.status.capacity?.storage);
  if (!wantQ || !haveQ || compareQuantities(wantQ, haveQ) <= 0) return undefined;
  return String(want);
}

export class PersistentVolumeExpander implements Controller {
  readonly name = 'persistentvolume-expander';
  readonly queue = new RateLimitingQueue<string>();
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly volumes: Informer<PersistentVolume>;
  private readonly classes: Informer<StorageClass>;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: { events?: EventSink; now?: () => number } = {},
  ) {
    this.events = opts.events ?? noEvents;
    this.now = opts.now ?? Date.now;
    this.claims = informers.forResource<PersistentVolumeClaim>(resources.persistentvolumeclaims);
    this.volumes = informers.forResource<PersistentVolume>(resources.persistentvolumes);
    this.classes = informers.forResource<StorageClass>(resources.storageclasses);
    const changed = (c: PersistentVolumeClaim) => {
      if (pendingGrowth(c)) this.queue.add(keyOf(c));
    };
    this.claims.addEventHandler({ onAdd: changed, onUpdate: (_o, c) => changed(c) });
  }

  private readonly now: () => number;

  async reconcile(key: string): Promise<void> {
    const claim = this.claims.store.getByKey(key);
    if (!claim) return;
    const want = pendingGrowth(claim);
    if (!want) return;
    const provisioner = this.classes.store.get(claimClass(claim))?.provisioner ?? '';
    if (provisioner !== LOCAL_PATH_PROVISIONER && provisioner !== DISK_PROVISIONER) {
      this.events.event(
        claim,
        'Normal',
        'ExternalExpanding',
        'waiting for an external controller to expand this PVC',
      );
      return;
    }
    const pending = claim.status?.conditions?.some((c) => c.type === FILESYSTEM_RESIZE_PENDING);
    if (provisioner === DISK_PROVISIONER && pending && claim.status?.allocatedResources?.storage === want)
      return;
    const pv = this.volumes.store.get(claim.spec?.volumeName ?? '');
    if (!pv) throw new RetryLater('volume not in the cache');
    try {
      const have = quantity(pv.spec?.capacity?.storage);
      const wantQ = quantity(want);
      if (!have || (wantQ && compareQuantities(have, wantQ) < 0)) {
        await this.cluster.update(resources.persistentvolumes, {
          ...pv,
          spec: { ...pv.spec, capacity: { ...pv.spec?.capacity, storage: want } },
        });
      }
      const status = { ...claim.status };
      if (provisioner === LOCAL_PATH_PROVISIONER) {
        status.capacity = { ...status.capacity, storage: want };
        this.events.event(
          claim,
          'Normal',
          'VolumeResizeSuccessful',
          `Resize volume succeeded for volume "${pv.metadata?.name}"`,
        );
      } else {
        status.allocatedResources = { ...status.allocatedResources, storage: want };
        const others = (status.conditions ?? []).filter((c) => c.type !== FILESYSTEM_RESIZE_PENDING);
        const existing = (status.conditions ?? []).find((c) => c.type === FILESYSTEM_RESIZE_PENDING);
        status.conditions = [
          ...others,
          existing ?? {
            type: FILESYSTEM_RESIZE_PENDING,
            status: 'True',
            lastTransitionTime: isoNow(this.now()),
            message: RESIZE_PENDING_MESSAGE,
          },
        ];
        if (!existing)
          this.events.event(
            claim,
            'Normal',
            'FileSystemResizeRequired',
            `Require file system resize of volume on node`,
          );
      }
      await this.cluster.update(resources.persistentvolumeclaims, { ...claim, status }, 'status');
    } catch (err) {
      if (isNotFound(err)) return;
      if (isConflict(err)) throw new RetryLater('object changed since the cache saw it');
      throw err;
    }
  }
}
