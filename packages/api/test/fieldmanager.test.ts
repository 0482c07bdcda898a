import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compareObjects,
  FieldsV1Error,
  fieldSetOf,
  keyElement,
  mergeApplied,
  PathSet,
  pathString,
  removeUnowned,
  SCALAR,
  type Shape,
  shapeFromOpenApi,
} from '../src/index.js';

// FieldsV1 documents as a real kube-apiserver (v1.30) wrote them.
const KUBECTL_CREATE_DEPLOYMENT = {
  'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
  'f:spec': {
    'f:progressDeadlineSeconds': {},
    'f:replicas': {},
    'f:revisionHistoryLimit': {},
    'f:selector': {},
    'f:strategy': {
      'f:rollingUpdate': { '.': {}, 'f:maxSurge': {}, 'f:maxUnavailable': {} },
      'f:type': {},
    },
    'f:template': {
      'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
      'f:spec': {
        'f:containers': {
          'k:{"name":"nginx"}': {
            '.': {},
            'f:image': {},
            'f:imagePullPolicy': {},
            'f:name': {},
            'f:resources': {},
            'f:terminationMessagePath': {},
            'f:terminationMessagePolicy': {},
          },
        },
        'f:dnsPolicy': {},
        'f:restartPolicy': {},
        'f:schedulerName': {},
        'f:securityContext': {},
        'f:terminationGracePeriodSeconds': {},
      },
    },
  },
};

const KUBE_CONTROLLER_STATUS = {
  'f:metadata': { 'f:annotations': { '.': {}, 'f:deployment.kubernetes.io/revision': {} } },
  'f:status': {
    'f:availableReplicas': {},
    'f:conditions': {
      '.': {},
      'k:{"type":"Available"}': {
        '.': {},
        'f:lastTransitionTime': {},
        'f:lastUpdateTime': {},
        'f:message': {},
        'f:reason': {},
        'f:status': {},
        'f:type': {},
      },
      'k:{"type":"Progressing"}': { '.': {}, 'f:status': {}, 'f:type': {} },
    },
    'f:observedGeneration': {},
  },
};

const SERVICE_PORTS = {
  'f:spec': {
    'f:finalizers': { '.': {}, 'v:"kubernetes"': {} },
    'f:ports': {
      '.': {},
      'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:port': {}, 'f:protocol': {}, 'f:targetPort': {} },
      'k:{"port":443,"protocol":"TCP"}': { '.': {}, 'f:port': {} },
    },
    'f:x': { 'i:0': {}, 'i:2': {}, 'i:10': {} },
  },
};

describe('FieldsV1', () => {
  for (const [name, doc] of Object.entries({
    KUBECTL_CREATE_DEPLOYMENT,
    KUBE_CONTROLLER_STATUS,
    SERVICE_PORTS,
  })) {
    it(`round-trips ${name} byte for byte`, () => {
      assert.equal(JSON.stringify(PathSet.fromFieldsV1(doc).toFieldsV1()), JSON.stringify(doc));
    });
  }

  it('writes elements in structured-merge-diff order: ".", fields, keys, values, indexes', () => {
    const s = PathSet.of(['i:1'], ['v:"a"'], ['k:{"b":1}'], ['f:z'], ['f:a'], ['i:0', 'f:x']);
    s.insert(['i:0']);
    assert.deepEqual(Object.keys(s.toFieldsV1()), ['f:a', 'f:z', 'k:{"b":1}', 'v:"a"', 'i:0', 'i:1']);
    assert.deepEqual(Object.keys(s.toFieldsV1()['i:0'] as object), ['.', 'f:x']);
  });

  it('refuses what Kubernetes could not have written', () => {
    for (const bad of [
      [],
      'x',
      { 'x:y': {} },
      { 'k:nope': {} },
      { 'i:-1': {} },
      { 'f:a': 1 },
      { 'k:{}': {} },
    ]) {
      assert.throws(() => PathSet.fromFieldsV1(bad), FieldsV1Error, JSON.stringify(bad));
    }
  });

  it('prints paths as structured-merge-diff does', () => {
    assert.equal(pathString(['f:spec', 'f:replicas']), '.spec.replicas');
    assert.equal(
      pathString(['f:spec', 'f:ports', 'k:{"port":80,"protocol":"TCP"}', 'f:port']),
      '.spec.ports[port=80,protocol="TCP"].port',
    );
    assert.equal(pathString(['f:finalizers', 'v:"a"']), '.finalizers[="a"]');
    assert.equal(pathString(['f:x', 'i:3']), '.x[3]');
    assert.equal(
      keyElement({ protocol: 'TCP', port: 80, other: 1 }, ['protocol', 'port']),
      'k:{"port":80,"protocol":"TCP"}',
    );
  });
});

describe('path set algebra', () => {
  const a = PathSet.of(['f:a'], ['f:b', 'f:c'], ['f:b', 'f:d']);
  const b = PathSet.of(['f:b', 'f:c'], ['f:e']);
  const table: [string, PathSet, string[]][] = [
    ['union', a.union(b), ['.a', '.e', '.b.c', '.b.d']],
    ['difference', a.difference(b), ['.a', '.b.d']],
    ['intersection', a.intersection(b), ['.b.c']],
    ['empty difference', a.difference(a), []],
  ];
  for (const [name, got, want] of table) {
    it(name, () => assert.deepEqual(got.paths().map(pathString), want));
  }
  it('a member and the paths under it are different things', () => {
    const s = PathSet.of(['f:x']);
    assert.equal(s.has(['f:x', 'f:y']), false);
    assert.equal(s.hasPrefix(['f:x']), true);
    assert.equal(PathSet.of(['f:x', 'f:y']).has(['f:x']), false);
  });
});

const str = SCALAR;
const labels: Shape = { t: 'map', values: str };
const container: Shape = {
  t: 'struct',
  fields: {
    name: str,
    image: str,
    args: { t: 'list', items: str, list: 'atomic' },
    resources: { t: 'struct', fields: { limits: { t: 'map', values: str } } },
  },
};
const deployment: Shape = {
  t: 'struct',
  fields: {
    metadata: {
      t: 'struct',
      fields: { name: str, labels, finalizers: { t: 'list', items: str, list: 'set' } },
    },
    spec: {
      t: 'struct',
      fields: {
        replicas: str,
        selector: { t: 'struct', fields: { matchLabels: labels }, atomic: true },
        template: {
          t: 'struct',
          fields: {
            spec: {
              t: 'struct',
              fields: { containers: { t: 'list', items: container, list: 'map', keys: ['name'] } },
            },
          },
        },
      },
    },
  },
};

describe('the field set of an object', () => {
  it('is what an applier of it owns', () => {
    const o = {
      metadata: { name: 'd', labels: { app: 'x' }, finalizers: ['a'] },
      spec: {
        replicas: 3,
        selector: { matchLabels: { app: 'x' } },
        template: { spec: { containers: [{ name: 'c', image: 'i', args: ['1'], resources: {} }] } },
      },
    };
    assert.deepEqual(fieldSetOf(o, deployment).toFieldsV1(), {
      'f:metadata': { 'f:finalizers': { 'v:"a"': {} }, 'f:labels': { 'f:app': {} }, 'f:name': {} },
      'f:spec': {
        'f:replicas': {},
        'f:selector': {},
        'f:template': {
          'f:spec': {
            'f:containers': {
              'k:{"name":"c"}': { '.': {}, 'f:args': {}, 'f:image': {}, 'f:name': {}, 'f:resources': {} },
            },
          },
        },
      },
    });
  });

  it('compares two versions: added, modified, removed (with the parents added)', () => {
    const before = { metadata: { labels: { a: '1', b: '2' } }, spec: { replicas: 1 } };
    const after = { metadata: { labels: { a: '9' }, annotations: { n: 'v' } }, spec: { replicas: 1 } };
    const c = compareObjects(before, after, deployment);
    assert.deepEqual(c.added.paths().map(pathString), ['.metadata.annotations', '.metadata.annotations.n']);
    assert.deepEqual(c.modified.paths().map(pathString), ['.metadata.labels.a']);
    assert.deepEqual(c.removed.paths().map(pathString), ['.metadata.labels.b']);
  });
});

describe('a null list or map (Go nil)', () => {
  it('is an empty one: its items are added, it is not', () => {
    const c = compareObjects(
      { spec: { template: { spec: { containers: null } } } },
      { spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }] } } } },
      deployment,
    );
    assert.deepEqual(c.added.paths().map(pathString), [
      '.spec.template.spec.containers[name="c"]',
      '.spec.template.spec.containers[name="c"].image',
      '.spec.template.spec.containers[name="c"].name',
    ]);
    assert.ok(c.modified.empty());
  });
});

describe('applying a configuration', () => {
  const containers = (o: unknown) =>
    (
      o as { spec: { template: { spec: { containers: { name: string }[] } } } }
    ).spec.template.spec.containers.map((c) => c.name);
  const withContainers = (...names: string[]) => ({
    spec: { template: { spec: { containers: names.map((name) => ({ name, image: `${name}:1` })) } } },
  });

  it('merges associative lists by key, keeping live items in place and new ones where the config puts them', () => {
    const merged = mergeApplied(withContainers('a', 'b'), withContainers('a', 'n', 'b'), deployment);
    assert.deepEqual(containers(merged), ['a', 'n', 'b']);
    const m2 = mergeApplied(withContainers('x', 'a'), withContainers('a', 'z'), deployment);
    assert.deepEqual(containers(m2), ['x', 'a', 'z']);
  });

  it('replaces atomic lists and structs', () => {
    const live = { spec: { selector: { matchLabels: { a: '1', b: '2' } } } };
    const merged = mergeApplied(live, { spec: { selector: { matchLabels: { c: '3' } } } }, deployment);
    assert.deepEqual(merged, { spec: { selector: { matchLabels: { c: '3' } } } });
  });

  it('removes what the applier stopped applying unless someone else owns it', () => {
    const live = { metadata: { labels: { a: '1', b: '2', c: '3' } }, ...withContainers('x', 'y') };
    const last = PathSet.of(
      ['f:metadata', 'f:labels', 'f:a'],
      ['f:metadata', 'f:labels', 'f:b'],
      ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"x"}'],
      ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"y"}'],
    );
    const owned = PathSet.of(
      ['f:metadata', 'f:labels', 'f:a'],
      ['f:spec', 'f:template', 'f:spec', 'f:containers', 'k:{"name":"y"}', 'f:image'],
    );
    const out = removeUnowned(structuredClone(live), last, owned, deployment);
    assert.deepEqual((out as { metadata: unknown }).metadata, { labels: { a: '1', c: '3' } });
    assert.deepEqual(containers(out), ['y']);
  });
});

describe('shapes of CRD schemas', () => {
  it('honours x-kubernetes-list-type, list-map-keys and map-type', () => {
    const shape = shapeFromOpenApi({
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            ports: {
              type: 'array',
              'x-kubernetes-list-type': 'map',
              'x-kubernetes-list-map-keys': ['port', 'protocol'],
              items: {
                type: 'object',
                properties: { port: { type: 'integer' }, protocol: { type: 'string' } },
              },
            },
            tags: { type: 'array', 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
            args: { type: 'array', items: { type: 'string' } },
            sel: {
              type: 'object',
              additionalProperties: { type: 'string' },
              'x-kubernetes-map-type': 'atomic',
            } as never,
          },
        },
      },
    });
    const o = { spec: { ports: [{ port: 1, protocol: 'TCP' }], tags: ['a'], args: ['x'], sel: { k: 'v' } } };
    assert.deepEqual(fieldSetOf(o, shape).toFieldsV1(), {
      'f:spec': {
        'f:args': {},
        'f:ports': { 'k:{"port":1,"protocol":"TCP"}': { '.': {}, 'f:port': {}, 'f:protocol': {} } },
        'f:sel': {},
        'f:tags': { 'v:"a"': {} },
      },
    });
  });
});
