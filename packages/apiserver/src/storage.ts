// The storage layer: Kubernetes objects as JSON values under
// /registry/<resource>/[<namespace>/]<name> in any store speaking etcd's v3 API.
// Every write is a Txn guarded on the key's revision, so a stale writer gets a
// conflict instead of silently overwriting.

import type { UnstructuredObject } from '@kubit/api';
import type { Histogram } from '@kubit/daemon';
import { Etcd3, type IOptions } from 'etcd3';
import { GrpcError, type Guard, KvClient, type RawKv, type TxnOp, type TxnResult } from './etcdkv.js';
import { WrittenObjects } from './written.js';

export interface StoredObject {
  key: string;
  obj: KObject;
  /** The store's mod_revision of the key: the object's resourceVersion. */
  rev: number;
}

/** A Kubernetes object as JSON (@kubit/api's one definition). Shapes are checked by the schema before they get here. */
export type KObject = UnstructuredObject;

export class CompactedError extends Error {
  constructor(readonly compactRevision: number) {
    super(`required revision has been compacted (oldest ${compactRevision})`);
  }
}

export type WriteResult =
  | { ok: true; rev: number }
  | {
      ok: false;
      current: StoredObject | null;
      /** The claim keys found already held when the write failed (another object won them). */
      taken?: string[];
    };

/**
 * Keys an object holds beside its own (a Service's cluster IP and node ports), written
 * in the same Txn as the object: each claim is created only where no key is (so two
 * objects never hold one), each release deleted; the write happens whole or not at all.
 */
export interface SideKeys {
  claim: { key: string; value: string }[];
  release: string[];
}

/** A key and its value as stored, for keys that hold no Kubernetes object. */
export interface RawEntry {
  key: string;
  value: string;
  modRevision: number;
}

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

/** A key-value from either client (etcd3's watch gives revisions as strings). */
export interface KvLike {
  key: Buffer;
  value: Buffer;
  mod_revision: string | number;
}

export function decodeKv(kv: KvLike): StoredObject {
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

/** A store error as the REST layer reports it (a 500 naming the store's reason). */
function storeError(err: unknown): Error {
  if (err instanceof GrpcError) return new Error(`etcd: ${err.message}`);
  return err as Error;
}

export class Store {
  /** The general-purpose client: watches. */
  readonly client: Etcd3;
  /** The lean client of the request path: every read and guarded write. */
  private readonly kv: KvClient;
  /**
   * What this apiserver wrote, until its watch event arrives: the watch cache takes
   * the object from here instead of parsing back the bytes it just encoded.
   */
  readonly written = new WrittenObjects();
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
    this.kv = new KvClient({
      endpoints: opts.endpoints,
      ca: opts.caFile,
      cert: opts.certFile,
      key: opts.keyFile,
      dialTimeoutMs: 5000,
    });
    this.latency = opts.latency;
  }

  private async timed<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    const start = this.latency ? process.hrtime.bigint() : 0n;
    try {
      return await fn();
    } catch (err) {
      throw storeError(err);
    } finally {
      if (this.latency) this.latency.observe({ operation }, Number(process.hrtime.bigint() - start) / 1e9);
    }
  }

  /** The store's current revision (a cheap read of one key). */
  async currentRevision(): Promise<number> {
    const r = await this.timed('revision', () =>
      this.kv.range({ key: Buffer.from('/registry/\0health'), limit: 1 }),
    );
    return r.revision;
  }

  async get(key: string): Promise<StoredObject | null> {
    const r = await this.timed('get', () => this.kv.range({ key: Buffer.from(key) }));
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
        this.kv.range({
          key: Buffer.from(opts.startKey ?? prefix),
          rangeEnd: prefixEnd(prefix),
          limit: opts.limit ?? 0,
          revision: opts.revision ?? 0,
        }),
      );
      return { items: r.kvs.map(decodeKv), more: r.more, revision: r.revision };
    } catch (err) {
      if (isCompacted(err) !== undefined) throw new CompactedError(0);
      throw err;
    }
  }

  /** Keys and values under `prefix` as stored, at `revision` (0: latest). */
  async rawRange(prefix: string, revision = 0): Promise<{ entries: RawEntry[]; revision: number }> {
    const r = await this.timed('list', () =>
      this.kv.range({ key: Buffer.from(prefix), rangeEnd: prefixEnd(prefix), revision }),
    );
    return {
      entries: r.kvs.map((kv) => ({
        key: kv.key.toString('utf8'),
        value: kv.value.toString('utf8'),
        modRevision: kv.mod_revision,
      })),
      revision: r.revision,
    };
  }

  /** One key's value as stored, or null. */
  async rawGet(key: string): Promise<RawEntry | null> {
    const r = await this.timed('get', () => this.kv.range({ key: Buffer.from(key) }));
    const kv = r.kvs[0];
    return kv ? { key, value: kv.value.toString('utf8'), modRevision: kv.mod_revision } : null;
  }

  /** Creates a key holding no object only if it does not exist (the repair loop's re-claim). */
  async rawCreate(key: string, value: string): Promise<boolean> {
    const k = Buffer.from(key);
    const r = await this.timed('create', () =>
      this.kv.txn(
        { key: k, target: 'create', value: 0 },
        { put: { key: k, value: Buffer.from(value) } },
        { range: { key: k } },
      ),
    );
    return r.succeeded;
  }

  /** Deletes a key holding no object only if its mod_revision is still `expectedRev`. */
  async rawDelete(key: string, expectedRev: number): Promise<boolean> {
    const k = Buffer.from(key);
    const r = await this.timed('delete', () =>
      this.kv.txn(
        { key: k, target: 'mod', value: expectedRev },
        { delete: { key: k } },
        { range: { key: k } },
      ),
    );
    return r.succeeded;
  }

  /** Creates the key only if it does not exist (and claims `side`'s keys with it). */
  async create(key: string, obj: KObject, side?: SideKeys): Promise<WriteResult> {
    const k = Buffer.from(key);
    const value = encode(obj);
    const guard: Guard = { key: k, target: 'create', value: 0 };
    const r = await this.timed('create', () =>
      side
        ? this.sideTxn(guard, { put: { key: k, value } }, side)
        : this.kv.txn(guard, { put: { key: k, value } }, { range: { key: k } }),
    );
    return this.written.noteWrite(key, obj, value, writeResult(r, side));
  }

  /** Replaces the key only if its mod_revision is still `expectedRev`. */
  async update(key: string, obj: KObject, expectedRev: number, side?: SideKeys): Promise<WriteResult> {
    const k = Buffer.from(key);
    const value = encode(obj);
    const guard: Guard = { key: k, target: 'mod', value: expectedRev };
    const r = await this.timed('update', () =>
      side
        ? this.sideTxn(guard, { put: { key: k, value } }, side)
        : this.kv.txn(guard, { put: { key: k, value } }, { range: { key: k } }),
    );
    return this.written.noteWrite(key, obj, value, writeResult(r, side));
  }

  /** Deletes the key only if its mod_revision is still `expectedRev` (releasing `release` with it). */
  async delete(key: string, expectedRev: number, release: string[] = []): Promise<WriteResult> {
    const k = Buffer.from(key);
    const op: TxnOp = { delete: { key: k } };
    const guard: Guard = { key: k, target: 'mod', value: expectedRev };
    const r = await this.timed('delete', () =>
      release.length > 0
        ? this.sideTxn(guard, op, { claim: [], release })
        : this.kv.txn(guard, op, { range: { key: k } }),
    );
    return writeResult(r);
  }

  /**
   * The object's write and its side keys in one Txn: the object's guard and "no key yet"
   * for every claim must hold; on failure the object and every claim are read back, so
   * the caller can tell a lost object race from a taken claim.
   */
  private sideTxn(guard: Guard, write: TxnOp, side: SideKeys): Promise<TxnResult> {
    const claims = side.claim.map((c) => ({ key: Buffer.from(c.key), value: Buffer.from(c.value) }));
    return this.kv.multiTxn(
      [guard, ...claims.map((c): Guard => ({ key: c.key, target: 'create', value: 0 }))],
      [
        write,
        ...claims.map((c): TxnOp => ({ put: c })),
        ...side.release.map((key): TxnOp => ({ delete: { key: Buffer.from(key) } })),
      ],
      [{ range: { key: guard.key } }, ...claims.map((c): TxnOp => ({ range: { key: c.key } }))],
    );
  }

  close(): void {
    this.kv.close();
    this.client.close();
  }
}

function writeResult(r: TxnResult, side?: SideKeys): WriteResult {
  if (r.succeeded) return { ok: true, rev: r.revision };
  const current = r.rangeKvs.length > 0 ? decodeKv(r.rangeKvs[0] as RawKv) : null;
  if (!side) return { ok: false, current };
  const taken = side.claim.filter((_, i) => (r.responses[i + 1]?.length ?? 0) > 0).map((c) => c.key);
  return { ok: false, current, taken };
}
