// Log compaction and snapshots: with a small --snapshot-count the leader drops
// old log entries, so a member that was down while many writes happened can
// only catch up from a snapshot of the MVCC state (MsgSnap).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
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
  const kv = new KvClient(cluster.endpoints);
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
