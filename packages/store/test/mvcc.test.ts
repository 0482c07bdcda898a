// MVCC state machine on a real level DB in a temp dir.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { Level } from 'level';
import { EtcdError } from '../src/errors.js';
import type { Command, RangeRequest, RequestOp, TxnRequest } from '../src/messages.js';
import * as kv from '../src/mvcc/kv.js';
import { type Db, StateMachine } from '../src/mvcc/machine.js';
import type { BatchOp } from '../src/mvcc/store.js';
import { validateTxn } from '../src/mvcc/validate.js';

const b = (s: string) => Buffer.from(s);
let dir: { path: string; cleanup: () => Promise<void> };
let db: Db;
let sm: StateMachine;
let index = 0;

async function apply(cmd: Omit<Command, 'origin' | 'id'>) {
  const ops: BatchOp[] = [];
  const r = sm.applyCommand({ ...cmd, origin: 'x', id: 1 }, ops);
  ops.push(sm.appliedOp(++index));
  await db.batch(ops);
  return r;
}
function val(r: Awaited<ReturnType<typeof apply>>): unknown {
  assert.ok(r.ok, r.ok ? '' : r.error.message);
  return r.value;
}
const put = (
  key: string,
  value: string,
  extra: Partial<{ lease: string; prev_kv: boolean; ignore_value: boolean; ignore_lease: boolean }> = {},
) =>
  apply({
    op: 'put',
    put: {
      key: b(key),
      value: b(value),
      lease: extra.lease ?? '0',
      prev_kv: extra.prev_kv ?? false,
      ignore_value: extra.ignore_value ?? false,
      ignore_lease: extra.ignore_lease ?? false,
    },
  });
const del = (key: string, end = '', prevKv = false) =>
  apply({ op: 'delete_range', delete_range: { key: b(key), range_end: b(end), prev_kv: prevKv } });

function rangeReq(key: string, end = '', extra: Partial<RangeRequest> = {}): RangeRequest {
  return {
    key: b(key),
    range_end: b(end),
    limit: 0,
    revision: 0,
    sort_order: 0,
    sort_target: 0,
    serializable: false,
    keys_only: false,
    count_only: false,
    min_mod_revision: 0,
    max_mod_revision: 0,
    min_create_revision: 0,
    max_create_revision: 0,
    ...extra,
  };
}
const keys = (r: ReturnType<typeof kv.range>) => r.kvs.map((x) => Buffer.from(x.key).toString());
const range = (key: string, end = '', extra: Partial<RangeRequest> = {}) =>
  kv.range(sm.mvcc, rangeReq(key, end, extra));

before(async () => {
  dir = await tempDir('kubit-mvcc-');
  db = new Level<Buffer, Buffer>(dir.path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  sm = new StateMachine(db, { minLeaseTTL: 2 });
});
after(async () => {
  await db.close();
  await dir.cleanup();
});

test('puts advance one global revision and per-key create/mod/version', async () => {
  await put('a', '1'); // rev 2 (an empty store is at 1)
  await put('b', '1'); // rev 3
  await put('a', '2'); // rev 4
  const a = range('a').kvs[0];
  assert.deepEqual([a.create_revision, a.mod_revision, a.version], [2, 4, 2]);
  assert.equal(sm.mvcc.rev, 4);
  // A past revision shows the past value.
  assert.equal(Buffer.from(range('a', '', { revision: 2 }).kvs[0].value).toString(), '1');
  assert.throws(
    () => range('a', '', { revision: 5 }),
    (e: EtcdError) => e.message === 'etcdserver: mvcc: required revision is a future revision',
  );
});

test('range_end: prefixes, from-key ("\\0"), end before key, limit/more/count, sort, filters', async () => {
  await put('p/1', 'x'); // 5
  await put('p/2', 'yy'); // 6
  await put('p/3', 'z'); // 7
  await put('q', 'q'); // 8
  assert.deepEqual(keys(range('p/', 'p0')), ['p/1', 'p/2', 'p/3']);
  assert.deepEqual(keys(range('p/2', '\0')), ['p/2', 'p/3', 'q']);
  assert.deepEqual(keys(range('\0', '\0')), ['a', 'b', 'p/1', 'p/2', 'p/3', 'q']);
  assert.deepEqual(keys(range('q', 'a')), []);
  const lim = range('p/', 'p0', { limit: 2 });
  assert.deepEqual([keys(lim), lim.more, lim.count], [['p/1', 'p/2'], true, 3]);
  assert.deepEqual(keys(range('p/', 'p0', { sort_order: 2 })), ['p/3', 'p/2', 'p/1']);
  assert.deepEqual(keys(range('p/', 'p0', { sort_target: 4, sort_order: 2 })), ['p/3', 'p/2', 'p/1']);
  assert.deepEqual(keys(range('\0', '\0', { min_mod_revision: 6, max_mod_revision: 7 })), ['p/2', 'p/3']);
  assert.deepEqual(keys(range('\0', '\0', { max_create_revision: 3 })), ['a', 'b']);
  const co = range('p/', 'p0', { count_only: true });
  assert.deepEqual([co.kvs.length, co.count], [0, 3]);
  assert.equal(range('p/1', '', { keys_only: true }).kvs[0].value.length, 0);
});

test('delete range returns prev kvs, leaves history, and deleting nothing keeps the revision', async () => {
  const r = await del('p/', 'p0', true);
  assert.ok(r.ok);
  const resp = val(r) as { deleted: number; prev_kvs: unknown[] };
  assert.equal(resp.deleted, 3);
  assert.equal(resp.prev_kvs.length, 3);
  assert.equal(sm.mvcc.rev, 9);
  assert.deepEqual(keys(range('p/', 'p0')), []);
  assert.deepEqual(keys(range('p/', 'p0', { revision: 8 })), ['p/1', 'p/2', 'p/3']);
  await del('nothing');
  assert.equal(sm.mvcc.rev, 9);
  // Re-created keys start a new life.
  await put('p/1', 'again'); // 10
  const kv1 = range('p/1').kvs[0];
  assert.deepEqual([kv1.create_revision, kv1.version], [10, 1]);
});

function cmp(key: string, target: number, result: number, value: Record<string, unknown>) {
  return { key: b(key), range_end: b(''), target, result, ...value } as TxnRequest['compare'][number];
}
const opPut = (key: string, value: string): RequestOp => ({
  request_put: {
    key: b(key),
    value: b(value),
    lease: '0',
    prev_kv: false,
    ignore_value: false,
    ignore_lease: false,
  },
});
const opGet = (key: string): RequestOp => ({ request_range: rangeReq(key) });

test('txn: compares on version/create/mod/value/lease, branches, nested txns, reads see own writes', async () => {
  const t = (req: TxnRequest) => apply({ op: 'txn', txn: req });
  let r = await t({
    compare: [cmp('a', 0, 0, { version: 2 })],
    success: [opPut('t1', 'yes'), opGet('t1')],
    failure: [],
  });
  assert.ok(r.ok);
  let resp = val(r) as kv.TxnResponseT;
  assert.equal(resp.succeeded, true);
  assert.equal(Buffer.from(resp.responses[1].response_range?.kvs[0].value ?? []).toString(), 'yes');
  r = await t({
    compare: [cmp('a', 3, 0, { value: b('nope') })],
    success: [opPut('t2', 'x')],
    failure: [opGet('a')],
  });
  resp = val(r) as kv.TxnResponseT;
  assert.equal(resp.succeeded, false);
  assert.equal(keys(range('t2')).length, 0);
  // Missing key: version == 0, create == 0, value compares false.
  r = await t({
    compare: [cmp('missing', 0, 0, { version: 0 }), cmp('missing', 1, 2, { create_revision: 1 })],
    success: [],
    failure: [],
  });
  assert.equal((val(r) as kv.TxnResponseT).succeeded, true);
  r = await t({
    compare: [
      cmp('a', 2, 1, { mod_revision: 2 }),
      cmp('a', 4, 0, { lease: '0' }),
      cmp('a', 3, 3, { value: b('1') }),
    ],
    success: [],
    failure: [],
  });
  assert.equal((val(r) as kv.TxnResponseT).succeeded, true);
  const nested: TxnRequest = {
    compare: [],
    success: [
      {
        request_txn: { compare: [cmp('a', 0, 1, { version: 0 })], success: [opPut('n1', 'v')], failure: [] },
      },
    ],
    failure: [],
  };
  r = await t(nested);
  assert.equal(Buffer.from(range('n1').kvs[0].value).toString(), 'v');
});

test('txn validation: too many ops, duplicate keys; unknown lease fails the whole txn with nothing applied', async () => {
  const many: TxnRequest = {
    compare: [],
    success: Array.from({ length: 129 }, (_, i) => opPut(`k${i}`, 'v')),
    failure: [],
  };
  assert.throws(() => validateTxn(many), /too many operations in txn request/);
  assert.throws(
    () => validateTxn({ compare: [], success: [opPut('d', '1'), opPut('d', '2')], failure: [] }),
    /duplicate key/,
  );
  assert.throws(
    () =>
      validateTxn({
        compare: [],
        success: [
          { request_delete_range: { key: b('d'), range_end: b('e'), prev_kv: false } },
          opPut('d1', '2'),
        ],
        failure: [],
      }),
    /duplicate key/,
  );
  const rev = sm.mvcc.rev;
  const bad: RequestOp = {
    request_put: {
      key: b('z2'),
      value: b('v'),
      lease: '12345',
      prev_kv: false,
      ignore_value: false,
      ignore_lease: false,
    },
  };
  const r = await apply({ op: 'txn', txn: { compare: [], success: [opPut('z1', 'v'), bad], failure: [] } });
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.error.message, 'etcdserver: requested lease not found');
  assert.equal(sm.mvcc.rev, rev);
  assert.equal(range('z1').kvs.length, 0);
});

test('put flags: prev_kv, ignore_value, ignore_lease on a missing key', async () => {
  const r = await put('a', '3', { prev_kv: true });
  assert.equal(Buffer.from((val(r) as { prev_kv: { value: Buffer } }).prev_kv.value).toString(), '2');
  await put('a', '', { ignore_value: true });
  assert.equal(Buffer.from(range('a').kvs[0].value).toString(), '3');
  const miss = await put('nokey', '', { ignore_value: true });
  assert.equal(!miss.ok && miss.error.message, 'etcdserver: key not found');
});

test('leases: grant, attach, revoke deletes attached keys in one revision', async () => {
  const g = await apply({ op: 'lease_grant', lease_grant: { ID: '777', TTL: 1 } });
  assert.deepEqual(val(g), { ID: '777', TTL: 2 }); // raised to the minimum TTL
  const dup = await apply({ op: 'lease_grant', lease_grant: { ID: '777', TTL: 10 } });
  assert.equal(!dup.ok && dup.error.message, 'etcdserver: lease already exists');
  await put('l1', 'v', { lease: '777' });
  await put('l2', 'v', { lease: '777' });
  const rev = sm.mvcc.rev;
  await apply({ op: 'lease_revoke', lease_revoke: { ID: '777' } });
  assert.equal(sm.mvcc.rev, rev + 1);
  assert.deepEqual(keys(range('l', 'm')), []);
  const again = await apply({ op: 'lease_revoke', lease_revoke: { ID: '777' } });
  assert.equal(!again.ok && again.error.code, 5);
});

test('compaction drops old versions; past reads below it fail; state reloads from disk', async () => {
  const rev = sm.mvcc.rev;
  const bad = await apply({ op: 'compaction', compaction: { revision: rev + 5, physical: false } });
  assert.equal(!bad.ok && bad.error.message, 'etcdserver: mvcc: required revision is a future revision');
  const ok = await apply({ op: 'compaction', compaction: { revision: 5, physical: false } });
  assert.ok(ok.ok);
  assert.throws(
    () => range('a', '', { revision: 4 }),
    (e: EtcdError) => e.message === 'etcdserver: mvcc: required revision has been compacted',
  );
  assert.equal(Buffer.from(range('a', '', { revision: 5 }).kvs[0].value).toString(), '2');
  const again = await apply({ op: 'compaction', compaction: { revision: 5, physical: false } });
  assert.equal(!again.ok && again.error.message, 'etcdserver: mvcc: required revision has been compacted');
  // A fresh state machine over the same DB sees the same thing.
  const reloaded = new StateMachine(db, { minLeaseTTL: 2 });
  await reloaded.load();
  assert.equal(reloaded.mvcc.rev, sm.mvcc.rev);
  assert.equal(reloaded.mvcc.compactRev, 5);
  assert.equal(reloaded.appliedIndex, index);
  const all = (m: StateMachine) =>
    kv
      .range(m.mvcc, rangeReq('\0', '\0'))
      .kvs.map((x) => [Buffer.from(x.key).toString(), x.mod_revision, x.version]);
  assert.deepEqual(all(reloaded), all(sm));
  // And a snapshot restores the same state elsewhere.
  const dir2 = await tempDir('kubit-mvcc-snap-');
  const db2 = new Level<Buffer, Buffer>(dir2.path, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db2.open();
  const copy = new StateMachine(db2, { minLeaseTTL: 2 });
  await copy.restore(sm.serialize(), 42);
  assert.deepEqual(all(copy), all(sm));
  assert.equal(copy.mvcc.rev, sm.mvcc.rev);
  await db2.close();
  await dir2.cleanup();
});

test('changes since a revision come back in revision order with prev values', () => {
  const ch = sm.mvcc.changesSince({ kind: 'range', start: 'l', end: 'm' }, 1);
  assert.ok(ch.length >= 4);
  const deletes = ch.filter((c) => c.record.version === 0);
  assert.equal(deletes.length, 2);
  assert.ok(deletes.every((d) => d.prev && d.prev.version > 0));
});

test('errors are EtcdErrors with gRPC codes', () => {
  try {
    range('a', '', { revision: 1 });
    assert.fail('expected an error');
  } catch (err) {
    assert.ok(err instanceof EtcdError);
    assert.equal(err.code, 11);
  }
});
