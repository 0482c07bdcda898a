// The WAL's record framing. A record starts on an 8-byte boundary, so its
// length word never straddles a sector and cannot tear on its own:
//
//   u32 payload length | u8 type | u8 padding (0..7) | u16 magic 'KW' | u32 crc | payload | zero padding
//
// The crc covers the first 8 header bytes and the payload, seeded with the
// previous record's crc: a record only verifies in its place in the chain, so
// a stale or shifted record is caught as well as a flipped bit. A BATCH
// record opens every write (and every segment); its payload is the seed it
// was chained from, so it also verifies on its own: replay uses that to tell
// a torn last write (nothing valid after it) from damage to data that was
// already durable (a later batch follows). It also says how many bytes the
// write has: replay takes a write whole or not at all.
import { crc32 } from 'node:zlib';

export const RecordType = {
  /** Opens a write or a segment; payload: u32 seed (the chain's crc before it), u32 the write's bytes. */
  batch: 1,
  entry: 2,
  hardState: 3,
  /** A snapshot received from the leader: the whole log before it is gone. */
  snapshot: 4,
  /** Entries up to an index are covered by durable state: the prefix is gone. */
  compact: 5,
  /** At a segment's start: the snapshot point in force when it was cut. */
  base: 6,
} as const;
export type RecordType = (typeof RecordType)[keyof typeof RecordType];

export const HEADER_BYTES = 12;
const MAGIC = 0x574b;
const MAX_TYPE = 6;

export interface WalRecord {
  type: RecordType;
  payload: Uint8Array;
}

/** Bytes a record with `payloadLength` bytes takes on disk (header, payload, padding). */
export function recordSize(payloadLength: number): number {
  return (HEADER_BYTES + payloadLength + 7) & ~7;
}

/**
 * Writes one record at `offset` of `out`, chained from `seed`; returns its crc.
 * `out` must hold recordSize(payload.length) bytes there (zeroed or not: the padding is written).
 */
export function writeRecord(
  out: Buffer,
  offset: number,
  type: RecordType,
  payload: Uint8Array,
  seed: number,
): number {
  const size = recordSize(payload.length);
  const pad = size - HEADER_BYTES - payload.length;
  out.writeUInt32LE(payload.length, offset);
  out[offset + 4] = type;
  out[offset + 5] = pad;
  out.writeUInt16LE(MAGIC, offset + 6);
  const crc = crc32(payload, crc32(out.subarray(offset, offset + 8), seed));
  out.writeUInt32LE(crc, offset + 8);
  out.set(payload, offset + HEADER_BYTES);
  out.fill(0, offset + HEADER_BYTES + payload.length, offset + size);
  return crc;
}

export const BATCH_PAYLOAD = 8;

export function batchPayload(seed: number, writeBytes: number): Buffer {
  const b = Buffer.allocUnsafe(BATCH_PAYLOAD);
  b.writeUInt32LE(seed, 0);
  b.writeUInt32LE(writeBytes, 4);
  return b;
}

export type ReadResult =
  | { kind: 'record'; type: RecordType; payload: Buffer; crc: number; size: number }
  /** An all-zero header: the preallocated space nothing was written to. */
  | { kind: 'end' }
  | { kind: 'bad'; reason: string };

/** Reads the record at `offset` (8-aligned) of `buf`, checking it against the chain's `seed`. */
export function readRecord(buf: Buffer, offset: number, seed: number): ReadResult {
  const left = buf.length - offset;
  if (left <= 0) return { kind: 'end' };
  if (left < HEADER_BYTES) {
    return isZero(buf, offset, buf.length)
      ? { kind: 'end' }
      : { kind: 'bad', reason: 'a partial record header' };
  }
  if (isZero(buf, offset, offset + HEADER_BYTES)) return { kind: 'end' };
  const length = buf.readUInt32LE(offset);
  const type = buf[offset + 4];
  const pad = buf[offset + 5];
  if (buf.readUInt16LE(offset + 6) !== MAGIC)
    return { kind: 'bad', reason: 'no record header (magic mismatch)' };
  if (type < 1 || type > MAX_TYPE) return { kind: 'bad', reason: `unknown record type ${type}` };
  const size = recordSize(length);
  if (pad !== size - HEADER_BYTES - length)
    return { kind: 'bad', reason: `padding ${pad} does not fit length ${length}` };
  if (size > left) return { kind: 'bad', reason: `record of ${length} bytes runs past the end of the file` };
  const payload = buf.subarray(offset + HEADER_BYTES, offset + HEADER_BYTES + length);
  if (type === RecordType.batch && length === BATCH_PAYLOAD) seed = payload.readUInt32LE(0);
  const crc = crc32(payload, crc32(buf.subarray(offset, offset + 8), seed));
  if (crc !== buf.readUInt32LE(offset + 8)) return { kind: 'bad', reason: 'crc mismatch' };
  if (!isZero(buf, offset + HEADER_BYTES + length, offset + size))
    return { kind: 'bad', reason: 'non-zero padding' };
  return { kind: 'record', type: type as RecordType, payload, crc, size };
}

const ZEROS = Buffer.alloc(64 * 1024);

/** True when buf[from, to) holds only zero bytes (compared natively, 64 KiB at a time). */
export function isZero(buf: Buffer, from: number, to: number): boolean {
  for (let at = from; at < to; at += ZEROS.length) {
    const end = Math.min(to, at + ZEROS.length);
    if (buf.compare(ZEROS, 0, end - at, at, end) !== 0) return false;
  }
  return true;
}

/**
 * The offset of the first BATCH record at or after `from` that verifies on its
 * own, or -1. Zero stretches are skipped natively; garbage passes the magic,
 * type, length and crc checks only by accident (1 in 2^32 after the rest).
 */
export function findBatchAfter(buf: Buffer, from: number): number {
  let at = (from + 7) & ~7;
  while (at + HEADER_BYTES + BATCH_PAYLOAD <= buf.length) {
    const chunkEnd = Math.min(buf.length, at + ZEROS.length);
    if (isZero(buf, at, chunkEnd)) {
      at = chunkEnd;
      continue;
    }
    for (; at < chunkEnd; at += 8) {
      if (at + HEADER_BYTES + BATCH_PAYLOAD > buf.length) return -1;
      if (buf[at + 4] !== RecordType.batch || buf.readUInt32LE(at) !== BATCH_PAYLOAD) continue;
      const r = readRecord(buf, at, 0);
      if (r.kind === 'record') return at;
    }
  }
  return -1;
}
