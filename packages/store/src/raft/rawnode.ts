// RawNode: the hand-off between the pure raft state machine and the node loop.
// The loop feeds it ticks, peer messages and client requests, and drains Ready
// batches. One Ready is outstanding at a time: after ready(), the loop persists,
// sends, applies, and calls advance(rd) before the next ready() — or, to
// overlap writes with the next Ready, calls accept(rd) at once and
// persisted(index, term) when the write is durable.

import { encodeConfChange } from './confchange.js';
import { InvalidMessageError, RaftUsageError } from './errors.js';
import { isLocalMessage, validateMessage } from './message.js';
import { Raft, type RaftStatus } from './raft.js';
import {
  type ConfChange,
  type ConfState,
  EntryType,
  type HardState,
  type Message,
  type NodeId,
  type RaftConfig,
  type Ready,
  type SoftState,
} from './types.js';

export class RawNode {
  private readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  /** The Ready handed out and not yet advanced. */
  private outstanding: Ready | undefined;

  constructor(config: RaftConfig) {
    this.raft = new Raft(config);
    this.prevSoft = this.raft.softState();
    // What storage already holds, so the first Ready does not rewrite it needlessly.
    this.prevHard = this.raft.hardState();
  }

  /** One logical clock tick (the node loop calls it every tick interval, e.g. 100 ms). */
  tick(): void {
    this.raft.tick();
  }

  /**
   * A message from a peer. Malformed messages, and local-only types arriving
   * from the network, throw InvalidMessageError without touching any state.
   */
  step(msg: Message): void {
    validateMessage(msg, this.raft.id);
    if (isLocalMessage(msg.type))
      throw new InvalidMessageError(`${msg.type} is local and cannot come from a peer`);
    this.raft.step(msg);
  }

  /**
   * Proposes a command. On the leader it is appended at once; on a follower it
   * is forwarded to the leader as MsgProp (like etcd-raft) — if that message is
   * lost, nobody is told: the caller must time out. Throws ProposalDroppedError
   * when no leader is known, during a leadership transfer, or when removed.
   */
  propose(data: Uint8Array): void {
    this.raft.propose([{ term: 0, index: 0, type: EntryType.Normal, data }]);
  }

  /** Proposes several commands as one batch (one MsgProp / one append). */
  proposeBatch(datas: readonly Uint8Array[]): void {
    if (datas.length === 0) return;
    this.raft.propose(datas.map((data) => ({ term: 0, index: 0, type: EntryType.Normal, data })));
  }

  /**
   * Proposes a membership change. Besides the propose() errors, the leader
   * refuses (ProposalDroppedError) while another change is not yet applied, or
   * before it committed an entry of its term. A follower forwards it; a leader
   * that must refuse a forwarded change turns it into an empty entry.
   */
  proposeConfChange(cc: ConfChange): void {
    this.raft.propose([{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange(cc) }]);
  }

  /**
   * Requests a linearizable read. A ReadState with the same ctx appears in a
   * later Ready; once the state machine applied up to its index, reading is
   * linearizable. If leadership changes meanwhile the read is silently lost: the
   * caller must time out and retry. Throws ProposalDroppedError with no leader.
   */
  readIndex(ctx: Uint8Array): void {
    this.raft.readIndex(ctx);
  }

  /** Asks the leader to hand leadership to `to` (forwarded if we are a follower). */
  transferLeader(to: NodeId): void {
    this.raft.transferLeader(to);
  }

  /** Starts an election now (pre-vote first if enabled). Ignored on non-voters. */
  campaign(): void {
    this.raft.hup(false);
  }

  hasReady(): boolean {
    if (this.outstanding) return false;
    const r = this.raft;
    if (r.hasPendingWork()) return true;
    if (r.msgs.length > 0 || r.readStates.length > 0) return true;
    if (r.log.hasPendingEntries() || r.log.pendingSnapshot()) return true;
    if (r.log.hasCommittedToApply(r.log.applied)) return true;
    const soft = r.softState();
    if (soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state) return true;
    return !hardStateEqual(r.hardState(), this.prevHard);
  }

  /**
   * The next batch of work. Handle it in this order: persist hardState, snapshot
   * (storage.applySnapshot) then entries (storage.append) durably; send
   * messages; apply snapshot then committedEntries; call advance(rd).
   */
  ready(): Ready {
    if (this.outstanding)
      throw new RaftUsageError('ready() called again before advance() of the previous Ready');
    const r = this.raft;
    r.flush();
    const rd: Ready = {
      entries: r.log.pendingEntries(),
      committedEntries: r.log.committedToApply(r.log.applied),
      messages: r.msgs,
      readStates: r.readStates,
    };
    r.msgs = [];
    r.readStates = [];
    const snap = r.log.pendingSnapshot();
    if (snap) rd.snapshot = snap;
    const soft = r.softState();
    if (soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state) {
      rd.softState = soft;
      this.prevSoft = soft;
    }
    const hard = r.hardState();
    if (!hardStateEqual(hard, this.prevHard)) {
      rd.hardState = hard;
      this.prevHard = hard;
    }
    this.outstanding = rd;
    return rd;
  }

  /** The node loop finished with `rd`: its entries/snapshot are durable and its committed entries applied. */
  advance(rd: Ready): void {
    this.accept(rd);
    if (rd.entries.length > 0) {
      const last = rd.entries[rd.entries.length - 1];
      this.raft.persisted(last.index, last.term);
    }
  }

  /**
   * Like advance(), but `rd`'s entries are only on their way to disk: storage
   * already answers for them (term(), entries()), and the loop calls
   * persisted(index, term) once the write is durable. Until then a leader does
   * not count its own copy, so the next Ready may go out (its MsgApps to the
   * followers included) while this one is being written. A follower's acks
   * and votes promise what it wrote: a loop that accepts its Ready early must
   * hold those messages back until the write (and every earlier one) is
   * durable, and send them in Ready order.
   */
  accept(rd: Ready): void {
    if (rd !== this.outstanding)
      throw new RaftUsageError('advance() must be given the Ready last returned by ready()');
    this.outstanding = undefined;
    const log = this.raft.log;
    if (rd.snapshot) {
      log.stableSnapTo(rd.snapshot.meta.index);
      log.appliedTo(rd.snapshot.meta.index);
    }
    if (rd.entries.length > 0) {
      const last = rd.entries[rd.entries.length - 1];
      log.stableTo(last.index, last.term);
    }
    if (rd.committedEntries.length > 0)
      log.appliedTo(rd.committedEntries[rd.committedEntries.length - 1].index);
  }

  /** This node's log is durable up to `index` (whose entry has `term`): see accept(). */
  persisted(index: number, term: number): void {
    this.raft.persisted(index, term);
  }

  /**
   * Call when applying a committed ConfChange entry (decode it with
   * decodeConfChange). Returns the membership now in force, to store with
   * snapshots.
   */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /** The transport could not reach `id`: stop streaming to it and probe instead. */
  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }

  /** Report the outcome of sending a MsgSnap to `id`; required, or replication to it stays paused. */
  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  status(): RaftStatus {
    return this.raft.status();
  }
}

function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
