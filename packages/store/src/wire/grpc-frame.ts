// gRPC's framing of one message on an HTTP/2 stream: a compressed-flag byte
// (always 0 here), the message's length as a big-endian uint32, its bytes.

/** Prefixes a message with gRPC's 5-byte frame header. */
export function frameMessage(body: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + body.length);
  out[0] = 0;
  out.writeUInt32BE(body.length, 1);
  out.set(body, 5);
  return out;
}
