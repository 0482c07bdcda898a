// The contract between the raft core (pure, no I/O: src/raft/) and the node
// loop that drives it (src/node/): messages and ticks go in, a Ready batch
// comes out. Shaped after the hand-off of etcd's raft library, written anew.

/** Member IDs are 64-bit in etcd's API; they are carried as decimal strings. */
export type NodeId = string;

export enum EntryType {
  Normal = 0,
  ConfChange = 1,
}

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  /** Opaque command bytes for Normal; an encoded ConfChange for ConfChange. Empty = no-op. */
  data: Uint8Array;
}

export type ConfChangeType = 'addNode' | 'addLearner' | 'removeNode' | 'promote';

export interface ConfChange {
  type: ConfChangeType;
  nodeId: NodeId;
  /** Opaque to raft: the member's peer URLs etc., for the state machine. */
  context?: Uint8Array;
}

export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
}

export interface HardState {
  term: number;
  vote: NodeId | '';
  commit: number;
}

export interface SnapshotMeta {
  index: number;
  term: number;
  confState: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  /** The state machine's serialized state at meta.index. */
  data: Uint8Array;
}

export type MessageType =
  | 'MsgPreVote'
  | 'MsgPreVoteResp'
  | 'MsgVote'
  | 'MsgVoteResp'
  | 'MsgApp'
  | 'MsgAppResp'
  | 'MsgHeartbeat'
  | 'MsgHeartbeatResp'
  | 'MsgSnap'
  | 'MsgSnapStatus'
  | 'MsgTimeoutNow'
  | 'MsgReadIndex'
  | 'MsgReadIndexResp'
  | 'MsgProp'
  | 'MsgTransferLeader';

export interface Message {
  type: MessageType;
  /**
   * The sender — except on MsgTransferLeader, where (as in etcd) it names the
   * transferee, the node that should become leader.
   */
  from: NodeId;
  to: NodeId;
  term: number;
  /** MsgApp: index/term of the entry before `entries`. MsgAppResp: the matched or rejected index. */
  index: number;
  logTerm: number;
  entries: Entry[];
  commit: number;
  reject: boolean;
  /** On a rejected MsgAppResp: the follower's last index, to skip back fast. */
  rejectHint: number;
  snapshot?: Snapshot;
  /**
   * MsgReadIndex/MsgReadIndexResp: the request context, echoed back.
   * MsgHeartbeat/MsgHeartbeatResp: the leader's read-confirmation sequence, echoed back.
   * MsgVote: marks a campaign triggered by a leadership transfer.
   */
  context?: Uint8Array;
  /**
   * MsgApp: the leader already knows the follower holds everything up to
   * `index` (the message only brings a new commit index), so a successful
   * append needs no MsgAppResp. A rejection is still answered.
   */
  noAck?: boolean;
}

export interface ReadState {
  /** The commit index a linearizable read must wait to be applied. */
  index: number;
  requestCtx: Uint8Array;
}

export interface SoftState {
  lead: NodeId | '';
  state: 'follower' | 'candidate' | 'precandidate' | 'leader';
}

/**
 * One batch of work for the node loop, in this order:
 * 1. persist `hardState`, `entries` (and `snapshot`) with one fsync;
 * 2. send `messages` (only after 1: a vote or an append ack must be durable first);
 * 3. apply `snapshot`, then `committedEntries` to the state machine;
 * 4. call `advance(ready)`.
 */
export interface Ready {
  softState?: SoftState;
  hardState?: HardState;
  entries: Entry[];
  snapshot?: Snapshot;
  committedEntries: Entry[];
  messages: Message[];
  readStates: ReadState[];
}

/**
 * What the core reads from durable storage (the node loop keeps it up to date).
 * The core only asks for indexes in [firstIndex()-1, lastIndex()] (term) and
 * [firstIndex(), lastIndex()] (entries); snapshot() must reach at least
 * firstIndex()-1, so a peer that needs compacted entries can be sent it.
 * initialState().confState is the membership as of RaftConfig.applied (as of
 * the snapshot when applied is not given): entries after that are re-applied,
 * including their conf changes. It is empty for a fresh member: the bootstrap
 * entries (bootstrapEntries) or the leader's log/snapshot carry the membership.
 */
export interface LogStorage {
  initialState(): { hardState: HardState; confState: ConfState };
  /** Entries [lo, hi), at most maxBytes in total (at least one entry). */
  entries(lo: number, hi: number, maxBytes?: number): Entry[];
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  snapshot(): Snapshot;
}

export interface RaftConfig {
  id: NodeId;
  /** Ticks without a leader's word before an election; randomized in [electionTick, 2*electionTick). */
  electionTick: number;
  heartbeatTick: number;
  storage: LogStorage;
  /**
   * The last applied index on restart, so nothing is applied twice. Must not be
   * older than storage.snapshot() (restore the state machine from it first);
   * defaults to the snapshot's index.
   */
  applied?: number;
  maxSizePerMsg?: number;
  maxInflightMsgs?: number;
  preVote?: boolean;
  checkQuorum?: boolean;
  /** Deterministic randomness for tests; Math.random by default. */
  random?: () => number;
}
