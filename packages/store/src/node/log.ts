// The raft log: hard state, entries and the snapshot point live in the
// write-ahead log (../wal), as etcd's do; an in-memory copy of the retained
// entries answers raft's reads at once. The membership in force after the
// applied entries (conf state) is applied state: it goes to level with the
// MVCC state it belongs to.
//
// A data directory from before the WAL kept the log in level ('e', 'h', 's'
// keys): the first start copies it into a new WAL (built aside and renamed
// into place, so a crash midway leaves the old form) and then drops the keys.
import { existsSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '@kubit/daemon';
import type { Db } from '../mvcc/machine.js';
import type { BatchOp } from '../mvcc/store.js';
import { codecs } from '../proto.js';
import type { ConfState, Entry, HardState, LogStorage, Snapshot, SnapshotMeta } from '../raft/types.js';
import { decodeSnapshotMeta, encodeSnapshotMeta } from '../wal/codec.js';
import { nodeWalFs, type WalFs } from '../wal/fs.js';
import type { WalState } from '../wal/replay.js';
import { Wal } from '../wal/wal.js';
import { decodeEntry } from '../wire/raft.js';
import { decodeHardState } from './wire.js';

// Level keys: r, m, l, c (state machine), x (conf state), s (the snapshot
// point of the last snapshot restored from the leader, written before the
// WAL records it). 'e' and 'h' held the log before the WAL.
const LEGACY_ENTRY = 0x65;
const LEGACY_HARD_STATE = Buffer.from('h');
const SNAP_META = Buffer.from('s');
const CONF_STATE = Buffer.from('x');

/** The MVCC state and the log do not fit together: starting would lose or invent data. */
export class LogMismatchError extends Error {
  override name = 'LogMismatchError';
}

export interface RaftLogOptions {
  /** The WAL's directory (<data-dir>/member/wal beside level's). */
  walDir: string;
  logger: Logger;
  segmentBytes?: number;
  fs?: WalFs;
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

  private constructor(
    private readonly db: Db,
    readonly wal: Wal,
    state: WalState,
  ) {
    if (state.hardState) this.hardState = state.hardState;
    this.snapMeta = state.snapshot;
    this.confState = state.snapshot.confState;
    this.entriesMem = state.entries;
  }

  /**
   * Opens the log: the WAL in opts.walDir, migrated from level's keys on the
   * first start after the WAL came in. `appliedIndex` is what the MVCC state
   * in level has applied: the log must reach it (see reconcile()).
   */
  static async open(db: Db, appliedIndex: number, opts: RaftLogOptions): Promise<RaftLog> {
    const fs = opts.fs ?? nodeWalFs;
    const walOpts = { segmentBytes: opts.segmentBytes, fs, logger: opts.logger };
    if (!Wal.exists(opts.walDir, fs)) await migrateFromLevel(db, opts, walOpts);
    const { wal, state } = await Wal.open(opts.walDir, walOpts);
    const log = new RaftLog(db, wal, state);
    const cs = await db.get(CONF_STATE);
    if (cs) {
      const w = codecs.snapshot.decode(cs).conf_state;
      log.confState = { voters: w?.voters ?? [], learners: w?.learners ?? [] };
    }
    await log.reconcile(appliedIndex, opts.logger);
    return log;
  }

  /**
   * The MVCC state and the log after a crash. MVCC (synced less often) is
   * normally behind the log, and the log replays the rest; a commit index
   * below the applied one is raised (applied entries are committed). MVCC
   * ahead of the log happens only when a crash fell between restoring a
   * leader's snapshot into level and recording it in the WAL: level's
   * snapshot point then says where the log starts.
   */
  private async reconcile(applied: number, logger: Logger): Promise<void> {
    if (applied > this.lastIndex()) {
      const sm = await this.db.get(SNAP_META);
      const meta = sm ? decodeSnapshotMeta(sm) : undefined;
      if (!meta || meta.index !== applied) {
        throw new LogMismatchError(
          `the MVCC state has applied entry ${applied} but the raft log ends at ${this.lastIndex()}: ` +
            'the write-ahead log lost durable entries. Recover this member from its peers ' +
            '(etcdctl member remove, move the data directory away, etcdctl member add).',
        );
      }
      logger.warn({ index: applied }, 'finishing a snapshot restore that a crash interrupted');
      await this.wal.saveSnapshot(meta);
      this.applySnapshot(meta);
    }
    if (applied < this.snapMeta.index) {
      throw new LogMismatchError(
        `the MVCC state has applied entry ${applied} only, but the raft log starts after ${this.snapMeta.index}: ` +
          'the state for the entries between was lost. Recover this member from its peers ' +
          '(etcdctl member remove, move the data directory away, etcdctl member add).',
      );
    }
    if (this.hardState.commit < applied) this.hardState = { ...this.hardState, commit: applied };
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

  /** Makes `entries` and `hardState` durable (raft's step 1): one WAL write, one fdatasync. */
  save(hardState: HardState | undefined, entries: Entry[]): Promise<void> {
    return this.wal.save(hardState, entries);
  }

  /** A hard state that needs no sync of its own (only the commit index moved): it rides with the next write. */
  saveLazily(hardState: HardState): void {
    this.wal.setHardState(hardState);
  }

  /** Mirrors saved entries in memory (answers raft from now on). */
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

  /**
   * Level's part of restoring a snapshot from the leader, written (synced)
   * with the restored state: the snapshot point, so a crash before the WAL
   * records it can be finished on the next start, and the conf state.
   */
  snapshotOps(meta: SnapshotMeta, ops: BatchOp[]): void {
    ops.push({ type: 'put', key: SNAP_META, value: encodeSnapshotMeta(meta) });
    this.confStateOps(meta.confState, ops);
  }

  /** The WAL's part: the log is replaced by the snapshot point; then the old segments go. */
  async saveSnapshot(meta: SnapshotMeta): Promise<void> {
    await this.wal.saveSnapshot(meta);
    this.applySnapshot(meta);
    this.wal.release(meta.index);
  }

  private applySnapshot(meta: SnapshotMeta): void {
    this.snapMeta = meta;
    this.confState = meta.confState;
    this.entriesMem = [];
  }

  /**
   * Drops entries up to `index` from memory at once; returns the term the WAL
   * must record for it once the MVCC state covering it is durable (compactDurably).
   */
  compactInMemory(index: number, confState: ConfState): number | undefined {
    if (index <= this.snapMeta.index) return undefined;
    const meta: SnapshotMeta = { index, term: this.term(index), confState };
    this.entriesMem = this.entriesMem.slice(index - this.snapMeta.index);
    this.snapMeta = meta;
    return meta.term;
  }

  /** Records the compaction in the WAL and deletes the whole segments it covers. */
  async compactDurably(index: number, term: number): Promise<void> {
    await this.wal.compact(index, term);
    this.wal.release(index);
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
  async bootstrap(entries: Entry[]): Promise<void> {
    const hardState: HardState = { term: 1, vote: '', commit: entries.length };
    await this.save(hardState, entries);
    this.append(hardState, entries);
  }

  close(): Promise<void> {
    return this.wal.close();
  }
}

/** The log as level held it before the WAL; undefined when level holds none. */
async function legacyLog(db: Db): Promise<WalState | undefined> {
  const hs = await db.get(LEGACY_HARD_STATE);
  const sm = await db.get(SNAP_META);
  const snapshot = sm
    ? decodeSnapshotMeta(sm)
    : { index: 0, term: 0, confState: { voters: [], learners: [] } };
  const entries: Entry[] = [];
  for await (const [, v] of db.iterator({
    gt: legacyEntryKey(snapshot.index),
    lt: Buffer.from([LEGACY_ENTRY + 1]),
  })) {
    const e = decodeEntry(v);
    const last = entries.length > 0 ? entries[entries.length - 1].index : snapshot.index;
    if (e.index !== last + 1) break;
    entries.push(e);
  }
  if (!hs && !sm && entries.length === 0) return undefined;
  return { hardState: hs ? decodeHardState(hs) : undefined, snapshot, entries };
}

function legacyEntryKey(index: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = LEGACY_ENTRY;
  b.writeUInt32BE(Math.floor(index / 2 ** 32), 1);
  b.writeUInt32BE(index >>> 0, 5);
  return b;
}

/**
 * Copies level's log into a new WAL: written to <walDir>.tmp, synced, renamed
 * into place (the parent directory synced), then level's log keys dropped.
 */
async function migrateFromLevel(
  db: Db,
  opts: RaftLogOptions,
  walOpts: { segmentBytes?: number; fs: WalFs; logger: Logger },
): Promise<void> {
  const old = await legacyLog(db);
  if (!old) return;
  const tmp = `${opts.walDir}.tmp`;
  if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
  if (existsSync(opts.walDir)) rmSync(opts.walDir, { recursive: true, force: true });
  const { wal } = await Wal.open(tmp, walOpts, old);
  await wal.close();
  walOpts.fs.rename(tmp, opts.walDir);
  walOpts.fs.syncDir(dirname(opts.walDir));
  const batch = db.batch();
  batch.del(LEGACY_HARD_STATE);
  for await (const k of db.keys({ gte: Buffer.from([LEGACY_ENTRY]), lt: Buffer.from([LEGACY_ENTRY + 1]) }))
    batch.del(k);
  await batch.write({ sync: true });
  opts.logger.info(
    { entries: old.entries.length, snapshotIndex: old.snapshot.index },
    'migrated the raft log from level into the write-ahead log',
  );
}
