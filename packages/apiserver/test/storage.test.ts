// The storage kinds against kubit-apiserver on a real store (one control plane for the
// file): the bootstrap classes and `kubectl get sc` with "(default)", `kubectl get
// pv,pvc` columns, DefaultStorageClass admission (the newest of two defaults), the
// resize rules (403 when the class does not allow expansion, 422 when the claim is
// unbound or shrinking), the protection finalizers, the status subresource, and what a kubelet may do as its node's
// provisioner (RBAC) while an unrelated claim stays refused (Node authorizer).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const PVS = '/api/v1/persistentvolumes';
const PVCS = '/api/v1/namespaces/default/persistentvolumeclaims';
const SCS = '/apis/storage.k8s.io/v1/storageclasses';

function claim(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
  };
}

function volume(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '5Gi' },
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      hostPath: { path: `/tmp/${name}` },
      ...spec,
    },
  };
}

/** Marks a claim Bound to a volume, as the binder would. */
async function bind(name: string, pv: string, capacity = '1Gi') {
  const cur = await api.get(`${PVCS}/${name}`);
  const spec = await api.put(`${PVCS}/${name}`, { ...cur.body, spec: { ...cur.body.spec, volumeName: pv } });
  assert.equal(spec.status, 200, spec.text);
  const st = await api.put(`${PVCS}/${name}/status`, {
    ...spec.body,
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: capacity } },
  });
  assert.equal(st.status, 200, st.text);
  return st.body;
}

describe('storage classes', () => {
  it('the two bootstrap classes exist; kubectl get sc marks the default', async () => {
    const lp = await api.get(`${SCS}/local-path`);
    assert.equal(lp.status, 200, lp.text);
    assert.equal(lp.body.provisioner, 'kubit.io/local-path');
    assert.equal(lp.body.volumeBindingMode, 'WaitForFirstConsumer');
    assert.equal(lp.body.reclaimPolicy, 'Delete');
    const disk = await api.get(`${SCS}/kubit-disk`);
    assert.equal(disk.body.provisioner, 'kubit.io/disk');
    assert.equal(disk.body.allowVolumeExpansion, true);
    const out = (await kubectl(cp, ['get', 'sc'])).stdout.split('\n');
    assert.match(
      out[0],
      /^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE$/,
    );
    assert.ok(
      out.some((l) =>
        /^local-path \(default\)\s+kubit\.io\/local-path\s+Delete\s+WaitForFirstConsumer\s+false\s/.test(l),
      ),
      out.join('\n'),
    );
    assert.ok(
      out.some((l) => /^kubit-disk\s+kubit\.io\/disk\s+Delete\s+WaitForFirstConsumer\s+true\s/.test(l)),
    );
  });

  it('provisioner and parameters are immutable (422)', async () => {
    const r = await api.post(SCS, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'fixed' },
      provisioner: 'example.com/a',
      parameters: { type: 'ssd' },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.reclaimPolicy, 'Delete');
    assert.equal(r.body.volumeBindingMode, 'Immediate');
    const u = await api.put(`${SCS}/fixed`, { ...r.body, provisioner: 'example.com/b' });
    assert.equal(u.status, 422, u.text);
    assert.match(u.body.message, /provisioner: Forbidden: updates to provisioner are forbidden\./);
  });
});

describe('claims and volumes', () => {
  it('a claim without a class gets the default; "" keeps no class; the newest of two defaults wins', async () => {
    const a = await api.post(PVCS, claim('defaulted'));
    assert.equal(a.status, 201, a.text);
    assert.equal(a.body.spec.storageClassName, 'local-path');
    assert.equal(a.body.spec.volumeMode, 'Filesystem');
    assert.equal(a.body.status.phase, 'Pending');
    const none = await api.post(PVCS, claim('classless', { storageClassName: '' }));
    assert.equal(none.body.spec.storageClassName, '');
    // A second default, newer than local-path: creation times count in whole seconds, so
    // wait for the next one (on a tie the first name wins, which would be local-path).
    const lp = await api.get(`${SCS}/local-path`);
    const lpSecond = Date.parse(lp.body.metadata.creationTimestamp);
    while (Date.now() < lpSecond + 1000) await new Promise((r) => setTimeout(r, 50));
    const sc = await api.post(SCS, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: {
        name: 'newer-default',
        annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
      },
      provisioner: 'example.com/newer',
    });
    assert.equal(sc.status, 201, sc.text);
    try {
      let got = '';
      // The admission reads the class from the watch cache, which follows the write closely.
      for (let i = 0; i < 100 && got !== 'newer-default'; i++) {
        const b = await api.post(PVCS, claim(`second-${i}`));
        got = b.body.spec.storageClassName;
        await api.del(`${PVCS}/second-${i}`);
      }
      assert.equal(got, 'newer-default');
    } finally {
      await api.del(`${SCS}/newer-default`);
    }
  });

  it('kubectl get pv,pvc prints Kubernetes columns', async () => {
    const v = await api.post(PVS, volume('pv-print', { storageClassName: 'manual' }));
    assert.equal(v.status, 201, v.text);
    assert.equal(v.body.spec.persistentVolumeReclaimPolicy, 'Retain');
    assert.equal(v.body.status.phase, 'Pending');
    const c = await api.post(PVCS, claim('print', { storageClassName: 'manual' }));
    assert.equal(c.status, 201, c.text);
    await bind('print', 'pv-print', '5Gi');
    const pv = (await kubectl(cp, ['get', 'pv', 'pv-print'])).stdout.split('\n');
    assert.match(
      pv[0],
      /^NAME\s+CAPACITY\s+ACCESS MODES\s+RECLAIM POLICY\s+STATUS\s+CLAIM\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+REASON\s+AGE$/,
    );
    assert.match(pv[1], /^pv-print\s+5Gi\s+RWO,ROX\s+Retain\s+Pending\s+manual\s+<unset>\s+\S+$/);
    const pvc = (await kubectl(cp, ['get', 'pvc', 'print'])).stdout.split('\n');
    assert.match(
      pvc[0],
      /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE$/,
    );
    assert.match(pvc[1], /^print\s+Bound\s+pv-print\s+5Gi\s+RWO\s+manual\s+<unset>\s+\S+$/);
    const described = (await kubectl(cp, ['describe', 'pvc', 'print'])).stdout;
    assert.match(described, /^Name:\s+print$/m);
    assert.match(described, /^StorageClass:\s+manual$/m);
    assert.match(described, /^Status:\s+Bound$/m);
    assert.match(described, /^Volume:\s+pv-print$/m);
    assert.match(described, /^Capacity:\s+5Gi$/m);
    const describedPv = (await kubectl(cp, ['describe', 'pv', 'pv-print'])).stdout;
    assert.match(describedPv, /^Reclaim Policy:\s+Retain$/m);
    const pending = (await kubectl(cp, ['get', 'pvc', 'defaulted'])).stdout.split('\n');
    assert.match(pending[1], /^defaulted\s+Pending\s+local-path\s+<unset>\s+\S+$/);
  });

  it('new claims and volumes carry their protection finalizer; a deleted claim waits for it', async () => {
    const c = await api.post(PVCS, claim('protected'));
    assert.deepEqual(c.body.metadata.finalizers, ['kubernetes.io/pvc-protection']);
    const v = await api.post(PVS, volume('pv-protected'));
    assert.deepEqual(v.body.metadata.finalizers, ['kubernetes.io/pv-protection']);
    // No pvc-protection controller runs here: the claim stays, Terminating.
    const d = await api.del(`${PVCS}/protected`);
    assert.equal(d.status, 200, d.text);
    const after = await api.get(`${PVCS}/protected`);
    assert.equal(after.status, 200, after.text);
    assert.ok(after.body.metadata.deletionTimestamp);
    const out = (await kubectl(cp, ['get', 'pvc', 'protected'])).stdout.split('\n');
    assert.match(out[1], /^protected\s+Terminating\s/);
  });

  it('kubectl apply creates volumes and claims; kubectl get pv,pvc,sc lists all three', async () => {
    const manifest = `apiVersion: v1
kind: PersistentVolume
metadata:
  name: applied-pv
spec:
  capacity:
    storage: 2Gi
  accessModes: [ReadWriteMany]
  storageClassName: applied
  nfs:
    server: nfs.example.com
    path: /exports/a
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: applied
spec:
  storageClassName: applied
  accessModes: [ReadWriteMany]
  resources:
    requests:
      storage: 1Gi
`;
    await kubectl(cp, ['apply', '-f', '-'], { input: manifest });
    // Applying again is a no-op (the claim's spec is immutable, so any diff would be refused).
    const again = await kubectl(cp, ['apply', '-f', '-'], { input: manifest });
    assert.match(again.stdout, /persistentvolumeclaim\/applied unchanged/);
    const out = (await kubectl(cp, ['get', 'pv,pvc,sc'])).stdout;
    assert.match(out, /^persistentvolume\/applied-pv\s+2Gi\s+RWX\s+Retain\s+Pending\s+applied\s/m);
    assert.match(out, /^persistentvolumeclaim\/applied\s+Pending\s+applied\s/m);
    assert.match(out, /^storageclass\.storage\.k8s\.io\/local-path \(default\)\s/m);
  });

  it('bad volumes and claims are 422 with field paths', async () => {
    const v = await api.post(PVS, volume('two-sources', { nfs: { server: 's', path: '/x' } }));
    assert.equal(v.status, 422, v.text);
    assert.match(v.body.message, /spec\.nfs: Forbidden: may not specify more than 1 volume type/);
    const c = await api.post(PVCS, claim('no-modes', { accessModes: [] }));
    assert.equal(c.status, 422, c.text);
    assert.match(c.body.message, /spec\.accessModes: Required value: at least 1 access mode is required/);
  });

  it('resize: grows only bound claims of an expandable class; never shrinks', async () => {
    await api.post(PVCS, claim('disk', { storageClassName: 'kubit-disk' }));
    await api.post(PVCS, claim('local', { storageClassName: 'local-path' }));
    const grow = async (name: string, storage: string) => {
      const cur = await api.get(`${PVCS}/${name}`);
      return api.put(`${PVCS}/${name}`, {
        ...cur.body,
        spec: { ...cur.body.spec, resources: { requests: { storage } } },
      });
    };
    // Unbound: the spec is immutable (validation's 422 comes first, as in Kubernetes).
    const unbound = await grow('disk', '2Gi');
    assert.equal(unbound.status, 422, unbound.text);
    assert.match(unbound.body.message, /spec is immutable after creation except resources\.requests/);
    await bind('disk', 'pv-disk');
    await bind('local', 'pv-local');
    const ok = await grow('disk', '2Gi');
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.spec.resources.requests.storage, '2Gi');
    const no = await grow('local', '2Gi');
    assert.equal(no.status, 403, no.text);
    assert.equal(
      no.body.message,
      'persistentvolumeclaims "local" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
    );
    const shrink = await grow('disk', '1Gi');
    assert.equal(shrink.status, 422, shrink.text);
    assert.match(
      shrink.body.message,
      /spec\.resources\.requests\.storage: Forbidden: field can not be less than previous value/,
    );
  });
});

describe('a kubelet as its node provisioner', () => {
  it('may create volumes, list claims and publish capacity; may not get an unrelated claim', async () => {
    const n1 = api.as(cp.pki.kubeletClient('n1'));
    try {
      const v = await n1.post(PVS, volume('pvc-node-made', { storageClassName: 'local-path' }));
      assert.equal(v.status, 201, v.text);
      const list = await n1.get('/api/v1/persistentvolumeclaims');
      assert.equal(list.status, 200, list.text);
      const cap = await n1.post('/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities', {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIStorageCapacity',
        metadata: { name: 'local-path-n1' },
        storageClassName: 'local-path',
        capacity: '10Gi',
      });
      assert.equal(cap.status, 201, cap.text);
      const sc = await n1.get(`${SCS}/local-path`);
      assert.equal(sc.status, 200, sc.text);
      const unrelated = await n1.get(`${PVCS}/defaulted`);
      assert.equal(unrelated.status, 403, unrelated.text);
      const elsewhere = await n1.post('/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities', {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIStorageCapacity',
        metadata: { name: 'x' },
        storageClassName: 'local-path',
      });
      assert.equal(elsewhere.status, 403, elsewhere.text);
    } finally {
      n1.close();
    }
  });
});
