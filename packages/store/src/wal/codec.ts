// Payloads of the WAL's raft records: entries and hard states in the same
// protobuf forms the peers use, snapshot points as kubitstore.RaftSnapshot
// without data (the data is the MVCC state, which lives in level).
import { codecs } from '../proto.js';
import type { HardState, SnapshotMeta } from '../raft/types.js';

export { decodeHardState, encodeHardState } from '../node/wire.js';
export { decodeEntry, encodeEntry } from '../wire/raft.js';

export function encodeSnapshotMeta(meta: SnapshotMeta): Buffer {
  return codecs.snapshot.encode({
    index: meta.index,
    term: meta.term,
    conf_state: { voters: meta.confState.voters, learners: meta.confState.learners },
    data: new Uint8Array(0),
  });
}

export function decodeSnapshotMeta(b: Buffer): SnapshotMeta {
  const w = codecs.snapshot.decode(b);
  return {
    index: Number(w.index),
    term: Number(w.term),
    confState: { voters: w.conf_state?.voters ?? [], learners: w.conf_state?.learners ?? [] },
  };
}

/** A compaction point: index and term, two u64s (the term of the last dropped entry). */
export function encodeCompact(index: number, term: number): Buffer {
  const b = Buffer.allocUnsafe(16);
  b.writeBigUInt64LE(BigInt(index), 0);
  b.writeBigUInt64LE(BigInt(term), 8);
  return b;
}

export function decodeCompact(b: Buffer): { index: number; term: number } {
  if (b.length !== 16) throw new Error(`a compaction record of ${b.length} bytes (want 16)`);
  return { index: Number(b.readBigUInt64LE(0)), term: Number(b.readBigUInt64LE(8)) };
}

export function sameHardState(a: HardState | undefined, b: HardState | undefined): boolean {
  return (
    a === b ||
    (a !== undefined && b !== undefined && a.term === b.term && a.vote === b.vote && a.commit === b.commit)
  );
}
