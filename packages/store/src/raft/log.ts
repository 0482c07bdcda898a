// The raft log as the core sees it: a durable prefix in LogStorage followed by
// an "unstable" tail that exists only in memory until the node loop persists it
// (Ready.entries / Ready.snapshot, then advance()).
//
//   storage: [firstIndex .. stableLast]    unstable: [offset .. lastIndex]
//
// The unstable tail may start below storage's last index: a new leader can
// overwrite an uncommitted suffix, and the overwrite is unstable until persisted.
// A snapshot received from the leader is unstable too, and while it is, it hides
// the storage log completely.

import { RaftSafetyError } from './errors.js';
import type { Entry, LogStorage, Snapshot } from './types.js';
import { entrySize } from './util.js';

export class RaftLog {
  /** Highest index known to be committed (replicated on a quorum, current-term rule applied). */
  committed: number;
  /** Highest index the state machine has applied (reported through advance()). */
  applied: number;

  private unstableSnapshot: Snapshot | undefined;
  private unstableEntries: Entry[] = [];
  /** Index of unstableEntries[0] (or where it would be). */
  private unstableOffset: number;

  constructor(
    readonly storage: LogStorage,
    private readonly maxCommittedBytesPerReady: number,
  ) {
    const first = storage.firstIndex();
    this.unstableOffset = storage.lastIndex() + 1;
    this.committed = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    if (this.unstableSnapshot) return this.unstableSnapshot.meta.index + 1;
    return this.storage.firstIndex();
  }

  lastIndex(): number {
    if (this.unstableEntries.length > 0) return this.unstableOffset + this.unstableEntries.length - 1;
    if (this.unstableSnapshot) return this.unstableSnapshot.meta.index;
    return this.storage.lastIndex();
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  /** The term of the entry at `index`, or undefined if it was compacted or does not exist yet. */
  term(index: number): number | undefined {
    if (index < this.firstIndex() - 1 || index > this.lastIndex()) return undefined;
    if (index >= this.unstableOffset && this.unstableEntries.length > 0) {
      return this.unstableEntries[index - this.unstableOffset].term;
    }
    if (this.unstableSnapshot) {
      return index === this.unstableSnapshot.meta.index ? this.unstableSnapshot.meta.term : undefined;
    }
    return this.storage.term(index);
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /**
   * Raft's voting restriction (§5.4.1): a candidate's log is at least as
   * up-to-date as ours if its last term is higher, or equal with an index at least ours.
   */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Entries [lo, hi), capped at maxBytes (at least one entry is returned when
   * lo < hi). Undefined when lo was compacted: the caller needs a snapshot.
   */
  slice(lo: number, hi: number, maxBytes = Number.POSITIVE_INFINITY): Entry[] | undefined {
    if (lo < this.firstIndex()) return undefined;
    hi = Math.min(hi, this.lastIndex() + 1);
    if (lo >= hi) return [];
    let out: Entry[] = [];
    let bytes = 0;
    if (lo < this.unstableOffset) {
      const stableHi = Math.min(hi, this.unstableOffset);
      out = this.storage.entries(lo, stableHi, maxBytes);
      // Done, or storage stopped early on the size cap: do not continue into the unstable part.
      if (hi <= this.unstableOffset || out.length < stableHi - lo) return out;
      out = out.slice(); // storage may hand out its own array; we are about to push
      for (const e of out) bytes += entrySize(e);
    }
    const from = Math.max(lo, this.unstableOffset);
    for (let i = from; i < hi; i++) {
      const e = this.unstableEntries[i - this.unstableOffset];
      bytes += entrySize(e);
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  /**
   * Handles the entries of a MsgApp: if our log matches (prevIndex, prevTerm),
   * appends `entries` (dropping the ones we already hold, truncating at the first
   * conflict) and advances the commit index. Returns the index of the last entry
   * the leader's message vouches for, or undefined when the log does not match.
   */
  maybeAppend(
    prevIndex: number,
    prevTerm: number,
    leaderCommit: number,
    entries: Entry[],
  ): number | undefined {
    if (!this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      if (conflict <= this.committed) {
        throw new RaftSafetyError(
          `entry ${conflict} conflicts with the committed log (commit ${this.committed})`,
        );
      }
      this.append(entries.slice(conflict - entries[0].index));
    }
    this.commitTo(Math.min(leaderCommit, lastNew));
    return lastNew;
  }

  /** Index of the first entry whose term differs from ours or that we lack; 0 if we hold them all. */
  private findConflict(entries: Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * For fast backtracking of a rejected MsgApp: the largest index <= `index`
   * whose term is <= `term`, with that term. Entries after it cannot match a log
   * whose entry at `index` has term `term`, so the leader may skip them in one step.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    index = Math.min(index, this.lastIndex());
    for (;;) {
      const t = this.term(index);
      if (t === undefined) return { index, term: 0 };
      if (t <= term) return { index, term: t };
      index--;
    }
  }

  /** Appends entries to the unstable tail, overwriting any suffix they conflict with. */
  append(entries: Entry[]): void {
    if (entries.length === 0) return;
    const after = entries[0].index;
    if (after - 1 < this.committed) {
      throw new RaftSafetyError(
        `append at ${after} would overwrite committed entries (commit ${this.committed})`,
      );
    }
    const end = this.unstableOffset + this.unstableEntries.length;
    if (after === end) {
      for (const e of entries) this.unstableEntries.push(e);
    } else if (after <= this.unstableOffset) {
      // Replaces the whole unstable tail, and possibly stored entries too; the
      // node loop's storage.append truncates them when this is persisted.
      this.unstableOffset = after;
      this.unstableEntries = entries.slice();
    } else {
      this.unstableEntries = this.unstableEntries.slice(0, after - this.unstableOffset).concat(entries);
    }
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    if (index > this.lastIndex()) {
      throw new RaftSafetyError(`commit ${index} is beyond the last index ${this.lastIndex()}`);
    }
    this.committed = index;
  }

  appliedTo(index: number): void {
    if (index > this.applied) this.applied = index;
  }

  /** The unstable tail the node loop must persist next (a copy: later appends must not change a Ready). */
  pendingEntries(): Entry[] {
    return this.unstableEntries.slice();
  }

  hasPendingEntries(): boolean {
    return this.unstableEntries.length > 0;
  }

  pendingSnapshot(): Snapshot | undefined {
    return this.unstableSnapshot;
  }

  /** The durable (or about to be) snapshot to send to a peer that fell behind our first index. */
  snapshot(): Snapshot {
    return this.unstableSnapshot ?? this.storage.snapshot();
  }

  /** The node loop persisted entries up to (index, term); only mark them stable if they were not replaced since. */
  stableTo(index: number, term: number): void {
    if (index < this.unstableOffset || index >= this.unstableOffset + this.unstableEntries.length) return;
    if (this.unstableEntries[index - this.unstableOffset].term !== term) return;
    this.unstableEntries = this.unstableEntries.slice(index + 1 - this.unstableOffset);
    this.unstableOffset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.unstableSnapshot?.meta.index === index) this.unstableSnapshot = undefined;
  }

  /** Replaces the log with a snapshot from the leader; it is unstable until persisted. */
  restore(snap: Snapshot): void {
    this.committed = snap.meta.index;
    this.unstableSnapshot = snap;
    this.unstableEntries = [];
    this.unstableOffset = snap.meta.index + 1;
  }

  /** Index of the first committed entry not yet handed to the state machine. */
  private nextApplyIndex(applying: number): number {
    return Math.max(applying + 1, this.firstIndex());
  }

  hasCommittedToApply(applying: number): boolean {
    return this.committed >= this.nextApplyIndex(applying);
  }

  /** Committed entries after `applying`, capped in size so one Ready stays reasonable after a long outage. */
  committedToApply(applying: number): Entry[] {
    const lo = this.nextApplyIndex(applying);
    if (lo > this.committed) return [];
    return this.slice(lo, this.committed + 1, this.maxCommittedBytesPerReady) ?? [];
  }

  /** Whether (applied, committed] holds a ConfChange entry: campaigning under a stale config is refused. */
  hasUnappliedConfChange(isConfChange: (e: Entry) => boolean): boolean {
    const lo = this.nextApplyIndex(this.applied);
    if (lo > this.committed) return false;
    const ents = this.slice(lo, this.committed + 1) ?? [];
    return ents.some(isConfChange);
  }
}
