// gRPC's framing of one message on an HTTP/2 stream: a compressed-flag byte
// (always 0 here), the message's length as a big-endian uint32, its bytes.

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
