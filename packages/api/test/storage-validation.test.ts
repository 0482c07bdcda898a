// PersistentVolume, PersistentVolumeClaim, StorageClass and CSIStorageCapacity
// defaults and validation, with Kubernetes' field paths and messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultPersistentVolume,
  defaultPersistentVolumeClaim,
  defaultStorageClass,
  validateObject,
  validateUpdate,
} from '@kubit/api';

type O = Record<string, unknown>;

function pv(spec: O = {}): O {
  return defaultPersistentVolume({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pv1' },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      hostPath: { path: '/data' },
      ...spec,
    },
  });
}

function pvc(spec: O = {}, status?: O): O {
  return defaultPersistentVolumeClaim({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'c', namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
    ...(status ? { status } : {}),
  });
}

function sc(extra: O = {}): O {
  return defaultStorageClass({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast' },
    provisioner: 'example.com/fast',
    ...extra,
  });
}

const errors = (errs: { field: string; detail?: string; type: string }[]) =>
  errs.map((e) => `${e.field}: ${e.type}: ${e.detail ?? ''}`);
const created = (o: unknown) => errors(validateObject(o));
const updated = (n: unknown, o: unknown) => errors(validateUpdate(n, o));

test('defaults: PV Retain/Filesystem/Pending, PVC Filesystem/Pending, SC Delete/Immediate', () => {
  const v = pv();
  assert.equal((v.spec as O).persistentVolumeReclaimPolicy, 'Retain');
  assert.equal((v.spec as O).volumeMode, 'Filesystem');
  assert.equal((v.status as O).phase, 'Pending');
  const c = pvc();
  assert.equal((c.spec as O).volumeMode, 'Filesystem');
  assert.equal((c.status as O).phase, 'Pending');
  const s = sc();
  assert.equal(s.reclaimPolicy, 'Delete');
  assert.equal(s.volumeBindingMode, 'Immediate');
  // Given values stay.
  assert.equal(defaultStorageClass({ ...sc(), reclaimPolicy: 'Retain' }).reclaimPolicy, 'Retain');
});

test('a valid PV, PVC, StorageClass and CSIStorageCapacity pass', () => {
  assert.deepEqual(created(pv()), []);
  assert.deepEqual(created(pvc()), []);
  assert.deepEqual(created(sc()), []);
  assert.deepEqual(
    created({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: { name: 'cap', namespace: 'kube-system' },
      storageClassName: 'local-path',
      capacity: '10Gi',
    }),
    [],
  );
});

test('PV: access modes, capacity, exactly one source, claimRef, modes, policies', () => {
  const cases: [O, string][] = [
    [{ accessModes: [] }, 'spec.accessModes: FieldValueRequired: must specify at least 1 access mode'],
    [{ accessModes: ['ReadWriteSometimes'] }, 'spec.accessModes: FieldValueNotSupported'],
    [
      { accessModes: ['ReadWriteOncePod', 'ReadWriteOnce'] },
      'spec.accessModes: FieldValueForbidden: may not use ReadWriteOncePod with other access modes',
    ],
    [{ capacity: {} }, 'spec.capacity: FieldValueRequired'],
    [{ capacity: { storage: '0' } }, 'spec.capacity[storage]: FieldValueInvalid: must be greater than zero'],
    [{ capacity: { storage: '1Gi', cpu: '1' } }, 'spec.capacity: FieldValueNotSupported'],
    [{ hostPath: undefined }, 'spec: FieldValueRequired: must specify a volume type'],
    [
      { nfs: { server: 's', path: '/x' } },
      'spec.nfs: FieldValueForbidden: may not specify more than 1 volume type',
    ],
    [{ hostPath: { path: '' } }, 'spec.hostPath.path: FieldValueRequired'],
    [{ claimRef: { name: 'c' } }, 'spec.claimRef.namespace: FieldValueRequired'],
    [{ volumeMode: 'Raw' }, 'spec.volumeMode: FieldValueNotSupported'],
    [{ persistentVolumeReclaimPolicy: 'Keep' }, 'spec.persistentVolumeReclaimPolicy: FieldValueNotSupported'],
    [{ storageClassName: 'Not_A_Name' }, 'spec.storageClassName: FieldValueInvalid'],
    [
      { hostPath: undefined, local: { path: '/mnt/disk' } },
      'spec.nodeAffinity: FieldValueRequired: Local volume requires node affinity',
    ],
    [
      { nodeAffinity: { required: { nodeSelectorTerms: [] } } },
      'spec.nodeAffinity.required.nodeSelectorTerms: FieldValueRequired: must have at least one node selector term',
    ],
    [
      {
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'Near', values: ['a'] }] }],
          },
        },
      },
      'spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: FieldValueNotSupported',
    ],
  ];
  for (const [spec, want] of cases) {
    const got = created(pv(spec));
    assert.ok(
      got.some((e) => e.startsWith(want)),
      `${JSON.stringify(spec)}: want ${want}, got ${got.join(' | ')}`,
    );
  }
  // A local volume with node affinity is fine.
  assert.deepEqual(
    created(
      pv({
        hostPath: undefined,
        local: { path: '/mnt/disk' },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] },
            ],
          },
        },
      }),
    ),
    [],
  );
});

test('PV update: the source and volume mode are immutable, capacity may change', () => {
  const old = pv();
  assert.deepEqual(updated(pv({ capacity: { storage: '2Gi' } }), old), []);
  assert.ok(
    updated(pv({ hostPath: { path: '/other' } }), old).some((e) =>
      e.startsWith(
        'spec.persistentvolumesource: FieldValueForbidden: spec.persistentvolumesource is immutable',
      ),
    ),
  );
  assert.ok(
    updated(pv({ volumeMode: 'Block' }), old).some((e) =>
      e.startsWith('spec.volumeMode: FieldValueInvalid: field is immutable'),
    ),
  );
});

test('PVC: access modes, storage request, selector, class name', () => {
  const cases: [O, string][] = [
    [{ accessModes: [] }, 'spec.accessModes: FieldValueRequired: at least 1 access mode is required'],
    [{ resources: {} }, 'spec.resources[storage]: FieldValueRequired'],
    [
      { resources: { requests: { storage: '-1Gi' } } },
      'spec.resources.requests[storage]: FieldValueInvalid: must be greater than zero',
    ],
    [
      { selector: { matchExpressions: [{ key: 'a', operator: 'Maybe' }] } },
      'spec.selector.matchExpressions[0].operator',
    ],
    [{ volumeMode: 'Raw' }, 'spec.volumeMode: FieldValueNotSupported'],
    [{ storageClassName: 'UPPER' }, 'spec.storageClassName: FieldValueInvalid'],
  ];
  for (const [spec, want] of cases) {
    const got = created(pvc(spec));
    assert.ok(
      got.some((e) => e.startsWith(want)),
      `${JSON.stringify(spec)}: want ${want}, got ${got.join(' | ')}`,
    );
  }
});

test('PVC update: spec immutable except a bound claim growing; binding fills volumeName', () => {
  const immutable =
    'spec: FieldValueForbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims';
  const pending = pvc({ storageClassName: 'fast' });
  assert.deepEqual(updated(pvc({ storageClassName: 'fast', volumeName: 'pv1' }), pending), []);
  assert.deepEqual(updated(pvc({ storageClassName: 'fast', accessModes: ['ReadWriteMany'] }), pending), [
    immutable,
  ]);
  assert.deepEqual(updated(pvc({ storageClassName: 'slow' }), pending), [immutable]);
  // Only a bound claim's request may change.
  const big = { resources: { requests: { storage: '2Gi' } } };
  assert.deepEqual(updated(pvc({ storageClassName: 'fast', ...big }), pending), [immutable]);
  const bound = pvc({ storageClassName: 'fast', volumeName: 'pv1' }, { phase: 'Bound' });
  assert.deepEqual(
    updated(pvc({ storageClassName: 'fast', volumeName: 'pv1', ...big }, { phase: 'Bound' }), bound),
    [],
  );
  assert.deepEqual(
    updated(
      pvc(
        { storageClassName: 'fast', volumeName: 'pv1', resources: { requests: { storage: '512Mi' } } },
        { phase: 'Bound' },
      ),
      bound,
    ),
    ['spec.resources.requests.storage: FieldValueForbidden: field can not be less than previous value'],
  );
  assert.deepEqual(updated(pvc({ storageClassName: 'fast', volumeName: 'pv2' }, { phase: 'Bound' }), bound), [
    immutable,
  ]);
  assert.deepEqual(
    updated(
      pvc(
        { storageClassName: 'fast', volumeName: 'pv1', volumeAttributesClassName: 'gold' },
        { phase: 'Bound' },
      ),
      bound,
    ),
    [],
  );
});

test('StorageClass: provisioner required, policies supported; provisioner, parameters and reclaimPolicy immutable', () => {
  assert.ok(created(sc({ provisioner: '' })).includes('provisioner: FieldValueRequired: '));
  assert.ok(
    created(sc({ reclaimPolicy: 'Recycle' })).some((e) =>
      e.startsWith('reclaimPolicy: FieldValueNotSupported'),
    ),
  );
  assert.ok(
    created(sc({ volumeBindingMode: 'Later' })).some((e) =>
      e.startsWith('volumeBindingMode: FieldValueNotSupported'),
    ),
  );
  const old = sc({ parameters: { a: 'b' } });
  assert.deepEqual(updated(sc({ parameters: { a: 'b' }, allowVolumeExpansion: true }), old), []);
  assert.deepEqual(updated(sc({ parameters: { a: 'b' }, provisioner: 'example.com/slow' }), old), [
    'provisioner: FieldValueForbidden: updates to provisioner are forbidden.',
  ]);
  assert.deepEqual(updated(sc({ parameters: { a: 'c' } }), old), [
    'parameters: FieldValueForbidden: updates to parameters are forbidden.',
  ]);
  assert.deepEqual(updated(sc({ parameters: { a: 'b' }, reclaimPolicy: 'Retain' }), old), [
    'reclaimPolicy: FieldValueForbidden: updates to reclaimPolicy are forbidden.',
  ]);
});

test('pods: ephemeral volume templates and volumeDevices are validated', () => {
  const podWith = (volumes: unknown[], devices: unknown[] = []) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'default' },
    spec: {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      terminationGracePeriodSeconds: 30,
      schedulerName: 'default-scheduler',
      containers: [
        {
          name: 'c',
          image: 'busybox:1.36',
          imagePullPolicy: 'IfNotPresent',
          terminationMessagePolicy: 'File',
          terminationMessagePath: '/dev/termination-log',
          volumeDevices: devices,
        },
      ],
      volumes,
    },
  });
  const eph = (spec: O) => ({ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec } } });
  const good = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } };
  assert.deepEqual(created(podWith([eph(good)], [{ name: 'scratch', devicePath: '/dev/xvda' }])), []);
  assert.ok(
    created(podWith([eph({ ...good, accessModes: [] })])).includes(
      'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.accessModes: FieldValueRequired: at least 1 access mode is required',
    ),
  );
  assert.ok(
    created(podWith([{ name: 'scratch', ephemeral: {} }])).includes(
      'spec.volumes[0].ephemeral.volumeClaimTemplate: FieldValueRequired: ',
    ),
  );
  const dev = created(podWith([eph(good)], [{ name: 'nope', devicePath: 'dev/x' }]));
  assert.ok(
    dev.some((e) => e.startsWith('spec.containers[0].volumeDevices[0].name: FieldValueNotFound')),
    dev.join('|'),
  );
  assert.ok(
    dev.some((e) => e.startsWith('spec.containers[0].volumeDevices[0].devicePath: FieldValueInvalid')),
  );
});
