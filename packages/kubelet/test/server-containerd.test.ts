// The kubelet's server on a real containerd: logs (follow, previous, tail),
// /pods, /healthz, and client-certificate authentication over TLS.
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger, createRegistry } from '@kubit/daemon';
import { freePort, generatePki, tempDir } from '@kubit/testkit';
import type { FastifyInstance } from 'fastify';
import { startKubeletServer } from '../src/server/server.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus } from './helpers.js';

let node: Node;
let server: FastifyInstance;
let base: string;
before(async () => {
  node = await startNode();
  const port = await freePort();
  server = await startKubeletServer({
    host: '127.0.0.1',
    port,
    manager: node.manager,
    runtime: node.runtime,
    registry: createRegistry(),
    log: createLogger({ name: 'kubit-kubelet', level: 'silent' }),
  });
  base = `http://127.0.0.1:${port}`;
});
after(async () => {
  await server?.close();
  await node?.stop();
});

test('logs of a running container: all, tail, follow; previous of a restarted one', async () => {
  const pod = makePod('talker', {
    containers: [
      {
        name: 'counter',
        image: 'busybox:latest',
        command: [
          'sh',
          '-c',
          'i=1; while [ $i -le 3 ]; do echo line $i; i=$((i+1)); done; sleep 2; echo late; sleep 3600',
        ],
      },
      { name: 'crasher', image: 'busybox:latest', command: ['sh', '-c', 'echo run; sleep 1; exit 1'] },
    ],
  });
  node.manager.upsert(pod);
  await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  // follow: the first lines at once, "late" two seconds later; the request stays open.
  const ctrl = new AbortController();
  const res = await fetch(`${base}/containerLogs/default/talker/counter?follow=true`, {
    signal: ctrl.signal,
  });
  assert.equal(res.status, 200);
  const reader = res.body?.getReader();
  let text = '';
  while (!text.includes('late\n')) {
    const chunk = await reader?.read();
    if (!chunk || chunk.done) break;
    text += Buffer.from(chunk.value).toString();
  }
  ctrl.abort();
  assert.equal(text, 'line 1\nline 2\nline 3\nlate\n');

  const tail = await fetch(`${base}/containerLogs/default/talker/counter?tailLines=2`);
  assert.equal(await tail.text(), 'line 3\nlate\n');
  const ts = await (
    await fetch(`${base}/containerLogs/default/talker/counter?tailLines=1&timestamps=true`)
  ).text();
  assert.match(ts, /^\d{4}-\d\d-\d\dT\S+Z late\n$/);

  await waitStatus(
    node.sink,
    pod,
    'crasher restarted',
    (st) => (containerState(st, 'crasher')?.restartCount ?? 0) >= 1,
    30_000,
  );
  const prev = await fetch(`${base}/containerLogs/default/talker/crasher?previous=true`);
  assert.equal(prev.status, 200);
  assert.equal(await prev.text(), 'run\n');
});

test('errors are Status objects', async () => {
  const missing = await fetch(`${base}/containerLogs/default/nosuchpod/c`);
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as { kind: string }).kind, 'Status');
  const bad = await fetch(`${base}/containerLogs/default/talker/counter?tailLines=abc`);
  assert.equal(bad.status, 400);
  const noPrev = await fetch(`${base}/containerLogs/default/talker/counter?previous=true`);
  assert.equal(noPrev.status, 400);
  assert.match(
    ((await noPrev.json()) as { message: string }).message,
    /previous terminated container "counter"/,
  );
});

test('/pods and /healthz', async () => {
  const pods = (await (await fetch(`${base}/pods`)).json()) as { items: { metadata: { name: string } }[] };
  assert.ok(pods.items.some((p) => p.metadata.name === 'talker'));
  assert.equal((await fetch(`${base}/healthz`)).status, 200);
});

test('over TLS, only clients with a certificate from the client CA get in', async () => {
  const dir = await tempDir('kubit-kubelet-pki-');
  try {
    const pki = await generatePki(join(dir.path, 'pki'), ['node-1'], ['127.0.0.1']);
    const port = await freePort();
    const tls = await startKubeletServer({
      host: '127.0.0.1',
      port,
      manager: node.manager,
      runtime: node.runtime,
      registry: createRegistry(),
      log: createLogger({ name: 'kubit-kubelet', level: 'silent' }),
      tls: {
        certFile: pki.kubeletServer('node-1').cert,
        keyFile: pki.kubeletServer('node-1').key,
        clientCaFile: pki.caFile,
      },
    });
    const { readFileSync } = await import('node:fs');
    const get = (withCert: boolean, cert = pki.apiserverKubeletClient) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/pods',
            ca: readFileSync(pki.caFile),
            servername: 'node-1',
            ...(withCert
              ? {
                  cert: readFileSync(cert.cert),
                  key: readFileSync(cert.key),
                }
              : {}),
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
    assert.equal(await get(true), 200);
    // Another node's certificate is from the same CA, but not the apiserver's.
    assert.equal(await get(true, pki.kubeletClient('node-1')), 403);
    await assert.rejects(get(false));
    await tls.close();
  } finally {
    await dir.cleanup();
  }
});
