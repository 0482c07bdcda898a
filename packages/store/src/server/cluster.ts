// etcdserverpb.Cluster and Maintenance: membership through raft conf changes,
// with etcd's strict reconfiguration checks (never lose quorum by accident).
import { createHash } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import { Errors, EtcdError } from '../errors.js';
import type { Member, MemberInfo } from '../messages.js';
import { codecs } from '../proto.js';
import type { RaftStatus } from '../raft/index.js';
import { header, type ServerContext, unary } from './context.js';
import type { ServiceImplementation } from './grpc-server.js';

export const VERSION = '3.5.13';

/** A 64-bit ID from a hash, as a decimal string (etcd derives member and cluster IDs this way). */
export function hashId(...parts: string[]): string {
  const h = createHash('sha1').update(parts.join('')).digest();
  const id = h.readBigUInt64BE(0);
  return id.toString();
}

/** A member's ID from its peer URLs and the cluster token: every member computes the same. */
export function memberId(peerUrls: string[], token: string): string {
  return hashId([...peerUrls].sort().join(','), token);
}

export function toMember(m: MemberInfo): Member {
  return {
    ID: m.id,
    name: m.name,
    peerURLs: m.peer_urls,
    clientURLs: m.client_urls,
    isLearner: m.is_learner,
  };
}

function members(ctx: ServerContext): Member[] {
  return [...ctx.machine.members.values()].map(toMember);
}

function validUrls(urls: string[]): boolean {
  if (urls.length === 0) return false;
  return urls.every((u) => {
    try {
      const p = new URL(u);
      return (p.protocol === 'http:' || p.protocol === 'https:') && p.port !== '' && p.pathname === '/';
    } catch {
      return false;
    }
  });
}

/** A learner may be promoted once it has 90% of what the leader has (etcd's rule). */
const LEARNER_READY_FRACTION = 0.9;

export interface ClusterServiceOptions {
  /** The raft core's status (with every member's progress while this member leads). */
  raftStatus(): RaftStatus;
  /** A client for the Cluster service of the member at `clientUrl` (to forward a promote to the leader). */
  dialMember(clientUrl: string): grpc.Client;
}

/** Whether learner `id` has caught up, in the leader's progress. */
function learnerReady(status: RaftStatus, id: string): boolean {
  const learner = status.progress?.[id];
  const leader = status.progress?.[status.id];
  if (!learner || !leader) return false;
  return learner.match >= leader.match * LEARNER_READY_FRACTION;
}

type PromoteStub = grpc.Client & {
  MemberPromote(
    req: { ID: string },
    opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, resp: unknown) => void,
  ): void;
};

/** Only the leader knows how far a learner is: a follower asks the leader. */
function forwardPromote(ctx: ServerContext, opts: ClusterServiceOptions, id: string): Promise<unknown> {
  const leader = ctx.machine.members.get(ctx.node.leader);
  const url = leader?.client_urls[0];
  if (!ctx.node.leader || !url) return Promise.reject(Errors.noLeader());
  const stub = opts.dialMember(url) as PromoteStub;
  return new Promise((res, rej) => {
    stub.MemberPromote({ ID: id }, { deadline: Date.now() + 7000 }, (err, resp) => {
      stub.close();
      if (err) rej(new EtcdError(err.code, err.details || err.message));
      else res(resp);
    });
  });
}

export function clusterService(ctx: ServerContext, opts: ClusterServiceOptions): ServiceImplementation {
  const voters = () => [...ctx.machine.members.values()].filter((m) => !m.is_learner);
  // etcd's "started": the member has published its name through the log. The
  // leader, which exchanges messages with every member, also requires that it
  // heard from it lately; a follower only talks to the leader, so its own
  // traffic says nothing about the others.
  const started = (m: MemberInfo) => m.name !== '' && (!ctx.node.isLeader || ctx.activeMembers().has(m.id));
  return {
    MemberList: unary(async () => ({ header: header(ctx), members: members(ctx) })),
    MemberAdd: unary(async (req: { peerURLs: string[]; isLearner: boolean }) => {
      if (!validUrls(req.peerURLs)) throw Errors.memberBadURLs();
      for (const m of ctx.machine.members.values()) {
        if (m.peer_urls.some((u) => req.peerURLs.includes(u))) throw Errors.peerURLExist();
      }
      if (!req.isLearner) {
        const vs = voters();
        const nstarted = vs.filter(started).length;
        const nmembers = vs.length + 1;
        // Adding a second member to a one-member cluster is allowed (that is how clusters grow).
        if (!(nstarted === 1 && nmembers === 2) && nstarted < Math.floor(nmembers / 2) + 1) {
          throw Errors.memberNotEnoughStarted();
        }
      }
      const id = memberId(req.peerURLs, ctx.clusterToken);
      if (ctx.machine.members.has(id)) throw Errors.memberExist();
      const info: MemberInfo = {
        id,
        name: '',
        peer_urls: req.peerURLs,
        client_urls: [],
        is_learner: req.isLearner,
      };
      await ctx.node.proposeConfChange({
        type: req.isLearner ? 'addLearner' : 'addNode',
        nodeId: id,
        context: codecs.memberInfo.encode(info),
      });
      return { header: header(ctx), member: toMember(info), members: members(ctx) };
    }),
    MemberRemove: unary(async (req: { ID: string }) => {
      const id = String(req.ID);
      const target = ctx.machine.members.get(id);
      if (!target) throw Errors.memberNotFound();
      if (!target.is_learner) {
        const rest = voters().filter((m) => m.id !== id);
        const nstarted = rest.filter(started).length;
        if (nstarted < Math.floor(rest.length / 2) + 1) throw Errors.memberNotEnoughStarted();
      }
      await ctx.node.proposeConfChange({ type: 'removeNode', nodeId: id });
      return { header: header(ctx), members: members(ctx) };
    }),
    MemberPromote: unary(async (req: { ID: string }) => {
      const id = String(req.ID);
      const target = ctx.machine.members.get(id);
      if (!target) throw Errors.memberNotFound();
      if (!target.is_learner) throw Errors.memberNotLearner();
      if (!ctx.node.isLeader) return forwardPromote(ctx, opts, id);
      if (!learnerReady(opts.raftStatus(), id)) throw Errors.learnerNotReady();
      await ctx.node.proposeConfChange({ type: 'promote', nodeId: id });
      return { header: header(ctx), members: members(ctx) };
    }),
    MemberUpdate: unary(async () => {
      throw Errors.memberBadURLs();
    }),
  };
}

export function maintenanceService(ctx: ServerContext): ServiceImplementation {
  return {
    Status: unary(async () => {
      const self = ctx.machine.members.get(ctx.memberId);
      return {
        header: header(ctx),
        version: VERSION,
        dbSize: ctx.dbSize(),
        leader: ctx.node.leader || '0',
        raftIndex: ctx.node.commitIndex,
        raftTerm: ctx.node.term,
        raftAppliedIndex: ctx.machine.appliedIndex,
        errors: [],
        dbSizeInUse: ctx.dbSize(),
        isLearner: self?.is_learner ?? false,
      };
    }),
    Alarm: unary(async () => ({ header: header(ctx), alarms: [] })),
    HashKV: unary(async () => ({
      header: header(ctx),
      hash: 0,
      compact_revision: ctx.machine.mvcc.compactRev,
    })),
    MoveLeader: unary(async (req: { targetID: string }) => {
      const id = String(req.targetID);
      if (!ctx.machine.members.has(id)) throw Errors.badLeaderTransferee();
      ctx.node.transferLeader(id);
      return { header: header(ctx) };
    }),
  };
}
