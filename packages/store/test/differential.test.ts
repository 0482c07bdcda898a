// The same sequence of requests against a real etcd 3.4 and kubit-store
// (each a fresh one-member cluster): every response, and every error's code
// and message, must match field by field (IDs and terms aside).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { StoreCluster } from '@kubit/testkit';
import { etcdServices } from '../src/proto.js';

type Stub = Record<
  string,
  (req: object, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, resp: unknown) => void) => void
>;

class Api {
  readonly kv: Stub;
  readonly lease: Stub;
  constructor(endpoint: string) {
    const creds = grpc.credentials.createInsecure();
    this.kv = new etcdServices.KV(endpoint, creds) as unknown as Stub;
    this.lease = new etcdServices.Lease(endpoint, creds) as unknown as Stub;
  }
  /** The response (normalized) or the error's code and message. */
  call(service: 'kv' | 'lease', method: string, req: object): Promise<unknown> {
    const stub = this[service];
    return new Promise((res) => {
      stub[method].call(stub, req, { deadline: Date.now() + 10_000 }, (err, resp) => {
        if (err) res({ error: { code: err.code, message: err.details } });
        else res(normalize(resp));
      });
    });
  }
  close(): void {
    (this.kv as unknown as grpc.Client).close();
    (this.lease as unknown as grpc.Client).close();
  }
}

/** Bytes as text; the header keeps only the revision (IDs and terms differ by nature). */
function normalize(v: unknown, key = ''): unknown {
  if (Buffer.isBuffer(v)) return v.toString('latin1');
  if (Array.isArray(v)) return v.map((x) => normalize(x));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (key === 'header' && k !== 'revision') continue;
      out[k] = normalize(x, k);
    }
    return out;
  }
  return v;
}

let etcd: StoreCluster;
let kubit: StoreCluster;
let a: Api;
let b: Api;

before(async () => {
  const started = await Promise.allSettled([
    StoreCluster.start({ program: 'etcd', size: 1 }),
    StoreCluster.start({ program: 'kubit-store', size: 1 }),
  ]);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  [etcd, kubit] = started.map((s) => (s as PromiseFulfilledResult<StoreCluster>).value);
  a = new Api(etcd.endpoints[0]);
  b = new Api(kubit.endpoints[0]);
});
after(async () => {
  a?.close();
  b?.close();
  // Both are destroyed even if only one started (StoreCluster.start cleans up its own failures).
  await Promise.all([etcd?.destroy(), kubit?.destroy()]);
});

const k = (s: string) => Buffer.from(s, 'latin1');

async function same(service: 'kv' | 'lease', method: string, req: object, what: string): Promise<unknown> {
  const ra = await a.call(service, method, req);
  const rb = await b.call(service, method, req);
  assert.deepEqual(rb, ra, `${what}: kubit-store differs from etcd`);
  return ra;
}

const put = (key: string, value: string, extra: object = {}) => ({ key: k(key), value: k(value), ...extra });
const rop = (r: object) => ({ request_range: r });
const pop = (p: object) => ({ request_put: p });
const dop = (d: object) => ({ request_delete_range: d });

test('puts and ranges with every option', async () => {
  await same('kv', 'Put', put('a', '1'), 'put a');
  await same('kv', 'Put', put('b', '2'), 'put b');
  await same('kv', 'Put', put('a', '3', { prev_kv: true }), 'put a with prev_kv');
  await same('kv', 'Put', put('p/1', 'x'), 'put p/1');
  await same('kv', 'Put', put('p/2', 'yy'), 'put p/2');
  await same('kv', 'Put', put('p/3', 'z'), 'put p/3');
  await same('kv', 'Put', put('c', '', { ignore_value: true }), 'ignore_value on a missing key');
  await same('kv', 'Put', put('a', 'x', { ignore_value: true }), 'ignore_value with a value');
  await same('kv', 'Put', put('a', '', { ignore_value: true }), 'ignore_value');
  await same('kv', 'Put', put('', 'v'), 'empty key');
  const ranges: [string, object][] = [
    ['single', { key: k('a') }],
    ['missing', { key: k('nope') }],
    ['a..c', { key: k('a'), range_end: k('c') }],
    ['prefix', { key: k('p/'), range_end: k('p0') }],
    ['from key', { key: k('b'), range_end: k('\0') }],
    ['all', { key: k('\0'), range_end: k('\0') }],
    ['end before key', { key: k('p'), range_end: k('a') }],
    ['limit', { key: k('\0'), range_end: k('\0'), limit: 2 }],
    ['descend', { key: k('p/'), range_end: k('p0'), sort_order: 2 }],
    ['by value', { key: k('p/'), range_end: k('p0'), sort_target: 4 }],
    ['by version desc', { key: k('\0'), range_end: k('\0'), sort_target: 1, sort_order: 2 }],
    ['by create asc, limit', { key: k('\0'), range_end: k('\0'), sort_target: 2, sort_order: 1, limit: 3 }],
    ['count only', { key: k('\0'), range_end: k('\0'), count_only: true }],
    ['keys only', { key: k('p/'), range_end: k('p0'), keys_only: true }],
    ['mod filters', { key: k('\0'), range_end: k('\0'), min_mod_revision: 3, max_mod_revision: 5 }],
    ['create filters', { key: k('\0'), range_end: k('\0'), min_create_revision: 2, max_create_revision: 4 }],
    ['filters and limit', { key: k('\0'), range_end: k('\0'), min_mod_revision: 2, limit: 1 }],
    ['past revision', { key: k('a'), revision: 1 }],
    ['negative revision', { key: k('a'), revision: -1 }],
    ['future revision', { key: k('a'), revision: 1000 }],
    ['serializable', { key: k('a'), serializable: true }],
    ['empty key', { key: k('') }],
  ];
  for (const [what, req] of ranges) await same('kv', 'Range', req, `range ${what}`);
});

test('deletes', async () => {
  await same('kv', 'DeleteRange', { key: k('b'), prev_kv: true }, 'delete b');
  await same('kv', 'DeleteRange', { key: k('b') }, 'delete nothing');
  await same('kv', 'DeleteRange', { key: k('p/'), range_end: k('p/3'), prev_kv: true }, 'delete range');
  await same('kv', 'Range', { key: k('\0'), range_end: k('\0') }, 'after deletes');
  await same(
    'kv',
    'Range',
    { key: k('p/'), range_end: k('p0'), revision: 6 },
    'deleted keys at a past revision',
  );
});

test('txns: compares, branches, nested, reads after writes, validation', async () => {
  const cmp = (key: string, target: number, result: number, v: object) => ({
    key: k(key),
    target,
    result,
    ...v,
  });
  const txns: [string, object][] = [
    [
      'version equal',
      {
        compare: [cmp('a', 0, 0, { version: 3 })],
        success: [pop(put('t', '1')), rop({ key: k('t') })],
        failure: [rop({ key: k('a') })],
      },
    ],
    [
      'value not equal',
      {
        compare: [cmp('a', 3, 3, { value: k('3') })],
        success: [pop(put('t', '2'))],
        failure: [rop({ key: k('t') })],
      },
    ],
    ['missing key value', { compare: [cmp('missing', 3, 0, { value: k('') })], success: [], failure: [] }],
    ['missing key version', { compare: [cmp('missing', 0, 0, { version: 0 })], success: [], failure: [] }],
    [
      'create less',
      {
        compare: [cmp('a', 1, 2, { create_revision: 2 })],
        success: [dop({ key: k('t'), prev_kv: true })],
        failure: [],
      },
    ],
    [
      'mod greater',
      {
        compare: [cmp('a', 2, 1, { mod_revision: 1 })],
        success: [pop(put('t', 'x')), pop(put('u', 'y'))],
        failure: [],
      },
    ],
    [
      'lease equal',
      {
        compare: [cmp('a', 4, 0, { lease: 0 })],
        success: [rop({ key: k('\0'), range_end: k('\0'), keys_only: true })],
        failure: [],
      },
    ],
    [
      'range compare',
      { compare: [{ ...cmp('p', 0, 1, { version: 0 }), range_end: k('q') }], success: [], failure: [] },
    ],
    [
      'nested',
      {
        compare: [],
        success: [
          {
            request_txn: {
              compare: [cmp('t', 0, 1, { version: 0 })],
              success: [pop(put('n', '1'))],
              failure: [pop(put('n', '0'))],
            },
          },
        ],
        failure: [],
      },
    ],
    [
      'read only',
      { compare: [], success: [rop({ key: k('n') }), rop({ key: k('a'), revision: 2 })], failure: [] },
    ],
    ['empty', { compare: [], success: [], failure: [] }],
    ['duplicate put', { compare: [], success: [pop(put('d', '1')), pop(put('d', '2'))], failure: [] }],
    [
      'put in deleted range',
      { compare: [], success: [dop({ key: k('d'), range_end: k('e') }), pop(put('d1', '2'))], failure: [] },
    ],
    [
      'too many ops',
      { compare: [], success: Array.from({ length: 129 }, (_, i) => pop(put(`m${i}`, 'v'))), failure: [] },
    ],
    [
      'unknown lease inside',
      { compare: [], success: [pop(put('ok', 'v')), pop(put('bad', 'v', { lease: 99 }))], failure: [] },
    ],
  ];
  for (const [what, req] of txns) await same('kv', 'Txn', req, `txn ${what}`);
  await same('kv', 'Range', { key: k('\0'), range_end: k('\0') }, 'after txns');
});

test('leases', async () => {
  await same('lease', 'LeaseGrant', { ID: 1000, TTL: 60 }, 'grant with an ID');
  await same('lease', 'LeaseGrant', { ID: 1000, TTL: 60 }, 'grant the same ID');
  await same('lease', 'LeaseGrant', { ID: 1001, TTL: 9_000_000_001 }, 'grant a huge TTL');
  await same('kv', 'Put', put('leased', 'v', { lease: 1000 }), 'put with a lease');
  await same('kv', 'Put', put('leased2', 'v', { lease: 1000 }), 'put with a lease');
  await same('kv', 'Put', put('leased', 'w', { ignore_lease: true }), 'ignore_lease');
  await same(
    'kv',
    'Put',
    put('leased', 'w', { ignore_lease: true, lease: 1000 }),
    'ignore_lease with a lease',
  );
  await same('kv', 'Put', put('x', 'v', { lease: 4242 }), 'unknown lease');
  await same(
    'kv',
    'Txn',
    { compare: [{ key: k('leased'), target: 4, result: 0, lease: 1000 }], success: [], failure: [] },
    'lease compare',
  );
  const ttl = (await a.call('lease', 'LeaseTimeToLive', { ID: 1000, keys: true })) as {
    grantedTTL: string;
    keys: string[];
  };
  const mine = (await b.call('lease', 'LeaseTimeToLive', { ID: 1000, keys: true })) as {
    grantedTTL: string;
    keys: string[];
  };
  // etcd lists a lease's keys in no particular order.
  assert.deepEqual([mine.grantedTTL, [...mine.keys].sort()], [ttl.grantedTTL, [...ttl.keys].sort()]);
  await same('lease', 'LeaseTimeToLive', { ID: 5555 }, 'timetolive of an unknown lease');
  await same('lease', 'LeaseRevoke', { ID: 1000 }, 'revoke');
  await same('lease', 'LeaseRevoke', { ID: 1000 }, 'revoke again');
  await same('kv', 'Range', { key: k('leased'), range_end: k('leasee') }, 'keys gone with the lease');
  await same('lease', 'LeaseLeases', {}, 'list');
});

test('compaction', async () => {
  await same('kv', 'Compact', { revision: 1000 }, 'future compaction');
  await same('kv', 'Compact', { revision: 5 }, 'compact');
  await same('kv', 'Compact', { revision: 5 }, 'compact again');
  await same('kv', 'Compact', { revision: 3 }, 'compact below');
  await same('kv', 'Range', { key: k('a'), revision: 4 }, 'range below the compaction');
  await same('kv', 'Range', { key: k('a'), revision: 5 }, 'range at the compaction');
});

interface WatchStreamEvents {
  /** Events per watch ID, normalized. */
  events: Map<string, unknown[]>;
  /** Revisions of the progress answers received. */
  progress: number[];
  write(req: object): void;
  end(): void;
}

/** A bidi Watch stream on `endpoint`, collecting what it receives. */
function watchStream(endpoint: string): WatchStreamEvents {
  const client = new etcdServices.Watch(
    endpoint,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & {
    Watch(): grpc.ClientDuplexStream<
      object,
      { watch_id: string; header: { revision: string }; events: unknown[] }
    >;
  };
  const call = client.Watch();
  const out: WatchStreamEvents = {
    events: new Map(),
    progress: [],
    write: (req) => call.write(req),
    end: () => {
      call.end();
      client.close();
    },
  };
  call.on('data', (resp) => {
    if (resp.watch_id === '-1') out.progress.push(Number(resp.header.revision));
    const list = out.events.get(resp.watch_id) ?? [];
    for (const ev of resp.events) list.push(normalize(ev));
    out.events.set(resp.watch_id, list);
  });
  call.on('error', () => {});
  return out;
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let waited = 0; !check(); waited += 20) {
    if (waited > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('watch: several watchers with different options on one stream get what etcd sends them', async () => {
  const NOPUT = 0;
  const NODELETE = 1;
  const creates = [
    { key: k('w/'), range_end: k('w0') },
    { key: k('w/'), range_end: k('w0'), prev_kv: true },
    { key: k('w/'), range_end: k('w0'), filters: [NOPUT] },
    { key: k('w/'), range_end: k('w0'), filters: [NODELETE], prev_kv: true },
    { key: k('w/a') },
    { key: k('w/m'), range_end: k('\0') },
  ];
  const streams = [watchStream(etcd.endpoints[0]), watchStream(kubit.endpoints[0])];
  try {
    for (const s of streams) {
      for (const c of creates) s.write({ create_request: c });
      // Created answers carry no events; wait for all of them.
      await until('the watchers', () => s.events.size >= creates.length);
    }
    const ops: [string, object][] = [
      ['Put', put('w/a', '1')],
      ['Put', put('w/b', '1')],
      ['Put', put('w/a', '2')],
      ['Put', put('w/n', '1')],
      ['Txn', { compare: [], success: [pop(put('w/c', '1')), dop({ key: k('w/b') })], failure: [] }],
      ['DeleteRange', { key: k('w/'), range_end: k('w0') }],
      ['Put', put('w/z', '1')],
    ];
    for (const [method, req] of ops) await same('kv', method, req, `${method} under watchers`);
    const last = Number(
      ((await a.call('kv', 'Range', { key: k('w/z') })) as { header: { revision: string } }).header.revision,
    );
    // A progress answer says every event up to its revision was sent.
    for (const s of streams) {
      s.write({ progress_request: {} });
      await until('the progress answer', () => s.progress.some((rev) => rev >= last));
    }
    const [fromEtcd, fromKubit] = streams.map((s) => Object.fromEntries(s.events));
    assert.ok(
      Object.values(fromEtcd).some((evs) => (evs as unknown[]).length > 0),
      'etcd sent events',
    );
    assert.deepEqual(fromKubit, fromEtcd);
  } finally {
    for (const s of streams) s.end();
  }
});
