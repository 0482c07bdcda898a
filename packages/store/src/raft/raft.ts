// The raft state machine: terms, elections, replication, commitment,
// membership, leadership transfer and read-index. Pure: it never does I/O or
// reads a clock; it consumes ticks and messages and produces messages plus state
// changes that RawNode packages as a Ready for the node loop.

import { decodeConfChange } from './confchange.js';
import { ProposalDroppedError, RaftSafetyError, RaftUsageError } from './errors.js';
import { RaftLog } from './log.js';
import { newMessage } from './message.js';
import { Progress, type ProgressState } from './progress.js';
import { hasQuorum, majorityIndex, voteResult } from './quorum.js';
import { decodeReadSeq, encodeReadSeq, ReadIndexQueue } from './read-index.js';
import {
  type ConfChange,
  type ConfState,
  type Entry,
  EntryType,
  type HardState,
  type Message,
  type NodeId,
  type RaftConfig,
  type ReadState,
  type Snapshot,
  type SoftState,
} from './types.js';
import { bytesEqual, EMPTY_BYTES } from './util.js';

export type StateType = SoftState['state'];

/** Marks a MsgVote sent because of MsgTimeoutNow: voters must not ignore it for leader stickiness. */
const TRANSFER_CONTEXT = new TextEncoder().encode('CampaignTransfer');

const DEFAULT_MAX_SIZE_PER_MSG = 1024 * 1024;
const DEFAULT_MAX_INFLIGHT = 256;
const MAX_COMMITTED_BYTES_PER_READY = 64 * 1024 * 1024;

export interface RaftStatus {
  id: NodeId;
  term: number;
  vote: NodeId | '';
  lead: NodeId | '';
  state: StateType;
  commit: number;
  applied: number;
  lastIndex: number;
  /** Only on the leader: its view of every member's log. */
  progress?: Record<NodeId, { match: number; next: number; state: ProgressState; isLearner: boolean }>;
  voters: NodeId[];
  learners: NodeId[];
  leadTransferee: NodeId | '';
}

export class Raft {
  readonly id: NodeId;
  term = 0;
  vote: NodeId | '' = '';
  lead: NodeId | '' = '';
  state: StateType = 'follower';
  readonly log: RaftLog;

  readonly voters = new Set<NodeId>();
  readonly learners = new Set<NodeId>();
  /** Per member (voters and learners, including ourselves); meaningful on the leader. */
  readonly progress = new Map<NodeId, Progress>();

  /** Outbox; RawNode drains it into a Ready. */
  msgs: Message[] = [];
  readStates: ReadState[] = [];

  /** Leader: index of the last conf change appended; a new one waits until it is applied. */
  pendingConfIndex = 0;
  leadTransferee: NodeId | '' = '';

  private readonly electionTimeout: number;
  private readonly heartbeatTimeout: number;
  private randomizedElectionTimeout = 0;
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private readonly votes = new Map<NodeId, boolean>();

  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly maxSizePerMsg: number;
  private readonly maxInflight: number;
  private readonly random: () => number;

  private readonly reads = new ReadIndexQueue();
  /** Leader: reads that arrived before it committed an entry of its own term (its commit index may be stale). */
  private readsAwaitingCommit: Message[] = [];
  /** Leader: new entries or a new commit index to broadcast at the next flush (batches proposals). */
  private appendsDirty = false;

  constructor(config: RaftConfig) {
    validateConfig(config);
    this.id = config.id;
    this.electionTimeout = config.electionTick;
    this.heartbeatTimeout = config.heartbeatTick;
    this.preVote = config.preVote ?? false;
    this.checkQuorum = config.checkQuorum ?? false;
    this.maxSizePerMsg = config.maxSizePerMsg ?? DEFAULT_MAX_SIZE_PER_MSG;
    this.maxInflight = config.maxInflightMsgs ?? DEFAULT_MAX_INFLIGHT;
    this.random = config.random ?? Math.random;
    this.log = new RaftLog(config.storage, MAX_COMMITTED_BYTES_PER_READY);

    const { hardState, confState } = config.storage.initialState();
    this.setConfState(confState);
    if (hardState.commit > this.log.lastIndex()) {
      throw new RaftSafetyError(
        `stored commit ${hardState.commit} is beyond the stored log (${this.log.lastIndex()})`,
      );
    }
    // The snapshot's index is committed even if the stored commit lags behind it.
    this.log.commitTo(hardState.commit);
    this.term = hardState.term;
    this.vote = hardState.vote;
    if (config.applied !== undefined) {
      if (config.applied > this.log.committed) {
        throw new RaftSafetyError(
          `applied ${config.applied} is beyond the stored commit ${this.log.committed}`,
        );
      }
      if (config.applied < this.log.applied) {
        // Entries up to the snapshot are gone from the log; they cannot be re-delivered one by one.
        throw new RaftUsageError(
          `applied ${config.applied} is older than the stored snapshot at ${this.log.applied}: ` +
            'restore the state machine from storage.snapshot() first and pass its index',
        );
      }
      this.log.appliedTo(config.applied);
    }
    this.becomeFollower(this.term, '');
  }

  // ---- membership ---------------------------------------------------------

  private setConfState(cs: ConfState): void {
    this.voters.clear();
    this.learners.clear();
    this.progress.clear();
    for (const id of cs.voters) this.voters.add(id);
    for (const id of cs.learners) if (!this.voters.has(id)) this.learners.add(id);
    for (const id of this.voters) this.progress.set(id, this.newProgress(false));
    for (const id of this.learners) this.progress.set(id, this.newProgress(true));
  }

  private newProgress(isLearner: boolean): Progress {
    const pr = new Progress(this.log.lastIndex() + 1, this.maxInflight, isLearner);
    // A freshly added member counts as active: check-quorum must not depose the
    // leader before the newcomer had a chance to answer.
    pr.recentActive = true;
    return pr;
  }

  confState(): ConfState {
    return { voters: [...this.voters].sort(), learners: [...this.learners].sort() };
  }

  /** Only voters may campaign; learners and removed (or not yet added) nodes wait to be told. */
  private promotable(): boolean {
    return this.voters.has(this.id);
  }

  /**
   * Applies a committed ConfChange (the node loop calls this when it applies the
   * entry). Single-server changes only, so any two consecutive configurations
   * share a majority.
   */
  applyConfChange(cc: ConfChange): ConfState {
    const id = cc.nodeId;
    switch (cc.type) {
      case 'addNode':
      case 'promote':
        if (this.voters.has(id)) break;
        if (cc.type === 'promote' && !this.learners.has(id)) break;
        this.learners.delete(id);
        this.voters.add(id);
        if (this.progress.has(id)) this.progress.get(id)!.isLearner = false;
        else this.progress.set(id, this.newProgress(false));
        break;
      case 'addLearner':
        // Demoting a voter is not a single-server change we support; ignore.
        if (this.voters.has(id) || this.learners.has(id)) break;
        this.learners.add(id);
        this.progress.set(id, this.newProgress(true));
        break;
      case 'removeNode':
        this.voters.delete(id);
        this.learners.delete(id);
        this.progress.delete(id);
        if (this.leadTransferee === id) this.leadTransferee = '';
        break;
      default:
        throw new RaftUsageError(
          `unknown conf change type ${JSON.stringify((cc as { type: unknown }).type)}`,
        );
    }
    if (this.state === 'leader') {
      if (!this.progress.has(this.id) || !this.voters.has(this.id)) {
        this.stepDownAfterRemoval();
      } else {
        // A smaller quorum may commit more; new members need the log.
        this.maybeCommit();
        this.appendsDirty = true;
      }
    }
    return this.confState();
  }

  /**
   * We applied our own removal as leader. Tell everyone the commit index (so the
   * rest learn about the change promptly) and hand leadership to the most
   * up-to-date voter instead of making the cluster wait for an election timeout.
   */
  private stepDownAfterRemoval(): void {
    this.bcastAppend();
    let best: NodeId | '' = '';
    let bestMatch = -1;
    for (const id of this.voters) {
      const pr = this.progress.get(id);
      if (pr && pr.match > bestMatch) {
        best = id;
        bestMatch = pr.match;
      }
    }
    if (best !== '' && bestMatch === this.log.lastIndex()) this.sendTimeoutNow(best);
    this.becomeFollower(this.term, '');
  }

  // ---- state transitions --------------------------------------------------

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = '';
    }
    this.lead = '';
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    // Randomized in [T, 2T) so that split votes resolve (§5.2).
    this.randomizedElectionTimeout = this.electionTimeout + Math.floor(this.random() * this.electionTimeout);
    this.leadTransferee = '';
    this.votes.clear();
    const next = this.log.lastIndex() + 1;
    // Our own match starts at 0 too: it grows only with persisted(), which
    // vouches for durability (the node loop may still be writing entries it
    // took earlier). A new leader commits nothing before its first entry,
    // which persisted() reports with everything before it.
    for (const [id, pr] of this.progress) {
      this.progress.set(id, new Progress(next, this.maxInflight, pr.isLearner));
    }
    this.pendingConfIndex = 0;
    this.reads.reset();
    this.readsAwaitingCommit = [];
    this.appendsDirty = false;
  }

  becomeFollower(term: number, lead: NodeId | ''): void {
    this.reset(term);
    this.lead = lead;
    this.state = 'follower';
  }

  private becomePreCandidate(): void {
    // Pre-vote does not touch term or vote: a node that cannot win leaves no trace.
    this.votes.clear();
    this.lead = '';
    this.state = 'precandidate';
  }

  private becomeCandidate(): void {
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = 'candidate';
  }

  private becomeLeader(): void {
    this.reset(this.term);
    this.lead = this.id;
    this.state = 'leader';
    for (const pr of this.progress.values()) pr.recentActive = true;
    // The uncommitted tail may hold a conf change; forbid a new one until all of it is applied.
    this.pendingConfIndex = this.log.lastIndex();
    // An empty entry of our term: committing it commits everything before it (§5.4.2)
    // and establishes the commit index that read-index needs.
    this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY_BYTES }]);
  }

  // ---- ticks ----------------------------------------------------------------

  tick(): void {
    if (this.state === 'leader') this.tickLeader();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickLeader(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum && !this.quorumActive()) {
        // Partitioned from a majority: step down so clients go elsewhere instead of waiting on us.
        this.becomeFollower(this.term, '');
        return;
      }
      // A transfer that did not finish within an election timeout is abandoned.
      if (this.leadTransferee !== '') this.leadTransferee = '';
    }
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  /** Whether a majority of voters was heard from since the last check; resets the marks for the next round. */
  private quorumActive(): boolean {
    const active = hasQuorum(
      this.voters,
      (id) => id === this.id || this.progress.get(id)?.recentActive === true,
    );
    for (const [id, pr] of this.progress) if (id !== this.id) pr.recentActive = false;
    return active;
  }

  // ---- elections ----------------------------------------------------------

  /** Starts an election (a pre-vote first, if enabled, unless this is a leadership transfer). */
  hup(transfer: boolean): void {
    if (this.state === 'leader') return;
    if (!this.promotable()) return;
    // Our configuration may be about to change; campaigning under the old one could elect a wrong leader.
    if (this.log.hasUnappliedConfChange((e) => e.type === EntryType.ConfChange)) return;
    if (this.preVote && !transfer) this.campaignPre();
    else this.campaignReal(transfer);
  }

  private campaignPre(): void {
    this.becomePreCandidate();
    if (this.recordVote(this.id, true) === 'won') {
      this.campaignReal(false);
      return;
    }
    this.requestVotes('MsgPreVote', this.term + 1, undefined);
  }

  private campaignReal(transfer: boolean): void {
    this.becomeCandidate();
    if (this.recordVote(this.id, true) === 'won') {
      this.becomeLeader();
      return;
    }
    this.requestVotes('MsgVote', this.term, transfer ? TRANSFER_CONTEXT : undefined);
  }

  private requestVotes(type: 'MsgVote' | 'MsgPreVote', term: number, context: Uint8Array | undefined): void {
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const id of this.voters) {
      if (id === this.id) continue;
      const m = newMessage(type, this.id, id, term);
      m.index = lastIndex;
      m.logTerm = lastTerm;
      if (context) m.context = context;
      this.msgs.push(m);
    }
  }

  private recordVote(from: NodeId, granted: boolean) {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    return voteResult(this.voters, this.votes);
  }

  // ---- message dispatch -----------------------------------------------------

  /** Handles a message from a peer (already validated). */
  step(m: Message): void {
    if (m.term === 0) {
      // Unterm'd messages are requests relayed between nodes (proposals, reads,
      // transfer requests): they are not bound to a term. Nothing else may lack one.
      if (m.type !== 'MsgProp' && m.type !== 'MsgReadIndex' && m.type !== 'MsgTransferLeader') return;
    } else if (m.term > this.term) {
      if (m.type === 'MsgVote' || m.type === 'MsgPreVote') {
        const force = bytesEqual(m.context, TRANSFER_CONTEXT);
        const inLease = this.checkQuorum && this.lead !== '' && this.electionElapsed < this.electionTimeout;
        // We heard from a live leader recently: a node that wants a new term is
        // probably just cut off, so don't let it depose a working leader.
        if (!force && inLease) return;
      }
      if (m.type === 'MsgPreVote') {
        // A pre-vote never changes our term.
      } else if (m.type === 'MsgPreVoteResp' && !m.reject) {
        // A granted pre-vote carries the term we would campaign in; we bump when we do.
      } else if (m.type === 'MsgApp' || m.type === 'MsgHeartbeat' || m.type === 'MsgSnap') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, '');
      }
    } else if (m.term < this.term) {
      if ((this.checkQuorum || this.preVote) && (m.type === 'MsgHeartbeat' || m.type === 'MsgApp')) {
        // A stale leader (or a node whose term we outran while it was cut off):
        // tell it our term so it steps down instead of the two ignoring each other forever.
        this.send(newMessage('MsgAppResp', this.id, m.from, this.term));
      } else if (m.type === 'MsgPreVote') {
        const resp = newMessage('MsgPreVoteResp', this.id, m.from, this.term);
        resp.reject = true;
        this.send(resp);
      }
      return;
    }

    switch (m.type) {
      case 'MsgVote':
      case 'MsgPreVote':
        this.handleVoteRequest(m);
        return;
      default:
        break;
    }
    switch (this.state) {
      case 'leader':
        this.stepLeader(m);
        break;
      case 'candidate':
      case 'precandidate':
        this.stepCandidate(m);
        break;
      case 'follower':
        this.stepFollower(m);
        break;
    }
  }

  private handleVoteRequest(m: Message): void {
    const canVote =
      this.vote === m.from ||
      (this.vote === '' && this.lead === '') ||
      (m.type === 'MsgPreVote' && m.term > this.term);
    const respType = m.type === 'MsgVote' ? 'MsgVoteResp' : 'MsgPreVoteResp';
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      // A granted pre-vote answers in the asked-for term, so the pre-candidate does not drop it as stale.
      this.send(newMessage(respType, this.id, m.from, m.term));
      if (m.type === 'MsgVote') {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      const resp = newMessage(respType, this.id, m.from, this.term);
      resp.reject = true;
      this.send(resp);
    }
  }

  private stepCandidate(m: Message): void {
    const myResp = this.state === 'precandidate' ? 'MsgPreVoteResp' : 'MsgVoteResp';
    switch (m.type) {
      case 'MsgProp':
        // No leader to take it; the proposer retries.
        return;
      case 'MsgApp':
      case 'MsgHeartbeat':
      case 'MsgSnap':
        // Someone won this term.
        this.becomeFollower(m.term, m.from);
        this.stepFollower(m);
        return;
      case 'MsgPreVoteResp':
      case 'MsgVoteResp': {
        if (m.type !== myResp) return;
        const result = this.recordVote(m.from, !m.reject);
        if (result === 'won') {
          if (this.state === 'precandidate') this.campaignReal(false);
          else {
            this.becomeLeader();
          }
        } else if (result === 'lost') {
          this.becomeFollower(this.term, '');
        }
        return;
      }
      default:
        return;
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'MsgProp':
        if (this.lead === '') return;
        this.send({ ...m, to: this.lead });
        return;
      case 'MsgApp':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case 'MsgHeartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case 'MsgSnap':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case 'MsgTransferLeader':
        if (this.lead !== '') this.send({ ...m, to: this.lead });
        return;
      case 'MsgTimeoutNow':
        // The leader asks us to take over: campaign at once, skipping pre-vote.
        this.hup(true);
        return;
      case 'MsgReadIndex':
        if (this.lead !== '') this.send({ ...m, to: this.lead });
        return;
      case 'MsgReadIndexResp':
        this.readStates.push({ index: m.index, requestCtx: m.context ?? EMPTY_BYTES });
        return;
      default:
        return;
    }
  }

  // ---- follower side of replication -------------------------------------------

  private handleAppend(m: Message): void {
    const resp = newMessage('MsgAppResp', this.id, m.from, this.term);
    if (m.index < this.log.committed) {
      // Everything up to our commit index is settled; tell the leader where we are.
      resp.index = this.log.committed;
      this.send(resp);
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      if (m.noAck) return;
      resp.index = lastNew;
    } else {
      // Mismatch at m.index. Give the leader a hint to skip back over a whole
      // term's worth of entries at once instead of one index per round trip.
      const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
      resp.index = m.index;
      resp.reject = true;
      resp.rejectHint = hint.index;
      resp.logTerm = hint.term;
    }
    this.send(resp);
  }

  private handleHeartbeat(m: Message): void {
    // The leader caps m.commit at our match index, so this never commits entries we may lack.
    if (m.commit <= this.log.lastIndex()) this.log.commitTo(m.commit);
    const resp = newMessage('MsgHeartbeatResp', this.id, m.from, this.term);
    if (m.context) resp.context = m.context;
    this.send(resp);
  }

  private handleSnapshot(m: Message): void {
    const snap = m.snapshot!;
    const resp = newMessage('MsgAppResp', this.id, m.from, this.term);
    if (this.restore(snap)) {
      resp.index = this.log.lastIndex();
    } else {
      resp.index = this.log.committed;
    }
    this.send(resp);
  }

  /** Installs a leader's snapshot. Returns false when it brings nothing new. */
  private restore(snap: Snapshot): boolean {
    const { index, term } = snap.meta;
    if (index <= this.log.committed) return false;
    if (this.log.matchTerm(index, term)) {
      // We already hold the entry the snapshot ends with: just commit up to it, keeping our log.
      this.log.commitTo(index);
      return false;
    }
    this.log.restore(snap);
    this.setConfState(snap.meta.confState);
    return true;
  }

  // ---- leader side ------------------------------------------------------------

  private stepLeader(m: Message): void {
    switch (m.type) {
      case 'MsgProp':
        this.leaderPropose(m, false);
        return;
      case 'MsgReadIndex':
        this.leaderReadIndex(m);
        return;
      case 'MsgTransferLeader':
        this.leaderTransfer(m.from);
        return;
      default:
        break;
    }
    const pr = this.progress.get(m.from);
    if (pr === undefined) return; // not (or no longer) a member
    switch (m.type) {
      case 'MsgAppResp':
        this.handleAppendResponse(m, pr);
        return;
      case 'MsgHeartbeatResp':
        this.handleHeartbeatResponse(m, pr);
        return;
      case 'MsgSnapStatus':
        if (pr.state !== 'snapshot') return;
        if (m.reject) pr.pendingSnapshot = 0;
        pr.becomeProbe();
        // Give the follower time to apply the snapshot: probe again after the next heartbeat answer.
        pr.probeSent = true;
        return;
      default:
        return;
    }
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    if (m.index > this.log.lastIndex()) return; // acks something we never sent
    pr.recentActive = true;
    if (m.reject) {
      let probeFrom = m.rejectHint;
      if (m.logTerm > 0) probeFrom = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, probeFrom)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    if (pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === 'probe')) {
      if (pr.state === 'probe') {
        pr.becomeReplicate();
      } else if (
        pr.state === 'snapshot' &&
        (pr.match >= pr.pendingSnapshot || pr.match + 1 >= this.log.firstIndex())
      ) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.state === 'replicate') {
        pr.inflights.freeLE(m.index);
      }
      if (this.maybeCommit()) this.appendsDirty = true;
      this.sendAppend(m.from, false);
      if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
    }
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    pr.probeSent = false;
    // The follower is alive; allow one more message through a full window so a
    // lost ack cannot stall replication forever.
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirst();
    if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
    const seq = decodeReadSeq(m.context);
    if (seq > 0) {
      this.reads.ack(m.from, seq);
      this.releaseReads();
    }
  }

  /**
   * Commits the highest index stored on a majority of voters — but only if that
   * entry is from the current term (§5.4.2, Figure 8): an old-term entry on a
   * majority can still be overwritten; it becomes committed indirectly when a
   * current-term entry after it is.
   */
  private maybeCommit(): boolean {
    const idx = majorityIndex(this.voters, (id) => this.progress.get(id)?.match ?? 0);
    if (idx <= this.log.committed || this.log.term(idx) !== this.term) return false;
    const first = !this.committedInCurrentTerm();
    this.log.commitTo(idx);
    if (first && this.readsAwaitingCommit.length > 0) {
      const waiting = this.readsAwaitingCommit;
      this.readsAwaitingCommit = [];
      for (const r of waiting) this.leaderReadIndex(r);
    }
    return true;
  }

  private committedInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  /**
   * Assigns term and index to new entries and appends them. Our own copy is
   * not counted yet: it counts for commitment once the node loop reports it
   * durable (persisted()), so that the leader may send the entries to its
   * followers while (or before) writing them itself (dissertation §10.2.1),
   * and an entry is committed only when a majority holds it on disk, with or
   * without the leader.
   */
  private appendEntries(entries: Entry[]): void {
    let index = this.log.lastIndex();
    for (const e of entries) {
      e.term = this.term;
      e.index = ++index;
    }
    this.log.append(entries);
    this.appendsDirty = true;
  }

  /**
   * The node loop made this node's log durable up to `index`, whose entry has
   * `term`. On a leader, its own copy now counts towards commitment. An ack
   * for an entry that was replaced since (another term at that index) says
   * nothing about the current log and is ignored.
   */
  persisted(index: number, term: number): void {
    if (this.state !== 'leader' || this.log.term(index) !== term) return;
    const pr = this.progress.get(this.id);
    if (pr?.maybeUpdate(index) && this.maybeCommit()) this.appendsDirty = true;
  }

  /**
   * A proposal reached the leader. Local proposals that cannot be accepted
   * throw; relayed ones are dropped silently (the relaying node cannot be told,
   * its client times out), except that a refused conf change is turned into an
   * empty entry so the rest of the batch still goes through.
   */
  leaderPropose(m: Message, local: boolean): void {
    let refusal: string | undefined;
    if (!this.progress.has(this.id)) refusal = 'this node is not a member of the cluster';
    else if (this.leadTransferee !== '')
      refusal = `leadership is being transferred to ${this.leadTransferee}`;
    if (refusal !== undefined) {
      if (local) throw new ProposalDroppedError(refusal);
      return;
    }
    const entries: Entry[] = [];
    for (const e of m.entries) {
      if (e.type === EntryType.ConfChange) {
        const why = this.confChangeRefusal(e, this.log.lastIndex() + entries.length + 1);
        if (why !== undefined) {
          if (local) throw new ProposalDroppedError(why);
          entries.push({ term: 0, index: 0, type: EntryType.Normal, data: EMPTY_BYTES });
          continue;
        }
        this.pendingConfIndex = this.log.lastIndex() + entries.length + 1;
      }
      // Fresh objects: the proposer's entry is not ours to mutate.
      entries.push({ term: 0, index: 0, type: e.type, data: e.data });
    }
    this.appendEntries(entries);
  }

  private confChangeRefusal(e: Entry, index: number): string | undefined {
    if (this.pendingConfIndex > this.log.applied) {
      return `a membership change (entry ${this.pendingConfIndex}) is still pending; one at a time`;
    }
    // The dissertation's errata for single-server changes: until the leader has
    // committed an entry of its term, an uncommitted change from a previous
    // leader may still be in flight; adding ours could yield disjoint majorities.
    if (!this.committedInCurrentTerm()) return 'the leader has not committed an entry in its term yet';
    try {
      decodeConfChange(e.data);
    } catch (err) {
      return `invalid conf change at ${index}: ${(err as Error).message}`;
    }
    return undefined;
  }

  private leaderReadIndex(m: Message): void {
    const ctx = m.context ?? EMPTY_BYTES;
    if (!this.committedInCurrentTerm()) {
      // Our commit index may lag behind what the previous leader committed; wait for our first commit.
      this.readsAwaitingCommit.push(m);
      return;
    }
    if (this.voters.size === 1 && this.voters.has(this.id)) {
      // Alone, we are the quorum: nothing to confirm.
      this.answerRead(m.from, this.log.committed, ctx);
      return;
    }
    this.reads.add(this.log.committed, ctx, m.from);
  }

  private answerRead(from: NodeId, index: number, ctx: Uint8Array): void {
    if (from === this.id) {
      this.readStates.push({ index, requestCtx: ctx });
    } else {
      const resp = newMessage('MsgReadIndexResp', this.id, from, this.term);
      resp.index = index;
      resp.context = ctx;
      this.send(resp);
    }
  }

  private releaseReads(): void {
    const released = this.reads.release(
      (ackedOf) => majorityIndex(this.voters, (id) => ackedOf(id)),
      this.id,
    );
    for (const r of released) this.answerRead(r.from, r.index, r.ctx);
  }

  private leaderTransfer(target: NodeId): void {
    const pr = this.progress.get(target);
    if (pr === undefined || pr.isLearner || target === this.id) return;
    if (this.leadTransferee === target) return;
    this.leadTransferee = target;
    // The transfer must finish within an election timeout or it is abandoned (see tickLeader).
    this.electionElapsed = 0;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(target);
    else this.sendAppend(target, true);
  }

  private sendTimeoutNow(to: NodeId): void {
    this.send(newMessage('MsgTimeoutNow', this.id, to, this.term));
  }

  // ---- sending --------------------------------------------------------------

  private send(m: Message): void {
    this.msgs.push(m);
  }

  /**
   * Sends what `to` is missing: in replicate state as many MsgApps as the
   * inflight window allows, otherwise one probe. With `sendIfEmpty` an empty
   * MsgApp still goes out (to carry the commit index or probe the log); with
   * `maySkipAck` too, such an empty MsgApp may ask for no answer (see below).
   */
  private sendAppend(to: NodeId, sendIfEmpty: boolean, maySkipAck = false): void {
    if (!this.maybeSendAppend(to, sendIfEmpty, maySkipAck)) return;
    const pr = this.progress.get(to);
    while (pr?.state === 'replicate' && this.maybeSendAppend(to, false, false)) {
      // keep streaming until the window is full or the peer is caught up
    }
  }

  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean, maySkipAck: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const entries =
      prevTerm === undefined
        ? undefined
        : this.log.slice(pr.next, this.log.lastIndex() + 1, this.maxSizePerMsg);
    if (prevTerm === undefined || entries === undefined) return this.sendSnapshot(to, pr);
    if (entries.length === 0 && !sendIfEmpty) return false;
    const m = newMessage('MsgApp', this.id, to, this.term);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = entries;
    m.commit = this.log.committed;
    // A new commit index, and nothing else, for a follower that holds all of
    // the log (match) or will say so anyway: in replicate state, unacked
    // inflights mean an ack for everything up to prevIndex (the last entry
    // sent) is on its way. Its answer would tell us nothing and wake us for
    // nothing. Heartbeat answers and rejections still send answered appends,
    // so a lost ack cannot leave the follower's match behind for good.
    if (
      maySkipAck &&
      entries.length === 0 &&
      pr.state === 'replicate' &&
      (pr.match === prevIndex || pr.inflights.size() > 0)
    )
      m.noAck = true;
    this.send(m);
    if (pr.state === 'replicate' && entries.length > 0) pr.sentEntries(entries[entries.length - 1].index);
    else if (pr.state === 'probe') pr.probeSent = true;
    return true;
  }

  private sendSnapshot(to: NodeId, pr: Progress): boolean {
    // A snapshot is expensive; only send it to a peer we know is alive.
    if (!pr.recentActive) return false;
    const snap = this.log.snapshot();
    if (snap.meta.index === 0) {
      throw new RaftSafetyError(`peer ${to} needs compacted entries but storage has no snapshot`);
    }
    pr.becomeSnapshot(snap.meta.index);
    const m = newMessage('MsgSnap', this.id, to, this.term);
    m.snapshot = snap;
    this.send(m);
    return true;
  }

  private bcastAppend(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.sendAppend(id, true, true);
  }

  private bcastHeartbeat(): void {
    const seq = this.reads.seqForHeartbeat();
    const ctx = seq > 0 ? encodeReadSeq(seq) : undefined;
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      const m = newMessage('MsgHeartbeat', this.id, id, this.term);
      // Never tell a follower to commit beyond what it is known to hold.
      m.commit = Math.min(pr.match, this.log.committed);
      if (ctx) m.context = ctx;
      this.send(m);
    }
  }

  /**
   * Sends what was batched since the last Ready: one round of MsgApps for all
   * proposals appended meanwhile, and one heartbeat round for all new reads.
   */
  flush(): void {
    if (this.state !== 'leader') return;
    if (this.appendsDirty) {
      this.appendsDirty = false;
      this.bcastAppend();
    }
    if (this.reads.needsBroadcast()) this.bcastHeartbeat();
  }

  // ---- local requests (from RawNode) ------------------------------------------------

  propose(entries: Entry[]): void {
    if (this.state === 'leader') {
      const m = newMessage('MsgProp', this.id, this.id, 0);
      m.entries = entries;
      this.leaderPropose(m, true);
      return;
    }
    if (this.state !== 'follower' || this.lead === '') throw new ProposalDroppedError('no leader is known');
    const m = newMessage('MsgProp', this.id, this.lead, 0);
    m.entries = entries;
    this.send(m);
  }

  readIndex(ctx: Uint8Array): void {
    const m = newMessage('MsgReadIndex', this.id, this.id, 0);
    m.context = ctx;
    if (this.state === 'leader') {
      this.leaderReadIndex(m);
      return;
    }
    if (this.state !== 'follower' || this.lead === '') throw new ProposalDroppedError('no leader is known');
    m.to = this.lead;
    this.send(m);
  }

  /** Asks the leader to hand over to `to`. etcd's convention: the message's `from` names the transferee. */
  transferLeader(to: NodeId): void {
    if (this.state === 'leader') {
      this.leaderTransfer(to);
      return;
    }
    if (this.lead === '') throw new ProposalDroppedError('no leader is known');
    this.send(newMessage('MsgTransferLeader', to, this.lead, 0));
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    if (this.state !== 'leader') return;
    const m = newMessage('MsgSnapStatus', id, this.id, 0);
    m.reject = !ok;
    this.stepLeader(m);
  }

  reportUnreachable(id: NodeId): void {
    if (this.state !== 'leader') return;
    const pr = this.progress.get(id);
    // Whatever was in flight is probably lost: fall back to probing.
    if (pr?.state === 'replicate') pr.becomeProbe();
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  softState(): SoftState {
    return { lead: this.lead, state: this.state };
  }

  hasPendingWork(): boolean {
    return this.state === 'leader' && (this.appendsDirty || this.reads.needsBroadcast());
  }

  status(): RaftStatus {
    const s: RaftStatus = {
      id: this.id,
      term: this.term,
      vote: this.vote,
      lead: this.lead,
      state: this.state,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      voters: [...this.voters].sort(),
      learners: [...this.learners].sort(),
      leadTransferee: this.leadTransferee,
    };
    if (this.state === 'leader') {
      s.progress = {};
      for (const [id, pr] of this.progress) {
        s.progress[id] = { match: pr.match, next: pr.next, state: pr.state, isLearner: pr.isLearner };
      }
    }
    return s;
  }
}

function validateConfig(c: RaftConfig): void {
  if (typeof c.id !== 'string' || c.id === '')
    throw new RaftUsageError('raft config: id must be a non-empty string');
  if (!Number.isInteger(c.heartbeatTick) || c.heartbeatTick <= 0) {
    throw new RaftUsageError('raft config: heartbeatTick must be a positive integer');
  }
  if (!Number.isInteger(c.electionTick) || c.electionTick <= c.heartbeatTick) {
    throw new RaftUsageError('raft config: electionTick must be an integer greater than heartbeatTick');
  }
  if (c.maxInflightMsgs !== undefined && (!Number.isInteger(c.maxInflightMsgs) || c.maxInflightMsgs <= 0)) {
    throw new RaftUsageError('raft config: maxInflightMsgs must be a positive integer');
  }
  if (c.maxSizePerMsg !== undefined && !(c.maxSizePerMsg > 0)) {
    throw new RaftUsageError('raft config: maxSizePerMsg must be positive');
  }
}
