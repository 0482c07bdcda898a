// Log compaction and snapshots: with a small --snapshot-count the leader drops
// old log entries, so a member that was down while many writes happened can
// only catch up from a snapshot of the MVCC state (MsgSnap); so can a member
// whose data directory was wiped.
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { StoreCluster, waitFor } from '@kubit/testkit';
import { KvClient } from './kv-client.js';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 3, snapshotCount: 20 });
});
after(async () => {
  await cluster?.destroy();
});

test('a member that missed compacted entries catches up from a snapshot, history included', async () => {
  const leader = await cluster.leaderIndex();
  const lagging = (leader + 1) % 3;
  await cluster.stopMember(lagging);
  // A generous deadline: two members must fsync each write, on a machine that may be loaded.
  const kv = new KvClient(cluster.endpoints, 10_000);
  try {
    // Ten writers on distinct keys; each key's last value is known.
    await Promise.all(
      Array.from({ length: 10 }, async (_, w) => {
        for (let i = w; i < 100; i += 10) await kv.put(`snap/${i % 30}`, `v${i}`);
      }),
    );
  } finally {
    kv.close();
  }
  cluster.startMember(lagging);
  await cluster.waitReady();
  const endpoint = [cluster.members[lagging].endpoint];
  await waitFor('the restarted member to catch up', async () => {
    const r = await cluster.etcdctl(['get', 'snap/', '--prefix', '--consistency=s'], { endpoints: endpoint });
    return r.stdout.includes('v99');
  });
  assert.match(await readFile(cluster.members[lagging].logFile, 'utf8'), /restored state from a snapshot/);
  // Same data and the same revisions as a member that never left.
  const other = [cluster.members[leader].endpoint];
  const mine = await cluster.etcdctl(['get', 'snap/', '--prefix', '-w', 'json', '--consistency=s'], {
    endpoints: endpoint,
  });
  const theirs = await cluster.etcdctl(['get', 'snap/', '--prefix', '-w', 'json'], { endpoints: other });
  const kvs = (s: string) => (JSON.parse(s) as { kvs: unknown[] }).kvs;
  assert.deepEqual(kvs(mine.stdout), kvs(theirs.stdout));
  // Old revisions came along with the snapshot.
  const past = await cluster.etcdctl(['get', 'snap/0', '--rev=5', '--consistency=s'], {
    endpoints: endpoint,
  });
  const pastOther = await cluster.etcdctl(['get', 'snap/0', '--rev=5'], { endpoints: other });
  assert.equal(past.stdout, pastOther.stdout);
  // And it serves writes as a full member again.
  assert.equal((await cluster.etcdctl(['put', 'after/snap', 'ok'], { endpoints: endpoint })).code, 0);
});

test('a wiped follower (data dir removed) catches up from a snapshot and serves as a full member', async () => {
  // Whatever the test before left stopped runs again first.
  for (let i = 0; i < 3; i++) if (!cluster.members[i].process?.running) cluster.startMember(i);
  await cluster.waitReady();
  const leader = await waitFor('a leader', async () => {
    const i = await cluster.leaderIndex();
    return i >= 0 ? i : undefined;
  });
  const wiped = (leader + 2) % 3;
  await cluster.stopMember(wiped);
  await rm(cluster.members[wiped].dataDir, { recursive: true, force: true });
  await rm(cluster.members[wiped].logFile, { force: true });
  const kv = new KvClient(cluster.endpoints, 10_000);
  try {
    // Far more entries than --snapshot-count: the log it would need is gone.
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = w; i < 80; i += 8) await kv.put(`wiped/${i % 20}`, `w${i}`);
      }),
    );
  } finally {
    kv.close();
  }
  // Nothing on disk: it joins the cluster it is listed in, as a member added later would.
  cluster.startMember(wiped, 'existing');
  await cluster.waitReady();
  const endpoint = [cluster.members[wiped].endpoint];
  // The writers ran concurrently, so which value each key ended with is the store's
  // to say: the wiped member has caught up once its local read equals a linearizable one.
  const expected = (
    await cluster.etcdctl(['get', 'wiped/', '--prefix'], { endpoints: [cluster.members[leader].endpoint] })
  ).stdout;
  assert.match(expected, /wiped\/19\n/, 'the writes are there');
  await waitFor('the wiped member to catch up', async () => {
    const r = await cluster.etcdctl(['get', 'wiped/', '--prefix', '--consistency=s'], {
      endpoints: endpoint,
    });
    return r.stdout === expected;
  });
  assert.match(await readFile(cluster.members[wiped].logFile, 'utf8'), /restored state from a snapshot/);
  const other = [cluster.members[leader].endpoint];
  const mine = await cluster.etcdctl(['get', '', '--from-key', '-w', 'json', '--consistency=s'], {
    endpoints: endpoint,
  });
  const theirs = await cluster.etcdctl(['get', '', '--from-key', '-w', 'json'], { endpoints: other });
  const kvs = (s: string) => (JSON.parse(s) as { kvs: unknown[] }).kvs;
  assert.deepEqual(kvs(mine.stdout), kvs(theirs.stdout));
  // It votes and serves again: a write through it, read back linearizably through it.
  assert.equal((await cluster.etcdctl(['put', 'after/wipe', 'ok'], { endpoints: endpoint })).code, 0);
  const back = await cluster.etcdctl(['get', 'after/wipe', '--print-value-only'], { endpoints: endpoint });
  assert.equal(back.stdout.trim(), 'ok');
});
