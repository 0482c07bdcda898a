// StorageObjectInUseProtection's controllers, as Kubernetes' pvc_protection_controller
// and pv_protection_controller: the apiserver puts the finalizer on every new claim and
// volume; these take it off a deleted one once nothing uses it, so it goes then.
// - a claim is in use while a pod that has not terminated names it (spec.volumes[]
//   .persistentVolumeClaim, or an ephemeral volume, whose claim is `<pod>-<volume>`);
//   the informer's answer "unused" is checked against a live list before it counts;
// - a volume is in use while it is Bound.
import {
  isConflict,
  isNotFound,
  type PersistentVolume,
  type PersistentVolumeClaim,
  PV_PROTECTION_FINALIZER,
  PVC_PROTECTION_FINALIZER,
} from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { type Cluster, keyOf } from '../cluster.js';
import { type Controller, RetryLater } from '../controller.js';
import type { Pod } from '../types.js';

/** The claims a pod's volumes name. */
export function claimsOfPod(pod: Pod): string[] {
  const out: string[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim?.claimName) out.push(v.persistentVolumeClaim.claimName);
    else if (v.ephemeral) out.push(`${pod.metadata?.name ?? ''}-${v.name}`);
  }
  return out;
}

const terminated = (p: Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

/** Whether any pod that has not terminated uses the claim. */
export function claimInUse(claimName: string, pods: readonly Pod[]): boolean {
  return pods.some((p) => !terminated(p) && claimsOfPod(p).includes(claimName));
}

function withoutFinalizer<T extends PersistentVolume | PersistentVolumeClaim>(o: T, finalizer: string): T {
  return {
    ...o,
    metadata: { ...o.metadata, finalizers: (o.metadata?.finalizers ?? []).filter((f) => f !== finalizer) },
  };
}

async function removeFinalizer<T extends PersistentVolume | PersistentVolumeClaim>(
  write: () => Promise<T>,
): Promise<void> {
  try {
    await write();
  } catch (err) {
    if (isNotFound(err)) return;
    if (isConflict(err)) throw new RetryLater('object changed since the cache saw it');
    throw err;
  }
}

export class PvcProtectionController implements Controller {
  readonly name = 'pvc-protection';
  readonly queue = new RateLimitingQueue<string>();
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly pods: Informer<Pod>;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    private readonly opts: { log?: Logger } = {},
  ) {
    this.claims = informers.forResource<PersistentVolumeClaim>(resources.persistentvolumeclaims);
    this.pods = informers.forResource<Pod>(resources.pods);
    const claimChanged = (c: PersistentVolumeClaim) => {
      if (c.metadata?.deletionTimestamp) this.queue.add(keyOf(c));
    };
    this.claims.addEventHandler({ onAdd: claimChanged, onUpdate: (_o, c) => claimChanged(c) });
    // A pod that ends or goes may free the claims it used.
    const podChanged = (p: Pod) => {
      for (const name of claimsOfPod(p)) {
        const c = this.claims.store.get(name, p.metadata?.namespace);
        if (c) claimChanged(c);
      }
    };
    this.pods.addEventHandler({ onUpdate: (_o, p) => podChanged(p), onDelete: podChanged });
  }

  async reconcile(key: string): Promise<void> {
    const claim = this.claims.store.getByKey(key);
    if (!claim?.metadata?.deletionTimestamp) return;
    if (!claim.metadata.finalizers?.includes(PVC_PROTECTION_FINALIZER)) return;
    const ns = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    if (claimInUse(name, this.pods.store.listInNamespace(ns))) return;
    // The informer may not have seen a pod created a moment ago: ask the apiserver.
    const live = await this.cluster.list<Pod>(resources.pods, ns);
    if (claimInUse(name, live.items)) return;
    this.opts.log?.debug({ claim: key }, 'claim unused; removing its protection finalizer');
    await removeFinalizer(() =>
      this.cluster.update(
        resources.persistentvolumeclaims,
        withoutFinalizer(claim, PVC_PROTECTION_FINALIZER),
      ),
    );
  }
}

export class PvProtectionController implements Controller {
  readonly name = 'pv-protection';
  readonly queue = new RateLimitingQueue<string>();
  private readonly volumes: Informer<PersistentVolume>;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
  ) {
    this.volumes = informers.forResource<PersistentVolume>(resources.persistentvolumes);
    const changed = (pv: PersistentVolume) => {
      if (pv.metadata?.deletionTimestamp) this.queue.add(keyOf(pv));
    };
    this.volumes.addEventHandler({ onAdd: changed, onUpdate: (_o, pv) => changed(pv) });
  }

  async reconcile(key: string): Promise<void> {
    const pv = this.volumes.store.getByKey(key);
    if (!pv?.metadata?.deletionTimestamp) return;
    if (!pv.metadata.finalizers?.includes(PV_PROTECTION_FINALIZER)) return;
    if (pv.status?.phase === 'Bound') return;
    await removeFinalizer(() =>
      this.cluster.update(resources.persistentvolumes, withoutFinalizer(pv, PV_PROTECTION_FINALIZER)),
    );
  }
}
