// kubitstore.RaftPeer: raft messages from other members (a stream per peer,
// or a unary Send for snapshots), and lease
// keep-alives forwarded to this member while it leads.
import { Errors } from '../errors.js';
import type { RaftBatch } from '../messages.js';
import { messageFromWire } from '../node/wire.js';
import type { RaftStreamBatch } from '../wire/raft.js';
import { header, type ServerContext, toServiceError } from './context.js';
import type { DuplexCall, ServiceImplementation, UnaryCall, UnaryCallback } from './grpc-server.js';

/**
 * How often a stream's receiver acks. The sender only needs them to know the
 * peer is alive within a few election timeouts (Transport.activeSince); more
 * acks cost a stream write each, heartbeats included, on an idle cluster.
 */
const ACK_EVERY_MS = 250;

export function peerService(ctx: ServerContext, onClusterId: (id: string) => void): ServiceImplementation {
  return {
    Send: (call: UnaryCall<RaftBatch>, callback: UnaryCallback<unknown>) => {
      try {
        if (call.request.cluster_id) onClusterId(call.request.cluster_id);
        ctx.node.receive(call.request.messages.map(messageFromWire));
        callback(null, {});
      } catch (err) {
        callback(toServiceError(err));
      }
    },
    Stream: (call: DuplexCall<RaftStreamBatch, unknown>) => {
      // Acks tell the sender we are alive (its view of started members); a few
      // per second are plenty (see ACK_EVERY_MS).
      let lastAck = 0;
      call.on('data', (batch: RaftStreamBatch) => {
        try {
          if (batch.cluster_id) onClusterId(batch.cluster_id);
          ctx.node.receive(batch.messages);
        } catch (err) {
          // A malformed batch ends this stream; the sender dials again.
          call.destroy(toServiceError(err));
          return;
        }
        const now = Date.now();
        if (now - lastAck >= ACK_EVERY_MS) {
          lastAck = now;
          call.write({});
        }
      });
      call.on('end', () => call.end());
    },
    LeaseRenew: (call: UnaryCall<{ ID: string }>, callback: UnaryCallback<unknown>) => {
      if (!ctx.node.isLeader) {
        callback(toServiceError(Errors.notLeader()));
        return;
      }
      const id = String(call.request.ID);
      callback(null, { header: header(ctx), ID: id, TTL: ctx.lessor.renew(id) });
    },
    LeaseRemaining: (call: UnaryCall<{ ID: string }>, callback: UnaryCallback<unknown>) => {
      if (!ctx.node.isLeader) {
        callback(toServiceError(Errors.notLeader()));
        return;
      }
      const id = String(call.request.ID);
      callback(null, { header: header(ctx), ID: id, TTL: ctx.lessor.remaining(id) });
    },
  };
}
