// Test helpers: an HTTPS client for the apiserver with any identity, and the real kubectl.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import type { ControlPlane } from '@kubit/testkit';

const exec = promisify(execFile);

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON shapes
  body: any;
}

export interface Identity {
  cert?: string;
  key?: string;
  token?: string;
}

export class Api {
  private readonly agent: Agent;
  constructor(
    readonly cp: ControlPlane,
    id: Identity = { cert: cp.clientCert, key: cp.clientKey },
  ) {
    this.agent = new Agent({
      keepAlive: true,
      ca: readFileSync(cp.caFile),
      ...(id.cert ? { cert: readFileSync(id.cert), key: readFileSync(id.key!) } : {}),
    });
    this.token = id.token;
  }
  private readonly token: string | undefined;

  as(id: Identity): Api {
    return new Api(this.cp, id);
  }

  req(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const data =
      body === undefined
        ? undefined
        : Buffer.isBuffer(body)
          ? body
          : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const r = request(
        `${this.cp.url}${path}`,
        {
          method,
          agent: this.agent,
          headers: {
            ...(data ? { 'Content-Type': 'application/json', 'Content-Length': String(data.length) } : {}),
            ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}),
            ...headers,
          },
        },
        (res) => {
          response = res;
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', finish);
          res.on('error', reject);
        },
      );
      const chunks: Buffer[] = [];
      let response: IncomingMessage | undefined;
      const finish = () => {
        const res = response!;
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      };
      r.on('error', (err: NodeJS.ErrnoException) => {
        // A server may answer an oversized body (413) before the client has sent it all and
        // close the connection: writing the rest then fails, but the answer has arrived.
        if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') return reject(err);
        if (response) return finish();
        setTimeout(() => (response ? finish() : reject(err)), 1000);
      });
      r.setTimeout(30_000, () => r.destroy(new Error(`timeout: ${method} ${path}`)));
      if (data) r.write(data);
      r.end();
    });
  }

  get = (p: string, h?: Record<string, string>) => this.req('GET', p, undefined, h);
  post = (p: string, b: unknown, h?: Record<string, string>) => this.req('POST', p, b, h);
  put = (p: string, b: unknown, h?: Record<string, string>) => this.req('PUT', p, b, h);
  del = (p: string, b?: unknown) => this.req('DELETE', p, b);
  patch = (p: string, b: unknown, type = 'application/merge-patch+json') =>
    this.req('PATCH', p, b, { 'Content-Type': type });

  /** Opens a watch; events arrive in `events` as they come. */
  watch(path: string, headers: Record<string, string> = {}): WatchStream {
    const ws = new WatchStream();
    const r = request(
      `${this.cp.url}${path}`,
      {
        method: 'GET',
        agent: new Agent({ ...this.agentOptions() }),
        headers: { ...(this.token ? { Authorization: `Bearer ${this.token}` } : {}), ...headers },
      },
      (res) => {
        ws.status = res.statusCode ?? 0;
        let buf = '';
        res.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          let i = buf.indexOf('\n');
          while (i >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.trim()) ws.events.push(JSON.parse(line));
            i = buf.indexOf('\n');
          }
        });
        res.on('end', () => {
          ws.ended = true;
        });
        res.on('error', () => {
          ws.ended = true;
        });
      },
    );
    r.on('error', () => {
      ws.ended = true;
    });
    r.end();
    ws.close = () => r.destroy();
    return ws;
  }

  private agentOptions() {
    return (this.agent as unknown as { options: Record<string, unknown> }).options;
  }

  close(): void {
    this.agent.destroy();
  }
}

export class WatchStream {
  status = 0;
  // biome-ignore lint/suspicious/noExplicitAny: watch events are arbitrary JSON
  events: any[] = [];
  ended = false;
  close: () => void = () => undefined;
}

/** Runs the real kubectl against the control plane with its own discovery cache. */
export async function kubectl(
  cp: ControlPlane,
  args: string[],
  opts: { kubeconfig?: string; input?: string; allowFail?: boolean } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const full = [
    '--kubeconfig',
    opts.kubeconfig ?? cp.kubeconfigPath,
    '--cache-dir',
    join(cp.dir, 'kubectl-cache'),
    ...args,
  ];
  try {
    const child = exec('kubectl', full, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
    if (opts.input !== undefined) {
      child.child.stdin?.end(opts.input);
    }
    const r = await child;
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    const res = {
      code: typeof e.code === 'number' ? e.code : 1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    };
    if (!opts.allowFail) throw new Error(`kubectl ${args.join(' ')} failed (${res.code}): ${res.stderr}`);
    return res;
  }
}

export function pod(name: string, extra: Record<string, unknown> = {}, labels: Record<string, string> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'busybox:1.36' }], ...extra },
  };
}

export async function until<T>(
  what: string,
  fn: () => T | undefined | false,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = fn();
    if (v !== undefined && v !== false) return v as T;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The namespace the bad-input and fuzz tests write into, with its fixtures. */
export const HOSTILE_NS = '/api/v1/namespaces/fuzz';

/** Creates the namespace, a pod and an immutable configmap the hostile requests aim at. */
export async function seedHostileFixtures(api: Api): Promise<void> {
  assert.equal((await api.post('/api/v1/namespaces', { metadata: { name: 'fuzz' } })).status, 201);
  assert.equal((await api.post(`${HOSTILE_NS}/pods`, pod('existing'))).status, 201);
  const frozen = { metadata: { name: 'frozen' }, data: { a: '1' }, immutable: true };
  assert.equal((await api.post(`${HOSTILE_NS}/configmaps`, frozen)).status, 201);
}

/** The store's current revision, as a list reports it: unchanged means nothing was written. */
export async function storeRevision(api: Api): Promise<string> {
  const r = await api.get(`${HOSTILE_NS}/configmaps?limit=1`);
  return r.body.metadata.resourceVersion;
}

/** A 4xx answer with a JSON Status body of that code (and, optionally, that message). */
export function assertClientError(r: Reply, code: number, message?: RegExp): void {
  assert.equal(r.status, code, r.text);
  assert.equal(r.body?.kind, 'Status', r.text);
  assert.equal(r.body.code, code);
  assert.match(String(r.headers['content-type']), /application\/json/);
  if (message) assert.match(r.body.message, message);
}

/**
 * A node's kubelet played by a small HTTPS server with the node's serving
 * certificate, requiring a client certificate of the cluster's CA (as the
 * kubelet does), registered as the Node `node` with its kubelet port. Every
 * request is recorded in `seen` with the client certificate's CN before
 * `handle` answers it.
 */
export async function startFakeKubelet(
  cp: ControlPlane,
  api: Api,
  node: string,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; seen: { url: string; clientCN: string }[] }> {
  const serving = cp.pki.kubeletServer(node);
  const seen: { url: string; clientCN: string }[] = [];
  const server = createServer(
    {
      cert: readFileSync(serving.cert),
      key: readFileSync(serving.key),
      ca: readFileSync(cp.caFile),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const cert = (req.socket as TLSSocket).getPeerCertificate();
      seen.push({ url: req.url ?? '', clientCN: String(cert.subject?.CN ?? '') });
      handle(req, res);
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const asNode = api.as(cp.pki.kubeletClient(node));
  const created = await asNode.post('/api/v1/nodes', {
    metadata: { name: node },
    status: {
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: port } },
    },
  });
  assert.equal(created.status, 201, created.text);
  asNode.close();
  return { server, seen };
}
