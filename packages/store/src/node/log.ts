// The raft log on level: hard state, entries and the last snapshot's metadata.
// An in-memory copy of the retained entries answers raft's reads at once.

import type { Db } from '../mvcc/machine.js';
import type { BatchOp } from '../mvcc/store.js';
import { codecs } from '../proto.js';
import type { ConfState, Entry, HardState, LogStorage, Snapshot, SnapshotMeta } from '../raft/types.js';
import { decodeEntry, encodeEntry } from '../wire/raft.js';
import { decodeHardState, encodeHardState } from './wire.js';

const ENTRY = 0x65; // 'e' + index(8)
const HARD_STATE = Buffer.from('h');
const SNAP_META = Buffer.from('s');
// Key prefixes in use in the one level DB: r, m, l, c (state machine), e, h, s, x (raft log).
const CONF_STATE = Buffer.from('x');

const TWO_32 = 2 ** 32;

/** 'e' + the index as 8 big-endian bytes (two 32-bit halves: no BigInt per entry). */
function entryKey(index: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = ENTRY;
  b.writeUInt32BE(Math.floor(index / TWO_32), 1);
  b.writeUInt32BE(index >>> 0, 5);
  return b;
}

export class RaftLog implements LogStorage {
  hardState: HardState = { term: 0, vote: '', commit: 0 };
  /** The newest snapshot point: entries up to meta.index are gone from the log. */
  snapMeta: SnapshotMeta = { index: 0, term: 0, confState: { voters: [], learners: [] } };
  /** Entries snapMeta.index+1 .. lastIndex. */
  private entriesMem: Entry[] = [];
  confState: ConfState = { voters: [], learners: [] };
  /** Produces the state machine's bytes when raft needs a snapshot for a lagging follower. */
  snapshotSource: () => Snapshot = () => ({ meta: this.snapMeta, data: new Uint8Array(0) });

  constructor(private readonly db: Db) {}

  async load(): Promise<void> {
    const hs = await this.db.get(HARD_STATE);
    if (hs) this.hardState = decodeHardState(hs);
    const sm = await this.db.get(SNAP_META);
    if (sm) {
      const w = codecs.snapshot.decode(sm);
      this.snapMeta = {
        index: Number(w.index),
        term: Number(w.term),
        confState: { voters: w.conf_state?.voters ?? [], learners: w.conf_state?.learners ?? [] },
      };
      this.confState = this.snapMeta.confState;
    }
    const cs = await this.db.get(CONF_STATE);
    if (cs) {
      const w = codecs.snapshot.decode(cs).conf_state;
      this.confState = { voters: w?.voters ?? [], learners: w?.learners ?? [] };
    }
    for await (const [, v] of this.db.iterator({
      gt: entryKey(this.snapMeta.index),
      lt: Buffer.from([ENTRY + 1]),
    })) {
      const e = decodeEntry(v);
      if (e.index !== this.lastIndex() + 1) break;
      this.entriesMem.push(e);
    }
  }

  /** True when nothing was ever persisted (a brand-new member). */
  get isEmpty(): boolean {
    return this.hardState.term === 0 && this.snapMeta.index === 0 && this.entriesMem.length === 0;
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: { ...this.hardState }, confState: this.confState };
  }

  entries(lo: number, hi: number, maxBytes?: number): Entry[] {
    const first = this.snapMeta.index + 1;
    if (lo < first) throw new Error(`raft log: entries from ${lo} are compacted (first is ${first})`);
    if (hi > this.lastIndex() + 1)
      throw new Error(`raft log: entries up to ${hi} are beyond the last index ${this.lastIndex()}`);
    const out = this.entriesMem.slice(lo - first, hi - first);
    if (maxBytes === undefined || out.length <= 1) return out;
    let size = 0;
    for (let i = 0; i < out.length; i++) {
      size += out[i].data.length + 16;
      if (size > maxBytes && i > 0) return out.slice(0, i);
    }
    return out;
  }

  term(index: number): number {
    if (index === this.snapMeta.index) return this.snapMeta.term;
    const first = this.snapMeta.index + 1;
    if (index < first) throw new Error(`raft log: term of ${index} is compacted`);
    const e = this.entriesMem[index - first];
    if (!e) throw new Error(`raft log: no entry at ${index} (last is ${this.lastIndex()})`);
    return e.term;
  }

  firstIndex(): number {
    return this.snapMeta.index + 1;
  }

  lastIndex(): number {
    return this.snapMeta.index + this.entriesMem.length;
  }

  snapshot(): Snapshot {
    return this.snapshotSource();
  }

  /** Level operations that make `entries` and `hardState` durable (raft's step 1). */
  persistOps(hardState: HardState | undefined, entries: Entry[], ops: BatchOp[]): void {
    if (hardState) ops.push({ type: 'put', key: HARD_STATE, value: encodeHardState(hardState) });
    if (entries.length === 0) return;
    for (const e of entries) ops.push({ type: 'put', key: entryKey(e.index), value: encodeEntry(e) });
    // A new leader may overwrite a suffix: drop what lies past the new last entry.
    const newLast = entries[entries.length - 1].index;
    for (let i = newLast + 1; i <= this.lastIndex(); i++) ops.push({ type: 'del', key: entryKey(i) });
  }

  /** Mirrors persisted entries in memory (after the batch is written). */
  append(hardState: HardState | undefined, entries: Entry[]): void {
    if (hardState) this.hardState = hardState;
    if (entries.length === 0) return;
    const first = this.snapMeta.index + 1;
    const at = entries[0].index - first;
    if (at < 0) {
      const skip = -at;
      if (skip >= entries.length) return;
      this.entriesMem = entries.slice(skip);
      return;
    }
    this.entriesMem.length = Math.min(this.entriesMem.length, at);
    for (const e of entries) this.entriesMem.push(e);
  }

  /** A snapshot received from the leader replaces the whole log. */
  applySnapshotOps(meta: SnapshotMeta, ops: BatchOp[]): void {
    ops.push({ type: 'put', key: SNAP_META, value: this.encodeMeta(meta) });
    this.confStateOps(meta.confState, ops);
    for (let i = this.firstIndex(); i <= this.lastIndex(); i++) ops.push({ type: 'del', key: entryKey(i) });
  }

  applySnapshot(meta: SnapshotMeta): void {
    this.snapMeta = meta;
    this.confState = meta.confState;
    this.entriesMem = [];
  }

  /** Drops entries up to `index` (already applied and durable in the state machine). */
  compactOps(index: number, confState: ConfState, ops: BatchOp[]): void {
    if (index <= this.snapMeta.index) return;
    const meta: SnapshotMeta = { index, term: this.term(index), confState };
    for (let i = this.snapMeta.index + 1; i <= index; i++) ops.push({ type: 'del', key: entryKey(i) });
    ops.push({ type: 'put', key: SNAP_META, value: this.encodeMeta(meta) });
    this.entriesMem = this.entriesMem.slice(index - this.snapMeta.index);
    this.snapMeta = meta;
  }

  /** The membership in force after an applied conf change (stored with the applied index). */
  confStateOps(cs: ConfState, ops: BatchOp[]): void {
    this.confState = cs;
    ops.push({
      type: 'put',
      key: CONF_STATE,
      value: codecs.snapshot.encode({ index: 0, term: 0, conf_state: cs, data: new Uint8Array(0) }),
    });
  }

  /**
   * A brand-new cluster starts with one committed entry per initial member
   * (term 1), as etcd does: every member, and any member that joins later,
   * learns the initial membership by applying them.
   */
  bootstrap(entries: Entry[], ops: BatchOp[]): void {
    const hardState: HardState = { term: 1, vote: '', commit: entries.length };
    this.persistOps(hardState, entries, ops);
    this.append(hardState, entries);
  }

  private encodeMeta(meta: SnapshotMeta): Buffer {
    return codecs.snapshot.encode({
      index: meta.index,
      term: meta.term,
      conf_state: { voters: meta.confState.voters, learners: meta.confState.learners },
      data: new Uint8Array(0),
    });
  }
}
