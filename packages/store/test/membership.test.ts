// Membership changes with etcdctl member add/remove against real processes:
// a one-member cluster grows to two (the new member starts with
// --initial-cluster-state=existing and catches up), refuses the same peer URL
// twice, and shrinks back.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StoreCluster, waitFor } from '@kubit/testkit';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 1 });
});
after(async () => {
  await cluster?.destroy();
});

test('member add, start with --initial-cluster-state=existing, catch up, duplicate add refused, remove', async () => {
  for (let i = 0; i < 5; i++) assert.equal((await cluster.etcdctl(['put', `before/${i}`, 'v'])).code, 0);
  const slot = await cluster.addMemberSlot();
  const m = cluster.members[slot];
  const peerUrl = `http://127.0.0.1:${m.peerPort}`;
  const add = await cluster.etcdctl(['member', 'add', m.name, `--peer-urls=${peerUrl}`]);
  assert.equal(add.code, 0, add.stderr);
  assert.match(add.stdout, /Member +[0-9a-f]+ added to cluster +[0-9a-f]+/);
  assert.match(add.stdout, /ETCD_INITIAL_CLUSTER_STATE="existing"/);
  const initialCluster = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(add.stdout)?.[1];
  assert.ok(initialCluster);
  cluster.startMember(slot, 'existing', initialCluster);
  await cluster.waitReady();
  // The new member has the data written before it joined.
  await waitFor('the new member to catch up', async () => {
    const r = await cluster.etcdctl(['get', 'before/', '--prefix', '--keys-only', '--consistency=s'], {
      endpoints: [m.endpoint],
    });
    return r.stdout.split('\n').filter((l) => l.startsWith('before/')).length === 5;
  });
  // A member publishes its name through the log once it knows the leader (as
  // etcd's does): until that entry is applied it lists as "unstarted".
  let rows: string[] = [];
  await waitFor('both members listed as started', async () => {
    const list = await cluster.etcdctl(['member', 'list']);
    rows = list.stdout.trim().split('\n');
    return rows.length === 2 && rows.every((r) => r.includes(', started, '));
  });
  // The same peer URL again.
  const again = await cluster.etcdctl(['member', 'add', 'twice', `--peer-urls=${peerUrl}`]);
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /etcdserver: Peer URLs already exists/);
  // Writes through the new member reach the old one.
  assert.equal((await cluster.etcdctl(['put', 'via-new', 'x'], { endpoints: [m.endpoint] })).code, 0);
  const got = await cluster.etcdctl(['get', 'via-new', '--print-value-only'], {
    endpoints: [cluster.members[0].endpoint],
  });
  assert.equal(got.stdout.trim(), 'x');
  // Remove it again.
  const id = rows.find((r) => r.includes(`, ${m.name}, `))?.split(',')[0];
  assert.ok(id);
  const rm = await cluster.etcdctl(['member', 'remove', id], { endpoints: [cluster.members[0].endpoint] });
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, new RegExp(`Member +${id} removed from cluster`));
  await cluster.stopMember(slot);
  const after = await cluster.etcdctl(['member', 'list'], { endpoints: [cluster.members[0].endpoint] });
  assert.equal(after.stdout.trim().split('\n').length, 1);
  assert.equal(
    (await cluster.etcdctl(['put', 'after-remove', 'ok'], { endpoints: [cluster.members[0].endpoint] })).code,
    0,
  );
});
