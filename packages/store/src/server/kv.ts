// etcdserverpb.KV: reads are served from memory after a ReadIndex round
// (linearizable) or at once (serializable); writes go through the log.
import { Errors } from '../errors.js';
import type {
  Command,
  CompactionRequest,
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  TxnRequest,
} from '../messages.js';
import * as kv from '../mvcc/kv.js';
import {
  MAX_REQUEST_BYTES,
  validateDeleteRange,
  validatePut,
  validateRange,
  validateTxn,
} from '../mvcc/validate.js';
import { header, type ServerContext, unary } from './context.js';
import { deadlinePassed, type ServiceImplementation } from './grpc-server.js';

/**
 * Proposes a write and returns its response with a filled-in header. A
 * write whose client stopped waiting (its deadline passed) before it reached
 * raft is refused and never applied; once proposed it runs to the end, as in
 * etcd, whose proposal takes the request's context.
 */
export async function write(
  ctx: ServerContext,
  cmd: Omit<Command, 'origin' | 'id'>,
  deadline = Number.POSITIVE_INFINITY,
): Promise<Record<string, unknown>> {
  if (deadlinePassed(deadline)) throw Errors.deadlineExceeded();
  const result = await ctx.node.propose(cmd, MAX_REQUEST_BYTES);
  if (!result.ok) throw result.error;
  const value = (result.value ?? {}) as Record<string, unknown>;
  return { ...value, header: header(ctx, result.rev) };
}

export function kvService(ctx: ServerContext): ServiceImplementation {
  return {
    Range: unary(async (req: RangeRequest) => {
      validateRange(req);
      if (!req.serializable) await ctx.node.linearizableRead();
      const resp = kv.range(ctx.machine.mvcc, req);
      resp.header = header(ctx);
      return resp;
    }),
    Put: unary(async (req: PutRequest, deadline) => {
      validatePut(req);
      return write(ctx, { op: 'put', put: req }, deadline);
    }),
    DeleteRange: unary(async (req: DeleteRangeRequest, deadline) => {
      validateDeleteRange(req);
      return write(ctx, { op: 'delete_range', delete_range: req }, deadline);
    }),
    Txn: unary(async (req: TxnRequest, deadline) => {
      validateTxn(req);
      if (kv.isReadOnlyTxn(req)) {
        await ctx.node.linearizableRead();
        const resp = kv.readTxn(ctx.machine.mvcc, req);
        resp.header = header(ctx);
        return resp;
      }
      return write(ctx, { op: 'txn', txn: req }, deadline);
    }),
    Compact: unary(async (req: CompactionRequest, deadline) =>
      write(ctx, { op: 'compaction', compaction: req }, deadline),
    ),
  };
}
