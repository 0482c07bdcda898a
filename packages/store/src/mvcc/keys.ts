// Key ranges as etcd defines them. Keys are held as latin1 strings: one char
// per byte, so JavaScript's string order is exactly bytewise order.

export type KeyRange =
  | { kind: 'single'; key: string }
  /** end === undefined: every key >= start (range_end "\0"). */
  | { kind: 'range'; start: string; end: string | undefined };

export function keyString(buf: Uint8Array): string {
  return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('latin1');
}

export function keyBuffer(key: string): Buffer {
  return Buffer.from(key, 'latin1');
}

/** [key, range_end) with etcd's conventions: empty end = just key; "\0" = from key on. */
export function toKeyRange(key: Uint8Array, rangeEnd: Uint8Array | undefined): KeyRange {
  const start = keyString(key);
  if (!rangeEnd || rangeEnd.length === 0) return { kind: 'single', key: start };
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return { kind: 'range', start, end: undefined };
  return { kind: 'range', start, end: keyString(rangeEnd) };
}

export function inRange(r: KeyRange, key: string): boolean {
  if (r.kind === 'single') return key === r.key;
  return key >= r.start && (r.end === undefined || key < r.end);
}
