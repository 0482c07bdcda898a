// The OpenAPI builder over a registry whose kinds change at run time (as
// CustomResourceDefinitions add them), and the duplicate-field scan.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PbReader } from '@kubit/wire';
import { Discovery } from '../src/discovery.js';
import { configmaps } from '../src/kinds/core.js';
import { builtinKinds, KindRegistry } from '../src/kinds/index.js';
import type { KindDef } from '../src/kinds/types.js';
import { scanFields } from '../src/model/duplicates.js';
import { S } from '../src/model/schema.js';

// biome-ignore lint/suspicious/noExplicitAny: assertions read arbitrary JSON shapes
type Doc = any;

describe('OpenAPI documents', () => {
  it('take in a kind added after start, under its reversed-domain definition name', () => {
    const kinds = new KindRegistry(builtinKinds());
    const discovery = new Discovery(kinds, 'https://127.0.0.1:6443');
    const before = discovery.openapi.v3Root();
    assert.equal(before.paths['apis/stable.example.com/v1'], undefined);
    const crontab: KindDef = {
      ...configmaps,
      group: 'stable.example.com',
      version: 'v1',
      kind: 'CronTab',
      resource: 'crontabs',
      singular: 'crontab',
      schema: S.obj({ apiVersion: S.str, kind: S.str, spec: S.obj({ cronSpec: S.str, replicas: S.int }) }),
    };
    kinds.add(crontab);
    const root = discovery.openapi.v3Root();
    assert.match(root.paths['apis/stable.example.com/v1'].serverRelativeURL, /\?hash=[0-9a-f]{128}$/);
    const doc = discovery.openapi.v3('stable.example.com', 'v1').doc as Doc;
    const def = doc.components.schemas['com.example.stable.v1.CronTab'];
    assert.deepEqual(def['x-kubernetes-group-version-kind'], [
      { group: 'stable.example.com', kind: 'CronTab', version: 'v1' },
    ]);
    const spec = doc.components.schemas['com.example.stable.v1.CronTabSpec'];
    assert.deepEqual(spec.properties.replicas, { type: 'integer', format: 'int64' });
    assert.ok((discovery.openapi.v2().doc as Doc).definitions['com.example.stable.v1.CronTab']);
    // The core document did not change, so its hash stays.
    assert.equal(root.paths['api/v1'].serverRelativeURL, before.paths['api/v1'].serverRelativeURL);
  });

  it('refer to every definition they name, and define each one', () => {
    const discovery = new Discovery(new KindRegistry(builtinKinds()), 'https://127.0.0.1:6443');
    for (const [group, version] of [
      ['', 'v1'],
      ['apps', 'v1'],
      ['batch', 'v1'],
    ]) {
      const doc = discovery.openapi.v3(group, version).doc as Doc;
      const text = JSON.stringify(doc);
      for (const m of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
        assert.ok(doc.components.schemas[m[1]], `${m[1]} defined in ${group}/${version}`);
      }
    }
  });
});

/** A protobuf message's fields: number → the raw bytes of each length-delimited occurrence. */
function fields(buf: Buffer): Map<number, Buffer[]> {
  const out = new Map<number, Buffer[]>();
  const r = new PbReader(buf);
  while (!r.done) {
    const tag = r.tag();
    if ((tag & 7) !== 2) {
      r.skip(tag);
      continue;
    }
    const list = out.get(tag >>> 3) ?? [];
    list.push(r.bytes());
    out.set(tag >>> 3, list);
  }
  return out;
}
const one = (m: Map<number, Buffer[]>, n: number) => fields(m.get(n)![0]);

describe('OpenAPI v2 protobuf', () => {
  it('carries each PATCH operation with its group-version-kind and fieldValidation parameter', () => {
    const discovery = new Discovery(new KindRegistry(builtinKinds()), 'https://127.0.0.1:6443');
    const doc = fields(discovery.openapi.v2Protobuf());
    assert.equal(doc.get(1)![0].toString(), '2.0');
    const items = (doc.get(8) ? fields(doc.get(8)![0]).get(2) : []) ?? [];
    const byPath = new Map(items.map((b) => [fields(b).get(1)![0].toString(), fields(b)]));
    const item = byPath.get('/apis/apps/v1/namespaces/{namespace}/deployments/{name}');
    assert.ok(item, 'the deployments item path');
    const patch = one(one(item, 2), 8);
    const params = (patch.get(8) ?? []).map((p) =>
      one(one(one(fields(p), 1), 2), 3)
        .get(4)![0]
        .toString(),
    );
    assert.ok(params.includes('fieldValidation'));
    const ext = (patch.get(13) ?? [])
      .map(fields)
      .find((e) => e.get(1)![0].toString() === 'x-kubernetes-group-version-kind');
    assert.ok(ext);
    assert.match(one(ext, 2).get(2)![0].toString(), /^group: apps\nversion: v1\nkind: Deployment\n$/);
    // The definitions: Pod with its group-version-kind.
    const defs = (doc.get(9) ? fields(doc.get(9)![0]).get(1) : []) ?? [];
    assert.ok(defs.some((d) => fields(d).get(1)![0].toString() === 'io.k8s.api.core.v1.Pod'));
  });
});

describe('scanFields', () => {
  it('finds duplicates at any depth, in lists, with escaped keys, in body order', () => {
    const scan = scanFields(
      '{"a":1,"b":{"c":[{"d":1,"d":2},{"e":"x,\\"y","e":3}]},"a":2,"k\\u0065y":1,"key":2}',
    );
    assert.deepEqual(
      scan.duplicates.map((d) => d.path),
      ['b.c[0].d', 'b.c[1].e', 'a', 'key'],
    );
    assert.ok(scan.order.get('b.c[0].d')! < scan.order.get('b.c[1].e')!);
    assert.deepEqual(scanFields('{"a":{"x":1},"b":{"x":1}}').duplicates, []);
  });
});
