// Rebuilds the raft log from the WAL's segments, in order. A later entry at
// an index already held replaces it and everything after it (a new leader
// overwrote an uncommitted suffix). Damage is told apart by where it is:
// a bad record with no valid batch after it in the LAST segment is a write
// that a crash tore (it was never acknowledged): the tail is cut there.
// Anything else was durable once, and is refused with what and where.
import type { Entry, HardState, SnapshotMeta } from '../raft/types.js';
import { decodeCompact, decodeEntry, decodeHardState, decodeSnapshotMeta } from './codec.js';
import { BATCH_PAYLOAD, findBatchAfter, RecordType, readRecord } from './record.js';

export interface WalState {
  hardState: HardState | undefined;
  /** Entries up to snapshot.index are gone from the log (covered by the state machine). */
  snapshot: SnapshotMeta;
  /** Entries snapshot.index+1 .. in order, no gaps. */
  entries: Entry[];
}

export interface Segment {
  seq: number;
  /** The index the first entry written into this segment had (the log's last index + 1 when it was cut). */
  startIndex: number;
  name: string;
}

export class WalCorruptError extends Error {
  constructor(message: string) {
    super(
      `${message}. The write-ahead log is damaged where it was already durable, so this member refuses to ` +
        'start rather than lose acknowledged writes. Recover it from its peers: remove it from the cluster ' +
        '(etcdctl member remove), move its data directory away, and add it back (etcdctl member add, ' +
        '--initial-cluster-state existing).',
    );
    this.name = 'WalCorruptError';
  }
}

const SEGMENT_NAME = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/;

export function segmentName(seq: number, startIndex: number): string {
  return `${seq.toString(16).padStart(16, '0')}-${startIndex.toString(16).padStart(16, '0')}.wal`;
}

export function parseSegmentName(name: string): Segment | undefined {
  const m = SEGMENT_NAME.exec(name);
  if (!m) return undefined;
  return { seq: Number.parseInt(m[1], 16), startIndex: Number.parseInt(m[2], 16), name };
}

/** Where replay stopped in the last segment: the next write goes there, chained from `crc`. */
export interface ReplayEnd {
  offset: number;
  crc: number;
  /** A torn tail found in the last segment: the byte it starts at (the file is cut there). */
  tornAt?: { offset: number; reason: string };
}

export interface ReplayResult {
  state: WalState;
  end: ReplayEnd;
}

const EMPTY_META: SnapshotMeta = { index: 0, term: 0, confState: { voters: [], learners: [] } };

class LogBuilder {
  hardState: HardState | undefined;
  snapshot: SnapshotMeta = EMPTY_META;
  entries: Entry[] = [];

  lastIndex(): number {
    const n = this.entries.length;
    return n > 0 ? this.entries[n - 1].index : this.snapshot.index;
  }

  apply(type: RecordType, payload: Buffer, where: () => string): void {
    switch (type) {
      case RecordType.batch:
        return;
      case RecordType.entry: {
        const e = decodeEntry(payload);
        if (e.index <= this.snapshot.index) return;
        const first = this.entries.length > 0 ? this.entries[0].index : e.index;
        if (e.index > this.lastIndex() + 1 && this.entries.length > 0) {
          throw new WalCorruptError(`${where()}: entry ${e.index} follows entry ${this.lastIndex()} (a gap)`);
        }
        if (e.index < first) this.entries = [];
        else if (e.index <= this.lastIndex()) this.entries.length = e.index - first;
        this.entries.push(e);
        return;
      }
      case RecordType.hardState:
        this.hardState = decodeHardState(payload);
        return;
      case RecordType.snapshot:
        this.snapshot = decodeSnapshotMeta(payload);
        this.entries = [];
        return;
      case RecordType.compact: {
        const c = decodeCompact(payload);
        if (c.index <= this.snapshot.index) return;
        this.dropThrough(c.index);
        this.snapshot = { index: c.index, term: c.term, confState: this.snapshot.confState };
        return;
      }
      case RecordType.base: {
        const meta = decodeSnapshotMeta(payload);
        if (meta.index <= this.snapshot.index) return;
        this.dropThrough(meta.index);
        this.snapshot = meta;
        return;
      }
    }
  }

  private dropThrough(index: number): void {
    const k = this.entries.findIndex((e) => e.index > index);
    this.entries = k < 0 ? [] : this.entries.slice(k);
  }

  finish(): WalState {
    if (this.entries.length > 0 && this.entries[0].index !== this.snapshot.index + 1) {
      throw new WalCorruptError(
        `the log starts at entry ${this.entries[0].index} but its snapshot point is ${this.snapshot.index} (entries are missing)`,
      );
    }
    return { hardState: this.hardState, snapshot: this.snapshot, entries: this.entries };
  }
}

/**
 * Replays `segments` (sorted by seq; their bytes from `read`). Throws
 * WalCorruptError on damage that is not a torn last write.
 */
export function replaySegments(segments: Segment[], read: (s: Segment) => Buffer): ReplayResult {
  const log = new LogBuilder();
  let crc = 0;
  let end: ReplayEnd = { offset: 0, crc: 0 };
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const last = i === segments.length - 1;
    const buf = read(seg);
    let offset = 0;
    for (;;) {
      // One write: its batch record, then records up to the length it gives; taken whole or not at all.
      const start = offset;
      let r = readRecord(buf, offset, crc);
      if (r.kind === 'record') {
        if (r.type !== RecordType.batch || r.payload.length !== BATCH_PAYLOAD) {
          throw new WalCorruptError(
            `segment ${seg.name} at byte ${offset}: a write does not start with a batch record`,
          );
        }
        if (r.payload.readUInt32LE(0) !== crc && (i > 0 || offset > 0)) {
          throw new WalCorruptError(`segment ${seg.name} at byte ${offset}: a batch breaks the crc chain`);
        }
        const end = start + r.payload.readUInt32LE(4);
        const records: { type: RecordType; payload: Buffer; at: number }[] = [];
        let chain = r.crc;
        offset += r.size;
        while (offset < end) {
          r = readRecord(buf, offset, chain);
          if (r.kind !== 'record') break;
          if (r.type === RecordType.batch) {
            r = { kind: 'bad', reason: 'a batch record inside a write' };
            break;
          }
          records.push({ type: r.type, payload: r.payload, at: offset });
          chain = r.crc;
          offset += r.size;
        }
        if (offset === end && r.kind === 'record') {
          for (const rec of records)
            log.apply(rec.type, rec.payload, () => `segment ${seg.name} at byte ${rec.at}`);
          crc = chain;
          continue;
        }
        if (offset > end) r = { kind: 'bad', reason: `records run past the write's end at byte ${end}` };
        if (r.kind === 'end') r = { kind: 'bad', reason: `the write ends before byte ${end}` };
        offset = start;
      }
      // Valid data after this point means this write was durable before a later one began.
      const later = findBatchAfter(buf, r.kind === 'end' ? offset : offset + 8);
      if (later >= 0) {
        const what = r.kind === 'bad' ? r.reason : 'zeroed bytes';
        throw new WalCorruptError(
          `segment ${seg.name} at byte ${offset}: ${what}, with a valid batch at byte ${later} after it`,
        );
      }
      if (r.kind === 'record') throw new Error('wal replay: unreachable');
      if (r.kind === 'bad') {
        if (!last) throw new WalCorruptError(`segment ${seg.name} at byte ${offset}: ${r.reason}`);
        end = { offset, crc, tornAt: { offset, reason: r.reason } };
      } else {
        end = { offset, crc };
      }
      if (offset === 0 && !last) throw new WalCorruptError(`segment ${seg.name} is empty`);
      break;
    }
  }
  return { state: log.finish(), end };
}
