// etcdserverpb.KV: reads are served from memory after a ReadIndex round
// (linearizable) or at once (serializable); writes go through the log.
import * as kv from '../mvcc/kv.js';
import {
  MAX_REQUEST_BYTES,
  validateDeleteRange,
  validatePut,
  validateRange,
  validateTxn,
} from '../mvcc/validate.js';
import type {
  Command,
  CompactionRequest,
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  TxnRequest,
} from '../proto.js';
import { header, type ServerContext, unary } from './context.js';
import type { ServiceImplementation } from './grpc-server.js';

/** Proposes a write and returns its response with a filled-in header. */
export async function write(
  ctx: ServerContext,
  cmd: Omit<Command, 'origin' | 'id'>,
): Promise<Record<string, unknown>> {
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
    Put: unary(async (req: PutRequest) => {
      validatePut(req);
      return write(ctx, { op: 'put', put: req });
    }),
    DeleteRange: unary(async (req: DeleteRangeRequest) => {
      validateDeleteRange(req);
      return write(ctx, { op: 'delete_range', delete_range: req });
    }),
    Txn: unary(async (req: TxnRequest) => {
      validateTxn(req);
      if (kv.isReadOnlyTxn(req)) {
        await ctx.node.linearizableRead();
        const resp = kv.readTxn(ctx.machine.mvcc, req);
        resp.header = header(ctx);
        return resp;
      }
      return write(ctx, { op: 'txn', txn: req });
    }),
    Compact: unary(async (req: CompactionRequest) => write(ctx, { op: 'compaction', compaction: req })),
  };
}
