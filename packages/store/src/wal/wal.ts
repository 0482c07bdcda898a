// kubit-store's write-ahead log for the raft log and hard state, as etcd's
// WAL holds them: segments of `segmentBytes` (64 MiB), each write one
// positioned write() of whole records plus at most one fdatasync. Records
// land only in space zero-filled (and synced) ahead of them, FILL_CHUNK at a
// time in the background: a write into a hole would make its fdatasync
// commit the block allocation too, and zero-filling all 64 MiB at once would
// cost every member 128 MiB of writes when it starts. (Node has no fallocate.) Writes queue: while one is being synced, the next collects
// everything saved meanwhile (group commit), so there is one write in flight
// and a later write never reaches the disk before an earlier one is durable
// (replay relies on that to tell a torn tail from damage).
//
// A segment is cut when a write does not fit: the preallocated spare
// (next.tmp) gets the segment's head (a batch, the snapshot point, the hard
// state), is synced, renamed to its name and the directory synced; a crash
// before the rename leaves only a .tmp, which open() deletes.
import { join } from 'node:path';
import type { Logger } from '@kubit/daemon';
import type { Entry, HardState, SnapshotMeta } from '../raft/types.js';
import { encodeCompact, encodeEntry, encodeHardState, encodeSnapshotMeta } from './codec.js';
import { nodeWalFs, type WalFile, type WalFs } from './fs.js';
import {
  BATCH_PAYLOAD,
  batchPayload,
  type RecordType,
  RecordType as RT,
  recordSize,
  writeRecord,
} from './record.js';
import { parseSegmentName, replaySegments, type Segment, segmentName, type WalState } from './replay.js';

export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const SPARE = 'next.tmp';
/**
 * Zero-filled ahead of the write position, one chunk at a time. Small: an
 * fdatasync of the WAL while a fill is in flight also writes out the fill's
 * dirty pages (the sync is per file), so a chunk's size is added to one sync.
 */
const FILL_CHUNK = 1024 * 1024;

export interface WalOptions {
  segmentBytes?: number;
  fs?: WalFs;
  logger?: Logger;
}

interface Pending {
  type: RecordType;
  payload: Uint8Array;
  /** For entries: the entry's index; for a snapshot: its index (the log's last index after it). */
  index?: number;
  /** An entry, encoded into `payload` when its write is built (off the Ready's turn). */
  entry?: Entry;
}

const NO_PAYLOAD = new Uint8Array(0);

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

export class Wal {
  private readonly fs: WalFs;
  private readonly segmentBytes: number;
  private readonly logger: Logger | undefined;
  private file!: WalFile;
  private offset = 0;
  private crc = 0;
  /** Segments in order; the last is the one written to. */
  private segments: Segment[] = [];
  private spareReady: Promise<void> | undefined;
  /** Bytes of the current segment zero-filled and synced: writes stay below it. */
  private filled = 0;
  private filling: Promise<void> | undefined;
  private fillError: Error | undefined;
  private pending: Pending[] = [];
  private pendingWaiters: Waiter[] = [];
  private inFlightWaiters: Waiter[] = [];
  /** The last entry index in a write that reached the disk (its segment's successor starts after it). */
  private writtenLast: number;
  private inFlight = false;
  private pumpScheduled = false;
  private closed = false;
  private failed: Error | undefined;
  /** Every entry up to this index is durable here (as the log now has it). */
  private durable = 0;
  private readonly durableWaiters: (Waiter & { index: number })[] = [];
  /** What the log holds, for the head of a new segment. */
  private snapshotPoint: SnapshotMeta;
  private hardState: HardState | undefined;
  private lastIndex: number;

  private constructor(
    readonly dir: string,
    opts: WalOptions,
    state: WalState,
  ) {
    this.fs = opts.fs ?? nodeWalFs;
    this.segmentBytes = opts.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.logger = opts.logger;
    this.snapshotPoint = state.snapshot;
    this.hardState = state.hardState;
    this.lastIndex =
      state.entries.length > 0 ? state.entries[state.entries.length - 1].index : state.snapshot.index;
    this.durable = this.lastIndex;
    this.writtenLast = this.lastIndex;
  }

  /** True when `dir` holds a WAL (at least one segment). */
  static exists(dir: string, fs: WalFs = nodeWalFs): boolean {
    try {
      return fs.list(dir).some((n) => parseSegmentName(n) !== undefined);
    } catch {
      return false;
    }
  }

  /**
   * Opens the WAL in `dir` (creating an empty one, or one holding `initial`,
   * when there is none), replays it, cuts a torn tail, and is ready to write.
   * Throws WalCorruptError on damage anywhere but the tail.
   */
  static async open(
    dir: string,
    opts: WalOptions = {},
    initial?: WalState,
  ): Promise<{ wal: Wal; state: WalState }> {
    const fs = opts.fs ?? nodeWalFs;
    fs.mkdir(dir);
    const names = fs.list(dir);
    // A .tmp is a spare or a segment that was never renamed into place: nothing in it counts.
    for (const n of names) if (n.endsWith('.tmp')) fs.unlink(join(dir, n));
    const segments = names
      .map(parseSegmentName)
      .filter((s): s is Segment => s !== undefined)
      .sort((a, b) => a.seq - b.seq);
    if (segments.length === 0) {
      const state: WalState = initial ?? {
        hardState: undefined,
        snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
        entries: [],
      };
      const wal = new Wal(dir, opts, state);
      await wal.createFirstSegment(state);
      return { wal, state };
    }
    if (initial) throw new Error(`wal: ${dir} already holds a log`);
    const { state, end } = replaySegments(segments, (s) => fs.read(join(dir, s.name)));
    const wal = new Wal(dir, opts, state);
    wal.segments = segments;
    const last = segments[segments.length - 1];
    const lastPath = join(dir, last.name);
    if (end.tornAt) {
      opts.logger?.warn(
        { segment: last.name, offset: end.tornAt.offset, reason: end.tornAt.reason },
        'wal: cut a torn tail (a write the crash interrupted, never acknowledged)',
      );
      fs.truncate(lastPath, end.tornAt.offset, wal.segmentBytes);
    }
    wal.file = fs.open(lastPath);
    wal.offset = end.offset;
    wal.crc = end.crc;
    if (wal.offset === 0) wal.writeHead();
    // What lies past the last record may be holes (a repaired tail): fill from there, never over a record.
    wal.filled = wal.offset;
    wal.fillAhead();
    wal.prepareSpare();
    return { wal, state };
  }

  /** The last entry index that is durable. */
  get durableIndex(): number {
    return this.durable;
  }

  /** Resolves once every entry up to `index` is durable. */
  whenDurable(index: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (index <= this.durable) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.durableWaiters.push({ index, resolve, reject });
    });
  }

  /** Settles once every write queued so far is durable; undefined when none is queued or in flight. */
  idle(): Promise<void> | undefined {
    const list =
      this.pendingWaiters.length > 0 ? this.pendingWaiters : this.inFlight ? this.inFlightWaiters : undefined;
    if (!list) return undefined;
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      list.push({ resolve, reject });
    });
  }

  /** Saves a hard state and entries (raft's step 1); resolves once they are durable. */
  save(hardState: HardState | undefined, entries: readonly Entry[]): Promise<void> {
    if (entries.length > 0) {
      const first = entries[0].index;
      // An overwritten suffix is not durable in its new form until this write is.
      if (first - 1 < this.durable) this.durable = first - 1;
      for (const e of entries)
        this.pending.push({ type: RT.entry, payload: NO_PAYLOAD, index: e.index, entry: e });
      this.lastIndex = entries[entries.length - 1].index;
    }
    if (hardState) this.setHardState(hardState);
    return this.flush();
  }

  /** A hard state that need not be synced on its own (a new commit index): it rides with the next write. */
  setHardState(hardState: HardState): void {
    this.hardState = hardState;
    // Only the newest hard state counts: replace one still queued.
    for (let i = this.pending.length - 1; i >= 0; i--) {
      if (this.pending[i].type === RT.hardState) {
        this.pending[i] = { type: RT.hardState, payload: encodeHardState(hardState) };
        return;
      }
    }
    this.push(RT.hardState, encodeHardState(hardState));
  }

  /** A snapshot from the leader replaced the log; resolves once that is durable. */
  saveSnapshot(meta: SnapshotMeta): Promise<void> {
    this.snapshotPoint = meta;
    this.lastIndex = meta.index;
    this.durable = Math.min(this.durable, meta.index);
    this.push(RT.snapshot, encodeSnapshotMeta(meta), meta.index);
    return this.flush();
  }

  /**
   * Entries up to `index` are covered by durable MVCC state: the log starts
   * after it. Resolves once the record is durable; release() may then delete
   * the segments it covers.
   */
  compact(index: number, term: number): Promise<void> {
    if (index <= this.snapshotPoint.index) return Promise.resolve();
    this.snapshotPoint = { index, term, confState: this.snapshotPoint.confState };
    this.push(RT.compact, encodeCompact(index, term));
    return this.flush();
  }

  /**
   * Deletes whole segments that hold only entries up to `index`, oldest first
   * (the segment written to is never deleted). Call it only once compact()
   * or saveSnapshot() for at least `index` has resolved.
   */
  release(index: number): void {
    let dropped = 0;
    while (this.segments.length > 1 && this.segments[1].startIndex <= index + 1) {
      const [old] = this.segments.splice(0, 1);
      this.fs.unlink(join(this.dir, old.name));
      dropped++;
    }
    if (dropped > 0) {
      this.fs.syncDir(this.dir);
      this.logger?.debug({ dropped, upTo: index }, 'wal: released old segments');
    }
  }

  /** The number of segment files (for tests and metrics). */
  get segmentCount(): number {
    return this.segments.length;
  }

  /** Waits for the write in flight, then closes the file (queued writes are written first). */
  async close(): Promise<void> {
    while (this.inFlight || this.pending.length > 0) await this.flush();
    this.closed = true;
    await this.spareReady?.catch(() => undefined);
    await this.filling;
    this.file.close();
  }

  private push(type: RecordType, payload: Uint8Array, index?: number): void {
    if (this.closed) throw new Error('wal: write after close');
    this.pending.push({ type, payload, index });
  }

  private flush(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const p = new Promise<void>((resolve, reject) => {
      this.pendingWaiters.push({ resolve, reject });
    });
    // The write is built and made in the next turn: the caller's messages
    // (handed to their sockets in this one) leave first, and whatever else
    // is saved in this turn joins the same write.
    if (!this.pumpScheduled) {
      this.pumpScheduled = true;
      setImmediate(() => {
        this.pumpScheduled = false;
        this.pump();
      });
    }
    return p;
  }

  private pump(): void {
    if (this.inFlight || this.pendingWaiters.length === 0) return;
    this.inFlight = true;
    const records = this.pending;
    const waiters = this.pendingWaiters;
    this.inFlightWaiters = waiters;
    this.pending = [];
    this.pendingWaiters = [];
    let upTo = -1;
    for (const r of records) if (r.index !== undefined) upTo = r.index;
    this.writeBatch(records).then(
      () => {
        this.inFlight = false;
        if (upTo >= 0) this.writtenLast = upTo;
        // Everything saved is on disk; or, with more queued, at least this write's entries
        // (unless a later save overwrote them, which lowered lastIndex below them).
        if (this.pending.length === 0) this.durable = this.lastIndex;
        else if (upTo > this.durable && upTo <= this.lastIndex) this.durable = upTo;
        for (const w of waiters) w.resolve();
        this.wakeDurable();
        this.pump();
      },
      (err: unknown) => {
        // The file's state is unknown after a failed write or sync (fsyncgate): never retry.
        this.failed = err instanceof Error ? err : new Error(String(err));
        this.logger?.error({ err }, 'wal: a write failed; no further writes are possible');
        this.inFlight = false;
        for (const w of waiters) w.reject(this.failed);
        for (const w of this.pendingWaiters) w.reject(this.failed);
        for (const w of this.durableWaiters) w.reject(this.failed);
        this.pendingWaiters = [];
        this.durableWaiters.length = 0;
      },
    );
  }

  private wakeDurable(): void {
    if (this.durableWaiters.length === 0) return;
    for (let i = this.durableWaiters.length - 1; i >= 0; i--) {
      if (this.durableWaiters[i].index <= this.durable) {
        const [w] = this.durableWaiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  /** One write (a batch record, then `records`), then one fdatasync. */
  private async writeBatch(records: Pending[]): Promise<void> {
    let size = recordSize(BATCH_PAYLOAD);
    let firstEntry = Number.POSITIVE_INFINITY;
    for (const r of records) {
      if (r.entry) r.payload = encodeEntry(r.entry);
      size += recordSize(r.payload.length);
      if (r.type === RT.entry && firstEntry === Number.POSITIVE_INFINITY) firstEntry = r.index ?? firstEntry;
    }
    // A segment's name promises no entry in it is older than its start index:
    // the lower of what is on disk + 1 and this write's first entry.
    if (this.offset + size > this.segmentBytes && this.offset > 0)
      await this.cut(Math.min(this.writtenLast + 1, firstEntry));
    // Only into filled space (a write past the segment's size extends the file, a rare huge write).
    while (this.offset + size > this.filled && this.filled < this.segmentBytes)
      await this.waitFill(this.offset + size);
    const buf = Buffer.allocUnsafe(size);
    let at = 0;
    let crc = writeRecord(buf, 0, RT.batch, batchPayload(this.crc, size), this.crc);
    at += recordSize(BATCH_PAYLOAD);
    for (const r of records) {
      crc = writeRecord(buf, at, r.type, r.payload, crc);
      at += recordSize(r.payload.length);
    }
    this.file.write(buf, this.offset);
    this.offset += size;
    this.crc = crc;
    this.fillAhead();
    await this.file.datasync();
  }

  /** Keeps two chunks zero-filled past the write position (and at least up to `atLeast`). */
  private fillAhead(atLeast = 0): void {
    if (this.filling || this.closed) return;
    const want = Math.min(this.segmentBytes, Math.max(atLeast, this.offset + 2 * FILL_CHUNK));
    if (this.filled >= want) return;
    const file = this.file;
    const from = this.filled;
    const to = Math.min(this.segmentBytes, from + FILL_CHUNK);
    this.filling = file.fill(from, to).then(
      () => {
        this.filling = undefined;
        if (file !== this.file) return;
        this.filled = to;
        this.fillAhead(atLeast);
      },
      (err: unknown) => {
        this.filling = undefined;
        if (file !== this.file) return;
        this.fillError = err instanceof Error ? err : new Error(String(err));
        this.logger?.error({ err }, 'wal: zero-filling ahead of the writes failed');
      },
    );
  }

  private async waitFill(upTo: number): Promise<void> {
    if (this.fillError) throw this.fillError;
    this.fillAhead(upTo);
    if (this.filling) await this.filling;
    if (this.fillError) throw this.fillError;
  }

  /** Writes a segment's head at offset 0 of the current file (not synced here). */
  private writeHead(): void {
    const records: Pending[] = [{ type: RT.base, payload: encodeSnapshotMeta(this.snapshotPoint) }];
    if (this.hardState) records.push({ type: RT.hardState, payload: encodeHardState(this.hardState) });
    let size = recordSize(BATCH_PAYLOAD);
    for (const r of records) size += recordSize(r.payload.length);
    const buf = Buffer.allocUnsafe(size);
    let crc = writeRecord(buf, 0, RT.batch, batchPayload(this.crc, size), this.crc);
    let at = recordSize(BATCH_PAYLOAD);
    for (const r of records) {
      crc = writeRecord(buf, at, r.type, r.payload, crc);
      at += recordSize(r.payload.length);
    }
    this.file.write(buf, 0);
    this.offset = size;
    this.crc = crc;
  }

  /** The next segment, made ahead: holes, its first chunk filled. */
  private prepareSpare(): void {
    const path = join(this.dir, SPARE);
    const fs = this.fs;
    const size = this.segmentBytes;
    this.spareReady = (async () => {
      await fs.createSparse(path, size);
      const f = fs.open(path);
      try {
        await f.fill(0, Math.min(size, FILL_CHUNK));
      } finally {
        f.close();
      }
    })();
    // Failure surfaces at the next cut, which awaits this promise.
    this.spareReady.catch((err: unknown) =>
      this.logger?.warn({ err }, 'wal: preallocating the next segment failed'),
    );
  }

  /** Switches to the preallocated spare: head written and synced, renamed into place, directory synced. */
  private async cut(startIndex: number): Promise<void> {
    if (!this.spareReady) this.prepareSpare();
    await this.spareReady;
    const seq = this.segments.length > 0 ? this.segments[this.segments.length - 1].seq + 1 : 0;
    const spare = join(this.dir, SPARE);
    const old = this.file;
    // Its fill must end before its descriptor closes (a reused number would get the zeros).
    await this.filling;
    this.file = this.fs.open(spare);
    this.filled = Math.min(this.segmentBytes, FILL_CHUNK);
    this.writeHead();
    await this.file.datasync();
    const name = segmentName(seq, startIndex);
    this.fs.rename(spare, join(this.dir, name));
    this.fs.syncDir(this.dir);
    old.close();
    this.segments.push({ seq, startIndex, name });
    this.logger?.debug({ segment: name }, 'wal: cut a new segment');
    this.prepareSpare();
  }

  private async createFirstSegment(state: WalState): Promise<void> {
    const spare = join(this.dir, SPARE);
    this.prepareSpare();
    await this.spareReady;
    this.file = this.fs.open(spare);
    this.filled = Math.min(this.segmentBytes, FILL_CHUNK);
    this.crc = 0;
    this.writeHead();
    await this.file.datasync();
    const name = segmentName(0, state.snapshot.index + 1);
    this.fs.rename(spare, join(this.dir, name));
    this.fs.syncDir(this.dir);
    this.segments = [{ seq: 0, startIndex: state.snapshot.index + 1, name }];
    this.prepareSpare();
    if (state.entries.length > 0) {
      this.writtenLast = state.snapshot.index;
      this.durable = state.snapshot.index;
      await this.save(undefined, state.entries);
    }
  }
}
