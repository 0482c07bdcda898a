// nodes/<name>/proxy/<path>: any verb forwarded to the node's kubelet with the apiserver's
// kubelet client certificate (kubectl get --raw .../proxy/stats/summary). The kubelet is
// played by a small HTTPS server with the node's serving certificate; who may proxy is RBAC's
// nodes/proxy (system:kubelet-api-admin).
import assert from 'node:assert/strict';
import type { Server } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, startFakeKubelet } from './helpers.js';

let cp: ControlPlane;
let api: Api;
let kubelet: Server;
let seen: { url: string; clientCN: string }[] = [];
const SUMMARY = { node: { nodeName: 'n1', startTime: '2026-01-01T00:00:00Z' }, pods: [] };

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'], tokens: ['bob-token,bob,1002'] });
  api = new Api(cp);
  const fake = await startFakeKubelet(cp, api, 'n1', (req, res) => {
    if (req.url?.startsWith('/echo')) {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, url: req.url, body }));
      });
      return;
    }
    if (req.url?.startsWith('/stats/summary')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(SUMMARY));
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('404 page not found');
  });
  kubelet = fake.server;
  seen = fake.seen;
});
after(async () => {
  api?.close();
  kubelet?.close();
  await cp?.stop();
});

describe('nodes/proxy', () => {
  it("forwards a GET to the node's kubelet with the apiserver's client certificate and the query", async () => {
    const r = await api.get('/api/v1/nodes/n1/proxy/stats/summary?only_cpu_and_memory=true');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, SUMMARY);
    const last = seen[seen.length - 1];
    assert.equal(last.clientCN, 'kube-apiserver-kubelet-client');
    assert.equal(last.url, '/stats/summary?only_cpu_and_memory=true');
  });

  it('serves the real kubectl get --raw', async () => {
    const r = await kubectl(cp, ['get', '--raw', '/api/v1/nodes/n1/proxy/stats/summary']);
    assert.deepEqual(JSON.parse(r.stdout), SUMMARY);
  });

  it("passes the kubelet's own answer through, and names a node that is not there", async () => {
    const r = await api.get('/api/v1/nodes/n1/proxy/nothing/here');
    assert.equal(r.status, 404);
    assert.equal(r.text, '404 page not found');
    const ghost = await api.get('/api/v1/nodes/ghost/proxy/stats/summary');
    assert.equal(ghost.status, 404);
    assert.equal(ghost.body.message, 'nodes "ghost" not found');
  });

  it('is discovered with its verbs, and forwards any of them with the method and body', async () => {
    const d = await api.get('/api/v1');
    const proxy = d.body.resources.find((x: { name: string }) => x.name === 'nodes/proxy');
    assert.deepEqual(proxy?.verbs, ['create', 'delete', 'get', 'patch', 'update']);
    const post = await api.req('POST', '/api/v1/nodes/n1/proxy/echo?x=1', { hello: 'kubelet' });
    assert.equal(post.status, 200, post.text);
    assert.deepEqual(post.body, { method: 'POST', url: '/echo?x=1', body: '{"hello":"kubelet"}' });
    assert.equal(seen[seen.length - 1].clientCN, 'kube-apiserver-kubelet-client');
  });

  it('needs nodes/proxy: a user without it is forbidden, system:kubelet-api-admin grants it', async () => {
    const bob = api.as({ token: 'bob-token' });
    try {
      const before = seen.length;
      const denied = await bob.get('/api/v1/nodes/n1/proxy/stats/summary');
      assert.equal(denied.status, 403);
      assert.equal(denied.body.reason, 'Forbidden');
      assert.match(denied.body.message, /cannot get resource "nodes\/proxy"/);
      assert.equal(seen.length, before, 'nothing reached the kubelet');
      const bound = await api.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: 'bob-kubelet-api' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'system:kubelet-api-admin',
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
      });
      assert.equal(bound.status, 201, bound.text);
      let ok = await bob.get('/api/v1/nodes/n1/proxy/stats/summary');
      for (let i = 0; ok.status === 403 && i < 50; i++) {
        // The RBAC authorizer reads bindings from its watch cache: wait for it to see this one.
        await new Promise((r) => setTimeout(r, 100));
        ok = await bob.get('/api/v1/nodes/n1/proxy/stats/summary');
      }
      assert.equal(ok.status, 200, ok.text);
      assert.deepEqual(ok.body, SUMMARY);
    } finally {
      bob.close();
    }
  });
});
