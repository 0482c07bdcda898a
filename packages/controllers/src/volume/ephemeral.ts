// The ephemeral-volume controller, as Kubernetes' pkg/controller/volume/ephemeral:
// each `ephemeral` volume of a pod gets its claim `<pod>-<volume>` from the volume's
// claim template, owned by the pod (controller=true), so the garbage collector removes
// it with the pod. A claim of that name the pod does not own is never taken over.
import { isAlreadyExists, type PersistentVolumeClaim } from '@kubit/api';
import { type Informer, RateLimitingQueue, resources, type SharedInformerFactory } from '@kubit/client';
import { type Cluster, keyOf } from '../cluster.js';
import type { Controller } from '../controller.js';
import { type EventSink, noEvents } from '../events.js';
import type { Pod } from '../types.js';

/** The claim an ephemeral volume of the pod gets, or undefined for other volumes. */
export function ephemeralClaimFor(pod: Pod, volumeName: string): PersistentVolumeClaim | undefined {
  const v = pod.spec?.volumes?.find((x) => x.name === volumeName);
  const template = v?.ephemeral?.volumeClaimTemplate;
  if (!template) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: `${pod.metadata?.name ?? ''}-${volumeName}`,
      namespace: pod.metadata?.namespace,
      ...(template.metadata?.labels ? { labels: template.metadata.labels } : {}),
      ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          name: pod.metadata?.name ?? '',
          uid: pod.metadata?.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: structuredClone(template.spec),
  };
}

export class EphemeralVolumeController implements Controller {
  readonly name = 'ephemeral-volume';
  readonly queue = new RateLimitingQueue<string>();
  private readonly pods: Informer<Pod>;
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly events: EventSink;

  constructor(
    private readonly cluster: Cluster,
    informers: SharedInformerFactory,
    opts: { events?: EventSink } = {},
  ) {
    this.events = opts.events ?? noEvents;
    this.pods = informers.forResource<Pod>(resources.pods);
    this.claims = informers.forResource<PersistentVolumeClaim>(resources.persistentvolumeclaims);
    const podChanged = (p: Pod) => {
      if (p.spec?.volumes?.some((v) => v.ephemeral)) this.queue.add(keyOf(p));
    };
    this.pods.addEventHandler({ onAdd: podChanged, onUpdate: (_o, p) => podChanged(p) });
    // A claim deleted under a live pod is made again.
    this.claims.addEventHandler({
      onDelete: (c) => {
        const owner = c.metadata?.ownerReferences?.find((r) => r.kind === 'Pod' && r.controller);
        if (owner) this.queue.add(`${c.metadata?.namespace ?? ''}/${owner.name}`);
      },
    });
  }

  async reconcile(key: string): Promise<void> {
    const pod = this.pods.store.getByKey(key);
    if (!pod || pod.metadata?.deletionTimestamp) return;
    for (const v of pod.spec?.volumes ?? []) {
      const want = ephemeralClaimFor(pod, v.name);
      if (!want) continue;
      const ns = pod.metadata?.namespace ?? '';
      const existing = this.claims.store.get(want.metadata?.name ?? '', ns);
      if (existing) {
        this.checkOwner(pod, existing);
        continue;
      }
      try {
        await this.cluster.create(resources.persistentvolumeclaims, ns, want);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const live = await this.cluster.get<PersistentVolumeClaim>(
          resources.persistentvolumeclaims,
          ns,
          want.metadata?.name ?? '',
        );
        this.checkOwner(pod, live);
      }
    }
  }

  private checkOwner(pod: Pod, claim: PersistentVolumeClaim): void {
    const owned = claim.metadata?.ownerReferences?.some((r) => r.controller && r.uid === pod.metadata?.uid);
    if (!owned)
      this.events.event(
        pod,
        'Warning',
        'FailedBinding',
        `PVC ${claim.metadata?.namespace}/${claim.metadata?.name} was not created for pod ${pod.metadata?.namespace}/${pod.metadata?.name} (pod is not owner)`,
      );
  }
}
