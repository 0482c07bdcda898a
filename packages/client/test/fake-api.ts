// An in-memory stand-in for the apiserver behind the Transport interface, for
// unit tests of client logic (informers, leader election, events). It keeps
// objects per collection path, assigns resourceVersions, and serves watches
// from an event log that can be "compacted" to provoke 410 Expired.

import { PassThrough } from 'node:stream';
import type { StreamResponse, Transport, TransportRequest, TransportResponse } from '../src/transport.js';

type Obj = {
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
} & Record<string, unknown>;

interface Watcher {
  collection: string;
  out: PassThrough;
}

function status(code: number, reason: string, message: string): TransportResponse {
  return {
    statusCode: code,
    headers: {},
    body: JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      reason,
      message,
      code,
    }),
  };
}

/** What an apiserver answers for a path it does not serve: a bare 404 page, not a Status. */
function notServed(): TransportResponse {
  return { statusCode: 404, headers: { 'content-type': 'text/plain' }, body: '404 page not found\n' };
}

function ok(body: unknown, code = 200): TransportResponse {
  return { statusCode: code, headers: {}, body: JSON.stringify(body) };
}

export class FakeApi implements Transport {
  readonly host = 'fake:443';
  rv = 1;
  /** collection path ("/api/v1/namespaces/default/pods") → name → object */
  readonly objects = new Map<string, Map<string, Obj>>();
  readonly log: { rv: number; collection: string; type: string; object: Obj }[] = [];
  /** Watches asking for a resourceVersion below this get 410. */
  compactedBelow = 0;
  readonly watchers = new Set<Watcher>();
  readonly requests: string[] = [];
  /** Collection paths the "server" does not serve yet: lists and watches of them get 404. */
  readonly unserved = new Set<string>();
  /** Respond to the next N requests with this status code. */
  failNext: { count: number; code: number } = { count: 0, code: 0 };

  private split(path: string): { collection: string; name?: string; query: URLSearchParams } {
    const [p, q] = path.split('?');
    const parts = p.split('/').filter(Boolean);
    // /api/v1/[namespaces/ns/]res[/name] or /apis/g/v/[namespaces/ns/]res[/name]
    const base = parts[0] === 'api' ? 2 : 3;
    let i = base;
    if (parts[i] === 'namespaces' && parts.length > i + 2) i += 2;
    const collection = `/${parts.slice(0, i + 1).join('/')}`;
    const name = parts[i + 1];
    return { collection, name, query: new URLSearchParams(q ?? '') };
  }

  private coll(c: string): Map<string, Obj> {
    let m = this.objects.get(c);
    if (!m) {
      m = new Map();
      this.objects.set(c, m);
    }
    return m;
  }

  /** Collections under a path: a cluster-wide list of a namespaced resource matches every namespace. */
  private matching(collection: string): Map<string, Obj>[] {
    return [...this.objects.entries()].filter(([c]) => this.matches(collection, c)).map(([, m]) => m);
  }

  private matches(requested: string, actual: string): boolean {
    if (requested === actual) return true;
    const res = requested.split('/').pop();
    const prefix = requested.slice(0, requested.lastIndexOf('/'));
    return actual.startsWith(`${prefix}/namespaces/`) && actual.endsWith(`/${res}`);
  }

  private record(collection: string, type: string, object: Obj): void {
    this.log.push({ rv: this.rv, collection, type, object });
    for (const w of this.watchers) {
      if (this.matches(w.collection, collection)) w.out.write(`${JSON.stringify({ type, object })}\n`);
    }
  }

  /** Writes directly (as another client would). */
  put(collection: string, obj: Obj, type: 'ADDED' | 'MODIFIED' = 'ADDED'): Obj {
    this.rv++;
    const stored = {
      ...obj,
      metadata: {
        ...obj.metadata,
        resourceVersion: String(this.rv),
        uid: obj.metadata.uid ?? `uid-${obj.metadata.name}`,
      },
    };
    this.coll(collection).set(obj.metadata.name, stored);
    this.record(collection, type, stored);
    return stored;
  }

  remove(collection: string, name: string): void {
    const m = this.coll(collection);
    const old = m.get(name);
    if (!old) return;
    m.delete(name);
    this.rv++;
    this.record(collection, 'DELETED', {
      ...old,
      metadata: { ...old.metadata, resourceVersion: String(this.rv) },
    });
  }

  /** Ends every open watch stream (as a server restart would). */
  dropWatches(): void {
    for (const w of this.watchers) w.out.end();
    this.watchers.clear();
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    this.requests.push(`${req.method} ${req.path}`);
    if (this.failNext.count > 0) {
      this.failNext.count--;
      return status(
        this.failNext.code,
        this.failNext.code === 429 ? 'TooManyRequests' : 'ServiceUnavailable',
        'busy',
      );
    }
    const { collection, name } = this.split(req.path);
    if (this.unserved.has(collection)) return notServed();
    const body = req.body ? (JSON.parse(req.body.toString()) as Obj) : undefined;
    const m = this.coll(collection);
    switch (req.method) {
      case 'GET': {
        if (name) {
          const o = m.get(name);
          return o ? ok(o) : status(404, 'NotFound', `"${name}" not found`);
        }
        const items = this.matching(collection).flatMap((c) => [...c.values()]);
        return ok({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
      }
      case 'POST': {
        if (!body) return status(400, 'BadRequest', 'no body');
        if (m.has(body.metadata.name))
          return status(409, 'AlreadyExists', `"${body.metadata.name}" already exists`);
        return ok(this.put(collection, body), 201);
      }
      case 'PUT': {
        if (!body || !name) return status(400, 'BadRequest', 'no body');
        const cur = m.get(name);
        if (!cur) return status(404, 'NotFound', `"${name}" not found`);
        if (body.metadata.resourceVersion && body.metadata.resourceVersion !== cur.metadata.resourceVersion) {
          return status(409, 'Conflict', 'the object has been modified');
        }
        return ok(
          this.put(
            collection,
            { ...body, metadata: { ...body.metadata, uid: cur.metadata.uid } },
            'MODIFIED',
          ),
        );
      }
      case 'PATCH': {
        if (!name) return status(400, 'BadRequest', 'no name');
        const cur = m.get(name);
        if (!cur) return status(404, 'NotFound', `"${name}" not found`);
        return ok(this.put(collection, { ...cur, ...(body as object) } as Obj, 'MODIFIED'));
      }
      case 'DELETE': {
        if (!name) return status(405, 'MethodNotAllowed', 'no');
        const cur = m.get(name);
        if (!cur) return status(404, 'NotFound', `"${name}" not found`);
        this.remove(collection, name);
        return ok(cur);
      }
      default:
        return status(405, 'MethodNotAllowed', req.method);
    }
  }

  async stream(req: TransportRequest): Promise<StreamResponse> {
    this.requests.push(`${req.method} ${req.path}`);
    const { collection, query } = this.split(req.path);
    if (this.unserved.has(collection)) {
      const { statusCode, body } = notServed();
      const out = new PassThrough();
      out.end(body);
      return { statusCode, headers: {}, stream: out };
    }
    const from = Number(query.get('resourceVersion') ?? '0');
    const out = new PassThrough();
    if (from > 0 && from < this.compactedBelow) {
      out.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          reason: 'Expired',
          message: `too old resource version: ${from} (${this.compactedBelow})`,
          code: 410,
        }),
      );
      return { statusCode: 410, headers: {}, stream: out };
    }
    const w: Watcher = { collection, out };
    this.watchers.add(w);
    out.on('close', () => this.watchers.delete(w));
    for (const e of this.log) {
      if (e.rv > from && this.matches(collection, e.collection))
        out.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    }
    req.signal?.addEventListener('abort', () => out.destroy(), { once: true });
    return { statusCode: 200, headers: {}, stream: out };
  }

  close(): void {
    this.dropWatches();
  }
}
