// The PersistentVolume the kubelet provisions for a claim (storage.ts's protocol) and
// which claims and volumes are its node's to act on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DISK_BACKING_FILE_ATTRIBUTE,
  DISK_CSI_DRIVER,
  DISK_PROVISIONER,
  LOCAL_PATH_PROVISIONER,
  PROVISIONED_BY_ANNOTATION,
  PROVISIONER_FINALIZER,
  SELECTED_NODE_ANNOTATION,
  STORAGE_PROVISIONER_ANNOTATION,
} from '@kubit/api';
import type { PersistentVolumeClaim } from 'kubernetes-types/core/v1.js';
import { LocalStorage } from '../src/volumes/local-path.js';
import {
  provisionerFor,
  requestedBytes,
  toDelete,
  volumeFor,
  volumeNode,
} from '../src/volumes/provisioned-volume.js';

const storage = new LocalStorage('/var/lib/kubelet/storage');

function claim(provisioner: string, node: string, request = '100M'): PersistentVolumeClaim {
  return {
    metadata: {
      name: 'data',
      namespace: 'ns',
      uid: 'u-1',
      resourceVersion: '7',
      annotations: { [STORAGE_PROVISIONER_ANNOTATION]: provisioner, [SELECTED_NODE_ANNOTATION]: node },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'kubit-disk',
      resources: { requests: { storage: request } },
    },
  };
}

test("a claim is this node's when a node-local provisioner is named and the scheduler selected this node", () => {
  assert.equal(provisionerFor(claim(DISK_PROVISIONER, 'n1'), 'n1'), DISK_PROVISIONER);
  assert.equal(provisionerFor(claim(DISK_PROVISIONER, 'n2'), 'n1'), undefined);
  assert.equal(provisionerFor(claim('ebs.csi.aws.com', 'n1'), 'n1'), undefined);
  const bound = claim(LOCAL_PATH_PROVISIONER, 'n1');
  bound.spec = { ...bound.spec, volumeName: 'pvc-x' };
  assert.equal(provisionerFor(bound, 'n1'), undefined);
});

test('requests round up to whole MiB', () => {
  assert.equal(requestedBytes(claim(DISK_PROVISIONER, 'n1', '100M')), 96 * 1024 * 1024);
  assert.equal(requestedBytes(claim(DISK_PROVISIONER, 'n1', '64Mi')), 64 * 1024 * 1024);
  assert.equal(requestedBytes(claim(DISK_PROVISIONER, 'n1', '1')), 1024 * 1024);
});

test('a kubit-disk volume: pre-bound, provisioned-by, the finalizer, hostname affinity, the class reclaim policy', () => {
  const pv = volumeFor(
    claim(DISK_PROVISIONER, 'n1', '64Mi'),
    { metadata: { name: 'kubit-disk' }, provisioner: DISK_PROVISIONER, reclaimPolicy: 'Retain' },
    DISK_PROVISIONER,
    'n1',
    storage,
  );
  assert.equal(pv.metadata?.name, 'pvc-u-1');
  assert.equal(pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION], DISK_PROVISIONER);
  assert.deepEqual(pv.metadata?.finalizers, [PROVISIONER_FINALIZER]);
  assert.equal(pv.spec?.csi?.driver, DISK_CSI_DRIVER);
  assert.equal(
    pv.spec?.csi?.volumeAttributes?.[DISK_BACKING_FILE_ATTRIBUTE],
    '/var/lib/kubelet/storage/disks/pvc-u-1.img',
  );
  assert.deepEqual(pv.spec?.capacity, { storage: '64Mi' });
  assert.equal(pv.spec?.persistentVolumeReclaimPolicy, 'Retain');
  assert.equal(pv.spec?.storageClassName, 'kubit-disk');
  assert.equal(pv.spec?.volumeMode, 'Filesystem');
  assert.deepEqual(
    { ns: pv.spec?.claimRef?.namespace, name: pv.spec?.claimRef?.name, uid: pv.spec?.claimRef?.uid },
    { ns: 'ns', name: 'data', uid: 'u-1' },
  );
  assert.equal(volumeNode(pv), 'n1');
});

test('a local-path volume is spec.local in the storage dir; Released with Delete on this node is to be deleted', () => {
  const pv = volumeFor(
    claim(LOCAL_PATH_PROVISIONER, 'n1'),
    { metadata: { name: 'local-path' }, provisioner: LOCAL_PATH_PROVISIONER },
    LOCAL_PATH_PROVISIONER,
    'n1',
    storage,
  );
  assert.equal(pv.spec?.local?.path, '/var/lib/kubelet/storage/local-path/pvc-u-1');
  assert.equal(pv.spec?.persistentVolumeReclaimPolicy, 'Delete');
  assert.equal(toDelete(pv, 'n1'), false, 'not while it is bound');
  const released = { ...pv, status: { phase: 'Released' } };
  assert.equal(toDelete(released, 'n1'), true);
  assert.equal(toDelete(released, 'n2'), false, "another node's volume");
  const retained = { ...released, spec: { ...pv.spec, persistentVolumeReclaimPolicy: 'Retain' } };
  assert.equal(toDelete(retained, 'n1'), false, 'Retain keeps it');
});
