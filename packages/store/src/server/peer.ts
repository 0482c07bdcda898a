// kubitstore.RaftPeer: raft messages from other members (a stream per peer,
// or a unary Send for snapshots), and lease
// keep-alives forwarded to this member while it leads.
import type * as grpc from '@grpc/grpc-js';
import { Errors } from '../errors.js';
import { messageFromWire } from '../node/wire.js';
import type { RaftBatch } from '../proto.js';
import type { RaftStreamBatch } from '../wire/raft.js';
import { header, type ServerContext, toServiceError } from './context.js';

/**
 * How often a stream's receiver acks. The sender only needs them to know the
 * peer is alive within a few election timeouts (Transport.activeSince); more
 * acks cost a stream write each, heartbeats included, on an idle cluster.
 */
const ACK_EVERY_MS = 250;

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
    Stream: (call: grpc.ServerDuplexStream<RaftStreamBatch, unknown>) => {
      // Acks tell the sender we are alive (its view of started members); a few
      // per second are plenty (see ACK_EVERY_MS).
      let lastAck = 0;
      call.on('data', (batch: RaftStreamBatch) => {
        try {
          if (batch.cluster_id) onClusterId(batch.cluster_id);
          ctx.node.receive(batch.messages);
        } catch (err) {
          // A malformed batch ends this stream; the sender dials again.
          call.destroy(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        const now = Date.now();
        if (now - lastAck >= ACK_EVERY_MS) {
          lastAck = now;
          call.write({});
        }
      });
      call.on('end', () => call.end());
      call.on('error', () => {
        // The peer went away; it will open a new stream.
      });
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
