// Long-lived small byte strings (stored values, raft log entries) copied into
// large chunks of their own. Left where they arrive, each would be a view that
// keeps alive the whole buffer it came in (a gRPC message, or one of Node's
// shared 8 KiB pool slabs full of short-lived garbage): hundreds of bytes of
// data pinning kilobytes. A chunk is freed once nothing in it is referenced;
// what shares a chunk was stored at about the same time, so it tends to go
// (compaction, log truncation) together.
const CHUNK_BYTES = 64 * 1024;
/** Larger copies get a buffer of their own. */
const MAX_SHARED_BYTES = 4096;
const EMPTY = Buffer.alloc(0);

export class Arena {
  private chunk = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  private used = 0;

  copy(src: Uint8Array): Buffer {
    const n = src.length;
    if (n === 0) return EMPTY;
    if (n > MAX_SHARED_BYTES) {
      const own = Buffer.allocUnsafeSlow(n);
      own.set(src);
      return own;
    }
    if (this.used + n > CHUNK_BYTES) {
      this.chunk = Buffer.allocUnsafeSlow(CHUNK_BYTES);
      this.used = 0;
    }
    const out = this.chunk.subarray(this.used, this.used + n);
    out.set(src);
    this.used += n;
    return out;
  }
}

/** Values of stored versions (the MVCC history). */
export const valueArena = new Arena();
/** Data of raft log entries held in memory until log compaction. */
export const logArena = new Arena();
