// Bad requests get etcd's gRPC code and message, change nothing, and the
// member keeps serving.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { credentials, makeGenericClientConstructor, status } from '@grpc/grpc-js';
import { StoreCluster } from '@kubit/testkit';
import { KvClient } from './kv-client.js';

let cluster: StoreCluster;
let kv: KvClient;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 1 });
  kv = new KvClient(cluster.endpoints);
});
after(async () => {
  kv?.close();
  await cluster?.destroy();
});

async function revision(): Promise<number> {
  const r = await kv.call<{ header: { revision: string } }>('Range', { key: Buffer.from('any') });
  return Number(r.header.revision);
}

async function rejects(p: Promise<unknown>, code: status, message: string | RegExp): Promise<void> {
  await assert.rejects(p, (err: { code: number; details: string }) => {
    if (typeof message === 'string') assert.equal(err.details, message);
    else assert.match(err.details, message);
    assert.equal(err.code, code);
    return true;
  });
}

/** Runs a bad request and checks the revision did not move and the member still writes. */
async function refusedWithoutEffect(
  p: () => Promise<unknown>,
  code: status,
  message: string | RegExp,
): Promise<void> {
  const before = await revision();
  await rejects(p(), code, message);
  assert.equal(await revision(), before, 'a refused request changed the store');
  await kv.put('still/serving', String(before));
  assert.equal(await kv.get('still/serving'), String(before));
}

const put = (key: string, value: string | Buffer, extra: object = {}) => ({
  request_put: { key: Buffer.from(key), value: Buffer.from(value), ...extra },
});

test('a value over 1.5 MiB: request is too large (etcdctl reading the value from stdin)', async () => {
  const big = 'x'.repeat(1.6 * 1024 * 1024);
  const before = await revision();
  const r = await cluster.etcdctl(['put', 'big'], { stdin: big });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /etcdserver: request is too large/);
  assert.equal(await revision(), before);
  await refusedWithoutEffect(
    () => kv.call('Put', { key: Buffer.from('big'), value: Buffer.from(big) }),
    status.INVALID_ARGUMENT,
    'etcdserver: request is too large',
  );
});

test('txn with more than 128 ops; duplicate keys in a txn', async () => {
  const ops = Array.from({ length: 129 }, (_, i) => put(`t/${i}`, 'v'));
  await refusedWithoutEffect(
    () => kv.call('Txn', { success: ops }),
    status.INVALID_ARGUMENT,
    'etcdserver: too many operations in txn request',
  );
  await refusedWithoutEffect(
    () => kv.call('Txn', { success: [put('d', '1'), put('d', '2')] }),
    status.INVALID_ARGUMENT,
    'etcdserver: duplicate key given in txn request',
  );
  // 128 is allowed.
  await kv.call('Txn', { success: ops.slice(0, 128) });
});

test('empty key; range_end before key is an empty answer, not an error', async () => {
  await refusedWithoutEffect(
    () => kv.call('Put', { key: Buffer.alloc(0), value: Buffer.from('v') }),
    status.INVALID_ARGUMENT,
    'etcdserver: key is not provided',
  );
  await refusedWithoutEffect(
    () => kv.call('Range', { key: Buffer.alloc(0) }),
    status.INVALID_ARGUMENT,
    'etcdserver: key is not provided',
  );
  const r = await kv.call<{ kvs: unknown[]; count: string }>('Range', {
    key: Buffer.from('z'),
    range_end: Buffer.from('a'),
  });
  assert.deepEqual([r.kvs.length, Number(r.count)], [0, 0]);
  const ctl = await cluster.etcdctl(['get', 'z', 'a']);
  assert.equal(ctl.code, 0);
  assert.equal(ctl.stdout, '');
});

test('negative revision means latest; a future revision is refused; compacted ones too', async () => {
  await kv.put('r', '1');
  const latest = await kv.call<{ kvs: { value: Buffer }[] }>('Range', {
    key: Buffer.from('r'),
    revision: -5,
  });
  assert.equal(latest.kvs[0].value.toString(), '1');
  const rev = await revision();
  await refusedWithoutEffect(
    () => kv.call('Range', { key: Buffer.from('r'), revision: rev + 100 }),
    status.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision is a future revision',
  );
  await refusedWithoutEffect(
    () => kv.call('Compact', { revision: rev + 100 }),
    status.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision is a future revision',
  );
  await kv.call('Compact', { revision: rev });
  await refusedWithoutEffect(
    () => kv.call('Range', { key: Buffer.from('r'), revision: rev - 1 }),
    status.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision has been compacted',
  );
  await refusedWithoutEffect(
    () => kv.call('Compact', { revision: rev }),
    status.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision has been compacted',
  );
});

test('unknown lease IDs: put, txn (nothing half-applied), revoke', async () => {
  await refusedWithoutEffect(
    () => kv.call('Put', { key: Buffer.from('l'), value: Buffer.from('v'), lease: '4660' }),
    status.NOT_FOUND,
    'etcdserver: requested lease not found',
  );
  await refusedWithoutEffect(
    () => kv.call('Txn', { success: [put('ok-part', 'v'), put('bad-part', 'v', { lease: '4660' })] }),
    status.NOT_FOUND,
    'etcdserver: requested lease not found',
  );
  assert.equal(await kv.get('ok-part'), null);
  const r = await cluster.etcdctl(['lease', 'revoke', '1234']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /etcdserver: requested lease not found/);
  const ig = await cluster.etcdctl(['put', 'no-such-key', '--ignore-value']);
  assert.match(ig.stderr, /etcdserver: key not found/);
});

test('removing the last member is refused and the member keeps serving', async () => {
  const list = await cluster.etcdctl(['member', 'list']);
  const id = list.stdout.split(',')[0];
  const r = await cluster.etcdctl(['member', 'remove', id]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /etcdserver: re-configuration failed due to not enough started members/);
  const missing = await cluster.etcdctl(['member', 'remove', '1234']);
  assert.match(missing.stderr, /etcdserver: member not found/);
  assert.equal((await cluster.etcdctl(['put', 'after', 'ok'])).code, 0);
});

/** A raw gRPC call to the member: the request's bytes as given, the answer's bytes as received. */
function rawCall(path: string, body: Buffer): Promise<Buffer> {
  const identity = (b: Buffer) => b;
  const Client = makeGenericClientConstructor(
    {
      Raw: {
        path,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    'Raw',
  );
  const client = new Client(cluster.endpoints[0], credentials.createInsecure()) as unknown as {
    Raw(req: Buffer, opts: object, cb: (err: unknown, resp: Buffer) => void): void;
    close(): void;
  };
  return new Promise<Buffer>((res, rej) => {
    client.Raw(body, { deadline: Date.now() + 5000 }, (err, resp) => {
      client.close();
      if (err) rej(err);
      else res(resp);
    });
  });
}

test('malformed protobuf, an unknown method, an oversized message: gRPC errors, and the member keeps serving', async () => {
  // Field 1 (key) claims 100 bytes and the message ends after 2.
  await refusedWithoutEffect(
    () => rawCall('/etcdserverpb.KV/Put', Buffer.from([0x0a, 0x64, 0x61, 0x62])),
    status.INTERNAL,
    /^grpc: error unmarshalling request: /,
  );
  await refusedWithoutEffect(
    () => rawCall('/etcdserverpb.KV/Nope', Buffer.alloc(0)),
    status.UNIMPLEMENTED,
    'unknown method Nope for service etcdserverpb.KV',
  );
  await refusedWithoutEffect(
    () => rawCall('/nosuch.Service/Get', Buffer.alloc(0)),
    status.UNIMPLEMENTED,
    'unknown service nosuch.Service',
  );
  const huge = Buffer.alloc(3 * 1024 * 1024, 1);
  await refusedWithoutEffect(
    () => rawCall('/etcdserverpb.KV/Put', huge),
    status.RESOURCE_EXHAUSTED,
    `grpc: received message larger than max (${huge.length} vs. ${1.5 * 1024 * 1024 + 512 * 1024})`,
  );
});
