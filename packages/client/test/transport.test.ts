// The real HTTP transport against a local server: retries, Retry-After,
// timeouts, refused connections, bearer tokens and watch streaming.

import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { StatusError } from '@kubit/api';
import { KubeClient } from '../src/client.js';
import { ConnectionError, RequestTimeoutError } from '../src/errors.js';
import { resources } from '../src/resources.js';
import type { KubeObject } from '../src/types.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end('{}');
let server: Server;
let url = '';
const seen: string[] = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const client = (extra: object = {}) =>
  new KubeClient(
    { server: url, namespace: 'default', token: 'secret' },
    { retry: { baseDelayMs: 5, maxDelayMs: 20 }, ...extra },
  );

describe('HttpTransport', () => {
  it('sends the bearer token, retries a 503 read and honours Retry-After on 429', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls++;
      if (calls === 1) {
        res.writeHead(503).end('busy');
        return;
      }
      if (calls === 2) {
        res
          .writeHead(429, { 'Retry-After': '0' })
          .end(
            JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'slow down' }),
          );
        return;
      }
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ metadata: { name: 'p' } }));
    };
    seen.length = 0;
    const c = client();
    const pod = await c.get(resources.pods, 'p');
    assert.equal(pod.metadata?.name, 'p');
    assert.equal(calls, 3);
    assert.equal(seen[0], 'GET /api/v1/namespaces/default/pods/p Bearer secret');
    c.close();
  });

  it('does not retry a POST that got a 503', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls++;
      res.writeHead(503).end();
    };
    const c = client();
    await assert.rejects(
      c.create<KubeObject>(resources.pods, { metadata: { name: 'x' } }),
      (e: unknown) => e instanceof StatusError && e.code === 503,
    );
    assert.equal(calls, 1);
    c.close();
  });

  it('times out a slow request and reports a refused connection', async () => {
    handler = () => {};
    const c = client({ timeoutMs: 50, retry: { maxRetries: 0 } });
    await assert.rejects(c.get(resources.pods, 'slow'), RequestTimeoutError);
    c.close();
    const dead = new KubeClient(
      { server: 'http://127.0.0.1:1', namespace: 'default' },
      { retry: { maxRetries: 0 } },
    );
    await assert.rejects(
      dead.get(resources.pods, 'x'),
      (e: unknown) =>
        e instanceof ConnectionError &&
        e.refused &&
        /Unable to connect to the server: dial tcp 127.0.0.1:1: connect: connection refused/.test(e.message),
    );
  });

  it('streams watch events as the server writes them', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
      setTimeout(
        () => res.end(`${JSON.stringify({ type: 'DELETED', object: { metadata: { name: 'a' } } })}\n`),
        20,
      );
    };
    seen.length = 0;
    const c = client();
    const got: string[] = [];
    for await (const ev of c.watch(resources.pods, {
      namespace: 'ns',
      resourceVersion: '7',
      labelSelector: 'a=b',
    }))
      got.push(ev.type);
    assert.deepEqual(got, ['ADDED', 'DELETED']);
    assert.match(
      seen[0],
      /^GET \/api\/v1\/namespaces\/ns\/pods\?labelSelector=a%3Db&resourceVersion=7&watch=true /,
    );
    c.close();
  });
});
