// Minimal protobuf wire-format primitives for the hot messages (raft traffic,
// log entries, KV puts and ranges, watch events). The generic proto-loader
// codecs convert every 64-bit field through Long objects and walk a
// reflection tree per message; these write and read the bytes directly.
// Every message they handle is also declared in proto/ and stays readable by
// the generic codecs (tests compare both).

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

const TWO_32 = 2 ** 32;
/** Member and cluster IDs repeat in every header: their 64-bit halves, remembered. */
const bigCache = new Map<string, [number, number]>();

/** Bytes a varint of a non-negative safe integer takes. */
function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** A decimal int64/uint64 string too large for a double, as its 64-bit two's complement halves. */
function bigHalves(v: string): [number, number] {
  const b = BigInt.asUintN(64, BigInt(v));
  return [Number(b & 0xffffffffn), Number(b >> 32n)];
}

export class PbWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialSize = 4096) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  /** Starts a new message, reusing the buffer. */
  reset(): this {
    this.pos = 0;
    return this;
  }

  /**
   * A copy of what was written (the writer's buffer is reused), after
   * `headroom` bytes left for the caller (a frame header, say).
   */
  finish(headroom = 0): Buffer {
    const out = Buffer.allocUnsafe(headroom + this.pos);
    this.buf.copy(out, headroom, 0, this.pos);
    return out;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  private rawVarint(n: number): void {
    this.ensure(10);
    this.pos = this.varintAt(this.pos, n);
  }

  /** Writes a varint at `at` into space the caller reserved; returns the position after it. */
  private varintAt(at: number, n: number): number {
    const b = this.buf;
    while (n >= 0x80) {
      b[at++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    b[at++] = n;
    return at;
  }

  /** A 64-bit value given as its low and high 32-bit halves (unsigned). */
  private rawVarint64(lo: number, hi: number): void {
    this.ensure(10);
    const b = this.buf;
    while (hi > 0 || lo >= 0x80) {
      b[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    b[this.pos++] = lo;
  }

  private tag(field: number, wire: number): void {
    this.rawVarint(field * 8 + wire);
  }

  /** An int64/uint64 field (number or decimal string), left out when zero. */
  int64(field: number, v: number | string | undefined | null): void {
    if (v === undefined || v === null || v === 0 || v === '0' || v === '') return;
    this.tag(field, WIRE_VARINT);
    this.rawInt64(v);
  }

  /** An int64 field written even when zero (a oneof member, whose 0 is a value). */
  int64Always(field: number, v: number | string): void {
    this.tag(field, WIRE_VARINT);
    this.rawInt64(v);
  }

  private rawInt64(v: number | string): void {
    const n = typeof v === 'number' ? v : Number(v);
    if (Number.isSafeInteger(n) && n >= 0) this.rawVarint(n);
    else if (Number.isSafeInteger(n)) {
      // Negative: ten bytes of two's complement.
      const lo = (n % TWO_32) >>> 0;
      const hi = Math.floor(n / TWO_32) >>> 0;
      this.rawVarint64(lo, hi);
    } else {
      const s = String(v);
      let halves = bigCache.get(s);
      if (!halves) {
        halves = bigHalves(s);
        if (bigCache.size >= 256) bigCache.clear();
        bigCache.set(s, halves);
      }
      this.rawVarint64(halves[0], halves[1]);
    }
  }

  /** An enum/uint32 field, left out when zero. */
  uint32(field: number, v: number | undefined): void {
    if (!v) return;
    this.tag(field, WIRE_VARINT);
    this.rawVarint(v >>> 0);
  }

  bool(field: number, v: boolean | undefined): void {
    if (!v) return;
    this.tag(field, WIRE_VARINT);
    this.ensure(1);
    this.buf[this.pos++] = 1;
  }

  /** A bytes field, left out when empty (proto3). */
  bytes(field: number, v: Uint8Array | undefined | null): void {
    if (!v || v.length === 0) return;
    this.bytesAlways(field, v);
  }

  /** A bytes field written even when empty (an element of a repeated field or oneof). */
  bytesAlways(field: number, v: Uint8Array): void {
    this.tag(field, WIRE_LEN);
    this.rawVarint(v.length);
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
  }

  /** A string field, left out when empty. */
  string(field: number, v: string | undefined | null): void {
    if (!v) return;
    this.stringAlways(field, v);
  }

  stringAlways(field: number, v: string): void {
    this.tag(field, WIRE_LEN);
    const max = v.length * 3;
    const guess = varintSize(max);
    this.ensure(max + guess);
    // The text goes after room for the longest possible length, then moves back if that was too much.
    const lenAt = this.pos;
    const len = this.buf.write(v, lenAt + guess, 'utf8');
    const actual = varintSize(len);
    if (actual !== guess) this.buf.copyWithin(lenAt + actual, lenAt + guess, lenAt + guess + len);
    this.varintAt(lenAt, len);
    this.pos = lenAt + actual + len;
  }

  /** A bytes field given as a latin1 string (one char per byte), left out when empty. */
  latin1(field: number, v: string): void {
    if (v.length === 0) return;
    this.tag(field, WIRE_LEN);
    this.rawVarint(v.length);
    this.ensure(v.length);
    this.pos += this.buf.write(v, this.pos, 'latin1');
  }

  /** Already encoded fields of this message, copied as they are. */
  raw(encoded: Uint8Array): void {
    this.ensure(encoded.length);
    this.buf.set(encoded, this.pos);
    this.pos += encoded.length;
  }

  /** Opens an embedded message field; close it with end(returned mark). */
  begin(field: number): number {
    this.tag(field, WIRE_LEN);
    this.ensure(5);
    const mark = this.pos;
    this.pos += 5;
    return mark;
  }

  /** Closes an embedded message: writes its length and moves its bytes next to it. */
  end(mark: number): void {
    const start = mark + 5;
    const len = this.pos - start;
    const size = varintSize(len);
    if (size < 5) this.buf.copyWithin(mark + size, start, this.pos);
    this.varintAt(mark, len);
    this.pos = mark + size + len;
  }
}

export class PbReader {
  pos: number;
  readonly end: number;

  constructor(
    readonly buf: Buffer,
    start = 0,
    end = buf.length,
  ) {
    this.pos = start;
    this.end = end;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** The next field's tag: field number * 8 + wire type. */
  tag(): number {
    return this.varint();
  }

  /** A varint as a number (exact up to 2^53; protobuf int32 negatives are sign-extended to 64 bits). */
  varint(): number {
    const b = this.buf;
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new RangeError('protobuf: truncated varint');
      const byte = b[this.pos++];
      result += (byte & 0x7f) * mul;
      if (byte < 0x80) return result;
      mul *= 128;
    }
    throw new RangeError('protobuf: varint longer than 10 bytes');
  }

  /** An int64 varint as a decimal string (exact for every 64-bit value, as proto-loader's longs: String gives). */
  int64String(signed: boolean): string {
    const start = this.pos;
    const n = this.varint();
    if (n < 2 ** 53) return String(n);
    // Re-read exactly with BigInt.
    let v = 0n;
    let shift = 0n;
    for (let p = start; p < this.pos; p++) {
      v |= BigInt(this.buf[p] & 0x7f) << shift;
      shift += 7n;
    }
    v = BigInt.asUintN(64, v);
    return String(signed ? BigInt.asIntN(64, v) : v);
  }

  bool(): boolean {
    return this.varint() !== 0;
  }

  /** A length-delimited field's bounds [start, end). */
  span(): [number, number] {
    const len = this.varint();
    const start = this.pos;
    const end = start + len;
    if (end > this.end) throw new RangeError('protobuf: length beyond the message');
    this.pos = end;
    return [start, end];
  }

  /** A bytes field as a view on the message (no copy). */
  bytes(): Buffer {
    const [s, e] = this.span();
    return this.buf.subarray(s, e);
  }

  string(): string {
    const [s, e] = this.span();
    return this.buf.toString('utf8', s, e);
  }

  /** Skips a field of an unknown number. */
  skip(tag: number): void {
    switch (tag & 7) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_I64:
        this.pos += 8;
        break;
      case WIRE_LEN:
        this.span();
        return;
      case WIRE_I32:
        this.pos += 4;
        break;
      default:
        throw new RangeError(`protobuf: unsupported wire type ${tag & 7}`);
    }
    if (this.pos > this.end) throw new RangeError('protobuf: truncated field');
  }
}
