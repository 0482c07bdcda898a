// The volume controllers on a real stack (testkit's workload cluster: a real store,
// kubit-apiserver, kubit-controller-manager running the persistent-volume binder,
// expander, pvc/pv protection, ephemeral-volume and the garbage collector,
// kubit-scheduler, hollow nodes): binding to the smallest fitting volume and to a
// pre-bound one, both sides' annotations and phases; the provisioner annotations (for
// WaitForFirstConsumer only after a node is selected); Retain keeps a Released volume,
// Delete removes it; a claim in use by a pod waits for the pod before it goes; a bound
// volume waits for its claim; an ephemeral volume's claim is made for its pod and goes
// with it; a claim whose volume is removed is Lost; a kubit-disk claim that grows gets
// FileSystemResizePending.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Event as CoreEvent, PersistentVolume, PersistentVolumeClaim, Pod } from '@kubit/api';
import { isNotFound } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';

const NS = 'default';
let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({
    nodes: 1,
    controllers:
      'persistentvolume-binder,persistentvolume-expander,pvc-protection,pv-protection,ephemeral-volume,garbagecollector',
  });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

function volume(name: string, size: string, spec: Partial<PersistentVolume['spec']> = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'manual',
      hostPath: { path: `/tmp/kubit-test-${name}` },
      ...spec,
    },
  };
}

function claim(
  name: string,
  size: string,
  spec: Partial<PersistentVolumeClaim['spec']> = {},
  annotations: Record<string, string> = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NS, annotations },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: 'manual',
      ...spec,
    },
  };
}

const getClaim = (name: string) =>
  client.get<PersistentVolumeClaim>(resources.persistentvolumeclaims, name, { namespace: NS });
const getVolume = (name: string) => client.get<PersistentVolume>(resources.persistentvolumes, name);
const gone = async (get: () => Promise<unknown>) => {
  try {
    await get();
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
};

/** Waits for `fn` to hold, naming the last value and the daemons' logs on a timeout. */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000) {
  let last: T | undefined;
  try {
    await waitFor(
      what,
      async () => {
        last = await read();
        return ok(last);
      },
      timeoutMs,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}\n${cluster.logs(20)}`);
  }
  return last as T;
}

const boundClaim = (name: string) =>
  until(
    `claim ${name} Bound`,
    () => getClaim(name),
    (c) => c.status?.phase === 'Bound',
  );

async function eventsFor(name: string): Promise<CoreEvent[]> {
  const list = await client.list<CoreEvent>(resources.events, { namespace: NS });
  return list.items.filter((e) => e.involvedObject?.name === name);
}

function podWith(name: string, volumes: NonNullable<Pod['spec']>['volumes']): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      containers: [{ name: 'c', image: 'busybox:1.36' }],
      terminationGracePeriodSeconds: 0,
      volumes,
    },
  };
}

describe('persistent-volume binder', () => {
  test('a claim binds to the smallest volume that fits; both sides record it', async () => {
    for (const [n, s] of [
      ['fit-10g', '10Gi'],
      ['fit-1g', '1Gi'],
      ['fit-5g', '5Gi'],
    ])
      await client.create(resources.persistentvolumes, volume(n, s));
    await client.create(resources.persistentvolumeclaims, claim('fit', '3Gi'));
    const c = await boundClaim('fit');
    assert.equal(c.spec?.volumeName, 'fit-5g');
    assert.equal(c.metadata?.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
    assert.equal(c.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    assert.deepEqual(c.status?.capacity, { storage: '5Gi' });
    assert.deepEqual(c.status?.accessModes, ['ReadWriteOnce']);
    const v = await until(
      'fit-5g Bound',
      () => getVolume('fit-5g'),
      (pv) => pv.status?.phase === 'Bound',
    );
    assert.equal(v.spec?.claimRef?.name, 'fit');
    assert.equal(v.spec?.claimRef?.uid, c.metadata?.uid);
    assert.equal(v.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    // The others stay Available.
    await until(
      'fit-1g Available',
      () => getVolume('fit-1g'),
      (pv) => pv.status?.phase === 'Available',
    );
    assert.equal((await getVolume('fit-10g')).spec?.claimRef, undefined);
  });

  test('a volume pre-bound to a claim, and a claim naming its volume, bind to each other', async () => {
    await client.create(
      resources.persistentvolumes,
      volume('pre-big', '20Gi', { claimRef: { name: 'pre', namespace: NS } }),
    );
    await client.create(resources.persistentvolumes, volume('pre-small', '1Gi'));
    await client.create(resources.persistentvolumeclaims, claim('pre', '1Gi'));
    const c = await boundClaim('pre');
    assert.equal(c.spec?.volumeName, 'pre-big');
    // Bound by the user's claimRef, not by the controller.
    const v = await until(
      'pre-big Bound',
      () => getVolume('pre-big'),
      (pv) => pv.status?.phase === 'Bound',
    );
    assert.equal(v.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], undefined);
    await client.create(resources.persistentvolumeclaims, claim('named', '1Gi', { volumeName: 'pre-small' }));
    const n = await boundClaim('named');
    assert.equal(n.spec?.volumeName, 'pre-small');
    assert.equal(n.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], undefined);
  });

  test('provisioner annotations: Immediate at once, WaitForFirstConsumer once a node is selected', async () => {
    await client.create(resources.storageclasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'external' },
      provisioner: 'example.com/external',
    });
    await client.create(
      resources.persistentvolumeclaims,
      claim('ext', '1Gi', { storageClassName: 'external' }),
    );
    const ext = await until(
      'ext to name its provisioner',
      () => getClaim('ext'),
      (c) => c.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'] === 'example.com/external',
    );
    assert.equal(
      ext.metadata?.annotations?.['volume.beta.kubernetes.io/storage-provisioner'],
      'example.com/external',
    );
    await until(
      'an ExternalProvisioning event',
      () => eventsFor('ext'),
      (es) =>
        es.some((e) => e.reason === 'ExternalProvisioning' && /example\.com\/external/.test(e.message ?? '')),
    );

    await client.create(
      resources.persistentvolumeclaims,
      claim('wait', '1Gi', { storageClassName: 'local-path' }),
    );
    await until(
      'a WaitForFirstConsumer event',
      () => eventsFor('wait'),
      (es) =>
        es.some(
          (e) =>
            e.reason === 'WaitForFirstConsumer' &&
            e.message === 'waiting for first consumer to be created before binding',
        ),
    );
    assert.equal(
      (await getClaim('wait')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'],
      undefined,
    );
    await client.patch(
      resources.persistentvolumeclaims,
      'wait',
      { metadata: { annotations: { 'volume.kubernetes.io/selected-node': 'hollow-0' } } },
      { namespace: NS },
    );
    await until(
      'wait to name kubit.io/local-path',
      () => getClaim('wait'),
      (c) => c.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'] === 'kubit.io/local-path',
    );

    await client.create(
      resources.persistentvolumeclaims,
      claim('nosuch', '1Gi', { storageClassName: 'nosuch' }),
    );
    await until(
      'a ProvisioningFailed event',
      () => eventsFor('nosuch'),
      (es) =>
        es.some(
          (e) =>
            e.reason === 'ProvisioningFailed' &&
            e.message === 'storageclass.storage.k8s.io "nosuch" not found',
        ),
    );
  });

  test('a deleted claim releases its volume: Retain keeps it, Delete removes it', async () => {
    await client.create(resources.persistentvolumes, volume('keep', '2Gi', { storageClassName: 'rel' }));
    await client.create(
      resources.persistentvolumes,
      volume('drop', '2Gi', { storageClassName: 'rel2', persistentVolumeReclaimPolicy: 'Delete' }),
    );
    await client.create(
      resources.persistentvolumeclaims,
      claim('keeper', '1Gi', { storageClassName: 'rel' }),
    );
    await client.create(
      resources.persistentvolumeclaims,
      claim('dropper', '1Gi', { storageClassName: 'rel2' }),
    );
    await boundClaim('keeper');
    await boundClaim('dropper');
    await client.delete(resources.persistentvolumeclaims, 'keeper', { namespace: NS });
    await client.delete(resources.persistentvolumeclaims, 'dropper', { namespace: NS });
    await until('keeper gone', () => gone(() => getClaim('keeper')), Boolean);
    const kept = await until(
      'keep Released',
      () => getVolume('keep'),
      (pv) => pv.status?.phase === 'Released',
    );
    assert.equal(kept.spec?.claimRef?.name, 'keeper');
    await until('drop deleted', () => gone(() => getVolume('drop')), Boolean);
  });
});

describe('lost volumes', () => {
  test('a bound claim whose volume is removed turns Lost, with ClaimLost', async () => {
    await client.create(resources.persistentvolumes, volume('lost-vol', '1Gi', { storageClassName: 'lost' }));
    await client.create(resources.persistentvolumeclaims, claim('lost', '1Gi', { storageClassName: 'lost' }));
    await boundClaim('lost');
    // Around the protection: the finalizer taken off by hand, then the volume deleted.
    const v = await getVolume('lost-vol');
    await client.update(resources.persistentvolumes, { ...v, metadata: { ...v.metadata, finalizers: [] } });
    await client.delete(resources.persistentvolumes, 'lost-vol');
    await until(
      'lost Lost',
      () => getClaim('lost'),
      (c) => c.status?.phase === 'Lost',
    );
    await until(
      'a ClaimLost event',
      () => eventsFor('lost'),
      (es) =>
        es.some(
          (e) =>
            e.reason === 'ClaimLost' &&
            e.message === 'Bound claim has lost its PersistentVolume. Data on the volume is lost!',
        ),
    );
  });
});

describe('protection and ephemeral claims', () => {
  test('a claim in use waits for its pod; a bound volume waits for its claim', async () => {
    await client.create(resources.persistentvolumes, volume('used-vol', '1Gi', { storageClassName: 'used' }));
    await client.create(resources.persistentvolumeclaims, claim('used', '1Gi', { storageClassName: 'used' }));
    await boundClaim('used');
    await client.create(
      resources.pods,
      podWith('user', [{ name: 'data', persistentVolumeClaim: { claimName: 'used' } }]),
    );
    await until(
      'user scheduled',
      () => client.get<Pod>(resources.pods, 'user', { namespace: NS }),
      (p) => !!p.spec?.nodeName,
    );
    // The volume first: it stays while Bound.
    await client.delete(resources.persistentvolumes, 'used-vol');
    await client.delete(resources.persistentvolumeclaims, 'used', { namespace: NS });
    const c = await getClaim('used');
    assert.ok(c.metadata?.deletionTimestamp);
    assert.deepEqual(c.metadata?.finalizers, ['kubernetes.io/pvc-protection']);
    // Still there while the pod runs (the next sync after the pod's changes proves it).
    await until(
      'user Running',
      () => client.get<Pod>(resources.pods, 'user', { namespace: NS }),
      (p) => p.status?.phase === 'Running',
    );
    assert.ok((await getClaim('used')).metadata?.deletionTimestamp);
    const v = await getVolume('used-vol');
    assert.ok(v.metadata?.deletionTimestamp);
    assert.equal(v.status?.phase, 'Bound');
    await client.delete(resources.pods, 'user', { namespace: NS, gracePeriodSeconds: 0 });
    await until('used gone', () => gone(() => getClaim('used')), Boolean);
    await until('used-vol gone', () => gone(() => getVolume('used-vol')), Boolean);
  });

  test("an ephemeral volume's claim is made for its pod, owned by it, and goes with it", async () => {
    await client.create(resources.persistentvolumes, volume('eph-vol', '1Gi', { storageClassName: 'eph' }));
    const p = await client.create(
      resources.pods,
      podWith('eph', [
        {
          name: 'scratch',
          ephemeral: {
            volumeClaimTemplate: {
              metadata: { labels: { made: 'for-eph' } },
              spec: {
                accessModes: ['ReadWriteOnce'],
                resources: { requests: { storage: '1Gi' } },
                storageClassName: 'eph',
              },
            },
          },
        },
      ]),
    );
    const c = await boundClaim('eph-scratch');
    assert.equal(c.spec?.volumeName, 'eph-vol');
    assert.deepEqual(c.metadata?.labels, { made: 'for-eph' });
    assert.deepEqual(
      c.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid, r.controller]),
      [['Pod', 'eph', p.metadata?.uid, true]],
    );
    await client.delete(resources.pods, 'eph', { namespace: NS, gracePeriodSeconds: 0 });
    await until('eph-scratch gone', () => gone(() => getClaim('eph-scratch')), Boolean, 60_000);
  });
});

describe('persistent-volume expander', () => {
  test('a kubit-disk claim that grows: the volume grows, the claim waits for its filesystem', async () => {
    await client.create(
      resources.persistentvolumes,
      volume('disk-vol', '1Gi', { storageClassName: 'kubit-disk' }),
    );
    await client.create(
      resources.persistentvolumeclaims,
      claim(
        'disk',
        '1Gi',
        { storageClassName: 'kubit-disk' },
        { 'volume.kubernetes.io/selected-node': 'hollow-0' },
      ),
    );
    const c = await boundClaim('disk');
    await client.patch(
      resources.persistentvolumeclaims,
      'disk',
      { spec: { resources: { requests: { storage: '2Gi' } } } },
      { namespace: NS },
    );
    await until(
      'disk-vol 2Gi',
      () => getVolume('disk-vol'),
      (pv) => pv.spec?.capacity?.storage === '2Gi',
    );
    const grown = await until(
      'FileSystemResizePending',
      () => getClaim('disk'),
      (x) => !!x.status?.conditions?.some((k) => k.type === 'FileSystemResizePending' && k.status === 'True'),
    );
    assert.deepEqual(grown.status?.allocatedResources, { storage: '2Gi' });
    // Until the node grows the filesystem, the claim reports what it has.
    assert.deepEqual(grown.status?.capacity, c.status?.capacity);
  });

  test('a claim made while no class was the default gets the default class once there is one', async () => {
    const DEFAULT = 'storageclass.kubernetes.io/is-default-class';
    const mark = (v: string | null) =>
      client.patch(resources.storageclasses, 'local-path', { metadata: { annotations: { [DEFAULT]: v } } });
    await mark(null);
    try {
      const c = claim('late', '1Gi');
      delete c.spec?.storageClassName;
      const created = await client.create<PersistentVolumeClaim>(resources.persistentvolumeclaims, c);
      assert.equal(created.spec?.storageClassName, undefined, 'no default class at admission');
      await mark('true');
      await until(
        'late to get local-path',
        () => getClaim('late'),
        (x) => x.spec?.storageClassName === 'local-path',
      );
    } finally {
      await mark('true');
      await client.delete(resources.persistentvolumeclaims, 'late', { namespace: NS }).catch(() => {});
    }
  });
});
