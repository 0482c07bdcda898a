// Peer traffic over mutual TLS (--peer-cert-file, --peer-key-file,
// --peer-trusted-ca-file, --peer-client-cert-auth) with certificates from
// scripts/pki: three members replicate; a fourth whose peer certificate is
// signed by another CA is added with etcdctl but cannot join (its peers
// refuse it and it refuses them), while the cluster keeps serving.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generatePki, type PeerTls, StoreCluster, sleep, tempDir, waitFor } from '@kubit/testkit';

let dir: { path: string; cleanup: () => Promise<void> };
let cluster: StoreCluster | undefined;
let rogueTls: PeerTls;

before(async () => {
  dir = await tempDir('kubit-peer-pki-');
  const good = await generatePki(join(dir.path, 'good'));
  const other = await generatePki(join(dir.path, 'other'));
  rogueTls = { cert: other.store.cert, key: other.store.key, ca: other.caFile };
  cluster = await StoreCluster.start({
    program: 'kubit-store',
    size: 3,
    peerTls: { cert: good.store.cert, key: good.store.key, ca: good.caFile, clientCertAuth: true },
  });
});
after(async () => {
  await cluster?.destroy();
  await dir?.cleanup();
});

async function get(i: number, key: string, consistency: 'l' | 's' = 'l'): Promise<string> {
  assert.ok(cluster);
  const r = await cluster.etcdctl(['get', key, '--print-value-only', `--consistency=${consistency}`], {
    endpoints: [cluster.members[i].endpoint],
  });
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
}

test('three members replicate over mutual peer TLS', async () => {
  assert.ok(cluster);
  assert.match(cluster.peerUrl(0), /^https:/);
  const put = await cluster.etcdctl(['put', 'tls/peer', 'replicated'], {
    endpoints: [cluster.members[0].endpoint],
  });
  assert.equal(put.code, 0, put.stderr);
  for (const i of [1, 2]) assert.equal(await get(i, 'tls/peer'), 'replicated');
  const list = await cluster.memberList();
  assert.equal(list.length, 3);
  assert.ok(list.every((m) => m.peerUrls.startsWith('https://')));
});

test('a member with a peer certificate from another CA cannot join; the cluster keeps serving', async () => {
  assert.ok(cluster);
  const c = cluster;
  const j = await c.addMemberSlot({ peerTls: { ...rogueTls, clientCertAuth: true } });
  const rogue = c.members[j];
  const add = await c.etcdctl(['member', 'add', rogue.name, `--peer-urls=${c.peerUrl(j)}`], {
    endpoints: [c.members[0].endpoint],
  });
  assert.equal(add.code, 0, add.stderr);
  const id = /Member +([0-9a-f]+) added to cluster/.exec(add.stdout)?.[1];
  const initialCluster = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(add.stdout)?.[1];
  assert.ok(id && initialCluster, add.stdout);
  c.startMember(j, 'existing', initialCluster);
  // The rogue serves its client port, but never hears from the cluster.
  await waitFor(
    `${rogue.name} to serve clients`,
    async () => (await c.memberStatus(j, 2000)) !== undefined,
    60_000,
  );

  // Three of four voters are a quorum: writes still commit.
  for (let i = 0; i < 5; i++) {
    const put = await c.etcdctl(['put', `tls/during/${i}`, 'ok'], { endpoints: [c.members[i % 3].endpoint] });
    assert.equal(put.code, 0, put.stderr);
  }
  await sleep(3000);
  const status = await c.memberStatus(j);
  assert.ok(status, 'the rogue member answers status');
  assert.equal(status.leader, '0', 'the rogue member never learns of a leader');
  assert.equal(await get(j, 'tls/during/4', 's'), '', 'the rogue member received no data');
  const row = (await c.memberList([c.members[0].endpoint])).find((m) => m.id === id);
  assert.ok(row, 'the rogue is listed');
  assert.equal(row.name, '', 'the rogue never published its name (it never joined)');
  assert.equal(await get(2, 'tls/during/4'), 'ok');

  // Take it out again; the cluster goes on.
  const rm = await c.etcdctl(['member', 'remove', id], { endpoints: [c.members[0].endpoint] });
  assert.equal(rm.code, 0, rm.stderr);
  await c.stopMember(j);
  const put = await c.etcdctl(['put', 'tls/after', 'ok'], { endpoints: [c.members[1].endpoint] });
  assert.equal(put.code, 0, put.stderr);
  assert.equal(await get(2, 'tls/after'), 'ok');
});
