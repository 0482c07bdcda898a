// The apiserver's field-management pieces that need no server: managers from
// User-Agents, managedFields read and written, the cap on Update entries, and the
// Kubernetes conflict messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PathSet, type StatusError } from '@kubit/api';
import { applyConflict } from '../src/fieldmanager/field-manager.js';
import {
  capUpdateManagers,
  decodeManaged,
  encodeManaged,
  identity,
  isResetRequest,
  type Managed,
  type ManagedEntry,
} from '../src/fieldmanager/managed-fields.js';
import { managerFromUserAgent, managerOf } from '../src/fieldmanager/manager-name.js';

describe('manager names', () => {
  const table: [string | undefined, string][] = [
    ['kubectl/v1.30.2 (linux/amd64) kubernetes/3968350', 'kubectl'],
    [
      'kube-controller-manager/v1.30.0 (linux/amd64) kubernetes/abc/system:serviceaccount:x',
      'kube-controller-manager',
    ],
    ['Go-http-client/2.0', 'Go-http-client'],
    ['tab\there/1', 'tabhere'],
    ['', ''],
    [undefined, ''],
    ['x'.repeat(200), 'x'.repeat(128)],
  ];
  for (const [ua, want] of table) {
    it(`${JSON.stringify(ua)?.slice(0, 40)} → ${JSON.stringify(want).slice(0, 20)}`, () =>
      assert.equal(managerFromUserAgent(ua), want));
  }
  it('a fieldManager wins, and a bad one is 422 on the options kind', () => {
    assert.equal(managerOf('kubectl-edit', 'kubectl/v1.30', 'UpdateOptions'), 'kubectl-edit');
    assert.throws(
      () => managerOf('x'.repeat(129), undefined, 'PatchOptions'),
      (e: StatusError) => e.code === 422 && /PatchOptions/.test(e.message),
    );
    assert.throws(
      () => managerOf('bad\u0007', undefined, 'CreateOptions'),
      (e: StatusError) => e.code === 422,
    );
  });
});

const e = (
  manager: string,
  operation: 'Apply' | 'Update',
  time: string,
  apiVersion = 'v1',
): ManagedEntry => ({
  manager,
  operation,
  apiVersion,
  time,
  set: PathSet.of(['f:data', `f:${manager}`]),
});

describe('managedFields', () => {
  it('round-trips, sorted Apply first, then by time and manager', () => {
    const m: Managed = new Map();
    for (const x of [
      e('b', 'Update', '2026-01-01T00:00:02Z'),
      e('a', 'Update', '2026-01-01T00:00:02Z'),
      e('z', 'Apply', '2026-01-01T00:00:09Z'),
      e('c', 'Update', '2026-01-01T00:00:01Z'),
    ])
      m.set(identity(x), x);
    const list = encodeManaged(m);
    assert.deepEqual(
      list.map((x) => x.manager),
      ['z', 'c', 'a', 'b'],
    );
    assert.deepEqual(Object.keys(list[0]), [
      'manager',
      'operation',
      'apiVersion',
      'time',
      'fieldsType',
      'fieldsV1',
    ]);
    assert.deepEqual(encodeManaged(decodeManaged(list)), list);
  });

  it('refuses garbage, names where it is', () => {
    const good = {
      manager: 'm',
      operation: 'Update',
      apiVersion: 'v1',
      fieldsType: 'FieldsV1',
      fieldsV1: {},
    };
    for (const [bad, msg] of [
      [{}, /managedFields must be a list/],
      [[1], /managedFields\[0\] must be an object/],
      [[{ ...good, operation: 'Merge' }], /operation/],
      [[{ ...good, fieldsType: 'FieldsV2' }], /fieldsType/],
      [[{ ...good, fieldsV1: { 'q:x': {} } }], /fieldsV1/],
      [[{ ...good, time: 'yesterday' }], /time/],
      [[good, good], /duplicates/],
    ] as [unknown, RegExp][]) {
      assert.throws(() => decodeManaged(bad), msg);
    }
  });

  it('[] and [{}] ask for a reset; [{}, {}] and absence do not', () => {
    assert.equal(isResetRequest([]), true);
    assert.equal(isResetRequest([{}]), true);
    assert.equal(isResetRequest([{}, {}]), false);
    assert.equal(isResetRequest(undefined), false);
  });

  it('keeps ten Update managers, merging the oldest into ancient-changes with its time', () => {
    const m: Managed = new Map();
    for (let i = 0; i < 12; i++) {
      const x = e(`m${i}`, 'Update', `2026-01-01T00:00:${String(10 + i).padStart(2, '0')}Z`);
      m.set(identity(x), x);
    }
    const applier = e('ssa', 'Apply', '2026-01-01T00:00:00Z');
    m.set(identity(applier), applier);
    capUpdateManagers(m);
    const updaters = [...m.values()].filter((x) => x.operation === 'Update');
    assert.equal(updaters.length, 10);
    const ancient = updaters.find((x) => x.manager === 'ancient-changes');
    assert.ok(ancient);
    assert.deepEqual(ancient.set.paths(), [
      ['f:data', 'f:m0'],
      ['f:data', 'f:m1'],
      ['f:data', 'f:m2'],
    ]);
    assert.equal(ancient.time, '2026-01-01T00:00:12Z');
    assert.ok(m.has(identity(applier)), 'appliers are never capped');
  });
});

describe('conflict messages', () => {
  it('names an updater with its apiVersion and subresource, an applier by name', () => {
    const scaler: ManagedEntry = {
      manager: 'kubectl',
      operation: 'Update',
      apiVersion: 'apps/v1',
      subresource: 'scale',
      set: new PathSet(),
    };
    const one = applyConflict([{ entry: scaler, paths: [['f:spec', 'f:replicas']] }]);
    assert.equal(one.code, 409);
    assert.equal(
      one.message,
      'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas',
    );
    const applier: ManagedEntry = {
      manager: 'helm',
      operation: 'Apply',
      apiVersion: 'apps/v1',
      set: new PathSet(),
    };
    const two = applyConflict([
      {
        entry: applier,
        paths: [
          ['f:spec', 'f:replicas'],
          ['f:metadata', 'f:labels', 'f:a'],
        ],
      },
    ]);
    assert.equal(
      two.message,
      'Apply failed with 2 conflicts: conflicts with "helm":\n- .spec.replicas\n- .metadata.labels.a',
    );
    assert.deepEqual(
      two.status.details?.causes?.map((c) => [c.reason, c.message, c.field]),
      [
        ['FieldManagerConflict', 'conflict with "helm"', '.spec.replicas'],
        ['FieldManagerConflict', 'conflict with "helm"', '.metadata.labels.a'],
      ],
    );
  });
});
