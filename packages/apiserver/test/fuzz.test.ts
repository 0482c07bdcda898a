// Thousands of generated hostile requests: never a 5xx or a crash, always a
// Status, nothing written on a 4xx, and the server answers normally after.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import fc from 'fast-check';
import { Api, HOSTILE_NS, pod, seedHostileFixtures, storeRevision } from './helpers.js';

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

// ---- generated hostile requests ----

const segment = fc.oneof(
  fc.constantFrom(
    'pods',
    'configmaps',
    'secrets',
    'nodes',
    'events',
    'status',
    'binding',
    'log',
    'existing',
    'frozen',
    'watch',
    '..',
    '%2F',
    'x'.repeat(300),
  ),
  fc.string({ maxLength: 12 }),
);
const pathArb = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          `${NS}/pods`,
          `${NS}/configmaps`,
          `${NS}/secrets`,
          `${NS}/events`,
          '/api/v1/nodes',
          `${NS}/serviceaccounts`,
          '/apis/coordination.k8s.io/v1/namespaces/fuzz/leases',
          '/apis/rbac.authorization.k8s.io/v1/namespaces/fuzz/roles',
        ),
        fc.array(fc.constantFrom('existing', 'frozen', 'fz', 'status', 'binding'), { maxLength: 2 }),
      )
      .map(([base, rest]) => [base, ...rest].join('/')),
  },
  {
    weight: 1,
    arbitrary: fc.array(segment, { maxLength: 6 }).map((s) => `/${s.map(encodeURIComponent).join('/')}`),
  },
);
const queryArb = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'labelSelector',
        'fieldSelector',
        'resourceVersion',
        'resourceVersionMatch',
        'limit',
        'continue',
        'watch',
        'timeoutSeconds',
        'fieldValidation',
        'dryRun',
        'gracePeriodSeconds',
        'propagationPolicy',
        'includeObject',
        'follow',
        'tailLines',
        'container',
      ),
      fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          '0',
          '1',
          '-1',
          'true',
          'Strict',
          'Exact',
          'a=b',
          'a in (b)',
          '!x',
          '99999999999999999999',
        ),
      ),
    ),
    { maxLength: 3 },
  )
  .map((qs) => (qs.length === 0 ? '' : `?${qs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`));
const validish = fc.constantFrom<Record<string, unknown>>(
  pod('fz'),
  { metadata: { name: 'fz' }, data: { a: 'b' } },
  {
    metadata: { name: 'fz' },
    spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80 }] }] },
  },
  { metadata: { name: 'fz' }, target: { kind: 'Node', name: 'n' } },
  { gracePeriodSeconds: 0, preconditions: { uid: 'x' } },
  [{ op: 'add', path: '/metadata/labels', value: { a: 'b' } }] as unknown as Record<string, unknown>,
);
const hostileValue = fc.oneof(
  fc.json({ maxDepth: 3 }).map((j) => JSON.parse(j) as unknown),
  fc.string(),
  fc.integer(),
  fc.constant(null),
  fc.double(),
);
const mutated = fc
  .tuple(
    validish,
    fc.array(
      fc.tuple(
        fc.constantFrom(
          'metadata',
          'spec',
          'data',
          'kind',
          'apiVersion',
          'metadata.name',
          'metadata.labels',
          'metadata.namespace',
          'spec.containers',
          'spec.nodeName',
          'target',
          'status',
        ),
        hostileValue,
      ),
      { maxLength: 3 },
    ),
  )
  .map(([base, muts]) => {
    const o = structuredClone(base) as Record<string, unknown>;
    for (const [path, v] of muts) {
      const parts = path.split('.');
      let cur: Record<string, unknown> = o;
      for (const p of parts.slice(0, -1)) {
        if (typeof cur[p] !== 'object' || cur[p] === null) cur[p] = {};
        cur = cur[p] as Record<string, unknown>;
      }
      cur[parts[parts.length - 1]] = v;
    }
    return JSON.stringify(o);
  });
const bodyArb = fc.oneof(
  mutated,
  fc.json({ maxDepth: 4 }),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc.constant(undefined),
);
const contentTypeArb = fc.constantFrom(
  'application/json',
  'application/yaml',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/json-patch+json',
  'application/apply-patch+yaml',
  'application/vnd.kubernetes.protobuf',
  'text/plain',
  '',
  'application/json; charset=utf-8',
);
const requestArb = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'),
  path: pathArb,
  query: queryArb,
  body: bodyArb,
  contentType: contentTypeArb,
  accept: fc.oneof(
    {
      weight: 8,
      arbitrary: fc.constantFrom('application/json', 'application/json;as=Table;v=v1;g=meta.k8s.io', '*/*'),
    },
    { weight: 1, arbitrary: fc.constantFrom('application/vnd.kubernetes.protobuf', 'text/html') },
  ),
});

describe('fuzz', () => {
  it('thousands of generated hostile requests: never a 5xx, always a Status, nothing written on 4xx', async () => {
    let count = 0;
    const codes = new Map<number, number>();
    let rv = await revision();
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        count++;
        const watch = r.query.includes('watch=') || r.path.includes('/watch');
        const headers: Record<string, string> = { Accept: r.accept };
        if (r.contentType) headers['Content-Type'] = r.contentType;
        // Watches stream until their timeout: bound them.
        const query = watch ? `${r.query}${r.query ? '&' : '?'}timeoutSeconds=1` : r.query;
        const res = await api.req(r.method, `${r.path}${query}`, r.body, headers);
        codes.set(res.status, (codes.get(res.status) ?? 0) + 1);
        assert.ok(
          res.status < 500,
          `${r.method} ${r.path}${query} -> ${res.status} ${res.text.slice(0, 300)}`,
        );
        assert.ok(res.headers['content-type'], `Content-Type on ${r.method} ${r.path}`);
        if (res.status >= 400 && r.method !== 'HEAD') {
          assert.equal(res.body?.kind, 'Status', `${r.method} ${r.path}${query}: ${res.text.slice(0, 200)}`);
          const now = await revision();
          assert.equal(now, rv, `a ${res.status} must write nothing: ${r.method} ${r.path}${query}`);
        } else if (r.method !== 'GET' && r.method !== 'HEAD') {
          rv = await revision();
        }
      }),
      { numRuns: 2000, seed: Number(process.env.KUBIT_FUZZ_SEED ?? 42) },
    );
    assert.equal(count, 2000);
    // The server answers normally afterwards.
    const ok = await api.post(`${NS}/configmaps`, { metadata: { name: 'after-fuzz' }, data: { ok: 'yes' } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal((await api.get(`${NS}/configmaps/after-fuzz`)).body.data.ok, 'yes');
    const byCode = [...codes.entries()]
      .sort()
      .map(([c, n]) => `${c}:${n}`)
      .join(' ');
    console.log(`fuzz answers by code: ${byCode}`);
    assert.ok(
      (codes.get(400) ?? 0) > 100 && (codes.get(404) ?? 0) > 100,
      'the fuzz reached decoding, not only routing',
    );
    assert.equal((await api.get('/readyz')).status, 200);
  });
});
