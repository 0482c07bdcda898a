// A @kubit/client Transport that answers list and watch requests from a
// FakeCluster, so unit tests run the controllers on the client's real
// SharedInformerFactory (paging, watch parsing, handlers) without an apiserver.
// Writes go through the Cluster port, never through this transport.
import { PassThrough } from 'node:stream';
import {
  KubeClient,
  type ResourceRef,
  resources,
  type StreamResponse,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '@kubit/client';
import type { FakeCluster } from './fake-cluster.js';
import { hpaResource } from './hpa/api.js';

interface ParsedPath {
  resource: ResourceRef;
  namespace?: string;
  query: URLSearchParams;
}

// The built-in resources, and those a controller defines for itself (the HPA's autoscaling/v2).
const KNOWN: readonly ResourceRef[] = [...Object.values(resources), hpaResource];

/** Reads "/api/v1/namespaces/ns/pods?watch=true" into the resource, namespace and query. */
export function parseCollectionPath(path: string): ParsedPath | undefined {
  const url = new URL(path, 'http://fake');
  const parts = url.pathname.split('/').filter(Boolean);
  let group = '';
  let rest: string[];
  if (parts[0] === 'api') rest = parts.slice(1);
  else if (parts[0] === 'apis') {
    group = parts[1] ?? '';
    rest = parts.slice(2);
  } else return undefined;
  const [version, ...tail] = rest;
  let namespace: string | undefined;
  let plural = tail[0];
  if (tail[0] === 'namespaces' && tail.length === 3) {
    namespace = tail[1];
    plural = tail[2];
  } else if (tail.length !== 1) return undefined;
  const resource =
    KNOWN.find((r) => r.group === group && r.version === version && r.resource === plural) ??
    // A custom resource (a CRD's group has a dot): the fake serves it as a namespaced one.
    (group.includes('.') ? { group, version, resource: plural, namespaced: true } : undefined);
  return resource ? { resource, namespace, query: url.searchParams } : undefined;
}

function notServed(path: string): TransportResponse {
  return {
    statusCode: 404,
    headers: {},
    body: JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: `the fake transport serves only collection list/watch, not ${path}`,
    }),
  };
}

export class FakeClusterTransport implements Transport {
  readonly host = 'fake-cluster';

  constructor(private readonly cluster: FakeCluster) {}

  async request(req: TransportRequest): Promise<TransportResponse> {
    const parsed = req.method === 'GET' ? parseCollectionPath(req.path) : undefined;
    if (!parsed) return notServed(`${req.method} ${req.path}`);
    const { items, resourceVersion } = await this.cluster.list(parsed.resource, parsed.namespace);
    return {
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion }, items }),
    };
  }

  async stream(req: TransportRequest): Promise<StreamResponse> {
    const path = parseCollectionPath(req.path);
    const parsed = path?.query.get('watch') === 'true' ? path : undefined;
    if (!parsed) {
      const res = notServed(`${req.method} ${req.path}`);
      const body = new PassThrough();
      body.end(res.body);
      return { statusCode: res.statusCode, headers: res.headers, stream: body };
    }
    const body = new PassThrough();
    const handle = this.cluster.watch(parsed.resource, {
      resourceVersion: parsed.query.get('resourceVersion') ?? '0',
      namespace: parsed.namespace,
      onEvent: (ev) => {
        if (!body.destroyed) body.write(`${JSON.stringify(ev)}\n`);
      },
      onClose: () => body.end(),
    });
    const stop = () => {
      handle.stop();
      body.destroy();
    };
    body.on('close', () => handle.stop());
    req.signal?.addEventListener('abort', stop, { once: true });
    return { statusCode: 200, headers: {}, stream: body };
  }

  close(): void {}
}

/** A KubeClient whose lists and watches are served by the FakeCluster. */
export function fakeKubeClient(cluster: FakeCluster): KubeClient {
  return new KubeClient(
    { server: 'http://fake-cluster', namespace: 'default' },
    { transport: new FakeClusterTransport(cluster), retry: { maxRetries: 0 } },
  );
}
