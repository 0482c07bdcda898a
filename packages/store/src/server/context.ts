// What every gRPC service of a member shares.
import { EtcdError } from '../errors.js';
import type { ResponseHeader } from '../messages.js';
import type { StateMachine } from '../mvcc/machine.js';
import type { Lessor } from '../node/lessor.js';
import type { RaftNode } from '../node/node.js';
import { trace } from '../node/trace.js';
import type { Transport } from '../node/transport.js';
import type { CallError, UnaryHandler } from './grpc-server.js';

export interface ServerContext {
  node: RaftNode;
  machine: StateMachine;
  lessor: Lessor;
  transport: Transport;
  clusterId: string;
  memberId: string;
  clusterToken: string;
  dbSize(): number;
  /** Members this one heard from lately (itself included). */
  activeMembers(): Set<string>;
}

export function header(ctx: ServerContext, rev = ctx.machine.mvcc.rev): ResponseHeader {
  return { cluster_id: ctx.clusterId, member_id: ctx.memberId, revision: rev, raft_term: ctx.node.term };
}

/** Turns any failure into the gRPC status a client should see. */
export function toServiceError(err: unknown): CallError {
  if (err instanceof EtcdError) return { code: err.code, details: err.message, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return { code: 13, details: message, message };
}

/** Adapts an async handler to the unary callback style; it gets the call's deadline too. */
export function unary<Req, Res>(fn: (req: Req, deadline: number) => Promise<Res>): UnaryHandler<Req, Res> {
  return (call, callback) => {
    trace('rpc-in');
    fn(call.request, call.deadline).then(
      (res) => {
        trace('rpc-out');
        callback(null, res);
      },
      (err: unknown) => callback(toServiceError(err)),
    );
  };
}
