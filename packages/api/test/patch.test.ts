import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  applyJsonPatch,
  applyMergePatch,
  applyStrategicMergePatch,
  createMergePatch,
  deepClone,
  type JsonValue,
  PatchError,
  parsePointer,
  patchSchemaFor,
} from '../src/index.js';

type Obj = Record<string, unknown>;
const polluted = () => (({}) as Obj).polluted ?? (Object.prototype as Obj).polluted;

function deep(levels: number): JsonValue {
  let v: JsonValue = 1;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

describe('JSON merge patch (RFC 7386)', () => {
  // The examples of RFC 7386 appendix A.
  const table: [JsonValue, JsonValue, JsonValue][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  for (const [target, patch, want] of table) {
    it(`${JSON.stringify(target)} + ${JSON.stringify(patch)}`, () => {
      const before = deepClone(target);
      assert.deepEqual(applyMergePatch(target, patch), want);
      assert.deepEqual(target, before, 'target not modified');
    });
  }

  it('property: applying the diff reproduces the target', () => {
    // Merge patches cannot set a member to null, so objects carry no null members.
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.string(),
        fc.integer(),
        fc.boolean(),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c', '__proto__', 'constructor'), tie('value'), {
          maxKeys: 4,
          noNullPrototype: true,
        }),
      ),
    }));
    fc.assert(
      fc.property(value, value, (a, b) => {
        const patch = createMergePatch(a, b);
        assert.deepEqual(applyMergePatch(a, patch), b);
      }),
    );
    assert.equal(polluted(), undefined);
  });

  it('hostile keys stay data', () => {
    const patch = JSON.parse(
      '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {"polluted": 2}}, "a": {"__proto__": {"polluted": 3}}}',
    );
    const out = applyMergePatch({ a: {} }, patch) as Obj;
    assert.equal(polluted(), undefined);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.ok(Object.hasOwn(out, '__proto__'), 'own __proto__ key');
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { polluted: 1 });
    assert.equal((out.a as Obj).polluted, undefined);
  });

  it('deep nesting is bounded', () => {
    assert.throws(
      () => applyMergePatch({}, deep(5000)),
      (e: unknown) => e instanceof PatchError && e.code === 400 && /nested too deeply/.test(e.message),
    );
    assert.deepEqual(applyMergePatch({}, deep(500)), deep(500));
    // A deep target is copied without recursion.
    assert.ok(applyMergePatch(deep(100_000), { b: 1 }) !== null, 'deep target');
  });

  it('huge strings and non-ASCII pass through', () => {
    const big = 'ü'.repeat(1_000_000);
    assert.equal((applyMergePatch({}, { s: big }) as Obj).s, big);
    assert.deepEqual(applyMergePatch({ 名前: 1 }, { 名前: null, ключ: '✓' }), { ключ: '✓' });
  });
});

describe('JSON patch (RFC 6902)', () => {
  const table: [string, JsonValue, JsonValue, JsonValue][] = [
    ['add member', { foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }], { foo: 'bar', baz: 'qux' }],
    [
      'add array element',
      { foo: ['bar', 'baz'] },
      [{ op: 'add', path: '/foo/1', value: 'qux' }],
      { foo: ['bar', 'qux', 'baz'] },
    ],
    ['append with -', { foo: [1] }, [{ op: 'add', path: '/foo/-', value: 2 }], { foo: [1, 2] }],
    ['remove member', { baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }], { foo: 'bar' }],
    [
      'remove element',
      { foo: ['bar', 'qux', 'baz'] },
      [{ op: 'remove', path: '/foo/1' }],
      { foo: ['bar', 'baz'] },
    ],
    [
      'replace',
      { baz: 'qux', foo: 'bar' },
      [{ op: 'replace', path: '/baz', value: 'boo' }],
      { baz: 'boo', foo: 'bar' },
    ],
    [
      'move member',
      { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
      [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
      { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
    ],
    [
      'move element',
      { foo: ['all', 'grass', 'cows', 'eat'] },
      [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
      { foo: ['all', 'cows', 'eat', 'grass'] },
    ],
    ['copy', { a: { b: [1] } }, [{ op: 'copy', from: '/a', path: '/c' }], { a: { b: [1] }, c: { b: [1] } }],
    [
      'test then add',
      { baz: 'qux', foo: ['a', 2, 'c'] },
      [
        { op: 'test', path: '/foo', value: ['a', 2, 'c'] },
        { op: 'add', path: '/x', value: 1 },
      ],
      { baz: 'qux', foo: ['a', 2, 'c'], x: 1 },
    ],
    [
      'test ignores key order',
      { a: { x: 1, y: 2 } },
      [{ op: 'test', path: '/a', value: { y: 2, x: 1 } }],
      { a: { x: 1, y: 2 } },
    ],
    [
      'escaped pointer',
      { 'a/b': 1, 'm~n': 2 },
      [
        { op: 'replace', path: '/a~1b', value: 3 },
        { op: 'remove', path: '/m~0n' },
      ],
      { 'a/b': 3 },
    ],
    ['replace root', { a: 1 }, [{ op: 'replace', path: '', value: [1] }], [1]],
    [
      'add nested object',
      { metadata: {} },
      [{ op: 'add', path: '/metadata/labels', value: { app: 'web' } }],
      { metadata: { labels: { app: 'web' } } },
    ],
    ['empty patch', { a: 1 }, [], { a: 1 }],
  ];
  for (const [name, doc, patch, want] of table) {
    it(name, () => {
      const before = deepClone(doc);
      assert.deepEqual(applyJsonPatch(doc, patch), want);
      assert.deepEqual(doc, before);
    });
  }

  const bad: [string, JsonValue, unknown, RegExp, number][] = [
    [
      'test fails',
      { a: 1 },
      [{ op: 'test', path: '/a', value: 2 }],
      /operation 0 \(test\) on "\/a": test failed/,
      422,
    ],
    [
      'remove missing',
      { a: 1 },
      [{ op: 'remove', path: '/b' }],
      /operation 0 \(remove\) on "\/b": path does not exist/,
      422,
    ],
    [
      'replace missing',
      { a: 1 },
      [{ op: 'replace', path: '/b/c', value: 1 }],
      /"\/b\/c": path does not exist/,
      422,
    ],
    [
      'add under missing parent',
      {},
      [{ op: 'add', path: '/a/b', value: 1 }],
      /"\/a\/b": path does not exist/,
      422,
    ],
    [
      'index out of range',
      { a: [] },
      [{ op: 'add', path: '/a/2', value: 1 }],
      /index 2 is out of bounds/,
      422,
    ],
    [
      'leading zero index',
      { a: [1, 2] },
      [{ op: 'remove', path: '/a/01' }],
      /"01" is not a valid array index/,
      422,
    ],
    ['unknown op', {}, [{ op: 'frobnicate', path: '/a' }], /unsupported op "frobnicate"/, 400],
    ['missing value', {}, [{ op: 'add', path: '/a' }], /missing "value"/, 400],
    ['bad pointer', {}, [{ op: 'add', path: 'a', value: 1 }], /must start with '\/'/, 400],
    ['bad escape', {}, [{ op: 'add', path: '/a~2', value: 1 }], /'~' must be followed by '0' or '1'/, 400],
    ['not an array', {}, { op: 'add' }, /must be an array of operations/, 400],
    [
      'move into itself',
      { a: { b: 1 } },
      [{ op: 'move', from: '/a', path: '/a/b/c' }],
      /cannot move "\/a" into itself/,
      422,
    ],
    [
      'too many operations',
      {},
      Array.from({ length: 10001 }, () => ({ op: 'test', path: '', value: {} })),
      /allowed number of operations/,
      400,
    ],
    ['deeply nested value', {}, [{ op: 'add', path: '/a', value: deep(2000) }], /nested too deeply/, 400],
    [
      'second op fails, names its index',
      { a: 1 },
      [
        { op: 'remove', path: '/a' },
        { op: 'remove', path: '/a' },
      ],
      /operation 1 \(remove\)/,
      422,
    ],
  ];
  for (const [name, doc, patch, re, code] of bad) {
    it(`rejects: ${name}`, () => {
      assert.throws(
        () => applyJsonPatch(doc, patch),
        (e: unknown) => e instanceof PatchError && re.test(e.message) && e.code === code,
      );
    });
  }

  it('property: add then remove restores the document; test sees what add wrote', () => {
    const doc = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), {
      noNullPrototype: true,
    });
    fc.assert(
      fc.property(doc, fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), (d, key, value) => {
        if (Object.hasOwn(d, key)) return;
        const path = `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        const added = applyJsonPatch(d, [
          { op: 'add', path, value: value as JsonValue },
          { op: 'test', path, value: value as JsonValue },
        ]);
        assert.deepEqual(applyJsonPatch(added, [{ op: 'remove', path }]), d);
      }),
    );
    assert.equal(polluted(), undefined);
  });

  it('status error mapping', () => {
    const e = new PatchError('x', 422).toStatusError();
    assert.equal(e.code, 422);
    assert.equal(e.status.reason, 'Invalid');
    assert.equal(new PatchError('y', 400).toStatusError().status.reason, 'BadRequest');
  });

  it('hostile paths do not pollute', () => {
    const out = applyJsonPatch({}, [
      { op: 'add', path: '/__proto__', value: { polluted: 1 } },
      { op: 'add', path: '/constructor', value: { prototype: { polluted: 2 } } },
    ]) as Obj;
    assert.equal(polluted(), undefined);
    assert.ok(Object.hasOwn(out, '__proto__'), 'own key');
    assert.throws(
      () => applyJsonPatch({}, [{ op: 'add', path: '/toString/x', value: 1 }]),
      /path does not exist/,
    );
    assert.throws(
      () => applyJsonPatch({}, [{ op: 'add', path: '/__proto__/polluted', value: 1 }]),
      /path does not exist/,
    );
    assert.equal(polluted(), undefined);
    assert.deepEqual(parsePointer('/a~01/~1'), ['a~1', '/']);
  });
});

function pod(containers: Obj[], extra: Obj = {}): Obj {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', ...extra }, spec: { containers } };
}

describe('strategic merge patch', () => {
  const table: [string, Obj, Obj, Obj][] = [
    [
      'kubectl apply: change an image',
      pod([
        { name: 'app', image: 'nginx:1', ports: [{ containerPort: 80 }] },
        { name: 'side', image: 'b' },
      ]),
      {
        spec: {
          '$setElementOrder/containers': [{ name: 'app' }, { name: 'side' }],
          containers: [{ image: 'nginx:2', name: 'app' }],
        },
      },
      pod([
        { name: 'app', image: 'nginx:2', ports: [{ containerPort: 80 }] },
        { name: 'side', image: 'b' },
      ]),
    ],
    [
      // Without $setElementOrder Kubernetes puts patched items before server-only ones.
      'add a container without order: patch items first',
      pod([{ name: 'a', image: 'x' }]),
      { spec: { containers: [{ name: 'b', image: 'y' }] } },
      pod([
        { name: 'b', image: 'y' },
        { name: 'a', image: 'x' },
      ]),
    ],
    [
      'kubectl apply: add a container with its order',
      pod([{ name: 'a', image: 'x' }]),
      {
        spec: {
          '$setElementOrder/containers': [{ name: 'a' }, { name: 'b' }],
          containers: [{ name: 'b', image: 'y' }],
        },
      },
      pod([
        { name: 'a', image: 'x' },
        { name: 'b', image: 'y' },
      ]),
    ],
    [
      'delete a container',
      pod([
        { name: 'a', image: 'x' },
        { name: 'b', image: 'y' },
      ]),
      {
        spec: {
          '$setElementOrder/containers': [{ name: 'a' }],
          containers: [{ $patch: 'delete', name: 'b' }],
        },
      },
      pod([{ name: 'a', image: 'x' }]),
    ],
    [
      'replace a whole list',
      pod([
        { name: 'a', image: 'x' },
        { name: 'b', image: 'y' },
      ]),
      { spec: { containers: [{ name: 'c', image: 'z' }, { $patch: 'replace' }] } },
      pod([{ name: 'c', image: 'z' }]),
    ],
    [
      'env merges by name, ports by containerPort, volumeMounts by mountPath',
      pod([
        {
          name: 'a',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
          ports: [{ containerPort: 80, name: 'http' }],
          volumeMounts: [{ name: 'v', mountPath: '/v' }],
        },
      ]),
      {
        spec: {
          containers: [
            {
              name: 'a',
              env: [
                { name: 'B', value: '3' },
                { name: 'C', value: '4' },
              ],
              ports: [{ containerPort: 80, protocol: 'TCP' }],
              volumeMounts: [{ mountPath: '/v', readOnly: true }],
            },
          ],
        },
      },
      pod([
        {
          name: 'a',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '3' },
            { name: 'C', value: '4' },
          ],
          ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }],
          volumeMounts: [{ name: 'v', mountPath: '/v', readOnly: true }],
        },
      ]),
    ],
    [
      'delete an env var with its order',
      pod([
        {
          name: 'a',
          env: [
            { name: 'A', value: '1' },
            { name: 'B', value: '2' },
          ],
        },
      ]),
      {
        spec: {
          containers: [
            { name: 'a', '$setElementOrder/env': [{ name: 'A' }], env: [{ $patch: 'delete', name: 'B' }] },
          ],
        },
      },
      pod([{ name: 'a', env: [{ name: 'A', value: '1' }] }]),
    ],
    [
      '$setElementOrder reorders',
      pod([{ name: 'a' }, { name: 'b' }, { name: 'c' }]),
      { spec: { '$setElementOrder/containers': [{ name: 'c' }, { name: 'a' }, { name: 'b' }] } },
      pod([{ name: 'c' }, { name: 'a' }, { name: 'b' }]),
    ],
    [
      '$setElementOrder keeps server-only items in place',
      pod([{ name: 'a' }, { name: 'b' }, { name: 'x' }]),
      { spec: { '$setElementOrder/containers': [{ name: 'b' }, { name: 'a' }] } },
      pod([{ name: 'b' }, { name: 'a' }, { name: 'x' }]),
    ],
    [
      'finalizers merge as a set and $deleteFromPrimitiveList removes',
      pod([], { finalizers: ['a', 'b'] }),
      { metadata: { finalizers: ['c', 'a'], '$deleteFromPrimitiveList/finalizers': ['b'] } },
      pod([], { finalizers: ['c', 'a'] }),
    ],
    [
      'ownerReferences merge by uid',
      pod([], { ownerReferences: [{ uid: '1', name: 'rs1' }] }),
      {
        metadata: {
          ownerReferences: [
            { uid: '1', controller: true },
            { uid: '2', name: 'rs2' },
          ],
        },
      },
      pod([], {
        ownerReferences: [
          { uid: '1', name: 'rs1', controller: true },
          { uid: '2', name: 'rs2' },
        ],
      }),
    ],
    [
      'labels: null deletes, map $patch replace',
      pod([], { labels: { a: '1', b: '2' }, annotations: { x: '1' } }),
      { metadata: { labels: { a: null, c: '3' }, annotations: { $patch: 'replace', y: '2' } } },
      pod([], { labels: { b: '2', c: '3' }, annotations: { y: '2' } }),
    ],
    [
      'tolerations are atomic',
      { apiVersion: 'v1', kind: 'Pod', spec: { tolerations: [{ key: 'a' }, { key: 'b' }] } },
      { spec: { tolerations: [{ key: 'c' }] } },
      { apiVersion: 'v1', kind: 'Pod', spec: { tolerations: [{ key: 'c' }] } },
    ],
    [
      'volumes honour $retainKeys',
      { apiVersion: 'v1', kind: 'Pod', spec: { volumes: [{ name: 'v', hostPath: { path: '/x' } }] } },
      { spec: { volumes: [{ name: 'v', $retainKeys: ['emptyDir', 'name'], emptyDir: {} }] } },
      { apiVersion: 'v1', kind: 'Pod', spec: { volumes: [{ name: 'v', emptyDir: {} }] } },
    ],
    [
      'deployment strategy $retainKeys',
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        spec: { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } } },
      },
      { spec: { strategy: { $retainKeys: ['type'], type: 'Recreate' } } },
      { apiVersion: 'apps/v1', kind: 'Deployment', spec: { strategy: { type: 'Recreate' } } },
    ],
    [
      'deployment template containers merge',
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'a', image: '1' },
                { name: 'b', image: '1' },
              ],
            },
          },
        },
      },
      { spec: { template: { spec: { containers: [{ name: 'b', image: '2' }] } } } },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'a', image: '1' },
                { name: 'b', image: '2' },
              ],
            },
          },
        },
      },
    ],
    [
      'status conditions merge by type',
      {
        apiVersion: 'v1',
        kind: 'Pod',
        status: {
          conditions: [
            { type: 'Ready', status: 'False' },
            { type: 'PodScheduled', status: 'True' },
          ],
        },
      },
      { status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        status: {
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'PodScheduled', status: 'True' },
          ],
        },
      },
    ],
    [
      'node podCIDRs and conditions',
      {
        apiVersion: 'v1',
        kind: 'Node',
        spec: {},
        status: { conditions: [{ type: 'Ready', status: 'Unknown' }] },
      },
      {
        spec: { podCIDRs: ['10.0.0.0/24'] },
        status: {
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'MemoryPressure', status: 'False' },
          ],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Node',
        spec: { podCIDRs: ['10.0.0.0/24'] },
        status: {
          conditions: [
            { type: 'Ready', status: 'True' },
            { type: 'MemoryPressure', status: 'False' },
          ],
        },
      },
    ],
    [
      'unknown kinds merge maps and replace lists',
      { apiVersion: 'example.com/v1', kind: 'Widget', spec: { containers: [{ name: 'a' }], m: { x: 1 } } },
      { spec: { containers: [{ name: 'b' }], m: { y: 2 } } },
      {
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        spec: { containers: [{ name: 'b' }], m: { x: 1, y: 2 } },
      },
    ],
    [
      'directives on fields the original lacks are applied, not stored',
      { apiVersion: 'v1', kind: 'Pod', spec: {} },
      {
        spec: {
          containers: [
            { name: 'a', image: 'x', env: [{ name: 'E', value: null }] },
            { name: 'gone', $patch: 'delete' },
          ],
          nodeSelector: { $patch: 'replace', a: 'b' },
          x: null,
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'E' }] }], nodeSelector: { a: 'b' } },
      },
    ],
    [
      'an order for a list nobody has adds nothing',
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} },
      {
        spec: { '$setElementOrder/containers': [{ name: 'a' }] },
        metadata: { '$setElementOrder/finalizers': ['x'] },
      },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: {} },
    ],
    [
      'map $patch delete empties it',
      pod([], { labels: { a: '1' } }),
      { metadata: { labels: { $patch: 'delete' } } },
      pod([], { labels: {} }),
    ],
  ];
  for (const [name, original, patch, want] of table) {
    it(name, () => {
      const before = deepClone(original);
      const p = JSON.parse(JSON.stringify(patch));
      assert.deepEqual(applyStrategicMergePatch(original, p), want);
      assert.deepEqual(original, before, 'original not modified');
    });
  }

  const bad: [string, Obj, unknown, RegExp, number][] = [
    [
      'missing merge key',
      pod([{ name: 'a' }]),
      { spec: { containers: [{ image: 'x' }] } },
      /does not contain declared merge key: name/,
      422,
    ],
    ['bad directive', pod([]), { metadata: { $patch: 'explode' } }, /unknown patch type "explode"/, 400],
    ['not an object', pod([]), [1], /must be a JSON object/, 400],
    ['deep', pod([]), deep(1500), /nested too deeply/, 400],
    [
      '$patch merge in a list',
      pod([{ name: 'a' }]),
      { spec: { containers: [{ name: 'a', $patch: 'merge' }] } },
      /merging lists cannot yet be specified in the patch/,
      422,
    ],
    [
      'bad $setElementOrder',
      pod([]),
      { spec: { '$setElementOrder/containers': 'x' } },
      /must be a list/,
      400,
    ],
  ];
  for (const [name, original, patch, re, code] of bad) {
    it(`rejects: ${name}`, () => {
      assert.throws(
        () => applyStrategicMergePatch(original, patch),
        (e: unknown) => e instanceof PatchError && re.test(e.message) && e.code === code,
      );
    });
  }

  it('schemas answer nothing for prototype names', () => {
    const schema = patchSchemaFor('v1', 'Pod');
    assert.equal(schema?.fields.constructor, undefined);
    assert.equal(Object.getPrototypeOf(schema?.fields), null);
    assert.equal(schema?.fields.spec?.schema?.fields.containers?.mergeKey, 'name');
    assert.equal(patchSchemaFor('v1', 'Widget'), undefined);
  });

  it('long lists merge in linear time', () => {
    const n = 20_000;
    const original = pod(
      Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'a' })),
      {
        finalizers: Array.from({ length: n }, (_, i) => `f${i}`),
      },
    );
    const patch = {
      metadata: {
        finalizers: Array.from({ length: n }, (_, i) => `g${i}`),
        '$deleteFromPrimitiveList/finalizers': ['f1'],
      },
      spec: {
        '$setElementOrder/containers': Array.from({ length: n }, (_, i) => ({ name: `c${n - 1 - i}` })),
        containers: Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'b' })),
      },
    };
    const out = applyStrategicMergePatch(original, patch) as {
      metadata: { finalizers: string[] };
      spec: { containers: Obj[] };
    };
    assert.equal(out.spec.containers.length, n);
    assert.deepEqual(out.spec.containers[0], { name: `c${n - 1}`, image: 'b' });
    assert.equal(out.metadata.finalizers.length, 2 * n - 1);
  });

  it('hostile keys stay data', () => {
    const patch = JSON.parse(
      '{"__proto__":{"polluted":1},"metadata":{"labels":{"__proto__":"x","constructor":"y"},"__proto__":{"polluted":2}},"spec":{"containers":[{"name":"__proto__","__proto__":{"polluted":3}}],"constructor":{"prototype":{"polluted":4}}}}',
    );
    const out = applyStrategicMergePatch(pod([{ name: 'a' }]), patch) as Obj;
    assert.equal(polluted(), undefined);
    const labels = (out.metadata as Obj).labels as Obj;
    assert.equal(Object.getOwnPropertyDescriptor(labels, '__proto__')?.value, 'x');
    assert.equal(labels.constructor, 'y');
    const containers = (out.spec as Obj).containers as Obj[];
    assert.equal(containers.length, 2);
    assert.equal(Object.getPrototypeOf(containers[1]), Object.prototype);
    assert.equal(polluted(), undefined);
  });

  it('property: a merge-patch-like diff of maps applies the same as JSON merge patch for unknown kinds', () => {
    const obj = fc.dictionary(
      fc.constantFrom('a', 'b', 'c'),
      fc.oneof(
        fc.string(),
        fc.integer(),
        fc.dictionary(fc.constantFrom('x', 'y'), fc.string(), { noNullPrototype: true }),
      ),
      { noNullPrototype: true },
    );
    fc.assert(
      fc.property(obj, obj, (a, b) => {
        const patch = createMergePatch(a, b);
        if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return;
        assert.deepEqual(applyStrategicMergePatch(a, patch), b);
      }),
    );
  });
});
