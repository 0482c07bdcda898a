// etcdserverpb.Lease. Grant and revoke go through the log; keep-alives go to
// the leader only (it alone tracks deadlines), forwarded there by followers.
import { randomBytes } from 'node:crypto';
import { Errors } from '../errors.js';
import type { LeaseGrantRequest, LeaseRevokeRequest } from '../messages.js';
import { keyBuffer } from '../mvcc/keys.js';
import { MAX_LEASE_TTL } from '../mvcc/validate.js';
import { header, type ServerContext, toServiceError, unary } from './context.js';
import type { DuplexCall, ServiceImplementation } from './grpc-server.js';
import { write } from './kv.js';

/**
 * A fresh positive lease ID as a decimal string, below 2^53. etcd's IDs use 63
 * bits, but the responses leave through proto-loader's serializer, which turns an
 * int64 string into a double when protobufjs cannot load the `long` package (as in
 * the esbuild bundle): a larger ID came back to the client rounded, and every put
 * with it was "lease not found".
 */
function newLeaseId(): string {
  const b = randomBytes(8);
  b[0] = 0;
  b[1] &= 0x1f;
  const id = b.readBigUInt64BE(0);
  return id === 0n ? '1' : id.toString();
}

export async function renewLease(ctx: ServerContext, id: string): Promise<number> {
  if (ctx.node.isLeader) return ctx.lessor.renew(id);
  if (!ctx.node.leader) throw Errors.noLeader();
  return ctx.transport.leaseRenew(ctx.node.leader, id);
}

export function leaseService(ctx: ServerContext): ServiceImplementation {
  return {
    LeaseGrant: unary(async (req: LeaseGrantRequest, deadline) => {
      if (Number(req.TTL) > MAX_LEASE_TTL) throw Errors.leaseTTLTooLarge();
      const id = String(req.ID) === '0' ? newLeaseId() : String(req.ID);
      return write(ctx, { op: 'lease_grant', lease_grant: { ID: id, TTL: req.TTL } }, deadline);
    }),
    LeaseRevoke: unary(async (req: LeaseRevokeRequest, deadline) => {
      const resp = await write(ctx, { op: 'lease_revoke', lease_revoke: { ID: String(req.ID) } }, deadline);
      return { header: resp.header };
    }),
    LeaseKeepAlive: (stream: DuplexCall<{ ID: string }, unknown>) => {
      stream.on('data', (req: { ID: string }) => {
        const id = String(req.ID);
        renewLease(ctx, id).then(
          (ttl) => stream.write({ header: header(ctx), ID: id, TTL: ttl }),
          (err: unknown) => stream.destroy(toServiceError(err)),
        );
      });
      stream.on('end', () => stream.end());
    },
    LeaseTimeToLive: unary(async (req: { ID: string; keys: boolean }) => {
      await ctx.node.linearizableRead();
      const id = String(req.ID);
      const lease = ctx.machine.mvcc.leases.get(id);
      if (!lease) return { header: header(ctx), ID: id, TTL: -1, grantedTTL: 0, keys: [] };
      // Deadlines live on the leader; a follower asks it (or falls back to its own view).
      const remaining =
        ctx.node.isLeader || !ctx.node.leader
          ? ctx.lessor.remaining(id)
          : await ctx.transport
              .leaseRenew(ctx.node.leader, id, 'LeaseRemaining')
              .catch(() => ctx.lessor.remaining(id));
      return {
        header: header(ctx),
        ID: id,
        TTL: remaining,
        grantedTTL: lease.ttl,
        keys: req.keys ? [...lease.keys].sort().map(keyBuffer) : [],
      };
    }),
    LeaseLeases: unary(async () => {
      await ctx.node.linearizableRead();
      return { header: header(ctx), leases: [...ctx.machine.mvcc.leases.keys()].map((ID) => ({ ID })) };
    }),
  };
}
