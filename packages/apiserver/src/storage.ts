// The storage layer: Kubernetes objects as JSON values under
// /registry/<resource>/[<namespace>/]<name> in any store speaking etcd's v3 API.
// Every write is a Txn guarded on the key's revision, so a stale writer gets a
// conflict instead of silently overwriting.

import type { Histogram } from '@kubit/daemon';
import { Etcd3, type IKeyValue, type IOptions } from 'etcd3';

export interface StoredObject {
  key: string;
  obj: KObject;
  /** The store's mod_revision of the key: the object's resourceVersion. */
  rev: number;
}

/** A Kubernetes object as JSON. Shapes are checked by the schema before they get here. */
export type KObject = Record<string, unknown> & { metadata?: Record<string, unknown> };

export class CompactedError extends Error {
  constructor(readonly compactRevision: number) {
    super(`required revision has been compacted (oldest ${compactRevision})`);
  }
}

export type WriteResult = { ok: true; rev: number } | { ok: false; current: StoredObject | null };

export interface StoreOptions {
  endpoints: string[];
  caFile?: Buffer;
  certFile?: Buffer;
  keyFile?: Buffer;
  latency?: Histogram<'operation'>;
}

export function prefixEnd(prefix: string): Buffer {
  const b = Buffer.from(prefix);
  const end = Buffer.from(b);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

export function decodeKv(kv: IKeyValue): StoredObject {
  const obj = JSON.parse(kv.value.toString('utf8')) as KObject;
  const rev = Number(kv.mod_revision);
  setResourceVersion(obj, rev);
  return { key: kv.key.toString('utf8'), obj, rev };
}

export function setResourceVersion(obj: KObject, rev: number): void {
  if (!obj.metadata || typeof obj.metadata !== 'object') obj.metadata = {};
  obj.metadata.resourceVersion = String(rev);
}

/** Encodes without resourceVersion: it lives in the store's revision, not in the value. */
function encode(obj: KObject): Buffer {
  const meta = { ...(obj.metadata ?? {}) };
  delete meta.resourceVersion;
  return Buffer.from(JSON.stringify({ ...obj, metadata: meta }));
}

function isCompacted(err: unknown): number | undefined {
  const msg = err instanceof Error ? err.message : String(err);
  if (/compacted/i.test(msg)) return 0;
  return undefined;
}

export class Store {
  readonly client: Etcd3;
  private readonly latency?: Histogram<'operation'>;

  constructor(opts: StoreOptions) {
    const options: IOptions = {
      hosts: opts.endpoints,
      dialTimeout: 5000,
      // A list of many objects is one range response: gRPC's default 4 MiB receive
      // limit would turn a list of ~10,000 pods into a 500 (and trip the client's
      // circuit breaker). The store bounds what it sends; the apiserver takes it all.
      grpcOptions: { 'grpc.max_receive_message_length': -1 },
    };
    if (opts.caFile) {
      options.credentials = {
        rootCertificate: opts.caFile,
        ...(opts.certFile ? { certChain: opts.certFile } : {}),
        ...(opts.keyFile ? { privateKey: opts.keyFile } : {}),
      };
    }
    this.client = new Etcd3(options);
    this.latency = opts.latency;
  }

  private async timed<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const end = this.latency?.startTimer({ operation });
    try {
      return await fn();
    } finally {
      end?.();
    }
  }

  /** The store's current revision (a cheap read of one key). */
  async currentRevision(): Promise<number> {
    const r = await this.timed('revision', () =>
      this.client.kv.range({ key: Buffer.from('/registry/\0health'), limit: 1 }),
    );
    return Number(r.header.revision);
  }

  async get(key: string): Promise<StoredObject | null> {
    const r = await this.timed('get', () => this.client.kv.range({ key: Buffer.from(key) }));
    return r.kvs.length > 0 ? decodeKv(r.kvs[0]) : null;
  }

  /**
   * Keys under `prefix` from `startKey` (inclusive), at `revision` (0: latest).
   * Throws CompactedError when the revision is gone.
   */
  async range(
    prefix: string,
    opts: { startKey?: string; limit?: number; revision?: number } = {},
  ): Promise<{ items: StoredObject[]; more: boolean; revision: number }> {
    try {
      const r = await this.timed('list', () =>
        this.client.kv.range({
          key: Buffer.from(opts.startKey ?? prefix),
          range_end: prefixEnd(prefix),
          limit: opts.limit ?? 0,
          revision: opts.revision ?? 0,
        }),
      );
      return { items: r.kvs.map(decodeKv), more: r.more, revision: Number(r.header.revision) };
    } catch (err) {
      if (isCompacted(err) !== undefined) throw new CompactedError(0);
      throw err;
    }
  }

  /** Creates the key only if it does not exist. */
  async create(key: string, obj: KObject): Promise<WriteResult> {
    const k = Buffer.from(key);
    const r = await this.timed('create', () =>
      this.client.kv.txn({
        compare: [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key: k, value: encode(obj) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (r.succeeded) return { ok: true, rev: Number(r.header.revision) };
    const kvs = r.responses[0]?.response_range?.kvs ?? [];
    return { ok: false, current: kvs.length > 0 ? decodeKv(kvs[0]) : null };
  }

  /** Replaces the key only if its mod_revision is still `expectedRev`. */
  async update(key: string, obj: KObject, expectedRev: number): Promise<WriteResult> {
    const k = Buffer.from(key);
    const r = await this.timed('update', () =>
      this.client.kv.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: expectedRev }],
        success: [{ request_put: { key: k, value: encode(obj) } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (r.succeeded) return { ok: true, rev: Number(r.header.revision) };
    const kvs = r.responses[0]?.response_range?.kvs ?? [];
    return { ok: false, current: kvs.length > 0 ? decodeKv(kvs[0]) : null };
  }

  /** Deletes the key only if its mod_revision is still `expectedRev`. */
  async delete(key: string, expectedRev: number): Promise<WriteResult> {
    const k = Buffer.from(key);
    const r = await this.timed('delete', () =>
      this.client.kv.txn({
        compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: expectedRev }],
        success: [{ request_delete_range: { key: k } }],
        failure: [{ request_range: { key: k } }],
      }),
    );
    if (r.succeeded) return { ok: true, rev: Number(r.header.revision) };
    const kvs = r.responses[0]?.response_range?.kvs ?? [];
    return { ok: false, current: kvs.length > 0 ? decodeKv(kvs[0]) : null };
  }

  close(): void {
    this.client.close();
  }
}
