// One kubit-store member: level DB, raft node, state machine, and the client
// (etcd v3 gRPC) and peer (raft) servers.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '@kubit/daemon';
import { Level } from 'level';
import { Errors } from '../errors.js';
import type { MemberInfo } from '../messages.js';
import { StateMachine } from '../mvcc/machine.js';
import { MAX_REQUEST_BYTES } from '../mvcc/validate.js';
import { Lessor } from '../node/lessor.js';
import { RaftLog } from '../node/log.js';
import { RaftNode } from '../node/node.js';
import { Transport } from '../node/transport.js';
import { codecs, etcdServices, RaftPeerService, serverServices } from '../proto.js';
import { type ConfChange, EntryType, encodeConfChange, RawNode } from '../raft/index.js';
import { processWalFs } from '../wal/fs.js';
import { clusterService, hashId, maintenanceService, memberId } from './cluster.js';
import type { ServerContext } from './context.js';
import { GrpcServer, type TlsFiles } from './grpc-server.js';
import type { KeepaliveOptions } from './keepalive.js';
import { kvService, write } from './kv.js';
import { leaseService } from './lease.js';
import { peerService } from './peer.js';
import { WatchHub } from './watch.js';

export type { TlsFiles };

export interface MemberConfig {
  name: string;
  dataDir: string;
  listenClientUrls: string[];
  advertiseClientUrls: string[];
  listenPeerUrls: string[];
  initialAdvertisePeerUrls: string[];
  /** name -> peer URLs */
  initialCluster: Map<string, string[]>;
  initialClusterState: 'new' | 'existing';
  initialClusterToken: string;
  snapshotCount: number;
  tickMs: number;
  electionTicks: number;
  clientTls?: TlsFiles;
  peerTls?: TlsFiles;
  /** The client server's connection policy (etcd's --grpc-keepalive-* and --max-concurrent-streams). */
  grpc: ClientGrpcConfig;
  logger: Logger;
}

export interface ClientGrpcConfig {
  keepalive: KeepaliveOptions;
  maxConcurrentStreams: number;
  maxStreamBufferedBytes: number;
}

/**
 * How long a shutdown lets client calls in flight finish: etcd's request
 * timeout (5 s plus two election timeouts), which bounds its graceful stop.
 */
export function shutdownGraceMs(cfg: Pick<MemberConfig, 'tickMs' | 'electionTicks'>): number {
  return 5000 + 2 * cfg.electionTicks * cfg.tickMs;
}

export interface RunningMember {
  id: string;
  clusterId: string;
  node: RaftNode;
  machine: StateMachine;
  clientPorts: number[];
  stop(): Promise<void>;
}

function clientCreds(tls: TlsFiles | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(
    tls.trustedCaFile ? readFileSync(tls.trustedCaFile) : null,
    readFileSync(tls.keyFile),
    readFileSync(tls.certFile),
  );
}

function hostPort(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${defaultPort(u)}`;
}

function defaultPort(u: URL): number {
  return Number(u.port || (u.protocol === 'https:' ? 443 : 80));
}

/** Serves `server` at a listen URL (https: with the TLS files); resolves with the port. */
function listenAt(server: GrpcServer, url: string, tls: TlsFiles | undefined): Promise<number> {
  const u = new URL(url);
  if (u.protocol === 'https:' && !tls) throw new Error(`${url}: an https URL needs TLS cert and key files`);
  return server.listen(u.hostname, defaultPort(u), u.protocol === 'https:' ? tls : undefined);
}

/** This member's id and the members --initial-cluster names, checked to include this one. */
function initialMembership(cfg: MemberConfig): { selfId: string; initialMembers: MemberInfo[] } {
  const selfId = memberId(cfg.initialAdvertisePeerUrls, cfg.initialClusterToken);
  const initialMembers: MemberInfo[] = [...cfg.initialCluster].map(([name, urls]) => ({
    id: memberId(urls, cfg.initialClusterToken),
    name,
    peer_urls: urls,
    client_urls: [],
    is_learner: false,
  }));
  if (!initialMembers.some((m) => m.id === selfId)) {
    throw new Error(
      `--initial-advertise-peer-urls ${cfg.initialAdvertisePeerUrls.join(',')} is not listed for any member in --initial-cluster`,
    );
  }
  return { selfId, initialMembers };
}

/**
 * Opens the member's state in `dataDir`: the state machine and the raft log as
 * the last run left them, or, for a new cluster's first start, a log that
 * begins with one ConfChange per initial member. The cluster id is stored;
 * a member joining an existing cluster learns it from its first peer ('0' until then).
 */
async function openMemberState(cfg: MemberConfig, initialMembers: MemberInfo[]) {
  mkdirSync(cfg.dataDir, { recursive: true });
  const db = new Level<Buffer, Buffer>(join(cfg.dataDir, 'member'), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await db.open();
  const storedClusterId = await db.get(Buffer.from('m:cluster'));
  const clusterId =
    storedClusterId?.toString() ??
    (cfg.initialClusterState === 'new'
      ? hashId(
          initialMembers
            .map((m) => m.id)
            .sort()
            .join(','),
          cfg.initialClusterToken,
        )
      : '0');

  const machine = new StateMachine(db, {
    minLeaseTTL: Math.ceil((1.5 * cfg.electionTicks * cfg.tickMs) / 1000),
  });
  await machine.load();
  const raftLog = await RaftLog.open(db, machine.appliedIndex, {
    walDir: join(cfg.dataDir, 'wal'),
    logger: cfg.logger,
    fs: processWalFs(),
  });

  if (raftLog.isEmpty && cfg.initialClusterState === 'new') {
    const entries = initialMembers.map((m, i) => {
      const cc: ConfChange = { type: 'addNode', nodeId: m.id, context: codecs.memberInfo.encode(m) };
      return { term: 1, index: i + 1, type: EntryType.ConfChange, data: encodeConfChange(cc) };
    });
    await db.put(Buffer.from('m:cluster'), Buffer.from(clusterId), { sync: true });
    await raftLog.bootstrap(entries);
    cfg.logger.info({ members: initialMembers.length, clusterId }, 'bootstrapped a new cluster');
  }
  return { db, clusterId, machine, raftLog };
}

/** The etcd v3 client services (KV, Watch, Lease, Cluster, Maintenance) of this member. */
function clientServerFor(cfg: MemberConfig, ctx: ServerContext, watchHub: WatchHub, raft: () => RawNode) {
  // etcd's limit: a request up to --max-request-bytes plus 512 KiB of gRPC overhead.
  const clientServer = new GrpcServer({
    maxReceiveMessageLength: MAX_REQUEST_BYTES + 512 * 1024,
    ...cfg.grpc,
  });
  clientServer.addService(serverServices.KV, kvService(ctx));
  clientServer.addService(serverServices.Watch, watchHub.service());
  clientServer.addService(etcdServices.Lease.service, leaseService(ctx));
  clientServer.addService(
    etcdServices.Cluster.service,
    clusterService(ctx, {
      raftStatus: () => raft().status(),
      // A member's client URL takes the credentials this member presents to its peers.
      dialMember: (url) =>
        new etcdServices.Cluster(
          hostPort(url),
          url.startsWith('https:')
            ? clientCreds(cfg.peerTls ?? cfg.clientTls)
            : grpc.credentials.createInsecure(),
        ),
    }),
  );
  clientServer.addService(etcdServices.Maintenance.service, maintenanceService(ctx));
  return clientServer;
}

export async function startMember(cfg: MemberConfig): Promise<RunningMember> {
  const log = cfg.logger;
  const { selfId, initialMembers } = initialMembership(cfg);
  const state = await openMemberState(cfg, initialMembers);
  const { db, machine, raftLog } = state;
  let clusterId = state.clusterId;

  const peerCreds = clientCreds(cfg.peerTls);
  let node!: RaftNode;
  const peerTls = cfg.peerTls;
  const transport = new Transport(
    clusterId,
    peerCreds,
    {
      unreachable: (id) => node.reportUnreachable(id),
      snapshotDone: (id, ok) => node.reportSnapshot(id, ok),
    },
    peerTls && {
      ca: peerTls.trustedCaFile ? readFileSync(peerTls.trustedCaFile) : undefined,
      cert: readFileSync(peerTls.certFile),
      key: readFileSync(peerTls.keyFile),
    },
  );
  let lessor!: Lessor;
  // Kept for the Cluster service: promoting a learner depends on the leader's view of its progress.
  let raft!: RawNode;
  node = new RaftNode({
    id: selfId,
    db,
    log: raftLog,
    machine,
    rawNode: (c) => {
      raft = new RawNode(c);
      return raft;
    },
    tickMs: cfg.tickMs,
    electionTicks: cfg.electionTicks,
    heartbeatTicks: 1,
    snapshotCount: cfg.snapshotCount,
    logger: log,
    send: (msgs) => transport.send(msgs),
    onLeaderChange: (_lead, isLeader) => lessor.setLeader(isLeader),
    onRemoved: () => {
      log.warn('removed from the cluster; shutting down');
      process.kill(process.pid, 'SIGTERM');
    },
  });
  const syncPeers = (members: MemberInfo[]) => {
    const ids = new Set(members.map((m) => m.id));
    for (const m of members) if (m.id !== selfId && m.peer_urls[0]) transport.setPeer(m.id, m.peer_urls[0]);
    for (const m of initialMembers)
      if (!ids.has(m.id) && m.id !== selfId && members.length === 0) transport.setPeer(m.id, m.peer_urls[0]);
  };
  node.onMembersChanged = syncPeers;
  // Until the member list is known (a joining member), talk to the peers named on the command line.
  if (machine.members.size === 0) {
    for (const m of initialMembers) if (m.id !== selfId) transport.setPeer(m.id, m.peer_urls[0]);
  } else syncPeers([...machine.members.values()]);

  const ctx: ServerContext = {
    node,
    machine,
    lessor: undefined as unknown as Lessor,
    transport,
    get clusterId() {
      return clusterId;
    },
    memberId: selfId,
    clusterToken: cfg.initialClusterToken,
    dbSize: () => machine.mvcc.sizeBytes(),
    activeMembers: () => {
      const s = transport.activeSince(cfg.tickMs * cfg.electionTicks * 3);
      s.add(selfId);
      return s;
    },
  };
  lessor = new Lessor(machine, (id) => write(ctx, { op: 'lease_revoke', lease_revoke: { ID: id } }));
  ctx.lessor = lessor;
  const watchHub = new WatchHub(ctx);
  machine.listener = {
    onChanges: (events, rev) => watchHub.onChanges(events, rev),
    onApplied: () => watchHub.flush(),
    onLeaseGranted: (id, ttl) => lessor.granted(id, ttl),
    onLeaseRevoked: (id) => lessor.revoked(id),
  };
  for (const l of machine.mvcc.leases.values()) lessor.granted(l.id, l.ttl);

  // Peer server first: the others may already be waiting for our votes.
  const peerServer = new GrpcServer({ maxReceiveMessageLength: 512 * 1024 * 1024 });
  peerServer.addService(
    RaftPeerService.service,
    peerService(ctx, (id) => {
      if (clusterId === '0') {
        clusterId = id;
        void db.put(Buffer.from('m:cluster'), Buffer.from(id));
      }
    }),
  );
  for (const url of cfg.listenPeerUrls) await listenAt(peerServer, url, cfg.peerTls);

  node.start();
  lessor.start();

  const clientServer = clientServerFor(cfg, ctx, watchHub, () => raft);
  const clientPorts: number[] = [];
  for (const url of cfg.listenClientUrls) clientPorts.push(await listenAt(clientServer, url, cfg.clientTls));
  log.info({ id: selfId, clientUrls: cfg.listenClientUrls, peerUrls: cfg.listenPeerUrls }, 'serving');

  // Publish our name and client URLs through the log, once there is a leader to take it.
  void publishAttributes(ctx, cfg, selfId, log);

  return {
    id: selfId,
    get clusterId() {
      return clusterId;
    },
    node,
    machine,
    clientPorts,
    async stop() {
      // Clients first, while raft still runs: the writes they have in flight can still commit.
      const stopped = Errors.stopped();
      await clientServer.drain(shutdownGraceMs(cfg), { code: stopped.code, message: stopped.message });
      node.stop();
      lessor.stop();
      watchHub.stop();
      peerServer.close();
      transport.close();
      await node
        .drain()
        .catch((err: unknown) => log.warn({ err }, 'could not write the applied state on shutdown'));
      await db.close();
    },
  };
}

async function publishAttributes(
  ctx: ServerContext,
  cfg: MemberConfig,
  selfId: string,
  log: Logger,
): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const m = ctx.machine.members.get(selfId);
    if (m && m.name === cfg.name && m.client_urls.join(',') === cfg.advertiseClientUrls.join(',')) return;
    if (m && ctx.node.leader) {
      const r = await ctx.node.propose({
        op: 'member_attributes',
        member_attributes: { id: selfId, name: cfg.name, client_urls: cfg.advertiseClientUrls },
      });
      if (r.ok) continue;
    }
    await new Promise((res) => setTimeout(res, 200));
  }
  log.warn("could not publish this member's name and client URLs");
}
