// The streaming subresources (pods/exec, attach, portforward) before any kubelet
// is involved: raw HTTP/1.1 upgrade requests get Kubernetes Statuses for every
// refusal (who, what, which pod, which protocol). The streams themselves are
// tested end to end with the real kubectl in packages/kubelet
// (kubelet-daemon.test.ts).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ tokens: ['viewer-token,viewer,2001'] });
  api = new Api(cp);
  const pod = (name: string, nodeName: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
  });
  // Bound to a node the apiserver knows nothing of: no kubelet address.
  assert.equal((await api.post('/api/v1/namespaces/default/pods', pod('lonely', 'ghost'))).status, 201);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

interface Answer {
  code: number;
  body: { reason?: string; message?: string; code?: number };
}

/** An upgrade request as kubectl sends it; the answer when it is not upgraded. */
function upgrade(
  path: string,
  opts: { protocol?: string; anonymous?: boolean; token?: string } = {},
): Promise<Answer> {
  const creds =
    opts.anonymous || opts.token
      ? {}
      : { cert: readFileSync(cp.clientCert), key: readFileSync(cp.clientKey) };
  return new Promise((resolve, reject) => {
    const req = request(`${cp.url}${path}`, {
      method: 'POST',
      ca: readFileSync(cp.caFile),
      ...creds,
      headers: {
        Connection: 'Upgrade',
        Upgrade: opts.protocol ?? 'SPDY/3.1',
        'X-Stream-Protocol-Version': 'v4.channel.k8s.io',
        ...(opts.token ? { Authorization: `Bearer ${opts.token}` } : {}),
      },
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error(`${path} was upgraded`));
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => {
        text += d.toString();
      });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const EXEC = '/api/v1/namespaces/default/pods/lonely/exec?command=true&stdout=true';

describe('streaming upgrades', () => {
  it('answers who may not with 401 and 403', async () => {
    const anon = await upgrade(EXEC, { anonymous: true });
    assert.equal(anon.code, 401);
    const viewer = await upgrade(EXEC, { token: 'viewer-token' });
    assert.equal(viewer.code, 403);
    assert.match(viewer.body.message ?? '', /User "viewer" cannot create resource "pods\/exec"/);
  });

  it('turns down WebSocket (so kubectl falls back to SPDY) and non-streaming paths', async () => {
    const ws = await upgrade(EXEC, { protocol: 'websocket' });
    assert.equal(ws.code, 400);
    assert.match(ws.body.message ?? '', /over SPDY\/3\.1/);
    const list = await upgrade('/api/v1/namespaces/default/pods');
    assert.equal(list.code, 400);
    assert.match(list.body.message ?? '', /cannot be upgraded/);
  });

  it('names the missing pod, container, command or kubelet', async () => {
    const missing = await upgrade('/api/v1/namespaces/default/pods/nope/exec?command=true');
    assert.deepEqual([missing.code, missing.body.message], [404, 'pods "nope" not found']);
    const container = await upgrade('/api/v1/namespaces/default/pods/lonely/exec?command=true&container=x');
    assert.deepEqual(
      [container.code, container.body.message],
      [400, 'container x is not valid for pod lonely'],
    );
    const command = await upgrade('/api/v1/namespaces/default/pods/lonely/exec?stdout=true');
    assert.deepEqual(
      [command.code, command.body.message],
      [400, 'you must specify at least one command for the container'],
    );
    const kubelet = await upgrade(EXEC);
    assert.equal(kubelet.code, 503);
    assert.match(kubelet.body.message ?? '', /no address known for node "ghost"/);
  });

  it('keeps serving plain requests after refused upgrades', async () => {
    const r = await api.get('/api/v1/namespaces/default/pods/lonely');
    assert.equal(r.status, 200);
  });
});
