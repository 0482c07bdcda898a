// The multi-version key-value state: one global revision, per-key history
// kept until compaction, leases. Everything lives in memory (rebuilt from
// level on start) so reads never wait for disk; every change also yields the
// level operations that make it durable, which the caller writes in a batch.
import sortedBtree from 'sorted-btree';
import { Errors } from '../errors.js';
import { valueArena } from '../wire/arena.js';
import { inRange, type KeyRange } from './keys.js';

// sorted-btree is CommonJS with its class on `exports.default`; an ESM default
// import is the whole module.exports, under Node and in the esbuild bundle alike.
const BTree = sortedBtree.default;
type BTree<K, V> = InstanceType<typeof BTree<K, V>>;

/** Keys are latin1 strings: JavaScript's string order is bytewise order. */
function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One version of one key. version === 0 marks a deletion (tombstone). */
export interface KvRecord {
  key: string;
  value: Buffer;
  create: number;
  mod: number;
  /** Position of this change among the changes of its revision. */
  sub: number;
  version: number;
  /** Lease ID as a decimal string, "0" for none. */
  lease: string;
}

export interface ChangeEvent {
  record: KvRecord;
  /** The key's previous live version, if any. */
  prev: KvRecord | undefined;
}

export type BatchOp = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

export interface Lease {
  id: string;
  ttl: number;
  keys: Set<string>;
}

export const PREFIX = {
  record: 0x72, // 'r' + rev(8) + sub(4)
  meta: 0x6d, // 'm' + name
  lease: 0x6c, // 'l' + id
};

export function recordKey(mod: number, sub: number): Buffer {
  const b = Buffer.allocUnsafe(13);
  b[0] = PREFIX.record;
  b.writeBigUInt64BE(BigInt(mod), 1);
  b.writeUInt32BE(sub, 9);
  return b;
}

export function metaKey(name: string): Buffer {
  return Buffer.concat([Buffer.from([PREFIX.meta]), Buffer.from(name)]);
}

export function leaseKey(id: string): Buffer {
  return Buffer.concat([Buffer.from([PREFIX.lease]), Buffer.from(id)]);
}

/** Record layout: create, mod, version (f64), sub (u32), lease len (u8) + lease, key len (u32) + key, value. */
export function encodeRecord(r: KvRecord): Buffer {
  // Lease and key are latin1 strings: one byte per char. One allocation for the whole record.
  const leaseLen = r.lease.length;
  const keyLen = r.key.length;
  const keyAt = 33 + leaseLen;
  const out = Buffer.allocUnsafe(keyAt + keyLen + r.value.length);
  out.writeDoubleBE(r.create, 0);
  out.writeDoubleBE(r.mod, 8);
  out.writeDoubleBE(r.version, 16);
  out.writeUInt32BE(r.sub, 24);
  out[28] = leaseLen;
  out.write(r.lease, 29, 'latin1');
  out.writeUInt32BE(keyLen, 29 + leaseLen);
  out.write(r.key, keyAt, 'latin1');
  out.set(r.value, keyAt + keyLen);
  return out;
}

export function decodeRecord(b: Buffer): KvRecord {
  const create = b.readDoubleBE(0);
  const mod = b.readDoubleBE(8);
  const version = b.readDoubleBE(16);
  const sub = b.readUInt32BE(24);
  const leaseLen = b[28];
  const lease = b.toString('latin1', 29, 29 + leaseLen);
  const keyLen = b.readUInt32BE(29 + leaseLen);
  const keyStart = 33 + leaseLen;
  const key = b.toString('latin1', keyStart, keyStart + keyLen);
  const value = valueArena.copy(b.subarray(keyStart + keyLen));
  return { key, value, create, mod, sub, version, lease };
}

/** forRange's answer that ends the scan. */
const STOP = { break: true };

/** The version in `hist` visible at `rev`, or undefined if absent or deleted there. */
function visibleAt(hist: KvRecord[], rev: number): KvRecord | undefined {
  for (let i = hist.length - 1; i >= 0; i--) {
    const r = hist[i];
    if (r.mod <= rev) return r.version > 0 ? r : undefined;
  }
  return undefined;
}

export class MvccState {
  /** As in etcd, an empty store is at revision 1; the first change makes revision 2. */
  rev = 1;
  compactRev = 0;
  /**
   * Every key with a retained version, sorted bytewise, with its versions (the
   * same arrays as `index`). A B+ tree: a sorted array's insert moves half the
   * array, which cost a tenth of a member's CPU under puts at 10^4–10^5 keys.
   */
  private readonly ordered: BTree<string, KvRecord[]> = new BTree<string, KvRecord[]>(undefined, compareKeys);
  /** Per key: its versions in revision order (point lookups, O(1)). */
  private readonly index = new Map<string, KvRecord[]>();
  readonly leases = new Map<string, Lease>();

  /** Takes over everything `source` holds (a state rebuilt from a snapshot); `source` is not used again. */
  replaceWith(source: MvccState): void {
    this.rev = source.rev;
    this.compactRev = source.compactRev;
    this.index.clear();
    this.ordered.clear();
    for (const [key, hist] of source.index) {
      this.index.set(key, hist);
      this.ordered.set(key, hist);
    }
    this.leases.clear();
    for (const [id, lease] of source.leases) this.leases.set(id, lease);
  }

  /** Adds a record read back from disk or a snapshot (records must come in revision order). */
  loadRecord(r: KvRecord): void {
    this.addRecord(r);
    if (r.mod > this.rev) this.rev = r.mod;
  }

  /** Rebuilds lease attachments from the live versions (after loading records and leases). */
  relinkLeases(): void {
    for (const l of this.leases.values()) l.keys.clear();
    for (const [key, hist] of this.index) {
      const last = hist[hist.length - 1];
      if (last.version > 0 && last.lease !== '0') this.leases.get(last.lease)?.keys.add(key);
    }
  }

  private addRecord(r: KvRecord): void {
    let hist = this.index.get(r.key);
    if (!hist) {
      hist = [];
      this.index.set(r.key, hist);
      this.ordered.set(r.key, hist);
    }
    hist.push(r);
  }

  /** The version of `key` visible at `rev`, or undefined if absent or deleted. */
  get(key: string, rev = this.rev): KvRecord | undefined {
    const hist = this.index.get(key);
    return hist ? visibleAt(hist, rev) : undefined;
  }

  /** Calls `visit` with the versions of each key in [start, end) (end undefined: no end), in key order, while it returns true. */
  private scan(start: string, end: string | undefined, visit: (hist: KvRecord[]) => boolean): void {
    const high = end ?? this.ordered.maxKey();
    if (high === undefined) return;
    this.ordered.forRange(start, high, end === undefined, (_, hist) => (visit(hist) ? undefined : STOP));
  }

  checkReadRev(rev: number): number {
    if (rev <= 0) return this.rev;
    if (rev > this.rev) throw Errors.futureRev();
    if (rev < this.compactRev) throw Errors.compacted();
    return rev;
  }

  /** Live versions in the range at `rev`, in key order. */
  range(r: KeyRange, rev = this.rev, limit = 0): KvRecord[] {
    if (r.kind === 'single') {
      const v = this.get(r.key, rev);
      return v ? [v] : [];
    }
    const out: KvRecord[] = [];
    if (r.end !== undefined && r.end <= r.start) return out;
    this.scan(r.start, r.end, (hist) => {
      const v = visibleAt(hist, rev);
      if (!v) return true;
      out.push(v);
      return !(limit > 0 && out.length >= limit);
    });
    return out;
  }

  /** Every change in the range with revision >= fromRev, in revision order (for watches). */
  changesSince(r: KeyRange, fromRev: number): ChangeEvent[] {
    const out: ChangeEvent[] = [];
    const visit = (hist: KvRecord[] | undefined) => {
      if (!hist) return;
      for (let i = 0; i < hist.length; i++) {
        const rec = hist[i];
        if (rec.mod < fromRev) continue;
        const before = i > 0 ? hist[i - 1] : undefined;
        out.push({ record: rec, prev: before && before.version > 0 ? before : undefined });
      }
    };
    if (r.kind === 'single') visit(this.index.get(r.key));
    else if (r.end === undefined || r.start < r.end)
      this.scan(r.start, r.end, (hist) => {
        visit(hist);
        return true;
      });
    out.sort((a, b) => a.record.mod - b.record.mod || a.record.sub - b.record.sub);
    return out;
  }

  /** Starts the changes of the next revision. */
  begin(): WriteTxn {
    return new WriteTxn(this);
  }

  /** Drops versions superseded at or before `rev`. Returns the level operations. */
  compact(rev: number): BatchOp[] {
    const ops: BatchOp[] = [];
    const emptied: string[] = [];
    for (const [key, hist] of this.index) {
      let keep = -1;
      for (let i = hist.length - 1; i >= 0; i--) {
        if (hist[i].mod <= rev) {
          keep = i;
          break;
        }
      }
      if (keep < 0) continue;
      // A tombstone at or below the compaction point is dropped with everything before it.
      const from = hist[keep].version === 0 ? keep + 1 : keep;
      for (let i = 0; i < from; i++) ops.push({ type: 'del', key: recordKey(hist[i].mod, hist[i].sub) });
      if (from > 0) hist.splice(0, from);
      if (hist.length === 0) emptied.push(key);
    }
    for (const key of emptied) {
      this.index.delete(key);
      this.ordered.delete(key);
    }
    this.compactRev = rev;
    ops.push({ type: 'put', key: metaKey('compact'), value: Buffer.from(String(rev)) });
    return ops;
  }

  /** All retained records in revision order (for snapshots). */
  allRecords(): KvRecord[] {
    const out: KvRecord[] = [];
    for (const hist of this.index.values()) out.push(...hist);
    out.sort((a, b) => a.mod - b.mod || a.sub - b.sub);
    return out;
  }

  /** Roughly the bytes held: keys and values of every retained version. */
  sizeBytes(): number {
    let size = 0;
    for (const hist of this.index.values()) for (const r of hist) size += r.key.length + r.value.length + 48;
    return size;
  }

  keyCount(): number {
    return this.index.size;
  }

  /** Internal: used by WriteTxn. */
  _append(r: KvRecord): void {
    this.addRecord(r);
  }

  /** Internal: keys in a range that currently have a live version. */
  _liveKeys(r: KeyRange): KvRecord[] {
    return this.range(r, Number.MAX_SAFE_INTEGER);
  }
}

/**
 * The changes of one revision. Reads through the state see the writes made
 * so far (so a txn's later ops see its earlier ones). The revision only
 * advances if something changed.
 */
export class WriteTxn {
  readonly rev: number;
  private sub = 0;
  readonly events: ChangeEvent[] = [];
  readonly ops: BatchOp[] = [];

  constructor(private readonly state: MvccState) {
    this.rev = state.rev + 1;
  }

  get changed(): boolean {
    return this.sub > 0;
  }

  /** The revision reads see: the new one once something changed. */
  get readRev(): number {
    return this.changed ? this.rev : this.state.rev;
  }

  put(key: string, value: Buffer, lease: string): { record: KvRecord; prev: KvRecord | undefined } {
    const prev = this.state.get(key, Number.MAX_SAFE_INTEGER);
    const record: KvRecord = {
      key,
      value,
      create: prev ? prev.create : this.rev,
      mod: this.rev,
      sub: this.sub++,
      version: prev ? prev.version + 1 : 1,
      lease,
    };
    if (prev && prev.lease !== '0' && prev.lease !== lease)
      this.state.leases.get(prev.lease)?.keys.delete(key);
    if (lease !== '0') this.state.leases.get(lease)?.keys.add(key);
    this.append(record, prev);
    return { record, prev };
  }

  deleteRange(r: KeyRange): KvRecord[] {
    const victims = this.state._liveKeys(r);
    for (const prev of victims) {
      const tomb: KvRecord = {
        key: prev.key,
        value: Buffer.alloc(0),
        create: 0,
        mod: this.rev,
        sub: this.sub++,
        version: 0,
        lease: '0',
      };
      if (prev.lease !== '0') this.state.leases.get(prev.lease)?.keys.delete(prev.key);
      this.append(tomb, prev);
    }
    return victims;
  }

  private append(record: KvRecord, prev: KvRecord | undefined): void {
    this.state._append(record);
    this.events.push({ record, prev });
    this.ops.push({ type: 'put', key: recordKey(record.mod, record.sub), value: encodeRecord(record) });
  }

  /** Makes the revision current if anything changed. */
  commit(): void {
    if (this.changed) this.state.rev = this.rev;
  }
}

export { inRange };
