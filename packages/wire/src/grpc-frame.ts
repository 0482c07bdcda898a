// gRPC's framing of one message on an HTTP/2 stream: a compressed-flag byte
// (always 0 here), the message's length as a big-endian uint32, its bytes.

/** gRPC status codes a frame can be refused with. */
const RESOURCE_EXHAUSTED = 8;
const UNIMPLEMENTED = 12;

/** Why a frame was refused: a gRPC status code and grpc-go's words for it. */
export interface FrameError {
  code: number;
  message: string;
}

export const FRAME_HEADER_BYTES = 5;

/** Writes gRPC's frame header for a `messageBytes`-long message into the first 5 bytes of `out`. */
export function writeFrameHeader(out: Buffer, messageBytes: number): void {
  out[0] = 0;
  out.writeUInt32BE(messageBytes, 1);
}

/** Prefixes a message with gRPC's 5-byte frame header. */
export function frameMessage(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.length);
  writeFrameHeader(out, body.length);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

/**
 * A serializer that writes its message after `headroom` free bytes, turned
 * into one that returns the whole frame: one copy of the message, not two.
 */
export function framedSerializer<T>(
  encode: (message: T, headroom: number) => Buffer,
): (message: T) => Buffer {
  return (message) => {
    const out = encode(message, FRAME_HEADER_BYTES);
    writeFrameHeader(out, out.length - FRAME_HEADER_BYTES);
    return out;
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * Splits a byte stream (an HTTP/2 stream's DATA, request or response) into
 * gRPC messages. `push` returns the gRPC status for a message that is
 * compressed or over the limit (the call must then end). A message that
 * arrives in one chunk is handed on as a view of it, uncopied.
 */
export class MessageReader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Length of the message being gathered, or -1 while its header is incomplete. */
  private need = -1;

  constructor(
    private readonly maxLength: number,
    private readonly onMessage: (body: Buffer) => void,
  ) {}

  push(chunk: Buffer): FrameError | undefined {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.pendingBytes < 5) return undefined;
        const head = this.take(5);
        if (head[0] !== 0) {
          return { code: UNIMPLEMENTED, message: 'grpc: compressed messages are not supported' };
        }
        const length = head.readUInt32BE(1);
        if (length > this.maxLength) {
          return {
            code: RESOURCE_EXHAUSTED,
            message: `grpc: received message larger than max (${length} vs. ${this.maxLength})`,
          };
        }
        this.need = length;
      }
      if (this.pendingBytes < this.need) return undefined;
      const body = this.take(this.need);
      this.need = -1;
      this.onMessage(body);
    }
  }

  /** Removes and returns the first `n` pending bytes (no copy when one chunk holds them). */
  private take(n: number): Buffer {
    if (n === 0) return EMPTY;
    const first = this.pending[0];
    if (first.length >= n) {
      this.pendingBytes -= n;
      if (first.length === n) this.pending.shift();
      else this.pending[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const all = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = all.length > n ? [all.subarray(n)] : [];
    this.pendingBytes -= n;
    return all.subarray(0, n);
  }
}
