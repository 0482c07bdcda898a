// A slow disk does not freeze a member: with every fdatasync of every
// member's WAL taking 500 ms (KUBIT_STORE_FAULT_SYNC_DELAY_MS), writes go on
// (slowly) and no member starts an election: the term and the leader stay.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StoreCluster, sleep } from '@kubit/testkit';
import { KvClient } from './kv-client.js';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({
    program: 'kubit-store',
    size: 3,
    env: { KUBIT_STORE_FAULT_SYNC_DELAY_MS: '500' },
  });
});
after(async () => {
  await cluster?.destroy();
});

async function terms(): Promise<{ term: number; leader: string }[]> {
  const out: { term: number; leader: string }[] = [];
  for (let i = 0; i < cluster.members.length; i++) {
    const s = await cluster.memberStatus(i, 8000);
    assert.ok(s, `member ${i} answers its status`);
    out.push({ term: s.term, leader: s.leader });
  }
  return out;
}

test('with a 500 ms fdatasync on every member: writes go on, no spurious election', async () => {
  const client = new KvClient(cluster.endpoints, 10_000);
  try {
    // Settle: the first writes after the election (each one costs a slow sync).
    await client.put('slow/warm', 'v');
    const before = await terms();
    assert.ok(
      before.every((t) => t.term === before[0].term && t.leader === before[0].leader),
      JSON.stringify(before),
    );
    let acked = 0;
    const deadline = Date.now() + 6000;
    const writers = Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; Date.now() < deadline; i++) {
        await client.put(`slow/${w}/${i}`, 'v');
        acked++;
      }
    });
    await Promise.all(writers);
    await sleep(500);
    const after = await terms();
    assert.deepEqual(after, before, 'a member started an election while its disk was slow');
    // Group commit: 8 writers share each slow sync (about 2 syncs a second).
    assert.ok(acked >= 16, `only ${acked} writes in 6 s`);
  } finally {
    client.close();
  }
});
