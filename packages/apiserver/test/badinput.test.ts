// Bad input gets a 4xx Status naming the problem, never a 5xx or a crash,
// and writes nothing (fuzz.test.ts checks the same with generated requests).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, assertClientError, HOSTILE_NS, pod, seedHostileFixtures, storeRevision } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const NS = HOSTILE_NS;

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
  await seedHostileFixtures(api);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const revision = () => storeRevision(api);

describe('bad input', () => {
  it('malformed bodies are 400 and write nothing', async () => {
    const rv = await revision();
    assertClientError(
      await api.post(`${NS}/configmaps`, '{"metadata": {"name": "x"'),
      400,
      /error decoding JSON/,
    );
    assertClientError(
      await api.post(`${NS}/configmaps`, 'a: [b', { 'Content-Type': 'application/yaml' }),
      400,
      /YAML/,
    );
    assertClientError(await api.post(`${NS}/configmaps`, '[1,2]'), 400);
    assertClientError(
      await api.post(`${NS}/configmaps`, { metadata: { name: 5 } }),
      400,
      /cannot unmarshal number into Go struct field metadata\.name of type string/,
    );
    assertClientError(
      await api.post(`${NS}/pods`, { metadata: { name: 'p' }, spec: { containers: 'no' } }),
      400,
      /spec\.containers/,
    );
    assertClientError(
      await api.post(`${NS}/configmaps`, { metadata: { name: 'x' }, data: { k: 1 } }),
      400,
      /data\[k\]/,
    );
    assertClientError(await api.post(`${NS}/configmaps`, ''), 400);
    assert.equal(await revision(), rv);
  });

  it('unknown fields: Strict rejects with their paths, Warn warns and drops them', async () => {
    const body = { metadata: { name: 'uf', bogus: 1 }, data: {}, extra: true };
    const strict = await api.post(`${NS}/configmaps?fieldValidation=Strict`, body);
    assertClientError(
      strict,
      400,
      /strict decoding error: unknown field "metadata\.bogus", unknown field "extra"/,
    );
    const nested = await api.post(`${NS}/pods?fieldValidation=Strict`, {
      ...pod('uf'),
      spec: { containers: [{ name: 'c', image: 'i', imagee: 'typo' }] },
    });
    assertClientError(nested, 400, /unknown field "spec\.containers\[0\]\.imagee"/);
    const warn = await api.post(`${NS}/configmaps`, body);
    assert.equal(warn.status, 201);
    assert.match(String(warn.headers.warning), /unknown field \\"extra\\"/);
    assert.equal(warn.body.extra, undefined);
    assertClientError(await api.post(`${NS}/configmaps?fieldValidation=Loud`, body), 400, /fieldValidation/);
  });

  it('kind, apiVersion, name and namespace must agree with the URL', async () => {
    assertClientError(
      await api.post(`${NS}/configmaps`, { kind: 'Secret', metadata: { name: 'k' } }),
      400,
      /kind/,
    );
    assertClientError(
      await api.post(`${NS}/configmaps`, { apiVersion: 'v2', metadata: { name: 'k' } }),
      400,
      /API version/,
    );
    assertClientError(
      await api.post(`${NS}/configmaps`, { metadata: { name: 'k', namespace: 'default' } }),
      400,
      /namespace of the provided object does not match/,
    );
    const cur = (await api.get(`${NS}/pods/existing`)).body;
    assertClientError(
      await api.put(`${NS}/pods/existing`, { ...cur, metadata: { ...cur.metadata, name: 'other' } }),
      400,
      /does not match the name on the URL/,
    );
  });

  it('invalid names and values are 422 Invalid with causes', async () => {
    const r = await api.post(`${NS}/configmaps`, { metadata: { name: 'Not_A_Name' } });
    assertClientError(
      r,
      422,
      /ConfigMap "Not_A_Name" is invalid: metadata\.name: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain/,
    );
    assert.equal(r.body.details.causes[0].field, 'metadata.name');
    assertClientError(
      await api.post(`${NS}/pods`, { metadata: { name: 'p' }, spec: { containers: [] } }),
      422,
      /spec\.containers: Required value/,
    );
    assertClientError(
      await api.post(`${NS}/pods`, {
        metadata: { name: 'p' },
        spec: { containers: [{ name: 'c' }], restartPolicy: 'Sometimes' },
      }),
      422,
      /spec\.containers\[0\]\.image: Required value.*spec\.restartPolicy: Unsupported value: "Sometimes"/,
    );
    assertClientError(
      await api.post(`${NS}/configmaps`, { metadata: { name: 'l', labels: { 'bad key!': 'v' } } }),
      422,
      /metadata\.labels/,
    );
    assertClientError(
      await api.post('/api/v1/namespaces', { metadata: { name: 'a.b' } }),
      422,
      /RFC 1123 label/,
    );
  });

  it('bodies over 3 MiB are 413; unknown content types 415', async () => {
    const big = JSON.stringify({ metadata: { name: 'big' }, data: { x: 'a'.repeat(3 * 1024 * 1024 + 10) } });
    assertClientError(await api.post(`${NS}/configmaps`, big), 413);
    assertClientError(
      await api.post(`${NS}/configmaps`, '<xml/>', { 'Content-Type': 'application/xml' }),
      415,
      /application\/json/,
    );
    assertClientError(await api.patch(`${NS}/configmaps/frozen`, { data: {} }, 'text/plain'), 415);
  });

  it('patches that change immutable fields are rejected', async () => {
    assertClientError(await api.patch(`${NS}/configmaps/frozen`, { data: { a: '2' } }), 422, /immutable/);
    assertClientError(
      await api.patch(`${NS}/pods/existing`, { spec: { restartPolicy: 'Never' } }),
      422,
      /pod updates may not change fields/,
    );
    assertClientError(
      await api.patch(
        `${NS}/pods/existing`,
        [{ op: 'replace', path: '/spec/containers/0/name', value: 'x' }],
        'application/json-patch+json',
      ),
      422,
    );
    assertClientError(
      await api.patch(
        `${NS}/pods/existing`,
        [{ op: 'test', path: '/metadata/name', value: 'x' }],
        'application/json-patch+json',
      ),
      422,
      /test failed/,
    );
    assertClientError(
      await api.patch(`${NS}/pods/existing`, { op: 'add' }, 'application/json-patch+json'),
      400,
    );
    assertClientError(
      await api.patch(`${NS}/pods/existing`, [{ op: 'jump', path: '/x' }], 'application/json-patch+json'),
      400,
    );
  });

  it('bad selectors, resourceVersions, resources and verbs are 4xx', async () => {
    assertClientError(await api.get(`${NS}/pods?labelSelector=${encodeURIComponent('==x')}`), 400);
    assertClientError(await api.get(`${NS}/pods?fieldSelector=${encodeURIComponent('nonsense')}`), 400);
    assertClientError(await api.get(`${NS}/pods?resourceVersion=-1`), 400);
    assertClientError(await api.get(`${NS}/pods?watch=true&resourceVersion=x1`), 400);
    assertClientError(await api.get(`${NS}/widgets`), 404);
    assertClientError(await api.get('/apis/example.com/v1/things'), 404);
    assertClientError(await api.put(`${NS}/pods`, pod('x')), 405);
    assertClientError(await api.post(`${NS}/pods/existing`, pod('existing')), 405);
    assertClientError(await api.get(`${NS}/pods/existing/exec`), 404);
    assertClientError(await api.del(`${NS}/pods/existing`, { propagationPolicy: 'Sideways' }), 422);
    assertClientError(await api.del(`${NS}/pods/existing`, { gracePeriodSeconds: 'soon' }), 400);
    assertClientError(await api.get(`${NS}/pods/existing/log`), 400, /does not have a host assigned/);
  });
});
