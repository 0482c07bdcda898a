// An in-memory LogStorage. Tests use it as the "durable" state of a simulated
// node; a real node loop may use it as a cache in front of its disk.
//
// Layout: ents[k] holds log index `offset + 1 + k`. Entries at or below `offset`
// were compacted away; the term of `offset` itself is kept so that term(first-1)
// still answers (the log-matching check of the first MsgApp after compaction).
// The snapshot always reaches at least `offset`, so a peer that needs a
// compacted entry can be sent the snapshot instead.

import { RaftUsageError } from './errors.js';
import type { ConfState, Entry, HardState, LogStorage, Snapshot } from './types.js';
import { entrySize } from './util.js';

export class MemoryStorage implements LogStorage {
  private hardState: HardState = { term: 0, vote: '', commit: 0 };
  private snap: Snapshot;
  private offset = 0;
  private offsetTerm = 0;
  private ents: Entry[] = [];

  /** `confState` is the cluster's initial membership (for a fresh cluster: every initial member as voter). */
  constructor(confState: ConfState = { voters: [], learners: [] }) {
    this.snap = {
      meta: { index: 0, term: 0, confState: cloneConfState(confState) },
      data: new Uint8Array(0),
    };
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: { ...this.hardState }, confState: cloneConfState(this.snap.meta.confState) };
  }

  hardStateNow(): HardState {
    return { ...this.hardState };
  }

  setHardState(hs: HardState): void {
    this.hardState = { ...hs };
  }

  firstIndex(): number {
    return this.offset + 1;
  }

  lastIndex(): number {
    return this.offset + this.ents.length;
  }

  term(index: number): number {
    if (index === this.offset) return this.offsetTerm;
    if (index < this.offset)
      throw new RaftUsageError(`term(${index}): compacted (first index ${this.offset + 1})`);
    const e = this.ents[index - this.offset - 1];
    if (e === undefined) throw new RaftUsageError(`term(${index}): beyond last index ${this.lastIndex()}`);
    return e.term;
  }

  entries(lo: number, hi: number, maxBytes = Number.POSITIVE_INFINITY): Entry[] {
    if (lo <= this.offset)
      throw new RaftUsageError(`entries(${lo}): compacted (first index ${this.offset + 1})`);
    if (hi > this.lastIndex() + 1)
      throw new RaftUsageError(`entries(..${hi}): beyond last index ${this.lastIndex()}`);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.ents[i - this.offset - 1];
      bytes += entrySize(e);
      // Always return at least one entry so that a huge entry still makes progress.
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /**
   * Persists entries (the `entries` of a Ready). An entry whose index is already
   * stored replaces it and everything after it: a new leader overwrote an
   * uncommitted suffix. Entries at or below the compaction point are skipped.
   */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    const from = entries[0].index < first ? first - entries[0].index : 0;
    if (from >= entries.length) return;
    const start = entries[from].index;
    if (start > this.lastIndex() + 1) {
      throw new RaftUsageError(`append: gap between last index ${this.lastIndex()} and ${start}`);
    }
    const keep = start - first;
    if (keep < this.ents.length) this.ents.length = keep;
    for (let k = from; k < entries.length; k++) this.ents.push(entries[k]);
  }

  /** Replaces the whole log with a snapshot received from the leader (a Ready's `snapshot`). */
  applySnapshot(snap: Snapshot): void {
    if (snap.meta.index < this.snap.meta.index) {
      throw new RaftUsageError(
        `applySnapshot: snapshot at ${snap.meta.index} is older than the stored one at ${this.snap.meta.index}`,
      );
    }
    this.snap = snap;
    this.offset = snap.meta.index;
    this.offsetTerm = snap.meta.term;
    this.ents = [];
  }

  /** Records a snapshot of the state machine taken at `index`, which must be applied (hence stored). */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.snap.meta.index) return this.snap;
    if (index > this.lastIndex()) {
      throw new RaftUsageError(`createSnapshot(${index}): beyond last index ${this.lastIndex()}`);
    }
    this.snap = { meta: { index, term: this.term(index), confState: cloneConfState(confState) }, data };
    return this.snap;
  }

  /**
   * Discards log entries up to and including `index`. Only entries covered by the
   * snapshot may go: a peer that needs an older entry gets the snapshot instead.
   */
  compact(index: number): void {
    if (index <= this.offset) return;
    if (index > this.snap.meta.index) {
      throw new RaftUsageError(
        `compact(${index}): beyond the snapshot at ${this.snap.meta.index}; createSnapshot first`,
      );
    }
    this.offsetTerm = this.term(index);
    this.ents = this.ents.slice(index - this.offset);
    this.offset = index;
  }
}

function cloneConfState(cs: ConfState): ConfState {
  return { voters: [...cs.voters], learners: [...cs.learners] };
}
