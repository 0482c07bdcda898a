// The replicated state machine: applies committed commands to the MVCC state
// and the member list, writes the result to level (with the applied index in
// the same batch, so a restart knows where to resume), and tells watchers.
import type { Level } from 'level';
import { Errors, EtcdError } from '../errors.js';
import type { Command, MemberInfo } from '../messages.js';
import { codecs } from '../proto.js';
import { keyBuffer } from './keys.js';
import * as kv from './kv.js';
import {
  type BatchOp,
  type ChangeEvent,
  decodeRecord,
  encodeRecord,
  type KvRecord,
  leaseKey,
  MvccState,
  metaKey,
  PREFIX,
  recordKey,
} from './store.js';

export type Db = Level<Buffer, Buffer>;

export const MEMBER_PREFIX = 0x63; // 'c' + member id

export function memberKey(id: string): Buffer {
  return Buffer.concat([Buffer.from([MEMBER_PREFIX]), Buffer.from(id)]);
}

export type ApplyResult = { ok: true; value: unknown; rev: number } | { ok: false; error: EtcdError };

export interface MachineListener {
  /** Changes of one revision, in order. */
  onChanges?(events: ChangeEvent[], rev: number): void;
  onLeaseGranted?(id: string, ttl: number): void;
  onLeaseRevoked?(id: string): void;
  onCompacted?(rev: number): void;
  /** The node finished applying a batch of committed entries (watchers get their events now). */
  onApplied?(): void;
}

export interface MachineOptions {
  /** Leases shorter than this are granted with this TTL (seconds). */
  minLeaseTTL: number;
}

export class StateMachine {
  readonly mvcc = new MvccState();
  readonly members = new Map<string, MemberInfo>();
  appliedIndex = 0;
  listener: MachineListener = {};

  constructor(
    readonly db: Db,
    private readonly opts: MachineOptions,
  ) {}

  /** Rebuilds the in-memory state from level. */
  async load(): Promise<void> {
    for await (const [k, v] of this.db.iterator({
      gte: Buffer.from([PREFIX.record]),
      lt: Buffer.from([PREFIX.record + 1]),
    })) {
      void k;
      this.mvcc.loadRecord(decodeRecord(v));
    }
    for await (const [k, v] of this.db.iterator({
      gte: Buffer.from([PREFIX.lease]),
      lt: Buffer.from([PREFIX.lease + 1]),
    })) {
      const id = k.subarray(1).toString();
      this.mvcc.leases.set(id, { id, ttl: Number(v.toString()), keys: new Set() });
    }
    this.mvcc.relinkLeases();
    for await (const [, v] of this.db.iterator({
      gte: Buffer.from([MEMBER_PREFIX]),
      lt: Buffer.from([MEMBER_PREFIX + 1]),
    })) {
      const m = codecs.memberInfo.decode(v);
      this.members.set(m.id, m);
    }
    const meta = async (name: string) => {
      const v = await this.db.get(metaKey(name));
      return v === undefined ? 0 : Number(v.toString());
    };
    this.mvcc.compactRev = await meta('compact');
    this.appliedIndex = await meta('applied');
    // The revision survives even when compaction dropped the newest record's history.
    this.mvcc.rev = Math.max(this.mvcc.rev, await meta('rev'), this.mvcc.compactRev);
  }

  /**
   * Applies one command at log index `index`, collecting level operations in `ops`.
   * Errors are results too: every member reaches the same verdict.
   */
  applyCommand(cmd: Command, ops: BatchOp[]): ApplyResult {
    const s = this.mvcc;
    try {
      switch (cmd.op) {
        case 'put':
        case 'delete_range':
        case 'txn': {
          const tx = s.begin();
          let value: unknown;
          if (cmd.put) value = kv.checkedPut(s, tx, cmd.put);
          else if (cmd.delete_range) value = kv.deleteRange(tx, cmd.delete_range);
          else if (cmd.txn) value = kv.txn(s, tx, cmd.txn);
          tx.commit();
          for (const op of tx.ops) ops.push(op);
          if (tx.changed) this.listener.onChanges?.(tx.events, tx.rev);
          return { ok: true, value, rev: s.rev };
        }
        case 'compaction': {
          const rev = Number(cmd.compaction?.revision ?? 0);
          if (rev <= s.compactRev) throw Errors.compacted();
          if (rev > s.rev) throw Errors.futureRev();
          ops.push(...s.compact(rev));
          this.listener.onCompacted?.(rev);
          return { ok: true, value: {}, rev: s.rev };
        }
        case 'lease_grant': {
          const id = String(cmd.lease_grant?.ID ?? '0');
          if (s.leases.has(id)) throw Errors.leaseExist();
          const ttl = Math.max(Number(cmd.lease_grant?.TTL ?? 0), this.opts.minLeaseTTL);
          s.leases.set(id, { id, ttl, keys: new Set() });
          ops.push({ type: 'put', key: leaseKey(id), value: Buffer.from(String(ttl)) });
          this.listener.onLeaseGranted?.(id, ttl);
          return { ok: true, value: { ID: id, TTL: ttl }, rev: s.rev };
        }
        case 'lease_revoke': {
          const id = String(cmd.lease_revoke?.ID ?? '0');
          const lease = s.leases.get(id);
          if (!lease) throw Errors.leaseNotFound();
          const tx = s.begin();
          for (const key of [...lease.keys].sort()) tx.deleteRange({ kind: 'single', key });
          tx.commit();
          ops.push(...tx.ops);
          s.leases.delete(id);
          ops.push({ type: 'del', key: leaseKey(id) });
          if (tx.changed) {
            ops.push({ type: 'put', key: metaKey('rev'), value: Buffer.from(String(tx.rev)) });
            this.listener.onChanges?.(tx.events, tx.rev);
          }
          this.listener.onLeaseRevoked?.(id);
          return { ok: true, value: {}, rev: s.rev };
        }
        case 'member_attributes': {
          const a = cmd.member_attributes;
          const m = a ? this.members.get(a.id) : undefined;
          if (a && m) {
            m.name = a.name;
            m.client_urls = a.client_urls;
            ops.push({ type: 'put', key: memberKey(m.id), value: codecs.memberInfo.encode(m) });
          }
          return { ok: true, value: {}, rev: s.rev };
        }
        default:
          return { ok: true, value: {}, rev: s.rev };
      }
    } catch (err) {
      if (err instanceof EtcdError) return { ok: false, error: err };
      throw err;
    }
  }

  /** Membership changes arrive through raft conf changes. */
  addMember(m: MemberInfo, ops: BatchOp[]): void {
    this.members.set(m.id, m);
    ops.push({ type: 'put', key: memberKey(m.id), value: codecs.memberInfo.encode(m) });
  }

  removeMember(id: string, ops: BatchOp[]): void {
    this.members.delete(id);
    ops.push({ type: 'del', key: memberKey(id) });
  }

  promoteMember(id: string, ops: BatchOp[]): void {
    const m = this.members.get(id);
    if (!m) return;
    m.is_learner = false;
    ops.push({ type: 'put', key: memberKey(id), value: codecs.memberInfo.encode(m) });
  }

  appliedOp(index: number): BatchOp {
    this.appliedIndex = index;
    return { type: 'put', key: metaKey('applied'), value: Buffer.from(String(index)) };
  }

  /**
   * The applied index and revision as they stand, for the batch that writes
   * the applied state up to here. (The revision is also the newest record's,
   * or the compaction point; it is written for a store whose newest records
   * were compacted away.)
   */
  stateOps(ops: BatchOp[]): void {
    ops.push(
      { type: 'put', key: metaKey('rev'), value: Buffer.from(String(this.mvcc.rev)) },
      { type: 'put', key: metaKey('applied'), value: Buffer.from(String(this.appliedIndex)) },
    );
  }

  /** The whole state as bytes, for a raft snapshot. */
  serialize(): Buffer {
    const s = this.mvcc;
    const header = Buffer.from(
      JSON.stringify({
        rev: s.rev,
        compactRev: s.compactRev,
        leases: [...s.leases.values()].map((l) => [l.id, l.ttl]),
        members: [...this.members.values()].map((m) => codecs.memberInfo.encode(m).toString('base64')),
      }),
    );
    const parts: Buffer[] = [];
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32BE(header.length);
    parts.push(len, header);
    for (const r of s.allRecords()) {
      const enc = encodeRecord(r);
      const l = Buffer.allocUnsafe(4);
      l.writeUInt32BE(enc.length);
      parts.push(l, enc);
    }
    return Buffer.concat(parts);
  }

  /** Replaces the whole state with a snapshot's (a follower that fell too far behind). */
  async restore(data: Buffer, index: number): Promise<void> {
    const hlen = data.readUInt32BE(0);
    const header = JSON.parse(data.toString('utf8', 4, 4 + hlen)) as {
      rev: number;
      compactRev: number;
      leases: [string, number][];
      members: string[];
    };
    const records: KvRecord[] = [];
    for (let off = 4 + hlen; off < data.length; ) {
      const l = data.readUInt32BE(off);
      records.push(decodeRecord(data.subarray(off + 4, off + 4 + l)));
      off += 4 + l;
    }
    for (const p of [PREFIX.record, PREFIX.lease, MEMBER_PREFIX]) {
      await this.db.clear({ gte: Buffer.from([p]), lt: Buffer.from([p + 1]) });
    }
    const ops: BatchOp[] = [];
    const fresh = new MvccState();
    for (const r of records) {
      fresh.loadRecord(r);
      ops.push({ type: 'put', key: recordKey(r.mod, r.sub), value: encodeRecord(r) });
    }
    for (const [id, ttl] of header.leases) {
      fresh.leases.set(id, { id, ttl, keys: new Set() });
      ops.push({ type: 'put', key: leaseKey(id), value: Buffer.from(String(ttl)) });
    }
    fresh.relinkLeases();
    fresh.rev = header.rev;
    fresh.compactRev = header.compactRev;
    this.members.clear();
    for (const b64 of header.members) {
      const m = codecs.memberInfo.decode(Buffer.from(b64, 'base64'));
      this.members.set(m.id, m);
      ops.push({ type: 'put', key: memberKey(m.id), value: codecs.memberInfo.encode(m) });
    }
    this.mvcc.replaceWith(fresh);
    ops.push({ type: 'put', key: metaKey('rev'), value: Buffer.from(String(header.rev)) });
    ops.push({ type: 'put', key: metaKey('compact'), value: Buffer.from(String(header.compactRev)) });
    ops.push(this.appliedOp(index));
    await this.db.batch(ops, { sync: true });
    for (const l of this.mvcc.leases.values()) this.listener.onLeaseGranted?.(l.id, l.ttl);
  }
}

export { keyBuffer };
