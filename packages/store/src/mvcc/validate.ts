// Checks etcd makes before a request is proposed: they need no state, so bad
// requests are refused at once and never reach the log.
import { Errors } from '../errors.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../messages.js';
import { type KeyRange, keyString, toKeyRange } from './keys.js';

/** etcd's default --max-request-bytes. */
export const MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
/** etcd's default --max-txn-ops. */
export const MAX_TXN_OPS = 128;
/** etcd's MaxLeaseTTL. */
export const MAX_LEASE_TTL = 9_000_000_000;

export function validateRange(req: RangeRequest): void {
  if (!req.key || req.key.length === 0) throw Errors.emptyKey();
}

export function validatePut(req: PutRequest): void {
  if (!req.key || req.key.length === 0) throw Errors.emptyKey();
  if (req.ignore_value && req.value && req.value.length !== 0) throw Errors.valueProvided();
  if (req.ignore_lease && String(req.lease) !== '0') throw Errors.leaseProvided();
}

export function validateDeleteRange(req: DeleteRangeRequest): void {
  if (!req.key || req.key.length === 0) throw Errors.emptyKey();
}

export function validateTxn(req: TxnRequest): void {
  if (
    req.compare.length > MAX_TXN_OPS ||
    req.success.length > MAX_TXN_OPS ||
    req.failure.length > MAX_TXN_OPS
  ) {
    throw Errors.tooManyOps();
  }
  for (const c of req.compare) if (!c.key || c.key.length === 0) throw Errors.emptyKey();
  for (const ops of [req.success, req.failure]) {
    for (const op of ops) validateOp(op);
  }
  checkIntervals(req.success);
  checkIntervals(req.failure);
}

function validateOp(op: RequestOp): void {
  if (op.request_range) validateRange(op.request_range);
  else if (op.request_put) validatePut(op.request_put);
  else if (op.request_delete_range) validateDeleteRange(op.request_delete_range);
  else if (op.request_txn) validateTxn(op.request_txn);
}

function intersects(r: KeyRange, key: string): boolean {
  if (r.kind === 'single') return r.key === key;
  return key >= r.start && (r.end === undefined || key < r.end);
}

/** No key may be written twice in one txn (two puts, or a put inside a deleted range). */
function checkIntervals(ops: RequestOp[]): { puts: Set<string>; dels: KeyRange[] } {
  const dels: KeyRange[] = [];
  for (const op of ops) {
    if (op.request_delete_range)
      dels.push(toKeyRange(op.request_delete_range.key, op.request_delete_range.range_end));
  }
  const puts = new Set<string>();
  const addPut = (k: string) => {
    if (puts.has(k) || dels.some((d) => intersects(d, k))) throw Errors.duplicateKey();
    puts.add(k);
  };
  for (const op of ops) {
    if (op.request_txn) {
      const then = checkIntervals(op.request_txn.success);
      const otherwise = checkIntervals(op.request_txn.failure);
      const branchPuts = new Set([...then.puts, ...otherwise.puts]);
      for (const k of branchPuts) addPut(k);
      dels.push(...then.dels, ...otherwise.dels);
    } else if (op.request_put) {
      addPut(keyString(op.request_put.key));
    }
  }
  return { puts, dels };
}
