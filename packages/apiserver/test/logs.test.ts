// pods/log: proxied over HTTPS to the node's kubelet with the apiserver's
// kubelet client certificate, streamed with follow. The kubelet's log endpoint
// is played by a small HTTPS server with the node's serving certificate.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, pod, startFakeKubelet, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;
let kubelet: Server;
let seen: { url: string; clientCN: string }[] = [];
const NS = '/api/v1/namespaces/default';

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'] });
  api = new Api(cp);
  const fake = await startFakeKubelet(cp, api, 'n1', (req, res) => {
    const url = new URL(req.url ?? '/', 'https://x');
    if (url.pathname === '/containerLogs/default/logger/app') {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('line 1\n');
      if (url.searchParams.get('follow') === 'true') {
        let n = 2;
        const t = setInterval(() => {
          res.write(`line ${n}\n`);
          if (++n > 4) {
            clearInterval(t);
            res.end();
          }
        }, 200);
      } else res.end('line 2\n');
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('container not found');
  });
  kubelet = fake.server;
  seen = fake.seen;
  assert.equal(
    (
      await api.post(`${NS}/pods`, {
        ...pod('logger', { nodeName: 'n1' }),
        spec: { nodeName: 'n1', containers: [{ name: 'app', image: 'busybox' }] },
      })
    ).status,
    201,
  );
  assert.equal(
    (
      await api.post(`${NS}/pods`, {
        metadata: { name: 'two' },
        spec: {
          nodeName: 'n1',
          containers: [
            { name: 'a', image: 'i' },
            { name: 'b', image: 'i' },
          ],
        },
      })
    ).status,
    201,
  );
});
after(async () => {
  api?.close();
  kubelet?.close();
  await cp?.stop();
});

describe('pods/log', () => {
  it('proxies to the kubelet with the apiserver client certificate and the query', async () => {
    const r = await api.get(`${NS}/pods/logger/log?tailLines=10&timestamps=true`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, 'line 1\nline 2\n');
    const last = seen[seen.length - 1];
    assert.equal(last.clientCN, 'kube-apiserver-kubelet-client');
    assert.match(last.url, /^\/containerLogs\/default\/logger\/app\?/);
    assert.match(last.url, /tailLines=10/);
    assert.match(last.url, /timestamps=true/);
  });

  it('streams with follow', async () => {
    const { request } = await import('node:https');
    const chunks: string[] = [];
    let ended = false;
    const req = request(
      `${cp.url}${NS}/pods/logger/log?follow=true`,
      {
        ca: readFileSync(cp.caFile),
        cert: readFileSync(cp.clientCert),
        key: readFileSync(cp.clientKey),
      },
      (res) => {
        res.on('data', (c: Buffer) => chunks.push(c.toString()));
        res.on('end', () => {
          ended = true;
        });
      },
    );
    req.end();
    await until('the first line before the stream ends', () => chunks.join('').includes('line 1') && !ended);
    await until('the end of the stream', () => ended, 10_000);
    assert.equal(chunks.join(''), 'line 1\nline 2\nline 3\nline 4\n');
  });

  it('names the problem when the request cannot be served', async () => {
    const multi = await api.get(`${NS}/pods/two/log`);
    assert.equal(multi.status, 400);
    assert.match(
      multi.body.message,
      /a container name must be specified for pod two, choose one of: \[a b\]/,
    );
    const wrong = await api.get(`${NS}/pods/logger/log?container=nope`);
    assert.equal(wrong.status, 400);
    const missing = await api.get(`${NS}/pods/ghost/log`);
    assert.equal(missing.status, 404);
    const upstream = await api.get(`${NS}/pods/two/log?container=a`);
    assert.equal(upstream.status, 404);
    assert.match(upstream.body.message, /container not found/);
    const badTail = await api.get(`${NS}/pods/logger/log?tailLines=abc`);
    assert.equal(badTail.status, 400);
  });
});
