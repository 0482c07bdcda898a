// etcd's KV semantics (range options, put flags, delete, compare, txn) on top
// of the MVCC state. Deterministic: every member computes the same result.
import { Errors } from '../errors.js';
import type {
  Compare,
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from '../messages.js';
import { valueArena } from '../wire/arena.js';
import { keyBuffer, keyString, toKeyRange } from './keys.js';
import type { KvRecord, MvccState, WriteTxn } from './store.js';

const EMPTY = Buffer.alloc(0);

export function toKeyValue(r: KvRecord, keysOnly = false): KeyValue {
  return {
    key: keyBuffer(r.key),
    create_revision: r.create,
    mod_revision: r.mod,
    version: r.version,
    value: keysOnly ? EMPTY : r.value,
    lease: r.lease,
  };
}

/** A tombstone as etcd reports it in a DELETE event: the key and the deletion revision. */
export function toDeletedKeyValue(r: KvRecord): KeyValue {
  return {
    key: keyBuffer(r.key),
    create_revision: 0,
    mod_revision: r.mod,
    version: 0,
    value: EMPTY,
    lease: 0,
  };
}

const n = (v: string | number | undefined | null): number => (v === undefined || v === null ? 0 : Number(v));

enum SortOrder {
  None = 0,
  Ascend = 1,
  Descend = 2,
}

function sortValue(r: KvRecord, target: number): number | string | Buffer {
  switch (target) {
    case 1:
      return r.version;
    case 2:
      return r.create;
    case 3:
      return r.mod;
    case 4:
      return r.value;
    default:
      return r.key;
  }
}

function compareValues(a: number | string | Buffer, b: number | string | Buffer): number {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return Buffer.compare(a, b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A range read; `readRev` is what "current" means (inside a txn: the txn's own view). */
export function range(state: MvccState, req: RangeRequest, readRev = state.rev): RangeResponse {
  const rev = n(req.revision) <= 0 ? readRev : state.checkReadRev(n(req.revision));
  const r = toKeyRange(req.key, req.range_end);
  const all = state.range(r, rev);
  const count = all.length;
  if (req.count_only) return { header: { revision: readRev }, kvs: [], more: false, count };
  const minMod = n(req.min_mod_revision);
  const maxMod = n(req.max_mod_revision);
  const minCreate = n(req.min_create_revision);
  const maxCreate = n(req.max_create_revision);
  let kvs = all;
  if (minMod || maxMod || minCreate || maxCreate) {
    kvs = kvs.filter(
      (kv) =>
        (!minMod || kv.mod >= minMod) &&
        (!maxMod || kv.mod <= maxMod) &&
        (!minCreate || kv.create >= minCreate) &&
        (!maxCreate || kv.create <= maxCreate),
    );
  }
  let order = req.sort_order as SortOrder;
  const target = req.sort_target;
  // etcd sorts ascending when a target other than the key is named without an order.
  if (order === SortOrder.None && target !== 0) order = SortOrder.Ascend;
  if (order !== SortOrder.None && !(order === SortOrder.Ascend && target === 0)) {
    // Stable in both directions: ties keep key order, as etcd's answers show.
    const dir = order === SortOrder.Descend ? -1 : 1;
    kvs = [...kvs].sort((a, b) => dir * compareValues(sortValue(a, target), sortValue(b, target)));
  }
  const limit = n(req.limit);
  let more = false;
  if (limit > 0 && kvs.length > limit) {
    kvs = kvs.slice(0, limit);
    more = true;
  }
  return { header: { revision: readRev }, kvs: kvs.map((kv) => toKeyValue(kv, req.keys_only)), more, count };
}

function checkPut(state: MvccState, req: PutRequest): void {
  const key = keyString(req.key);
  if (req.ignore_value || req.ignore_lease) {
    if (!state.get(key)) throw Errors.keyNotFound();
  }
  const lease = String(req.lease ?? '0');
  if (!req.ignore_lease && lease !== '0' && !state.leases.has(lease)) throw Errors.leaseNotFound();
}

export function put(state: MvccState, tx: WriteTxn, req: PutRequest): PutResponse {
  const key = keyString(req.key);
  const current = state.get(key);
  const value = req.ignore_value && current ? current.value : valueArena.copy(req.value ?? EMPTY);
  const lease = req.ignore_lease && current ? current.lease : String(req.lease ?? '0');
  const { prev } = tx.put(key, value, lease);
  const resp: PutResponse = { header: { revision: tx.rev } };
  if (req.prev_kv && prev) resp.prev_kv = toKeyValue(prev);
  return resp;
}

export function deleteRange(tx: WriteTxn, req: DeleteRangeRequest): DeleteRangeResponse {
  const victims = tx.deleteRange(toKeyRange(req.key, req.range_end));
  return {
    header: { revision: tx.readRev },
    deleted: victims.length,
    prev_kvs: req.prev_kv ? victims.map((v) => toKeyValue(v)) : [],
  };
}

function compareOne(c: Compare, kv: KvRecord | undefined): boolean {
  let cmp: number;
  switch (c.target) {
    case 3: {
      const v = kv ? kv.value : EMPTY;
      cmp = Buffer.compare(v, Buffer.from(c.value ?? EMPTY));
      break;
    }
    case 1:
      cmp = Math.sign((kv ? kv.create : 0) - n(c.create_revision));
      break;
    case 2:
      cmp = Math.sign((kv ? kv.mod : 0) - n(c.mod_revision));
      break;
    case 4: {
      const a = BigInt(kv ? kv.lease : '0');
      const b = BigInt(c.lease ?? '0');
      cmp = a < b ? -1 : a > b ? 1 : 0;
      break;
    }
    default:
      cmp = Math.sign((kv ? kv.version : 0) - n(c.version));
  }
  switch (c.result) {
    case 0:
      return cmp === 0;
    case 1:
      return cmp > 0;
    case 2:
      return cmp < 0;
    case 3:
      return cmp !== 0;
    default:
      return false;
  }
}

export function evalCompare(state: MvccState, c: Compare): boolean {
  const kvs = state.range(toKeyRange(c.key, c.range_end));
  if (kvs.length === 0) {
    // A missing key has no value to compare against.
    if (c.target === 3) return false;
    return compareOne(c, undefined);
  }
  return kvs.every((kv) => compareOne(c, kv));
}

/** Checks the ops of the branch a txn will take before anything is applied (nothing half-applied). */
function checkTxnOps(state: MvccState, ops: RequestOp[]): void {
  for (const op of ops) {
    if (op.request_put) checkPut(state, op.request_put);
    else if (op.request_txn) {
      const t = op.request_txn;
      checkTxnOps(state, t.compare.every((c) => evalCompare(state, c)) ? t.success : t.failure);
    } else if (op.request_range && n(op.request_range.revision) > 0) {
      state.checkReadRev(n(op.request_range.revision));
    }
  }
}

function execTxn(state: MvccState, tx: WriteTxn, req: TxnRequest): TxnResponse {
  const succeeded = req.compare.every((c) => evalCompare(state, c));
  const ops = succeeded ? req.success : req.failure;
  const responses: ResponseOp[] = [];
  for (const op of ops) {
    if (op.request_range) responses.push({ response_range: range(state, op.request_range, tx.readRev) });
    else if (op.request_put) responses.push({ response_put: put(state, tx, op.request_put) });
    else if (op.request_delete_range)
      responses.push({ response_delete_range: deleteRange(tx, op.request_delete_range) });
    else if (op.request_txn) responses.push({ response_txn: execTxn(state, tx, op.request_txn) });
  }
  return { header: {}, succeeded, responses };
}

export type TxnResponseT = TxnResponse;

export function txn(state: MvccState, tx: WriteTxn, req: TxnRequest): TxnResponse {
  const succeeded = req.compare.every((c) => evalCompare(state, c));
  checkTxnOps(state, succeeded ? req.success : req.failure);
  return execTxn(state, tx, req);
}

export function checkedPut(state: MvccState, tx: WriteTxn, req: PutRequest): PutResponse {
  checkPut(state, req);
  return put(state, tx, req);
}

/** True if the txn (with nested txns) only reads: it can be served like a range. */
export function isReadOnlyTxn(req: TxnRequest): boolean {
  const ro = (ops: RequestOp[]): boolean =>
    ops.every((op) => op.request_range || (op.request_txn && isReadOnlyTxn(op.request_txn)));
  return ro(req.success) && ro(req.failure);
}

/** Read-only txn against the current state. */
export function readTxn(state: MvccState, req: TxnRequest): TxnResponse {
  const tx = state.begin();
  const resp = txn(state, tx, req);
  return resp;
}
