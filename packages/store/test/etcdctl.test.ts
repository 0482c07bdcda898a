// One kubit-store member as a real process, driven by the real etcdctl 3.4
// and the npm etcd3 client.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { ETCDCTL_BINARY, parseEtcdctlJson, StoreCluster, waitFor } from '@kubit/testkit';
import { Etcd3 } from 'etcd3';
import { etcdServices } from '../src/proto.js';

let cluster: StoreCluster;
const ctl = (...args: string[]) => cluster.etcdctl(args);
async function ok(...args: string[]): Promise<string> {
  const r = await cluster.etcdctl(args);
  assert.equal(r.code, 0, `etcdctl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}
const lines = (s: string) => s.split('\n').filter((l) => l !== '');

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 1 });
});
after(async () => {
  await cluster?.destroy();
});

test('put and get: --prefix, --from-key, --rev, --limit, --keys-only, --sort-by/--order, json', async () => {
  assert.equal((await ok('put', 'a/1', 'one')).trim(), 'OK');
  await ok('put', 'a/2', 'two');
  await ok('put', 'a/3', 'three');
  await ok('put', 'b', 'bee');
  assert.deepEqual(lines(await ok('get', 'a/1')), ['a/1', 'one']);
  assert.deepEqual(lines(await ok('get', 'a/', '--prefix', '--keys-only')), ['a/1', 'a/2', 'a/3']);
  assert.deepEqual(lines(await ok('get', 'a/3', '--from-key', '--keys-only')), ['a/3', 'b']);
  assert.deepEqual(lines(await ok('get', 'a/', '--prefix', '--limit=1')), ['a/1', 'one']);
  assert.deepEqual(lines(await ok('get', 'a/', '--prefix', '--keys-only', '--order=DESCEND')), [
    'a/3',
    'a/2',
    'a/1',
  ]);
  assert.deepEqual(lines(await ok('get', 'a/', '--prefix', '--keys-only', '--sort-by=VALUE')), [
    'a/1',
    'a/3',
    'a/2',
  ]);
  await ok('put', 'a/1', 'uno');
  assert.deepEqual(lines(await ok('get', 'a/1', '--rev=2')), ['a/1', 'one']);
  const json = JSON.parse(await ok('get', 'a/', '--prefix', '--limit=2', '-w', 'json')) as {
    header: { revision: number };
    kvs: { key: string; create_revision: number; mod_revision: number; version: number }[];
    more: boolean;
    count: number;
  };
  assert.equal(json.header.revision, 6);
  assert.equal(json.more, true);
  assert.equal(json.count, 3);
  assert.deepEqual(
    json.kvs.map((k) => [
      Buffer.from(k.key, 'base64').toString(),
      k.create_revision,
      k.mod_revision,
      k.version,
    ]),
    [
      ['a/1', 2, 6, 2],
      ['a/2', 3, 3, 1],
    ],
  );
});

test('del: --prev-kv and --prefix', async () => {
  assert.deepEqual(lines(await ok('del', 'b', '--prev-kv')), ['1', 'b', 'bee']);
  assert.deepEqual(lines(await ok('del', 'a/', '--prefix')), ['3']);
  assert.equal(await ok('get', 'a/', '--prefix'), '');
  assert.deepEqual(lines(await ok('del', 'nothing')), ['0']);
});

test('txn from stdin (interactive form)', async () => {
  await ok('put', 'tx', 'v1');
  const r = await cluster.etcdctl(['txn'], {
    stdin: 'value("tx") = "v1"\n\nput tx v2\nget tx\n\nput tx failed\n\n',
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(lines(r.stdout), ['SUCCESS', 'OK', 'tx', 'v2']);
  const r2 = await cluster.etcdctl(['txn'], { stdin: 'mod("tx") < "2"\n\nput tx never\n\nget tx\n\n' });
  assert.deepEqual(lines(r2.stdout), ['FAILURE', 'tx', 'v2']);
});

function startWatch(args: string[]): { out: () => string; stop: () => void } {
  const child = spawn(ETCDCTL_BINARY, [`--endpoints=${cluster.endpoints.join(',')}`, 'watch', ...args], {
    env: { ...process.env, ETCDCTL_API: '3' },
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return { out: () => out, stop: () => child.kill('SIGKILL') };
}

test('watch: live events with --prefix and --prev-kv, history with --rev', async () => {
  const w = startWatch(['w/', '--prefix', '--prev-kv']);
  try {
    // Wait until the watcher is registered: a put it sees proves it.
    await waitFor('watch to see events', async () => {
      await ok('put', 'w/ping', String(Date.now()));
      return w.out().includes('w/ping');
    });
    await ok('put', 'w/x', '1');
    await ok('put', 'w/x', '2');
    await ok('del', 'w/x');
    await waitFor('delete event', () => w.out().includes('DELETE'));
    const out = lines(w.out());
    const tail = out.slice(out.lastIndexOf('PUT', out.indexOf('w/x')));
    assert.deepEqual(tail, ['PUT', 'w/x', '1', 'PUT', 'w/x', '1', 'w/x', '2', 'DELETE', 'w/x', '2', 'w/x']);
  } finally {
    w.stop();
  }
  const status = JSON.parse(await ok('get', 'w/x', '-w', 'json')) as { header: { revision: number } };
  const rev = status.header.revision;
  // Revisions rev-2, rev-1, rev: put 1, put 2, delete.
  const h = startWatch(['w/x', `--rev=${rev - 1}`]);
  try {
    await waitFor('history replay', () => h.out().includes('DELETE'));
    assert.deepEqual(lines(h.out()), ['PUT', 'w/x', '2', 'DELETE', 'w/x']);
  } finally {
    h.stop();
  }
});

test('lease: grant, attach, keep-alive, timetolive, list, revoke deletes keys', async () => {
  const grant = await ok('lease', 'grant', '60');
  const m = /lease ([0-9a-f]+) granted with TTL\(60s\)/.exec(grant);
  assert.ok(m, grant);
  const id = m[1];
  await ok('put', 'leased', 'v', `--lease=${id}`);
  assert.match(
    await ok('lease', 'keep-alive', '--once', id),
    new RegExp(`lease ${id} keepalived with TTL\\(60\\)`),
  );
  assert.match(
    await ok('lease', 'timetolive', id, '--keys'),
    new RegExp(
      `lease ${id} granted with TTL\\(60s\\), remaining\\(\\d+s\\), attached keys\\(\\[leased\\]\\)`,
    ),
  );
  assert.match(await ok('lease', 'list'), new RegExp(id));
  assert.match(await ok('lease', 'revoke', id), new RegExp(`lease ${id} revoked`));
  assert.equal(await ok('get', 'leased'), '');
  assert.match(await ok('lease', 'timetolive', id), /already expired/);
  const again = await ctl('lease', 'revoke', id);
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /etcdserver: requested lease not found/);
});

test('a lease that is not kept alive expires and takes its keys with it', async () => {
  const m = /lease ([0-9a-f]+) granted/.exec(await ok('lease', 'grant', '2'));
  assert.ok(m);
  await ok('put', 'ephemeral', 'v', `--lease=${m[1]}`);
  await waitFor('the lease to expire', async () => (await ok('get', 'ephemeral')) === '', 15_000, 250);
});

test('compaction: old revisions are gone, watch from them is canceled', async () => {
  await ok('put', 'c', '1');
  const rev = (JSON.parse(await ok('put', 'c', '2', '-w', 'json')) as { header: { revision: number } }).header
    .revision;
  assert.match(await ok('compaction', String(rev)), new RegExp(`compacted revision ${rev}`));
  const r = await ctl('get', 'c', `--rev=${rev - 1}`);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /etcdserver: mvcc: required revision has been compacted/);
  const w = startWatch(['c', `--rev=${rev - 1}`]);
  try {
    await waitFor('watch cancel', () => w.out().includes('canceled'));
    assert.match(w.out(), /required revision has been compacted/);
  } finally {
    w.stop();
  }
});

test('endpoint status/health (--cluster) and member list', async () => {
  const status = JSON.parse(await ok('endpoint', 'status', '-w', 'json')) as {
    Status: { version: string; leader: number; raftIndex: number };
  }[];
  assert.equal(status.length, 1);
  assert.equal(status[0].Status.version, '3.5.13');
  assert.ok(status[0].Status.raftIndex > 0);
  const health = await ctl('endpoint', 'health', '--cluster');
  assert.equal(health.code, 0);
  // etcdctl 3.4 prints the verdict on stderr.
  assert.match(health.stdout + health.stderr, /is healthy: successfully committed proposal/);
  const members = lines(await ok('member', 'list'));
  assert.equal(members.length, 1);
  assert.match(
    members[0],
    new RegExp(
      `^[0-9a-f]+, started, m0, http://127.0.0.1:${cluster.members[0].peerPort}, http://127.0.0.1:${cluster.members[0].clientPort}, false$`,
    ),
  );
});

/** MemberList straight from the store over gRPC, uint64s as the exact decimal strings it sends. */
function storeMemberList(
  endpoint: string,
): Promise<{ header: { member_id: string }; members: { ID: string; name: string }[] }> {
  const client = new etcdServices.Cluster(
    endpoint,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & {
    MemberList(req: object, cb: (err: Error | null, resp: never) => void): void;
  };
  return new Promise((res, rej) =>
    client.MemberList({}, (err, resp) => {
      client.close();
      if (err) rej(err);
      else res(resp);
    }),
  );
}

test("member IDs: etcdctl prints the store's own 64-bit IDs exactly (table, json, endpoint status)", async () => {
  // A double cannot hold every uint64: this one is what etcdctl printed for a real member.
  assert.deepEqual(parseEtcdctlJson('{"ID":14781329676850808784,"n":7,"s":"9007199254740993"}'), {
    ID: '14781329676850808784',
    n: 7,
    s: '9007199254740993',
  });
  const own = await storeMemberList(cluster.endpoints[0]);
  assert.equal(own.members.length, 1);
  const table = lines(await ok('member', 'list')).map((l) => l.split(', '));
  assert.deepEqual(
    table.map((f) => [BigInt(`0x${f[0]}`).toString(), f[2]]),
    own.members.map((m) => [m.ID, m.name]),
  );
  const json = parseEtcdctlJson(await ok('member', 'list', '-w', 'json')) as {
    header: { member_id: number | string };
    members: { ID: number | string }[];
  };
  assert.deepEqual(
    json.members.map((m) => String(m.ID)),
    own.members.map((m) => m.ID),
  );
  assert.equal(String(json.header.member_id), own.header.member_id);
  // The testkit's view of a member, which the cluster tests compare IDs with.
  const status = await cluster.memberStatus(0);
  assert.equal(status?.memberId, own.header.member_id);
  assert.equal(status?.leader, own.header.member_id, 'the only member leads');
  assert.equal(await cluster.leaderIndex(), 0);
});

test('/health and /metrics on the metrics URL', async () => {
  const base = `http://127.0.0.1:${cluster.members[0].metricsPort}`;
  const h = await fetch(`${base}/health`);
  assert.equal(h.status, 200);
  assert.deepEqual(await h.json(), { health: 'true' });
  const metrics = await (await fetch(`${base}/metrics`)).text();
  assert.match(metrics, /etcd_server_is_leader 1/);
});

test('the npm etcd3 client: put, get, prefix, txn, delete, watch, lease', async () => {
  const client = new Etcd3({ hosts: cluster.endpoints.map((e) => `http://${e}`) });
  try {
    await client.put('e3/a').value('1');
    await client.put('e3/b').value('2');
    assert.equal(await client.get('e3/a').string(), '1');
    assert.deepEqual(await client.getAll().prefix('e3/').strings(), { 'e3/a': '1', 'e3/b': '2' });
    const watcher = await client.watch().prefix('e3/').create();
    const seen: string[] = [];
    watcher.on('put', (kv) => seen.push(`put ${kv.key.toString()}=${kv.value.toString()}`));
    watcher.on('delete', (kv) => seen.push(`delete ${kv.key.toString()}`));
    const t = await client
      .if('e3/a', 'Value', '==', '1')
      .then(client.put('e3/a').value('11'))
      .else(client.put('e3/a').value('never'))
      .commit();
    assert.equal(t.succeeded, true);
    await client.delete().key('e3/b');
    await waitFor('etcd3 watch events', () => seen.length >= 2);
    assert.deepEqual(seen, ['put e3/a=11', 'delete e3/b']);
    await watcher.cancel();
    const lease = client.lease(30);
    await lease.put('e3/leased').value('x');
    assert.equal(await client.get('e3/leased').string(), 'x');
    await lease.revoke();
    assert.equal(await client.get('e3/leased').string(), null);
  } finally {
    client.close();
  }
});
