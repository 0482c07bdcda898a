// The hand-written protobuf codecs (src/wire/) against the generic
// proto-loader codecs of the same .proto messages: whatever one writes, the
// other reads back the same, for random messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { framedSerializer, frameMessage, PbReader, PbWriter } from '@kubit/wire';
import fc from 'fast-check';
import type {
  Command,
  KeyValue,
  PutRequest,
  RangeRequest,
  ResponseHeader,
  WireMessage,
} from '../src/messages.js';
import { decodeCommand, encodeCommand } from '../src/node/command.js';
import { decodeHardState, encodeHardState, messageFromWire, messageToWire } from '../src/node/wire.js';
import { codecs, packageDefinition } from '../src/proto.js';
import type { Entry, Message, MessageType } from '../src/raft/types.js';
import {
  decodePutRequest,
  decodeRangeRequest,
  encodeChange,
  encodePutResponse,
  encodeRangeResponse,
  encodeWatchEvents,
  encodeWatchResponse,
  encodeWatchResponseHead,
} from '../src/wire/etcd.js';
import { decodeEntry, decodeRaftBatch, encodeEntry, encodeRaftBatch } from '../src/wire/raft.js';

interface Generic<T> {
  serialize(m: T): Buffer;
  deserialize(b: Buffer): T;
}
function generic<T>(name: string): Generic<T> {
  return packageDefinition[name] as unknown as Generic<T>;
}

const u8 = (a: Uint8Array) => Buffer.from(a);
const index = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const small = fc.integer({ min: 0, max: 1000 });
const bytes = fc.uint8Array({ maxLength: 40 }).map(u8);
const id = fc.oneof(fc.constant(''), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String));

const entry: fc.Arbitrary<Entry> = fc
  .record({
    term: index,
    index,
    type: fc.constantFrom(0, 1),
    data: bytes,
  })
  .map((e) => ({ ...e }));

const messageTypes: MessageType[] = ['MsgApp', 'MsgAppResp', 'MsgHeartbeat', 'MsgVote', 'MsgSnap', 'MsgProp'];
const message: fc.Arbitrary<Message> = fc
  .record({
    type: fc.constantFrom(...messageTypes),
    from: id,
    to: id,
    term: index,
    index,
    logTerm: small,
    entries: fc.array(entry, { maxLength: 4 }),
    commit: index,
    reject: fc.boolean(),
    rejectHint: small,
    context: fc.option(bytes, { nil: undefined }),
    snapshot: fc.option(
      fc.record({
        meta: fc
          .record({
            index,
            term: small,
            confState: fc.record({
              voters: fc.array(id, { maxLength: 3 }),
              learners: fc.array(id, { maxLength: 2 }),
            }),
          })
          .map((meta) => ({ ...meta, confState: { ...meta.confState } })),
        data: bytes,
      }),
      { nil: undefined },
    ),
  })
  .map((m) => {
    const out: Message = { ...m };
    if (m.context === undefined) delete out.context;
    if (m.snapshot === undefined) delete out.snapshot;
    else out.snapshot = { ...m.snapshot };
    return out;
  });

/** Normalizes byte fields to Buffers so deepEqual compares contents. */
function norm(m: Message): Message {
  const out: Message = { ...m, entries: m.entries.map((e) => ({ ...e, data: u8(e.data) })) };
  if (m.context !== undefined) out.context = u8(m.context);
  if (m.snapshot) out.snapshot = { meta: m.snapshot.meta, data: u8(m.snapshot.data) };
  return out;
}

test('raft entries: hand-written and generic codecs agree both ways', () => {
  fc.assert(
    fc.property(entry, (e) => {
      const read = codecs.entry.decode(encodeEntry(e));
      assert.deepEqual(
        { term: Number(read.term), index: Number(read.index), type: read.type, data: u8(read.data) },
        e,
      );
      const theirs = codecs.entry.encode({ term: e.term, index: e.index, type: e.type, data: e.data });
      const back = decodeEntry(theirs);
      assert.deepEqual({ ...back, data: u8(back.data) }, e);
    }),
  );
});

test('raft batches: hand-written and generic codecs agree both ways', () => {
  const batchCodec = generic<{ cluster_id: string; messages: WireMessage[] }>('kubitstore.RaftBatch');
  fc.assert(
    fc.property(id, fc.array(message, { maxLength: 4 }), (clusterId, messages) => {
      const mine = encodeRaftBatch({ cluster_id: clusterId, messages });
      const read = batchCodec.deserialize(mine);
      assert.equal(read.cluster_id, clusterId);
      assert.deepEqual(read.messages.map(messageFromWire).map(norm), messages.map(norm));
      const theirs = batchCodec.serialize({ cluster_id: clusterId, messages: messages.map(messageToWire) });
      const back = decodeRaftBatch(theirs);
      assert.equal(back.cluster_id, clusterId);
      assert.deepEqual(back.messages.map(norm), messages.map(norm));
    }),
  );
});

test('the writer grows its buffer and keeps embedded messages and strings intact', () => {
  const w = new PbWriter(4);
  const long = 'ü'.repeat(300);
  const mark = w.begin(1);
  w.stringAlways(2, long);
  w.int64(3, '-5');
  w.int64(4, '18446744073709551615');
  w.end(mark);
  const r = new PbReader(w.finish());
  assert.equal(r.tag(), 10);
  const [start, end] = r.span();
  const inner = new PbReader(r.buf, start, end);
  assert.equal(inner.tag(), 18);
  assert.equal(inner.string(), long);
  assert.equal(inner.tag(), 24);
  assert.equal(inner.int64String(true), '-5');
  assert.equal(inner.tag(), 32);
  assert.equal(inner.int64String(false), '18446744073709551615');
  assert.ok(inner.done);
});

test('truncated input is an error, not a wrong message', () => {
  const good = encodeRaftBatch({
    cluster_id: '1',
    messages: [
      {
        type: 'MsgApp',
        from: '1',
        to: '2',
        term: 3,
        index: 4,
        logTerm: 3,
        entries: [{ term: 3, index: 5, type: 0, data: Buffer.from('abc') }],
        commit: 4,
        reject: false,
        rejectHint: 0,
      },
    ],
  });
  assert.throws(() => decodeRaftBatch(good.subarray(0, good.length - 2)), RangeError);
});

// ---- etcd's client messages ----

const int64 = fc.oneof(
  fc.constant('0'),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  fc.integer({ min: 0, max: 100000 }).map(String),
);
const header = fc.record({ cluster_id: id, member_id: id, revision: index, raft_term: small });
const keyValue = fc
  .record({
    key: bytes,
    create_revision: index,
    mod_revision: index,
    version: small,
    value: bytes,
    lease: int64,
  })
  .map((kv) => ({ ...kv }));

/** What proto-loader reads back for a KeyValue written from `kv` (numbers become strings). */
function kvAsRead(kv: KeyValue): KeyValue {
  return {
    key: u8(kv.key),
    create_revision: String(kv.create_revision),
    mod_revision: String(kv.mod_revision),
    version: String(kv.version),
    value: u8(kv.value),
    lease: String(kv.lease),
  };
}
function headerAsRead(h: Partial<ResponseHeader>): Record<string, string> {
  return {
    cluster_id: String(h.cluster_id || '0'),
    member_id: String(h.member_id || '0'),
    revision: String(h.revision),
    raft_term: String(h.raft_term),
  };
}

test('PutRequest and RangeRequest: read as proto-loader reads them', () => {
  const put = generic<PutRequest>('etcdserverpb.PutRequest');
  const range = generic<RangeRequest>('etcdserverpb.RangeRequest');
  fc.assert(
    fc.property(
      bytes,
      bytes,
      int64,
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      int64,
      fc.integer({ min: 0, max: 4 }),
      (key, value, lease, prevKv, ignoreValue, ignoreLease, rev, sort) => {
        const p = {
          key,
          value,
          lease,
          prev_kv: prevKv,
          ignore_value: ignoreValue,
          ignore_lease: ignoreLease,
        };
        const wire = put.serialize(p);
        assert.deepEqual({ ...decodePutRequest(wire) }, { ...put.deserialize(wire) });
        const q = {
          key,
          range_end: value,
          limit: lease,
          revision: rev,
          sort_order: sort % 3,
          sort_target: sort,
          serializable: prevKv,
          keys_only: ignoreValue,
          count_only: ignoreLease,
          min_mod_revision: rev,
          max_mod_revision: lease,
          min_create_revision: '7',
          max_create_revision: '0',
        };
        const rwire = range.serialize(q);
        assert.deepEqual({ ...decodeRangeRequest(rwire) }, { ...range.deserialize(rwire) });
      },
    ),
  );
});

test('PutResponse, RangeResponse and WatchResponse: proto-loader reads what they write', () => {
  const putResp = generic<{ header: unknown; prev_kv: unknown }>('etcdserverpb.PutResponse');
  const rangeResp = generic<{ header: unknown; kvs: unknown[]; more: boolean; count: string }>(
    'etcdserverpb.RangeResponse',
  );
  const watchResp = generic<{ header: unknown; watch_id: string; events: unknown[]; cancel_reason: string }>(
    'etcdserverpb.WatchResponse',
  );
  fc.assert(
    fc.property(
      header,
      fc.option(keyValue, { nil: undefined }),
      fc.array(keyValue, { maxLength: 3 }),
      fc.boolean(),
      (h, prev, kvs, more) => {
        const p = putResp.deserialize(encodePutResponse({ header: h, prev_kv: prev }));
        assert.deepEqual(p.header, headerAsRead(h));
        assert.deepEqual(p.prev_kv, prev ? kvAsRead(prev) : null);
        const r = rangeResp.deserialize(encodeRangeResponse({ header: h, kvs, more, count: kvs.length }));
        assert.deepEqual(r.kvs, kvs.map(kvAsRead));
        assert.equal(r.more, more);
        assert.equal(r.count, String(kvs.length));
        const events = kvs.map((kv, i) => ({ type: i % 2, kv, prev_kv: prev ?? null }));
        const w = watchResp.deserialize(
          encodeWatchResponse({ header: h, watch_id: 3, events, cancel_reason: more ? 'x y' : undefined }),
        );
        assert.equal(w.watch_id, '3');
        assert.equal(w.cancel_reason, more ? 'x y' : '');
        assert.deepEqual(
          w.events,
          events.map((e) => ({ type: e.type, kv: kvAsRead(e.kv), prev_kv: prev ? kvAsRead(prev) : null })),
        );
      },
    ),
  );
});

test('framed serializers give the very frame that framing the plain message gives', () => {
  const framedPut = framedSerializer(encodePutResponse);
  const framedRange = framedSerializer(encodeRangeResponse);
  const framedWatch = framedSerializer(encodeWatchResponse);
  fc.assert(
    fc.property(header, fc.array(keyValue, { maxLength: 3 }), (h, kvs) => {
      const put = { header: h, prev_kv: kvs[0] };
      assert.deepEqual(framedPut(put), frameMessage(encodePutResponse(put)));
      const range = { header: h, kvs, more: false, count: kvs.length };
      assert.deepEqual(framedRange(range), frameMessage(encodeRangeResponse(range)));
      const watch = { header: h, watch_id: 2, events: kvs.map((kv) => ({ type: 0, kv })) };
      assert.deepEqual(framedWatch(watch), frameMessage(encodeWatchResponse(watch)));
    }),
  );
});

test('a shared events part after the framed head of one watcher reads back as the response etcd sends', () => {
  const watchResp = generic<{ header: { revision: string }; watch_id: string; events: unknown[] }>(
    'etcdserverpb.WatchResponse',
  );
  const prev = { key: 'k', value: Buffer.from('old'), create: 2, mod: 2, sub: 0, version: 1, lease: '0' };
  const put = { key: 'k', value: Buffer.from('new'), create: 2, mod: 5, sub: 0, version: 2, lease: '7' };
  const del = { key: 'k', value: Buffer.alloc(0), create: 0, mod: 6, sub: 0, version: 0, lease: '0' };
  const events = encodeWatchEvents([encodeChange(put, prev), encodeChange(del, undefined)]);
  const head = encodeWatchResponseHead(
    { cluster_id: '1', member_id: '2', revision: 6, raft_term: 3 },
    9,
    events.length,
  );
  // The frame header counts the whole message: head and shared part.
  assert.equal(head[0], 0);
  assert.equal(head.readUInt32BE(1), head.length - 5 + events.length);
  const w = watchResp.deserialize(Buffer.concat([head.subarray(5), events]));
  assert.equal(w.header.revision, '6');
  assert.equal(w.watch_id, '9');
  const kv = (key: string, c: number, m: number, v: number, value: string, lease: string) => ({
    key: Buffer.from(key),
    create_revision: String(c),
    mod_revision: String(m),
    version: String(v),
    value: Buffer.from(value),
    lease,
  });
  assert.deepEqual(w.events, [
    { type: 0, kv: kv('k', 2, 5, 2, 'new', '7'), prev_kv: kv('k', 2, 2, 1, 'old', '0') },
    { type: 1, kv: kv('k', 0, 6, 0, '', '0'), prev_kv: null },
  ]);
});

test('commands: a put takes the hand-written path, the rest the generic one, and both read back', () => {
  fc.assert(
    fc.property(id, index, bytes, bytes, int64, fc.boolean(), (origin, n, key, value, lease, flag) => {
      const put: Command = {
        origin,
        id: String(n),
        op: 'put',
        put: { key, value, lease, prev_kv: flag, ignore_value: !flag, ignore_lease: flag },
      };
      const generic = codecs.command.decode(encodeCommand(put));
      assert.equal(generic.op, 'put');
      assert.deepEqual({ ...generic.put }, { ...put.put });
      const mine = decodeCommand(codecs.command.encode(put));
      assert.deepEqual({ ...mine, put: { ...mine.put } }, put);
      const del: Command = {
        origin,
        id: String(n),
        op: 'delete_range',
        delete_range: { key, range_end: value, prev_kv: flag },
      };
      const back = decodeCommand(encodeCommand(del));
      assert.equal(back.op, 'delete_range');
      assert.deepEqual(Buffer.from(back.delete_range?.key ?? []), key);
    }),
  );
});

test('hard state: the hand-written encoder reads back through the generic codec (zero fields left out)', () => {
  const id = fc.oneof(fc.constant(''), fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }).map(String));
  fc.assert(
    fc.property(fc.record({ term: fc.nat(), vote: id, commit: fc.maxSafeNat() }), (hs) => {
      const ours = encodeHardState(hs);
      assert.deepEqual(decodeHardState(ours), { ...hs });
      // The generic codec writes zero fields too; with none, the bytes are the same.
      if (hs.term > 0 && hs.vote !== '' && hs.commit > 0) assert.deepEqual(ours, codecs.hardState.encode(hs));
    }),
  );
});
