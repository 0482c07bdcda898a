import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StatusError } from '@kubit/api';
import fc from 'fast-check';
import { KubeClient } from '../src/client.js';
import { ConnectionError, errorFromResponse } from '../src/errors.js';
import { queryString, resourcePath } from '../src/paths.js';
import { resources } from '../src/resources.js';
import { backoff, retryDelay } from '../src/retry.js';
import type { KubeObject } from '../src/types.js';
import { FakeApi } from './fake-api.js';

const cfg = { server: 'https://fake:443', namespace: 'default' };

describe('paths', () => {
  it('builds core, grouped, namespaced and subresource paths', () => {
    assert.equal(
      resourcePath(resources.pods, { namespace: 'ns', name: 'p', subresource: 'status' }),
      '/api/v1/namespaces/ns/pods/p/status',
    );
    assert.equal(resourcePath(resources.pods), '/api/v1/pods');
    assert.equal(resourcePath(resources.nodes, { namespace: 'ignored', name: 'n1' }), '/api/v1/nodes/n1');
    assert.equal(
      resourcePath(resources.deployments, { namespace: 'a' }),
      '/apis/apps/v1/namespaces/a/deployments',
    );
    assert.throws(() => resourcePath(resources.pods, { subresource: 'log' }), /needs a name/);
  });
  it('encodes query values and skips empty ones', () => {
    assert.equal(
      queryString({ labelSelector: 'app=web,tier!=db', limit: 5, continue: '', x: undefined }),
      '?labelSelector=app%3Dweb%2Ctier%21%3Ddb&limit=5',
    );
  });
  it('encodes any value exactly as URLSearchParams does', () => {
    const viaUrlSearchParams = (q: Record<string, string | string[]>): string => {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) {
        if (v === '') continue;
        if (Array.isArray(v)) for (const item of v) params.append(k, item);
        else params.append(k, v);
      }
      const s = params.toString();
      return s ? `?${s}` : '';
    };
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.constantFrom("a b!'()~*-._", 'x\uD800y'),
    );
    fc.assert(
      fc.property(fc.dictionary(text, fc.oneof(text, fc.array(text, { maxLength: 3 }))), (q) => {
        assert.equal(queryString(q), viaUrlSearchParams(q));
      }),
      { numRuns: 500 },
    );
  });
});

describe('errors', () => {
  it('keeps the server Status', () => {
    const e = errorFromResponse(
      404,
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'NotFound',
        message: 'pods "x" not found',
        code: 404,
      }),
    );
    assert.equal(e.reason, 'NotFound');
    assert.equal(e.message, 'pods "x" not found');
  });
  it('makes a Status from a bare response', () => {
    const e = errorFromResponse(401, 'Unauthorized');
    assert.equal(e.code, 401);
    assert.equal(e.reason, 'Unauthorized');
    const r = errorFromResponse(429, '', '3');
    assert.equal(r.status.details?.retryAfterSeconds, 3);
  });
});

describe('retry policy', () => {
  const policy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 1000 };
  const refused = new ConnectionError('h:1', 'refused', 'ECONNREFUSED');
  const reset = new ConnectionError('h:1', 'reset', 'ECONNRESET');
  const busy = errorFromResponse(503, '');
  it('retries refused connections for any method, resets and 503 only for reads', () => {
    assert.notEqual(retryDelay('POST', refused, 0, policy), undefined);
    assert.equal(retryDelay('POST', reset, 0, policy), undefined);
    assert.notEqual(retryDelay('GET', reset, 0, policy), undefined);
    assert.equal(retryDelay('PUT', busy, 0, policy), undefined);
    assert.notEqual(retryDelay('GET', busy, 0, policy), undefined);
    assert.equal(retryDelay('GET', busy, 3, policy), undefined, 'bounded');
    assert.equal(retryDelay('GET', errorFromResponse(404, ''), 0, policy), undefined);
  });
  it('backs off exponentially with bounded jitter', () => {
    assert.equal(
      backoff(0, policy, () => 0),
      100,
    );
    assert.equal(
      backoff(2, policy, () => 0),
      400,
    );
    assert.equal(
      backoff(10, policy, () => 0),
      1000,
    );
    assert.equal(
      backoff(10, policy, () => 1),
      1500,
    );
  });
});

describe('KubeClient over a transport', () => {
  it('lists every page, sending the resourceVersion only with the first', async () => {
    const paths: string[] = [];
    const transport = {
      host: 'fake:443',
      close() {},
      stream: () => Promise.reject(new Error('no streams here')),
      async request(req: { path: string }) {
        paths.push(req.path);
        const second = req.path.includes('continue=');
        const body = {
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '7', ...(second ? {} : { continue: 'tok' }) },
          items: [{ metadata: { name: second ? 'b' : 'a' } }],
        };
        return { statusCode: 200, headers: {}, body: JSON.stringify(body) };
      },
    };
    const c = new KubeClient(cfg, { transport });
    const all = await c.listAll(resources.pods, { limit: 1, resourceVersion: '0' });
    assert.deepEqual(
      all.items.map((o) => o.metadata?.name),
      ['a', 'b'],
    );
    assert.deepEqual(paths, ['/api/v1/pods?limit=1&resourceVersion=0', '/api/v1/pods?limit=1&continue=tok']);
  });

  it('does CRUD with namespaces and typed results', async () => {
    const api = new FakeApi();
    const c = new KubeClient(cfg, { transport: api });
    const created = await c.create<KubeObject>(resources.pods, { metadata: { name: 'a' } });
    assert.equal(created.metadata?.name, 'a');
    assert.ok(api.requests.includes('POST /api/v1/namespaces/default/pods'));
    const got = await c.get(resources.pods, 'a');
    assert.equal(got.metadata?.resourceVersion, created.metadata?.resourceVersion);
    const list = await c.list(resources.pods);
    assert.equal(list.items.length, 1);
    await assert.rejects(
      c.get(resources.pods, 'missing'),
      (e: unknown) => e instanceof StatusError && e.reason === 'NotFound',
    );
    await assert.rejects(
      c.update(resources.pods, { metadata: { name: 'a', resourceVersion: '1' } }),
      (e: unknown) => e instanceof StatusError && e.code === 409,
    );
    await c.delete(resources.pods, 'a');
    assert.equal((await c.list(resources.pods)).items.length, 0);
  });

  it('retries a read on 503 and gives up on writes', async () => {
    const api = new FakeApi();
    const c = new KubeClient(cfg, { transport: api, retry: { baseDelayMs: 1, maxDelayMs: 2 } });
    api.failNext = { count: 2, code: 503 };
    const list = await c.list(resources.pods);
    assert.equal(list.items.length, 0);
    api.failNext = { count: 1, code: 503 };
    await assert.rejects(
      c.create(resources.pods, { metadata: { name: 'b' } }),
      (e: unknown) => e instanceof StatusError && e.code === 503,
    );
  });
});
