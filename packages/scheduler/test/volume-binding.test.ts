// VolumeBinding through the whole scheduling cycle on an in-memory cluster: which
// node a pod with claims gets, the Pending reasons Kubernetes gives, and the binding
// cycle that asks for the volume on the chosen node and waits until it is bound.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CSIStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@kubit/api';
import { buildFramework } from '../src/framework/profile.js';
import { Scheduler } from '../src/scheduler.js';
import type { Pod } from '../src/types.js';
import { isClaimBound, type VolumeAccess } from '../src/volumes.js';
import { FakeApi } from './fake-api.js';
import { node, onNode, pod } from './fixtures.js';

/** Map-backed claims, volumes and classes; binding happens when the test says so. */
class FakeVolumes implements VolumeAccess {
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly pvs = new Map<string, PersistentVolume>();
  readonly classes = new Map<string, StorageClass>();
  readonly caps: CSIStorageCapacity[] = [];
  readonly selected: string[] = [];
  readonly preBound: string[] = [];
  private waiting: ((why: string | null) => void)[] = [];

  claim(ns: string, name: string) {
    return this.claims.get(`${ns}/${name}`);
  }
  volume(name: string) {
    return this.pvs.get(name);
  }
  volumes() {
    return [...this.pvs.values()];
  }
  storageClass(name: string) {
    return this.classes.get(name);
  }
  capacities(sc: string) {
    return this.caps.filter((c) => c.storageClassName === sc);
  }
  async selectNode(claim: PersistentVolumeClaim, nodeName: string) {
    this.selected.push(`${claim.metadata?.name}@${nodeName}`);
  }
  async preBindVolume(pv: PersistentVolume, claim: PersistentVolumeClaim) {
    this.preBound.push(`${pv.metadata?.name}->${claim.metadata?.name}`);
  }
  waitForBound(claims: readonly PersistentVolumeClaim[]): Promise<string | null> {
    if (claims.every((c) => isClaimBound(this.claim('default', c.metadata?.name ?? '') ?? c)))
      return Promise.resolve(null);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  /** The provisioner (or the persistent-volume controller) finished: or gave up, with a reason. */
  settle(why: string | null = null) {
    for (const w of this.waiting.splice(0)) w(why);
  }
  get waiters() {
    return this.waiting.length;
  }
}

function claim(name: string, spec: Partial<NonNullable<PersistentVolumeClaim['spec']>> = {}) {
  const c: PersistentVolumeClaim = {
    metadata: { name, namespace: 'default', uid: `uid-claim-${name}` },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
    status: { phase: 'Pending' },
  };
  return c;
}

function boundTo(c: PersistentVolumeClaim, pv: string): PersistentVolumeClaim {
  return {
    ...c,
    metadata: { ...c.metadata, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } },
    spec: { ...c.spec, volumeName: pv },
    status: { phase: 'Bound' },
  };
}

function volumeOn(
  name: string,
  nodeName: string,
  extra: Partial<NonNullable<PersistentVolume['spec']>> = {},
) {
  const pv: PersistentVolume = {
    metadata: { name },
    spec: {
      capacity: { storage: '2Gi' },
      accessModes: ['ReadWriteOnce'],
      local: { path: `/mnt/${name}` },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [nodeName] }] },
          ],
        },
      },
      ...extra,
    },
    status: { phase: 'Available' },
  };
  return pv;
}

const wffc = (name: string, provisioner: string): StorageClass => ({
  metadata: { name },
  provisioner,
  volumeBindingMode: 'WaitForFirstConsumer',
});

function withClaim(name: string, claimName: string, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod {
  return pod(name, { volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }], ...extra });
}

function setup() {
  const api = new FakeApi();
  const volumes = new FakeVolumes();
  const s = new Scheduler({
    api,
    frameworks: [buildFramework()],
    now: () => 1_000_000,
    random: () => 0.5,
    volumes,
  });
  api.onBound = (p, n) => s.onPodUpdate(p, onNode(p, n));
  for (const n of ['n1', 'n2', 'n3']) s.onNodeAdd(node(n));
  const message = (p: string) => api.conditions.get(`default/${p}`)?.message;
  return { api, volumes, s, message };
}

describe('VolumeBinding', () => {
  it('leaves a pod whose claim does not exist Pending, naming the claim', () => {
    const { s, message } = setup();
    s.onPodAdd(withClaim('p', 'nope'));
    s.drainActive();
    assert.equal(message('p'), '0/3 nodes are available: persistentvolumeclaim "nope" not found.');
  });

  it('says a pod with an unbound Immediate claim waits for it to be bound', () => {
    const { s, volumes, message } = setup();
    volumes.classes.set('fast', {
      metadata: { name: 'fast' },
      provisioner: 'x',
      volumeBindingMode: 'Immediate',
    });
    volumes.claims.set('default/data', claim('data', { storageClassName: 'fast' }));
    s.onPodAdd(withClaim('p', 'data'));
    s.drainActive();
    assert.equal(message('p'), '0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.');
  });

  it('places a pod with a bound local volume only on the volume’s node', async () => {
    const { s, api, volumes } = setup();
    volumes.pvs.set('pv-a', volumeOn('pv-a', 'n2'));
    volumes.claims.set('default/data', boundTo(claim('data'), 'pv-a'));
    for (let i = 0; i < 3; i++) s.onPodAdd(withClaim(`p${i}`, 'data'));
    s.drainActive();
    await s.waitForBindings();
    assert.deepEqual(
      [0, 1, 2].map((i) => api.bindings.get(`default/p${i}`)),
      ['n2', 'n2', 'n2'],
    );
  });

  it('reports a volume node affinity conflict when the volume’s node is excluded', () => {
    const { s, volumes, message } = setup();
    volumes.pvs.set('pv-a', volumeOn('pv-a', 'gone'));
    volumes.claims.set('default/data', boundTo(claim('data'), 'pv-a'));
    s.onPodAdd(withClaim('p', 'data'));
    s.drainActive();
    assert.equal(message('p'), '0/3 nodes are available: 3 node(s) had volume node affinity conflict.');
  });

  it('provisions a WaitForFirstConsumer claim on the chosen node and binds the pod only once it is bound', async () => {
    const { s, api, volumes } = setup();
    volumes.classes.set('local-path', wffc('local-path', 'kubit.io/local-path'));
    volumes.claims.set('default/data', claim('data', { storageClassName: 'local-path' }));
    s.onPodAdd(withClaim('p', 'data', { nodeSelector: { 'kubernetes.io/hostname': 'n3' } }));
    s.drainActive();
    // Let the binding cycle write selected-node, then it waits.
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(volumes.selected, ['data@n3']);
    assert.equal(volumes.waiters, 1);
    assert.equal(api.bindings.get('default/p'), undefined, 'the pod is not bound before its claim');
    volumes.settle();
    await s.waitForBindings();
    assert.equal(api.bindings.get('default/p'), 'n3');
  });

  it('pre-binds the smallest matching static volume on the chosen node', async () => {
    const { s, api, volumes } = setup();
    volumes.classes.set('manual', wffc('manual', 'kubernetes.io/no-provisioner'));
    volumes.pvs.set(
      'big',
      volumeOn('big', 'n1', { storageClassName: 'manual', capacity: { storage: '10Gi' } }),
    );
    volumes.pvs.set(
      'small',
      volumeOn('small', 'n1', { storageClassName: 'manual', capacity: { storage: '1Gi' } }),
    );
    volumes.pvs.set(
      'other-mode',
      volumeOn('other-mode', 'n2', { storageClassName: 'manual', volumeMode: 'Block' }),
    );
    volumes.claims.set('default/data', claim('data', { storageClassName: 'manual' }));
    s.onPodAdd(withClaim('p', 'data'));
    s.drainActive();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(volumes.preBound, ['small->data']);
    volumes.settle();
    await s.waitForBindings();
    assert.equal(api.bindings.get('default/p'), 'n1');
  });

  it('finds no volume to bind for a class without a provisioner and no matching volume', () => {
    const { s, volumes, message } = setup();
    volumes.classes.set('manual', wffc('manual', 'kubernetes.io/no-provisioner'));
    volumes.pvs.set(
      'tiny',
      volumeOn('tiny', 'n1', { storageClassName: 'manual', capacity: { storage: '100Mi' } }),
    );
    volumes.claims.set('default/data', claim('data', { storageClassName: 'manual' }));
    s.onPodAdd(withClaim('p', 'data'));
    s.drainActive();
    assert.equal(
      message('p'),
      "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind.",
    );
  });

  it('goes only where published capacity holds the claim, and says so when none does', () => {
    const { s, volumes, message } = setup();
    volumes.classes.set('kubit-disk', wffc('kubit-disk', 'kubit.io/disk'));
    const cap = (n: string, size: string): CSIStorageCapacity => ({
      metadata: { name: `cap-${n}`, namespace: 'kube-system' },
      storageClassName: 'kubit-disk',
      nodeTopology: { matchLabels: { 'kubernetes.io/hostname': n } },
      capacity: size,
    });
    volumes.caps.push(cap('n1', '500Mi'), cap('n2', '5Gi'), cap('n3', '100Mi'));
    volumes.claims.set('default/data', claim('data', { storageClassName: 'kubit-disk' }));
    volumes.claims.set(
      'default/huge',
      claim('huge', { storageClassName: 'kubit-disk', resources: { requests: { storage: '50Gi' } } }),
    );
    s.onPodAdd(withClaim('fits', 'data'));
    s.onPodAdd(withClaim('too-big', 'huge'));
    s.drainActive();
    assert.deepEqual(volumes.selected, ['data@n2']);
    assert.equal(message('too-big'), '0/3 nodes are available: 3 node(s) did not have enough free storage.');
  });

  it('sends the pod back to the queue when provisioning fails on the chosen node', async () => {
    const { s, api, volumes } = setup();
    volumes.classes.set('local-path', wffc('local-path', 'kubit.io/local-path'));
    volumes.claims.set('default/data', claim('data', { storageClassName: 'local-path' }));
    s.onPodAdd(withClaim('p', 'data'));
    s.drainActive();
    await new Promise((r) => setImmediate(r));
    volumes.settle('provisioning persistentvolumeclaim "default/data" failed on its node');
    await s.waitForBindings();
    assert.equal(api.bindings.get('default/p'), undefined);
    const ev = api.lastEvent('default/p');
    assert.equal(ev?.reason, 'FailedScheduling');
    assert.equal(
      ev?.message,
      'running PreBind plugin "VolumeBinding": binding volumes: provisioning persistentvolumeclaim "default/data" failed on its node',
    );
    const assumed = s.cache.snapshot().nodes.reduce((n, info) => n + info.pods.size, 0);
    assert.equal(assumed, 0, 'the assumed pod is forgotten');
  });

  it('places a pod whose claim clones another on the node of the source’s volume', () => {
    const { s, volumes } = setup();
    volumes.classes.set('local-path', wffc('local-path', 'kubit.io/local-path'));
    volumes.pvs.set('pv-src', {
      ...volumeOn('pv-src', 'n3', {
        storageClassName: 'local-path',
        claimRef: { namespace: 'default', name: 'src', uid: 'uid-claim-src' },
      }),
      status: { phase: 'Bound' },
    });
    volumes.claims.set('default/src', boundTo(claim('src', { storageClassName: 'local-path' }), 'pv-src'));
    volumes.claims.set(
      'default/copy',
      claim('copy', {
        storageClassName: 'local-path',
        dataSource: { kind: 'PersistentVolumeClaim', name: 'src' },
      }),
    );
    s.onPodAdd(withClaim('p', 'copy'));
    s.drainActive();
    assert.deepEqual(volumes.selected, ['copy@n3']);
  });

  it('waits for the ephemeral volume controller to create an ephemeral claim', () => {
    const { s, message } = setup();
    s.onPodAdd(
      pod('p', {
        volumes: [
          {
            name: 'scratch',
            ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } },
          },
        ],
      }),
    );
    s.drainActive();
    assert.equal(
      message('p'),
      '0/3 nodes are available: waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch".',
    );
  });
});
