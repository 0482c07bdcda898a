// What grpc-go gives every etcd member, on a real kubit-store process:
// deadlines from grpc-timeout (raw HTTP/2, grpc-js and etcdctl clients),
// keepalive pings and the ping policy, the concurrent stream limit, a bound
// on what a client that never reads can make the server hold, and GOAWAY
// with draining on shutdown.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { StoreCluster, waitFor } from '@kubit/testkit';
import { frameMessage } from '@kubit/wire';
import { etcdServices } from '../src/proto.js';
import { KvClient } from './kv-client.js';

const KV = etcdServices.KV.service;
const WATCH = etcdServices.Watch.service;
const STREAM_BUFFER_LIMIT = 1024 * 1024;

let cluster: StoreCluster;
let kv: KvClient;

before(async () => {
  cluster = await StoreCluster.start({
    program: 'kubit-store',
    size: 1,
    args: [
      '--grpc-keepalive-interval=1s',
      '--grpc-keepalive-timeout=1s',
      '--max-concurrent-streams=3',
      `--max-stream-buffered-bytes=${STREAM_BUFFER_LIMIT}`,
    ],
  });
  kv = new KvClient(cluster.endpoints);
});
after(async () => {
  kv?.close();
  await cluster?.destroy();
});

function connect(endpoint = cluster.endpoints[0]): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(`http://${endpoint}`);
  session.on('error', () => {});
  return new Promise((resolve, reject) => {
    session.once('remoteSettings', () => resolve(session));
    session.once('error', reject);
  });
}

/** Opens a gRPC call on a raw HTTP/2 session; the request messages are written by the caller. */
function open(session: http2.ClientHttp2Session, path: string, extra: http2.OutgoingHttpHeaders = {}) {
  const stream = session.request(
    { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...extra },
    { endStream: false },
  );
  stream.on('error', () => {});
  return stream;
}

interface Outcome {
  status: string | undefined;
  message: string | undefined;
  body: Buffer;
}

/** Reads a call to its end: the response bytes and the grpc-status (headers or trailers). */
function outcome(stream: http2.ClientHttp2Stream): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let message: string | undefined;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
      if (h['grpc-message'] !== undefined) message = String(h['grpc-message']);
    };
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('close', () =>
      status === undefined
        ? reject(new Error(`stream closed without a status (RST_STREAM ${stream.rstCode})`))
        : resolve({ status, message, body: Buffer.concat(chunks) }),
    );
  });
}

const putFrame = (key: string, value: string | Buffer) =>
  frameMessage(KV.Put.requestSerialize({ key: Buffer.from(key), value: Buffer.from(value) }));

async function revision(): Promise<number> {
  const r = await kv.call<{ header: { revision: string } }>('Range', { key: Buffer.from('any') });
  return Number(r.header.revision);
}

/** A round trip on the session: the server has read every frame sent before it. */
function roundTrip(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
}

test('grpc-timeout: a Put whose deadline passed before it reached raft ends with DEADLINE_EXCEEDED and is not applied', async () => {
  const session = await connect();
  try {
    const before = await revision();
    // One nanosecond: over before the request is even decoded.
    const stream = open(session, KV.Put.path, { 'grpc-timeout': '1n' });
    stream.end(putFrame('deadline/too-late', 'x'));
    const r = await outcome(stream);
    assert.equal(r.status, '4');
    assert.equal(r.message, 'context deadline exceeded');
    assert.equal(await kv.get('deadline/too-late'), null);
    assert.equal(await revision(), before);

    // The call ends at its deadline even while its request has not come.
    const waiting = open(session, KV.Put.path, { 'grpc-timeout': '200m' });
    const early = await outcome(waiting);
    assert.equal(early.status, '4');
    assert.equal(early.message, 'context deadline exceeded');

    // A generous deadline in every unit grpc-go and grpc-js use: the call completes.
    for (const timeout of ['10H', '600M', '30S', '30000m', '30000000u', '99999999n']) {
      const ok = open(session, KV.Put.path, { 'grpc-timeout': timeout });
      ok.end(putFrame(`deadline/ok-${timeout}`, timeout));
      assert.equal((await outcome(ok)).status, '0', `grpc-timeout ${timeout}`);
      assert.equal(await kv.get(`deadline/ok-${timeout}`), timeout);
    }

    const bad = open(session, KV.Put.path, { 'grpc-timeout': '5 seconds' });
    bad.end(putFrame('deadline/malformed', 'x'));
    const r2 = await outcome(bad);
    assert.equal(r2.status, '13');
    assert.match(r2.message ?? '', /malformed grpc-timeout/);
    assert.equal(await kv.get('deadline/malformed'), null);
  } finally {
    session.destroy();
  }
});

test('grpc-js with deadlines: calls within them complete; a watch past its deadline ends with DEADLINE_EXCEEDED', async () => {
  // KvClient gives every call a deadline (grpc-js sends it in milliseconds).
  await kv.put('grpcjs/a', '1');
  assert.equal(await kv.get('grpcjs/a'), '1');
  // A month: grpc-js switches to seconds past 10^8 ms.
  const client = new etcdServices.Watch(cluster.endpoints[0], grpc.credentials.createInsecure());
  const kvClient = new etcdServices.KV(cluster.endpoints[0], grpc.credentials.createInsecure());
  try {
    const month = Date.now() + 30 * 24 * 3600 * 1000;
    const got = await new Promise<{ kvs: { value: Buffer }[] }>((resolve, reject) =>
      (
        kvClient as unknown as {
          Range(
            r: object,
            o: grpc.CallOptions,
            cb: (e: Error | null, v: { kvs: { value: Buffer }[] }) => void,
          ): void;
        }
      ).Range({ key: Buffer.from('grpcjs/a') }, { deadline: month }, (e, v) => (e ? reject(e) : resolve(v))),
    );
    assert.equal(got.kvs[0].value.toString(), '1');

    const watch = (
      client as unknown as { Watch(o: grpc.CallOptions): grpc.ClientDuplexStream<object, object> }
    ).Watch({ deadline: Date.now() + 1000 });
    const ended = new Promise<grpc.StatusObject>((resolve) => watch.on('status', resolve));
    watch.on('error', () => {});
    watch.on('data', () => {});
    watch.write({ create_request: { key: Buffer.from('grpcjs/') } });
    const status = await ended;
    assert.equal(status.code, grpc.status.DEADLINE_EXCEEDED);
    // The member serves on.
    await kv.put('grpcjs/after', '2');
  } finally {
    client.close();
    kvClient.close();
  }
});

test('etcdctl --command-timeout: grpc-go sends the deadline in microseconds; commands within it complete', async () => {
  for (const args of [['put', 'ctl/a', '1'], ['get', 'ctl/a', '--print-value-only'], ['txn']]) {
    const r = await cluster.etcdctl(['--command-timeout=5s', ...args], {
      stdin: args[0] === 'txn' ? 'value("ctl/a") = "1"\n\nput ctl/b 2\n\nput ctl/b failed\n\n' : undefined,
    });
    assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  }
  assert.equal(await kv.get('ctl/b'), '2');
});

test('keepalive: the server pings an idle connection and closes it when the ack never comes', async () => {
  // A bare HTTP/2 client that acknowledges SETTINGS and nothing else.
  const socket = net.connect(cluster.members[0].clientPort, '127.0.0.1');
  const frames: number[] = [];
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => {});
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const type = pending[3];
      const flags = pending[4];
      frames.push(type);
      if (type === 4 && (flags & 1) === 0) socket.write(Buffer.from([0, 0, 0, 4, 1, 0, 0, 0, 0]));
      pending = pending.subarray(9 + length);
    }
  });
  socket.write(
    Buffer.concat([
      Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
      Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
    ]),
  );
  await closed;
  assert.ok(frames.includes(6), `the server sent a PING before closing (frames: ${frames.join(',')})`);

  // A client that acks (node:http2 does) keeps its connection across several intervals.
  const session = await connect();
  let pings = 0;
  session.on('ping', () => pings++);
  await waitFor('three server pings', async () => pings >= 3, 30_000, 100);
  assert.equal(session.closed || session.destroyed, false);
  session.destroy();
});

test('keepalive policy: a client pinging more often than --grpc-keepalive-min-time gets GOAWAY ENHANCE_YOUR_CALM too_many_pings', async () => {
  const session = await connect();
  const goaway = new Promise<{ code: number; data: string }>((resolve) =>
    session.on('goaway', (code, _last, data) => resolve({ code, data: data?.toString() ?? '' })),
  );
  for (let i = 0; i < 4; i++) await roundTrip(session).catch(() => {});
  const g = await goaway;
  assert.equal(g.code, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  assert.equal(g.data, 'too_many_pings');

  // One ping is within the policy: that connection keeps serving.
  const polite = await connect();
  await roundTrip(polite);
  const call = open(polite, KV.Put.path);
  call.end(putFrame('ping/ok', '1'));
  assert.equal((await outcome(call)).status, '0');
  polite.destroy();
});

test('--max-concurrent-streams: the limit is in SETTINGS; a call past it waits for a stream to end', async () => {
  const session = await connect();
  try {
    assert.equal(session.remoteSettings.maxConcurrentStreams, 3);
    const watches = [0, 1, 2].map(() => {
      const w = open(session, WATCH.Watch.path);
      w.write(
        frameMessage(WATCH.Watch.requestSerialize({ create_request: { key: Buffer.from('streams/') } })),
      );
      w.resume();
      return w;
    });
    await roundTrip(session);
    const range = open(session, KV.Range.path);
    range.end(frameMessage(KV.Range.requestSerialize({ key: Buffer.from('streams/x') })));
    let answered = false;
    const done = outcome(range).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(answered, false, 'a fourth call ran alongside three open streams');
    watches[0].close();
    assert.equal((await done).status, '0');
  } finally {
    session.destroy();
  }
});

test('a client that never reads: its watch is reset past --max-stream-buffered-bytes, its unread range holds only that response, other clients go on', async () => {
  const slow = await connect();
  try {
    const watch = open(slow, WATCH.Watch.path);
    watch.write(
      frameMessage(
        WATCH.Watch.requestSerialize({
          create_request: { key: Buffer.from('slow/'), range_end: Buffer.from('slow0') },
        }),
      ),
    );
    watch.pause();
    const reset = new Promise<number>((resolve) => watch.on('close', () => resolve(watch.rstCode ?? -1)));
    await roundTrip(slow);

    // 2 MiB of events for a client that reads none of them.
    const value = Buffer.alloc(256 * 1024, 'v').toString();
    for (let i = 0; i < 8; i++) await kv.put(`slow/${i}`, value);
    assert.equal(await reset, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);

    // A range of those 2 MiB, never read, while others keep being served on their own connections.
    const range = open(slow, KV.Range.path);
    range.end(
      frameMessage(KV.Range.requestSerialize({ key: Buffer.from('slow/'), range_end: Buffer.from('slow0') })),
    );
    range.pause();
    await roundTrip(slow);
    await kv.put('slow-other/a', '1');
    const r = await cluster.etcdctl(['get', 'slow-other/a', '--print-value-only', '--command-timeout=10s']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '1');
    assert.equal(range.closed, false, 'a unary response is sent whole, however slowly it is read');
  } finally {
    slow.destroy();
  }
  await kv.put('slow-other/b', '2');
});

/** A one-member store of its own (these tests stop it). */
async function ownStore(args: string[] = []): Promise<StoreCluster> {
  return StoreCluster.start({ program: 'kubit-store', size: 1, args });
}

test('shutdown: GOAWAY, no new connections, a call in flight still completes and is kept', async () => {
  const own = await ownStore();
  try {
    const session = await connect(own.endpoints[0]);
    const goaway = new Promise<number>((resolve) => session.on('goaway', (code) => resolve(code)));
    const put = open(session, KV.Put.path);
    const result = outcome(put);
    await roundTrip(session);
    const member = own.members[0];
    const proc = member.process;
    assert.ok(proc);
    proc.signal('SIGTERM');
    assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR);
    const refused = await new Promise<string>((resolve) => {
      const s = net.connect(member.clientPort, '127.0.0.1');
      s.on('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    assert.equal(refused, 'ECONNREFUSED');
    put.end(putFrame('drain/in-flight', 'kept'));
    assert.equal((await result).status, '0');
    session.destroy();
    assert.deepEqual(await proc.exited, { code: 0, signal: null });

    own.startMember(0);
    await own.waitReady();
    const r = await own.etcdctl(['get', 'drain/in-flight', '--print-value-only']);
    assert.equal(r.stdout.trim(), 'kept');
  } finally {
    await own.destroy();
  }
});

test('shutdown: a call that does not finish within the grace period is dropped and the member exits cleanly', async () => {
  // Grace: etcd's request timeout, 5 s + 2 × the election timeout.
  const own = await ownStore(['--election-timeout=500']);
  try {
    const session = await connect(own.endpoints[0]);
    const put = open(session, KV.Put.path);
    const closed = new Promise<void>((resolve) => put.on('close', () => resolve()));
    await roundTrip(session);
    const proc = own.members[0].process;
    assert.ok(proc);
    proc.signal('SIGTERM');
    // Never sends its request: the member must not wait for it past the grace period.
    await closed;
    assert.deepEqual(await proc.exited, { code: 0, signal: null });
    session.destroy();
  } finally {
    await own.destroy();
  }
});
