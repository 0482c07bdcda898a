// KubeClient: the REST verbs of the Kubernetes API with typed results, over a
// Transport. Errors are StatusError (the server's Status) or ConnectionError.
// Idempotent requests are retried a bounded number of times with backoff.

import type { Status } from '@kubit/api';
import { errorFromResponse } from './errors.js';
import { type ClientConfig, type KubeConfigOverrides, loadClientConfig } from './kubeconfig.js';
import { type QueryValue, queryString, resourcePath } from './paths.js';
import type { ResourceRef } from './resources.js';
import { defaultRetryPolicy, type RetryPolicy, retryDelay, sleep } from './retry.js';
import { HttpTransport, type StreamResponse, type Transport, type TransportResponse } from './transport.js';
import type { KubeObject, ObjectList } from './types.js';
import { Watch, type WatchStreamOptions } from './watch.js';

export interface ClientOptions {
  /** Default per-request timeout in ms (not for watches). Default 30 s. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  userAgent?: string;
  /** Replaces the HTTP transport (unit tests). */
  transport?: Transport;
}

export interface RequestOptions {
  method: string;
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this request. */
  retry?: Partial<RetryPolicy>;
}

export interface CommonOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface GetOptions extends CommonOptions {
  namespace?: string;
  subresource?: string;
  resourceVersion?: string;
  query?: Record<string, QueryValue>;
}

export interface ListOptions extends CommonOptions {
  /** Namespace to list in; undefined lists across all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
  timeoutSeconds?: number;
}

export interface WatchOptions<T> extends ListOptions, WatchStreamOptions<T> {
  allowWatchBookmarks?: boolean;
  sendInitialEvents?: boolean;
}

export interface WriteOptions extends CommonOptions {
  namespace?: string;
  subresource?: string;
  dryRun?: boolean;
  fieldManager?: string;
  fieldValidation?: 'Ignore' | 'Warn' | 'Strict';
}

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
};

export interface PatchOptions extends WriteOptions {
  /** Default 'merge'. */
  type?: PatchType;
  force?: boolean;
}

export interface DeleteOptions extends CommonOptions {
  namespace?: string;
  gracePeriodSeconds?: number;
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

function listQuery(o: ListOptions): Record<string, QueryValue> {
  return {
    labelSelector: o.labelSelector,
    fieldSelector: o.fieldSelector,
    limit: o.limit,
    continue: o.continue,
    resourceVersion: o.resourceVersion,
    resourceVersionMatch: o.resourceVersionMatch,
    timeoutSeconds: o.timeoutSeconds,
  };
}

function writeQuery(o: WriteOptions): Record<string, QueryValue> {
  return {
    dryRun: o.dryRun ? 'All' : undefined,
    fieldManager: o.fieldManager,
    fieldValidation: o.fieldValidation,
  };
}

export class KubeClient {
  readonly config: ClientConfig;
  readonly transport: Transport;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;

  constructor(config: ClientConfig, opts: ClientOptions = {}) {
    this.config = config;
    this.transport = opts.transport ?? new HttpTransport(config, { userAgent: opts.userAgent });
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.retry = { ...defaultRetryPolicy, ...opts.retry };
  }

  /** A client for the kubeconfig kubectl would use, with the given overrides. */
  static fromKubeconfig(overrides: KubeConfigOverrides = {}, opts: ClientOptions = {}): KubeClient {
    return new KubeClient(loadClientConfig(overrides), opts);
  }

  /** The namespace of the kubeconfig's context (or overrides), "default" when none. */
  get namespace(): string {
    return this.config.namespace;
  }

  /** Closes idle keep-alive sockets; the client must not be used afterwards. */
  close(): void {
    this.transport.close();
  }

  /** One request with retries; returns the raw response of any status. */
  async rawRequest(req: RequestOptions): Promise<TransportResponse> {
    const policy = req.retry ? { ...this.retry, ...req.retry } : this.retry;
    const headers: Record<string, string> = { Accept: req.accept ?? 'application/json' };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
      headers['Content-Type'] = req.contentType ?? 'application/json';
    }
    const path = req.path + queryString(req.query);
    for (let attempt = 0; ; attempt++) {
      let err: unknown;
      try {
        const res = await this.transport.request({
          method: req.method,
          path,
          headers,
          body,
          timeoutMs: req.timeoutMs ?? this.timeoutMs,
          signal: req.signal,
        });
        if (res.statusCode !== 429 && res.statusCode !== 503) return res;
        err = this.toError(res);
        const delay = retryDelay(req.method, err, attempt, policy);
        if (delay === undefined) return res;
        await sleep(delay, req.signal);
        continue;
      } catch (e) {
        err = e;
      }
      const delay = retryDelay(req.method, err, attempt, policy);
      if (delay === undefined) throw err;
      await sleep(delay, req.signal);
    }
  }

  private toError(res: TransportResponse): Error {
    const ra = res.headers['retry-after'];
    return errorFromResponse(res.statusCode, res.body, typeof ra === 'string' ? ra : undefined);
  }

  /** A request whose 2xx JSON body is returned; anything else throws StatusError. */
  async request<T>(req: RequestOptions): Promise<T> {
    const res = await this.rawRequest(req);
    if (res.statusCode < 200 || res.statusCode >= 300) throw this.toError(res);
    if (!res.body) return undefined as T;
    try {
      return JSON.parse(res.body) as T;
    } catch {
      // Some subresources (logs) answer text.
      return res.body as T;
    }
  }

  /** A streaming GET (logs -f, watch); the caller reads and destroys the stream. */
  async stream(
    path: string,
    query?: Record<string, QueryValue>,
    signal?: AbortSignal,
  ): Promise<StreamResponse> {
    const res = await this.transport.stream({
      method: 'GET',
      path: path + queryString(query),
      signal,
      timeoutMs: this.timeoutMs,
    });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      let body = '';
      for await (const chunk of res.stream) body += chunk.toString();
      throw errorFromResponse(res.statusCode, body);
    }
    return res;
  }

  private ns(res: ResourceRef, namespace: string | undefined): string | undefined {
    return res.namespaced ? namespace || this.config.namespace : undefined;
  }

  get<T extends KubeObject = KubeObject>(res: ResourceRef, name: string, opts: GetOptions = {}): Promise<T> {
    return this.request<T>({
      method: 'GET',
      path: resourcePath(res, {
        namespace: this.ns(res, opts.namespace),
        name,
        subresource: opts.subresource,
      }),
      query: { resourceVersion: opts.resourceVersion, ...opts.query },
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  /** One page (or all, without `limit`) of a collection; no namespace lists all namespaces. */
  list<T extends KubeObject = KubeObject>(res: ResourceRef, opts: ListOptions = {}): Promise<ObjectList<T>> {
    return this.request<ObjectList<T>>({
      method: 'GET',
      path: resourcePath(res, { namespace: opts.namespace }),
      query: listQuery(opts),
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  /** Every item, following `continue` tokens page by page (`limit` is the page size). */
  async listAll<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    opts: ListOptions = {},
  ): Promise<ObjectList<T>> {
    const pageSize = opts.limit ?? 500;
    let first: ObjectList<T> | undefined;
    let cont: string | undefined;
    do {
      // Later pages carry only the continue token: it pins the version, and the
      // apiserver refuses a resourceVersion next to it.
      const page: ObjectList<T> = await this.list<T>(
        res,
        cont
          ? {
              ...opts,
              limit: pageSize,
              continue: cont,
              resourceVersion: undefined,
              resourceVersionMatch: undefined,
            }
          : { ...opts, limit: pageSize },
      );
      if (!first) first = page;
      else first.items.push(...page.items);
      cont = page.metadata?.continue || undefined;
    } while (cont);
    first.metadata = { ...first.metadata, continue: undefined };
    return first;
  }

  create<T extends KubeObject = KubeObject>(res: ResourceRef, body: T, opts: WriteOptions = {}): Promise<T> {
    const namespace = this.ns(res, opts.namespace ?? body.metadata?.namespace);
    const name = opts.subresource ? body.metadata?.name : undefined;
    return this.request<T>({
      method: 'POST',
      path: resourcePath(res, { namespace, name, subresource: opts.subresource }),
      query: writeQuery(opts),
      body,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  /** PUT of a whole object (its metadata.name; resourceVersion guards against lost updates). */
  update<T extends KubeObject = KubeObject>(res: ResourceRef, body: T, opts: WriteOptions = {}): Promise<T> {
    const name = body.metadata?.name;
    if (!name) throw new Error(`update of ${res.resource} needs metadata.name`);
    return this.request<T>({
      method: 'PUT',
      path: resourcePath(res, {
        namespace: this.ns(res, opts.namespace ?? body.metadata?.namespace),
        name,
        subresource: opts.subresource,
      }),
      query: writeQuery(opts),
      body,
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  updateStatus<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    body: T,
    opts: WriteOptions = {},
  ): Promise<T> {
    return this.update(res, body, { ...opts, subresource: 'status' });
  }

  patch<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<T> {
    const type = opts.type ?? 'merge';
    return this.request<T>({
      method: 'PATCH',
      path: resourcePath(res, {
        namespace: this.ns(res, opts.namespace),
        name,
        subresource: opts.subresource,
      }),
      query: { ...writeQuery(opts), force: opts.force ? 'true' : undefined },
      body: patch,
      contentType: PATCH_CONTENT_TYPES[type],
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  /** DELETE of one object: the object (graceful deletion / finalizers) or a Success Status. */
  delete<T extends KubeObject = KubeObject>(
    res: ResourceRef,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<T | Status> {
    return this.request<T | Status>({
      method: 'DELETE',
      path: resourcePath(res, { namespace: this.ns(res, opts.namespace), name }),
      body: deleteBody(opts),
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  deleteCollection(res: ResourceRef, opts: ListOptions & DeleteOptions = {}): Promise<unknown> {
    return this.request<unknown>({
      method: 'DELETE',
      path: resourcePath(res, { namespace: opts.namespace }),
      query: listQuery(opts),
      body: deleteBody(opts),
      signal: opts.signal,
      timeoutMs: opts.timeoutMs,
    });
  }

  /**
   * Starts a watch (`?watch=true`) and returns it at once; iterate it with
   * `for await`, or pass `onEvent`. A non-2xx answer surfaces as the iterator's
   * error (a StatusError, e.g. 410 Expired for a too-old resourceVersion).
   */
  watch<T extends KubeObject = KubeObject>(res: ResourceRef, opts: WatchOptions<T> = {}): Watch<T> {
    const query: Record<string, QueryValue> = {
      ...listQuery(opts),
      watch: 'true',
      allowWatchBookmarks: opts.allowWatchBookmarks ? 'true' : undefined,
      sendInitialEvents: opts.sendInitialEvents === undefined ? undefined : String(opts.sendInitialEvents),
    };
    delete query.limit;
    delete query.continue;
    const path = resourcePath(res, { namespace: opts.namespace }) + queryString(query);
    const outer = opts.signal;
    const w = new Watch<T>(
      (signal) => this.transport.stream({ method: 'GET', path, signal, timeoutMs: 0 }),
      this.transport.host,
      opts,
    );
    if (outer) {
      if (outer.aborted) w.stop();
      else outer.addEventListener('abort', () => w.stop(), { once: true });
    }
    return w;
  }
}

function deleteBody(o: DeleteOptions): Record<string, unknown> | undefined {
  const body: Record<string, unknown> = {};
  if (o.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = o.gracePeriodSeconds;
  if (o.propagationPolicy) body.propagationPolicy = o.propagationPolicy;
  if (o.preconditions) body.preconditions = o.preconditions;
  if (o.dryRun) body.dryRun = ['All'];
  if (Object.keys(body).length === 0) return undefined;
  return { kind: 'DeleteOptions', apiVersion: 'v1', ...body };
}
