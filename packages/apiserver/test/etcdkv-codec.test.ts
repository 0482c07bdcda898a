// etcdkv's hand-written protobuf (on @kubit/wire) against the generic
// proto-loader codecs of etcd's rpc.proto, as the store's own codecs are
// tested: what etcdkv writes the schema reads as meant, and what the schema
// writes etcdkv reads back, for random messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { packageDefinition } from '@kubit/store';
import { FRAME_HEADER_BYTES } from '@kubit/wire';
import fc from 'fast-check';
import {
  decodeRangeResponse,
  decodeTxnResponse,
  encodeRangeRequest,
  encodeTxnRequest,
  type Guard,
  type RangeArgs,
  type TxnOp,
} from '../src/etcdkv.js';

interface Generic {
  serialize(m: object): Buffer;
  deserialize(b: Buffer): Record<string, unknown>;
}
const generic = (name: string) => packageDefinition[name] as unknown as Generic;
const RangeRequest = generic('etcdserverpb.RangeRequest');
const RangeResponse = generic('etcdserverpb.RangeResponse');
const TxnRequest = generic('etcdserverpb.TxnRequest');
const TxnResponse = generic('etcdserverpb.TxnResponse');

const bytes = fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a));
const nonEmpty = fc.uint8Array({ minLength: 1, maxLength: 24 }).map((a) => Buffer.from(a));
/** Revisions and limits: 0 (left out), small, and beyond 32 bits. */
const revision = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 1000 }),
  fc.integer({ min: 2 ** 32, max: Number.MAX_SAFE_INTEGER }),
);

const rangeArgs: fc.Arbitrary<RangeArgs> = fc.record(
  { key: nonEmpty, rangeEnd: nonEmpty, limit: revision, revision },
  { requiredKeys: ['key'] },
);
const op: fc.Arbitrary<TxnOp> = fc.oneof(
  fc.record({ put: fc.record({ key: nonEmpty, value: bytes }) }),
  fc.record({ delete: fc.record({ key: nonEmpty }) }),
  fc.record({ range: rangeArgs }),
);
const guard: fc.Arbitrary<Guard> = fc.record({
  key: nonEmpty,
  target: fc.constantFrom('create' as const, 'mod' as const),
  value: revision,
});

const num = (v: unknown) => Number(v ?? 0);
const buf = (v: unknown) => Buffer.from((v as Uint8Array | undefined) ?? []);

/** What the schema read back, in etcdkv's terms. */
function rangeOf(m: Record<string, unknown>): RangeArgs {
  const out: RangeArgs = { key: buf(m.key) };
  if (buf(m.range_end).length > 0) out.rangeEnd = buf(m.range_end);
  if (num(m.limit) !== 0) out.limit = num(m.limit);
  if (num(m.revision) !== 0) out.revision = num(m.revision);
  return out;
}
function expectedRange(a: RangeArgs): RangeArgs {
  const out: RangeArgs = { key: a.key };
  if (a.rangeEnd) out.rangeEnd = a.rangeEnd;
  if (a.limit) out.limit = a.limit;
  if (a.revision) out.revision = a.revision;
  return out;
}
function opOf(m: Record<string, unknown>): TxnOp {
  const put = m.request_put as Record<string, unknown> | undefined;
  if (put) return { put: { key: buf(put.key), value: buf(put.value) } };
  const del = m.request_delete_range as Record<string, unknown> | undefined;
  if (del) return { delete: { key: buf(del.key) } };
  return { range: rangeOf(m.request_range as Record<string, unknown>) };
}
function expectedOp(o: TxnOp): TxnOp {
  if ('put' in o) return { put: { key: o.put.key, value: o.put.value } };
  if ('delete' in o) return { delete: { key: o.delete.key } };
  return { range: expectedRange(o.range) };
}

test('RangeRequest: what etcdkv writes, rpc.proto reads (after the frame header room)', () => {
  fc.assert(
    fc.property(rangeArgs, fc.constantFrom(0, FRAME_HEADER_BYTES), (a, headroom) => {
      const out = encodeRangeRequest(a, headroom);
      assert.deepEqual(rangeOf(RangeRequest.deserialize(out.subarray(headroom))), expectedRange(a));
    }),
  );
});

test('TxnRequest: the guard (its 0 too: a oneof), both branches, as rpc.proto reads them', () => {
  fc.assert(
    fc.property(guard, op, op, (g, success, failure) => {
      const m = TxnRequest.deserialize(encodeTxnRequest(g, success, failure));
      const [compare] = m.compare as Record<string, unknown>[];
      assert.equal(compare.result, 0, 'EQUAL');
      assert.equal(compare.target, g.target === 'create' ? 1 : 2, 'CREATE or MOD');
      assert.deepEqual(buf(compare.key), g.key);
      assert.equal(compare.target_union, g.target === 'create' ? 'create_revision' : 'mod_revision');
      assert.equal(num(compare[g.target === 'create' ? 'create_revision' : 'mod_revision']), g.value);
      assert.deepEqual((m.success as Record<string, unknown>[]).map(opOf), [expectedOp(success)]);
      assert.deepEqual((m.failure as Record<string, unknown>[]).map(opOf), [expectedOp(failure)]);
    }),
  );
});

const kv = fc.record({
  key: nonEmpty,
  value: bytes,
  create_revision: revision,
  mod_revision: revision,
  version: revision,
  lease: revision,
});
const header = fc.record({
  cluster_id: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
  member_id: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String),
  revision,
  raft_term: revision,
});
type Kv = { key: Buffer; value: Buffer; create_revision: number; mod_revision: number };
const rawKv = (k: Kv) => ({
  key: k.key,
  value: k.value,
  mod_revision: k.mod_revision,
  create_revision: k.create_revision,
});

test('RangeResponse: what rpc.proto writes, etcdkv reads (views of the bytes)', () => {
  fc.assert(
    fc.property(
      header,
      fc.array(kv, { maxLength: 5 }),
      fc.boolean(),
      fc.integer({ min: 0, max: 9 }),
      (h, kvs, more, count) => {
        const r = decodeRangeResponse(RangeResponse.serialize({ header: h, kvs, more, count }));
        assert.equal(r.revision, h.revision);
        assert.equal(r.more, more);
        assert.deepEqual(r.kvs, kvs.map(rawKv));
      },
    ),
  );
});

test('TxnResponse: succeeded, the revision and the first range response (a put response before it is skipped)', () => {
  fc.assert(
    fc.property(
      header,
      fc.boolean(),
      fc.array(kv, { maxLength: 4 }),
      fc.boolean(),
      (h, succeeded, kvs, putFirst) => {
        const responses = [
          ...(putFirst ? [{ response_put: { header: h } }] : []),
          { response_range: { header: h, kvs } },
          { response_range: { header: h, kvs: [kvs[0] ?? { key: Buffer.from('x') }] } },
        ];
        const r = decodeTxnResponse(TxnResponse.serialize({ header: h, succeeded, responses }));
        assert.equal(r.revision, h.revision);
        assert.equal(r.succeeded, succeeded);
        // Only the first response is looked at: a put there means no kvs.
        assert.deepEqual(r.rangeKvs, putFirst ? [] : kvs.map(rawKv));
      },
    ),
  );
});

test('truncated responses are refused', () => {
  assert.throws(() => decodeRangeResponse(Buffer.from([0x12, 0x05, 0x0a])), /length beyond|truncated/);
  assert.throws(() => decodeRangeResponse(Buffer.from([0x18, 0x80])), /truncated/);
});
