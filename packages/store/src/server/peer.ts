// kubitstore.RaftPeer: raft messages from other members, and lease
// keep-alives forwarded to this member while it leads.
import type * as grpc from '@grpc/grpc-js';
import { Errors } from '../errors.js';
import { messageFromWire } from '../node/wire.js';
import type { RaftBatch } from '../proto.js';
import { header, type ServerContext, toServiceError } from './context.js';

export function peerService(
  ctx: ServerContext,
  onClusterId: (id: string) => void,
): grpc.UntypedServiceImplementation {
  return {
    Send: (call: grpc.ServerUnaryCall<RaftBatch, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      try {
        if (call.request.cluster_id) onClusterId(call.request.cluster_id);
        ctx.node.receive(call.request.messages.map(messageFromWire));
        callback(null, {});
      } catch (err) {
        callback(toServiceError(err) as grpc.ServiceError);
      }
    },
    LeaseRenew: (
      call: grpc.ServerUnaryCall<{ ID: string }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      if (!ctx.node.isLeader) {
        callback(toServiceError(Errors.notLeader()) as grpc.ServiceError);
        return;
      }
      const id = String(call.request.ID);
      callback(null, { header: header(ctx), ID: id, TTL: ctx.lessor.renew(id) });
    },
    LeaseRemaining: (
      call: grpc.ServerUnaryCall<{ ID: string }, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      if (!ctx.node.isLeader) {
        callback(toServiceError(Errors.notLeader()) as grpc.ServiceError);
        return;
      }
      const id = String(call.request.ID);
      callback(null, { header: header(ctx), ID: id, TTL: ctx.lessor.remaining(id) });
    },
  };
}
