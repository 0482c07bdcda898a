// Five kubit-store processes on loopback under a recorded write/read load:
// kill -9 of the leader (the other four elect a new one, nothing acknowledged
// is lost, the history is linearizable), then kill -9 of all five at once and
// a restart (every acknowledged write survived the crash).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StoreCluster, waitFor } from '@kubit/testkit';
import { assertLinearizable, Workload } from './fault-kit.js';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 5 });
});
after(async () => {
  await cluster?.destroy();
});

/** The index of the member that a running member other than `not` names as leader (and that agrees). */
async function leaderOtherThan(not: number): Promise<number> {
  return waitFor(`a leader other than m${not}`, async () => {
    for (let i = 0; i < cluster.members.length; i++) {
      if (i === not || !cluster.members[i].process?.running) continue;
      const s = await cluster.memberStatus(i, 2000);
      if (s?.isLeader) return i;
    }
    return undefined;
  });
}

test('5 members: kill -9 of the leader under load elects a new leader and loses no acknowledged write', async () => {
  const leader = await cluster.leaderIndex();
  assert.ok(leader >= 0, 'a leader is elected');
  const before = await cluster.memberStatus(leader);
  assert.ok(before);
  const load = new Workload(cluster.allEndpoints, { clients: 5 });
  try {
    load.start();
    await load.progress(15, 'before the kill');
    await cluster.kill(leader);
    // Calls already sent to it end as unknown outcomes; new calls go to the survivors.
    load.setEndpoints(cluster.endpoints);
    const next = await leaderOtherThan(leader);
    const after = await cluster.memberStatus(next);
    assert.ok(after && after.term > before.term, 'the new leader has a higher term');
    await load.progress(15, 'after the new leader');
    await load.stop();
    await load.verifyAcknowledged(cluster.members[next].endpoint);
    assert.ok(load.acknowledged.size >= 5, `only ${load.acknowledged.size} acknowledged writes`);
    assertLinearizable(load.history);
  } finally {
    await load.stop();
    load.close();
  }
  // The killed member comes back as a follower and catches up.
  cluster.startMember(leader);
  await cluster.waitReady();
  const back = await cluster.memberStatus(leader);
  assert.ok(back && !back.isLeader, 'the restarted member rejoins as a follower');
});

test('5 members: kill -9 of every member during writes, restart: every acknowledged write is there', async () => {
  const load = new Workload(cluster.allEndpoints, { clients: 5 });
  try {
    load.start();
    await load.progress(25, 'before the crash');
    // All at once, while calls are in flight.
    await Promise.all(cluster.members.map((_, i) => cluster.kill(i)));
    await load.stop();
    for (let i = 0; i < cluster.members.length; i++) cluster.startMember(i);
    await cluster.waitReady();
    for (const m of cluster.members) await load.verifyAcknowledged(m.endpoint);
    assert.ok(load.acknowledged.size >= 5, `only ${load.acknowledged.size} acknowledged writes`);
    assertLinearizable(load.history);
  } finally {
    await load.stop();
    load.close();
  }
});
