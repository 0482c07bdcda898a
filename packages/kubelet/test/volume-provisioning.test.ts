// The node-local provisioning protocol end to end (packages/api/src/storage.ts): a real
// store and kubit-apiserver, a kubit-controller-manager running the volume controllers,
// and this node's provisioner (NodeVolumeProvisioner, as node n1's kubelet runs it, with
// n1's own credentials, so RBAC and the Node authorizer are the real ones). A local-path
// claim whose pod the scheduler placed on n1 gets a directory and a PersistentVolume on
// n1, bound to it; deleting the claim releases the volume, whose directory and object
// the node removes (reclaim Delete).
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { isNotFound, type PersistentVolume, type PersistentVolumeClaim } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { createLogger } from '@kubit/daemon';
import {
  type ControlPlane,
  freePort,
  startControlPlane,
  startDaemon,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { LocalStorage } from '../src/volumes/local-path.js';
import { NodeVolumeProvisioner } from '../src/volumes/provisioner.js';

let cp: ControlPlane;
let cm: TestProcess;
let admin: KubeClient;
let node: KubeClient;
let provisioner: NodeVolumeProvisioner;
let dir: string;

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'] });
  cm = startDaemon({
    name: 'controller-manager',
    pkg: 'controllers',
    entry: 'main.ts',
    logDir: cp.logDir,
    args: [
      `--kubeconfig=${await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager)}`,
      '--leader-elect=false',
      '--controllers=persistentvolume-binder,persistentvolume-expander,pvc-protection,pv-protection',
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ],
  });
  admin = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  node = KubeClient.fromKubeconfig({ kubeconfig: await cp.kubeconfigForNode('n1') });
  dir = await mkdtemp(join(tmpdir(), 'kubit-provisioning-'));
  provisioner = new NodeVolumeProvisioner(
    node,
    'n1',
    new LocalStorage(dir),
    createLogger({ name: 'provisioner', level: 'silent' }),
  );
  provisioner.start();
});

after(async () => {
  provisioner?.stop();
  node?.close();
  admin?.close();
  await cm?.stop();
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const getClaim = (name: string) =>
  admin.get<PersistentVolumeClaim>(resources.persistentvolumeclaims, name, { namespace: 'default' });
const missing = async (get: () => Promise<unknown>) =>
  get().then(
    () => false,
    (err) => {
      if (isNotFound(err)) return true;
      throw err;
    },
  );

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let last: T | undefined;
  try {
    await waitFor(
      what,
      async () => {
        last = await read();
        return ok(last);
      },
      30_000,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last)}; logs in ${cp.logDir}`);
  }
  return last as T;
}

test('a local-path claim placed on n1 is provisioned there, bound, and removed with its data', async () => {
  // As the scheduler leaves it: the node its pod landed on.
  const created = await admin.create<PersistentVolumeClaim>(
    resources.persistentvolumeclaims,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', annotations: { 'volume.kubernetes.io/selected-node': 'n1' } },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } },
    },
    { namespace: 'default' },
  );
  assert.equal(created.spec?.storageClassName, 'local-path');
  const pvName = `pvc-${created.metadata?.uid}`;
  const bound = await until(
    'the claim Bound',
    () => getClaim('data'),
    (c) => c.status?.phase === 'Bound',
  );
  assert.equal(bound.spec?.volumeName, pvName);
  assert.equal(
    bound.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'],
    'kubit.io/local-path',
  );
  const pv = await admin.get<PersistentVolume>(resources.persistentvolumes, pvName);
  assert.equal(pv.status?.phase, 'Bound');
  assert.equal(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], 'kubit.io/local-path');
  assert.deepEqual(pv.metadata?.finalizers?.sort(), [
    'external-provisioner.volume.kubernetes.io/finalizer',
    'kubernetes.io/pv-protection',
  ]);
  const path = pv.spec?.local?.path ?? '';
  assert.ok(path.startsWith(dir) && existsSync(path), path);

  await admin.delete(resources.persistentvolumeclaims, 'data', { namespace: 'default' });
  await until('the claim gone', () => missing(() => getClaim('data')), Boolean);
  await until(
    'the volume gone',
    () => missing(() => admin.get(resources.persistentvolumes, pvName)),
    Boolean,
  );
  assert.equal(existsSync(path), false);
});

test('a kubit-disk claim that grows: its disk file grows on n1 and the claim reports the new capacity', async () => {
  const created = await admin.create<PersistentVolumeClaim>(
    resources.persistentvolumeclaims,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'disk', annotations: { 'volume.kubernetes.io/selected-node': 'n1' } },
      spec: {
        storageClassName: 'kubit-disk',
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '16Mi' } },
      },
    },
    { namespace: 'default' },
  );
  await until(
    'the claim Bound',
    () => getClaim('disk'),
    (c) => c.status?.phase === 'Bound',
  );
  const pvName = `pvc-${created.metadata?.uid}`;
  const pv = await admin.get<PersistentVolume>(resources.persistentvolumes, pvName);
  const file = pv.spec?.csi?.volumeAttributes?.['kubit.io/backing-file'] ?? '';
  assert.equal(statSync(file).size, 16 * 1024 * 1024);

  await admin.patch(
    resources.persistentvolumeclaims,
    'disk',
    { spec: { resources: { requests: { storage: '48Mi' } } } },
    { namespace: 'default', type: 'merge' },
  );
  const grown = await until(
    'the claim to report 48Mi',
    () => getClaim('disk'),
    (c) => c.status?.capacity?.storage === '48Mi',
  );
  assert.deepEqual(grown.status?.conditions?.filter((c) => c.type === 'FileSystemResizePending') ?? [], []);
  assert.equal(statSync(file).size, 48 * 1024 * 1024, 'the backing file grew');
  assert.equal(
    (await admin.get<PersistentVolume>(resources.persistentvolumes, pvName)).spec?.capacity?.storage,
    '48Mi',
  );

  await admin.delete(resources.persistentvolumeclaims, 'disk', { namespace: 'default' });
  await until(
    'the volume gone',
    () => missing(() => admin.get(resources.persistentvolumes, pvName)),
    Boolean,
  );
  assert.equal(existsSync(file), false);
});
