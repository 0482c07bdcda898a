// Membership 3 -> 5 -> 3 under a continuous recorded load, with the real
// etcdctl: each new member joins as a learner (member add --learner), starts
// with --initial-cluster-state=existing, and is promoted once it has caught up
// (promoting it before that gets etcd's error); then two members go, the
// leader first (leadership moves). The history stays linearizable and the
// three members left hold the same data.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StoreCluster, waitFor } from '@kubit/testkit';
import { assertLinearizable, Workload } from './fault-kit.js';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 3 });
});
after(async () => {
  await cluster?.destroy();
});

/** Runs etcdctl against the members in `live`, failing the test with its stderr. */
async function ctl(live: number[], args: string[]): Promise<string> {
  // Generous: a conf change on a loaded machine may take longer than etcdctl's default 5s.
  const r = await cluster.etcdctl(['--command-timeout=30s', ...args], {
    endpoints: live.map((i) => cluster.members[i].endpoint),
    timeoutMs: 40_000,
  });
  assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Member i's hex ID, found by its peer URL. */
async function memberIdOf(live: number[], i: number): Promise<string> {
  const list = await cluster.memberList(live.map((k) => cluster.members[k].endpoint));
  const m = list.find((x) => x.peerUrls === cluster.peerUrl(i));
  assert.ok(m, `m${i} is in the member list`);
  return m.id;
}

async function leaderAmong(live: number[], not?: number): Promise<number> {
  return waitFor(`a leader among ${live.map((i) => `m${i}`).join(',')}`, async () => {
    for (const i of live) {
      if (i === not) continue;
      const s = await cluster.memberStatus(i, 2000);
      if (s?.isLeader) return i;
    }
    return undefined;
  });
}

test('3 -> 5 -> 3 members under load: learners, promotion, removal of the leader', async () => {
  const live = [0, 1, 2];
  const endpoints = () => live.map((i) => cluster.members[i].endpoint);
  const load = new Workload(endpoints(), { clients: 3 });
  try {
    load.start();
    await load.progress(15, 'before any change');

    for (let n = 0; n < 2; n++) {
      const j = await cluster.addMemberSlot();
      const m = cluster.members[j];
      const add = await ctl(live, [
        'member',
        'add',
        m.name,
        `--peer-urls=${cluster.peerUrl(j)}`,
        '--learner',
      ]);
      const id = /Member +([0-9a-f]+) added to cluster/.exec(add)?.[1];
      assert.ok(id, add);
      const initialCluster = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(add)?.[1];
      assert.ok(initialCluster, add);
      const listed = (await cluster.memberList(endpoints())).find((x) => x.id === id);
      assert.equal(listed?.learner, true, `${m.name} joined as a learner`);

      // Not started yet, so it has nothing: promotion is refused.
      const early = await cluster.etcdctl(['--command-timeout=15s', 'member', 'promote', id], {
        endpoints: endpoints(),
      });
      assert.notEqual(early.code, 0, 'a learner that has not caught up cannot be promoted');
      assert.match(
        early.stderr,
        /etcdserver: can only promote a learner member which is in sync with leader/,
      );

      cluster.startMember(j, 'existing', initialCluster);
      await waitFor(
        `${m.name} to catch up and be promoted`,
        async () => {
          const r = await cluster.etcdctl(['--command-timeout=15s', 'member', 'promote', id], {
            endpoints: endpoints(),
            timeoutMs: 25_000,
          });
          if (r.code === 0) return true;
          if (/in sync with leader/.test(r.stderr)) return false;
          // A promote whose answer was lost (timeout) may have been applied: look.
          const listed = (await cluster.memberList(endpoints())).find((x) => x.id === id);
          if (listed && !listed.learner) return true;
          return false;
        },
        120_000,
        500,
      );
      live.push(j);
      load.setEndpoints(endpoints());
      await load.progress(10, `with ${m.name} promoted`);
    }
    const five = await cluster.memberList(endpoints());
    assert.equal(five.length, 5);
    assert.ok(
      five.every((x) => !x.learner),
      'all five are voters',
    );

    // The same peer URL twice.
    const again = await cluster.etcdctl(['member', 'add', 'twice', `--peer-urls=${cluster.peerUrl(4)}`], {
      endpoints: endpoints(),
    });
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /etcdserver: Peer URLs already exists/);

    // Remove the leader: leadership moves to one of the others.
    const leader = await leaderAmong(live);
    const leaderId = await memberIdOf(live, leader);
    live.splice(live.indexOf(leader), 1);
    load.setEndpoints(endpoints());
    const removed = await ctl(live, ['member', 'remove', leaderId]);
    assert.match(removed, new RegExp(`Member +${leaderId} removed from cluster`));
    const next = await leaderAmong(live, leader);
    assert.notEqual(next, leader);
    // A removed member shuts itself down.
    await waitFor(`the removed m${leader} to exit`, () => !cluster.members[leader].process?.running, 60_000);
    await load.progress(10, 'after removing the leader');

    // Then a follower.
    const follower = live.find((i) => i !== next) as number;
    const followerId = await memberIdOf(live, follower);
    live.splice(live.indexOf(follower), 1);
    load.setEndpoints(endpoints());
    await ctl(live, ['member', 'remove', followerId]);
    await waitFor(
      `the removed m${follower} to exit`,
      () => !cluster.members[follower].process?.running,
      60_000,
    );
    await load.progress(10, 'after removing a follower');
    await load.stop();

    const three = await cluster.memberList(endpoints());
    assert.deepEqual(three.map((x) => x.name).sort(), live.map((i) => cluster.members[i].name).sort());
    for (const i of live) await load.verifyAcknowledged(cluster.members[i].endpoint);
    assertLinearizable(load.history);

    // Every member ends with the same data (and revision).
    const dump = async (i: number) => {
      const r = await cluster.etcdctl(['get', '', '--from-key', '-w', 'json', '--consistency=s'], {
        endpoints: [cluster.members[i].endpoint],
        timeoutMs: 20_000,
      });
      assert.equal(r.code, 0, r.stderr);
      const parsed = JSON.parse(r.stdout) as { header: { revision: number }; kvs?: unknown[] };
      return JSON.stringify({ revision: parsed.header.revision, kvs: parsed.kvs });
    };
    await waitFor('the three members to hold the same data', async () => {
      const dumps = await Promise.all(live.map(dump));
      return dumps.every((d) => d === dumps[0]);
    });
  } finally {
    await load.stop();
    load.close();
  }
});
