// Unit tests of logic that needs no processes: watch fan-out bounds, table
// text, request parsing (protobuf decoding: protobuf.test.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deployments, replicasets } from '../src/kinds/apps.js';
import { builtinKinds, KindRegistry } from '../src/kinds/index.js';
import { podStatusText } from '../src/kinds/pods.js';
import { selectorText } from '../src/model/selectors.js';
import { sameJson } from '../src/objects.js';
import { parseRequestInfo } from '../src/request.js';
import { Subscription, type WatchCache } from '../src/watchcache.js';

const kinds = new KindRegistry(builtinKinds());

describe('watch subscription', () => {
  it('closes a watcher whose queue overflows instead of buffering without bound', () => {
    const removed: Subscription[] = [];
    const cache = { unsubscribe: (s: Subscription) => removed.push(s) } as unknown as WatchCache;
    const sub = new Subscription(cache, () => true, 0, 3);
    for (let i = 1; i <= 5; i++)
      sub.push({ type: 'ADDED', object: { metadata: { name: `o${i}`, resourceVersion: String(i) } } });
    assert.equal(sub.closed, true);
    assert.equal(sub.reason, 'watcher fell too far behind');
    assert.deepEqual(removed, [sub]);
  });

  it('turns selector transitions into ADDED/DELETED and skips events at or before its start', () => {
    const cache = { unsubscribe: () => undefined } as unknown as WatchCache;
    const red = (o: { metadata?: Record<string, unknown> }) =>
      (o.metadata?.labels as Record<string, string> | undefined)?.c === 'red';
    const sub = new Subscription(cache, red, 10, 100);
    const obj = (c: string, rv: number) => ({
      metadata: { name: 'x', labels: { c }, resourceVersion: String(rv) },
    });
    sub.offer({ type: 'MODIFIED', key: 'k', obj: obj('red', 9), prev: obj('blue', 8), rev: 9 });
    sub.offer({ type: 'MODIFIED', key: 'k', obj: obj('red', 11), prev: obj('blue', 9), rev: 11 });
    sub.offer({ type: 'MODIFIED', key: 'k', obj: obj('red', 12), prev: obj('red', 11), rev: 12 });
    sub.offer({ type: 'MODIFIED', key: 'k', obj: obj('blue', 13), prev: obj('red', 12), rev: 13 });
    sub.offer({ type: 'DELETED', key: 'k', obj: obj('blue', 14), prev: obj('blue', 13), rev: 14 });
    return sub.next().then((evs) =>
      assert.deepEqual(
        evs.map((e) => e.type),
        ['ADDED', 'MODIFIED', 'DELETED'],
      ),
    );
  });
});

describe('tables', () => {
  it('derives a pod STATUS like kubectl', () => {
    const pod = (status: object, meta: Record<string, unknown> = {}) => ({
      metadata: meta,
      spec: { containers: [{ name: 'a' }] },
      status,
    });
    assert.equal(podStatusText(pod({ phase: 'Pending' })).status, 'Pending');
    assert.equal(
      podStatusText(
        pod({ phase: 'Pending', containerStatuses: [{ state: { waiting: { reason: 'ErrImagePull' } } }] }),
      ).status,
      'ErrImagePull',
    );
    const running = podStatusText(
      pod({
        phase: 'Running',
        containerStatuses: [{ ready: true, restartCount: 2, state: { running: {} } }],
      }),
    );
    assert.deepEqual(running, { status: 'Running', ready: 1, total: 1, restarts: 2 });
    assert.equal(podStatusText(pod({ phase: 'Running' }, { deletionTimestamp: 'x' })).status, 'Terminating');
  });
});

describe('request info', () => {
  it('tells resources, subresources, namespaces and verbs apart', () => {
    const ri = (m: string, p: string, q: Record<string, unknown> = {}) => parseRequestInfo(m, p, q, kinds);
    assert.deepEqual(
      (({ kind, verb, resource, namespace, name, subresource }) => ({
        kind,
        verb,
        resource,
        namespace,
        name,
        subresource,
      }))(ri('POST', '/api/v1/namespaces/ns/pods/p/binding') as never),
      {
        kind: 'resource',
        verb: 'create',
        resource: 'pods',
        namespace: 'ns',
        name: 'p',
        subresource: 'binding',
      },
    );
    assert.equal((ri('GET', '/api/v1/pods', { watch: 'true' }) as { verb: string }).verb, 'watch');
    assert.equal((ri('GET', '/api/v1/watch/namespaces/ns/pods') as { verb: string }).verb, 'watch');
    assert.equal((ri('DELETE', '/api/v1/namespaces/ns/pods') as { verb: string }).verb, 'deletecollection');
    const nsStatus = ri('PUT', '/api/v1/namespaces/x/status') as {
      resource: string;
      subresource: string;
      name: string;
    };
    assert.deepEqual([nsStatus.resource, nsStatus.name, nsStatus.subresource], ['namespaces', 'x', 'status']);
    assert.equal(ri('GET', '/api/v1').kind, 'nonresource');
    assert.equal(ri('GET', '/healthz').kind, 'nonresource');
  });
});

describe('object comparison and apps/v1 table cells', () => {
  it('sameJson ignores key order but not values, and keeps "__proto__" as data', () => {
    assert.equal(sameJson({ a: 1, b: { c: [1, 2], d: 'x' } }, { b: { d: 'x', c: [1, 2] }, a: 1 }), true);
    assert.equal(sameJson({ a: [1, 2] }, { a: [2, 1] }), false);
    const hostile = JSON.parse('{"__proto__": {"x": 1}}');
    assert.equal(sameJson(hostile, {}), false);
    assert.equal(sameJson(hostile, JSON.parse('{"__proto__": {"x": 1}}')), true);
  });

  it('prints selectors and the rs/deploy cells as kubectl shows them', () => {
    const spec = {
      replicas: 3,
      selector: {
        matchLabels: { app: 'a' },
        matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }],
      },
      template: {
        spec: {
          containers: [
            { name: 'x', image: 'i:1' },
            { name: 'y', image: 'j:2' },
          ],
        },
      },
    };
    const created = '2026-01-01T00:00:00Z';
    const o = {
      metadata: { creationTimestamp: created },
      spec,
      status: { replicas: 2, readyReplicas: 1, updatedReplicas: 2, availableReplicas: 1 },
    };
    assert.equal(selectorText(o), 'app=a,env notin (dev)');
    const now = Date.parse('2026-01-01T00:01:30Z');
    assert.deepEqual(replicasets.table.cells(o, now), [
      3,
      2,
      1,
      '90s',
      'x,y',
      'i:1,j:2',
      'app=a,env notin (dev)',
    ]);
    assert.deepEqual(deployments.table.cells(o, now), [
      '1/3',
      2,
      1,
      '90s',
      'x,y',
      'i:1,j:2',
      'app=a,env notin (dev)',
    ]);
    assert.deepEqual(deployments.table.cells({ metadata: {}, spec: {} }, now).slice(0, 3), ['0/0', 0, 0]);
  });
});

describe('proxy subresource ids and paths', () => {
  it('splits [scheme:]name[:port] as Kubernetes does, refusing other schemes', async () => {
    const { parseProxyId } = await import('../src/subresources/proxy-location.js');
    assert.deepEqual(parseProxyId('web', 'pod'), { scheme: '', name: 'web', port: '' });
    assert.deepEqual(parseProxyId('web:80', 'pod'), { scheme: '', name: 'web', port: '80' });
    assert.deepEqual(parseProxyId('https:web:443', 'pod'), { scheme: 'https', name: 'web', port: '443' });
    assert.throws(() => parseProxyId('ftp:web:21', 'pod'), /invalid pod request "ftp:web:21"/);
    assert.throws(() => parseProxyId(':80', 'service'), /invalid service request ":80"/);
  });

  it("leaves a proxied request's query to its backend: ?watch=true is still a get", () => {
    const info = parseRequestInfo(
      'GET',
      '/api/v1/namespaces/default/pods/web:80/proxy/feed',
      { watch: 'true' },
      kinds,
    );
    assert.equal(info.kind === 'resource' && info.verb, 'get');
    assert.equal(info.kind === 'resource' && info.subpath, 'feed');
  });

  it('never proxies to loopback or link-local addresses', async () => {
    const { assertProxyable } = await import('../src/subresources/proxy-location.js');
    for (const ip of ['127.0.0.1', '127.9.9.9', '169.254.169.254', '::1', 'fe80::1', '0.0.0.0', 'not-an-ip'])
      assert.throws(() => assertProxyable(ip), /address not allowed/, ip);
    for (const ip of ['10.244.0.5', '192.168.1.1', 'fd00::5']) assertProxyable(ip);
  });

  it('forwards the path after /proxy as sent, with its query', async () => {
    const { proxiedPath } = await import('../src/subresources/proxy-forward.js');
    assert.deepEqual(proxiedPath('/api/v1/namespaces/default/pods/web:80/proxy/a%2Fb/?x=1', 'pods'), {
      prefix: '/api/v1/namespaces/default/pods/web:80/proxy',
      rest: '/a%2Fb/',
      search: '?x=1',
    });
    assert.deepEqual(proxiedPath('/api/v1/namespaces/default/services/proxy/proxy', 'services'), {
      prefix: '/api/v1/namespaces/default/services/proxy/proxy',
      rest: '',
      search: '',
    });
  });
});
