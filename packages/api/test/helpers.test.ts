import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  findUntoleratedTaint,
  getControllerOf,
  isControlledBy,
  newControllerRef,
  nodeSelectorRequirementsAsSelector,
  objectKey,
  podResourceRequests,
  splitObjectKey,
  type Taint,
  type Toleration,
  toleratesTaint,
} from '../src/index.js';

describe('taints and tolerations', () => {
  const taint: Taint = { key: 'node.kubernetes.io/not-ready', value: '', effect: 'NoExecute' };
  const table: [string, Toleration, Taint, boolean][] = [
    ['exists on key', { key: taint.key, operator: 'Exists' }, taint, true],
    ['exists on everything', { operator: 'Exists' }, taint, true],
    [
      'equal with value',
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      true,
    ],
    [
      'equal with other value',
      { key: 'a', operator: 'Equal', value: 'c' },
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      false,
    ],
    ['other effect', { key: taint.key, operator: 'Exists', effect: 'NoSchedule' }, taint, false],
    ['other key', { key: 'x', operator: 'Exists' }, taint, false],
    ['unknown operator', { key: taint.key, operator: 'Maybe' }, taint, false],
  ];
  for (const [name, t, tt, want] of table) it(name, () => assert.equal(toleratesTaint(t, tt), want));

  it('findUntoleratedTaint', () => {
    const taints: Taint[] = [
      { key: 'a', effect: 'PreferNoSchedule' },
      { key: 'b', effect: 'NoSchedule' },
    ];
    assert.equal(findUntoleratedTaint(taints, [], ['NoSchedule', 'NoExecute'])?.key, 'b');
    assert.equal(findUntoleratedTaint(taints, [{ key: 'b', operator: 'Exists' }], ['NoSchedule']), undefined);
    assert.equal(findUntoleratedTaint(undefined, undefined), undefined);
  });
});

describe('node selector requirements', () => {
  it('In, NotIn, Exists, DoesNotExist, Gt, Lt', () => {
    const s = nodeSelectorRequirementsAsSelector([
      { key: 'zone', operator: 'In', values: ['a', 'b'] },
      { key: 'cpus', operator: 'Gt', values: ['4'] },
      { key: 'gpu', operator: 'DoesNotExist' },
    ]);
    assert.equal(s.matches({ zone: 'a', cpus: '8' }), true);
    assert.equal(s.matches({ zone: 'a', cpus: '2' }), false);
    assert.equal(s.matches({ zone: 'a', cpus: 'x' }), false);
    assert.equal(s.matches({ zone: 'c', cpus: '8' }), false);
    assert.equal(s.matches({ zone: 'a', cpus: '8', gpu: '' }), false);
    assert.equal(nodeSelectorRequirementsAsSelector([]).matches({}), false);
    assert.throws(
      () => nodeSelectorRequirementsAsSelector([{ key: 'a', operator: 'Near' }]),
      /"Near" is not a valid node selector operator/,
    );
    assert.throws(
      () => nodeSelectorRequirementsAsSelector([{ key: 'a', operator: 'Lt', values: ['x'] }]),
      /must be an integer/,
    );
  });
});

describe('pod resource requests', () => {
  it('sums containers, takes the larger init container, adds overhead', () => {
    const req = podResourceRequests({
      containers: [
        { name: 'a', resources: { requests: { cpu: '100m', memory: '64Mi' } } },
        { name: 'b', resources: { requests: { cpu: '200m' } } },
      ],
      initContainers: [
        { name: 'init', resources: { requests: { cpu: '1', memory: '10Mi' } } },
        { name: 'sidecar', restartPolicy: 'Always', resources: { requests: { cpu: '50m' } } },
      ],
      overhead: { memory: '1Mi' },
    });
    assert.equal(req.get('cpu')?.toString(), '1');
    assert.equal(req.get('memory')?.toString(), '65Mi');
    assert.equal(podResourceRequests(undefined).size, 0);
  });
});

describe('object meta helpers', () => {
  it('controller refs and keys', () => {
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'rs', namespace: 'd', uid: 'u1' },
    };
    const ref = newControllerRef(owner);
    assert.deepEqual(ref, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'rs',
      uid: 'u1',
      controller: true,
      blockOwnerDeletion: true,
    });
    const pod = {
      metadata: {
        name: 'p',
        namespace: 'd',
        ownerReferences: [{ ...ref, controller: false, uid: 'x' }, ref],
      },
    };
    assert.equal(getControllerOf(pod)?.uid, 'u1');
    assert.equal(isControlledBy(pod, 'u1'), true);
    assert.equal(isControlledBy({}, 'u1'), false);
    assert.throws(() => newControllerRef({ kind: 'X' }), /needs the owner/);
    assert.equal(objectKey(pod), 'd/p');
    assert.equal(objectKey({ metadata: { name: 'n1' } }), 'n1');
    assert.deepEqual(splitObjectKey('d/p'), { namespace: 'd', name: 'p' });
    assert.deepEqual(splitObjectKey('n1'), { namespace: '', name: 'n1' });
  });
});
