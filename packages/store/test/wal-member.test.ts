// The WAL inside a real member: a data directory with the raft log in level
// (the format before the WAL) is migrated on first start, and kill -9 /
// restart cycles under a recorded load lose no acknowledged write and keep
// the history linearizable. KUBIT_STORE_SOAK_CYCLES sets the cycles
// (`pnpm soak:store` runs 100).
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createLogger } from '@kubit/daemon';
import { StoreCluster } from '@kubit/testkit';
import { Level } from 'level';
import { encodeHardState } from '../src/node/wire.js';
import { codecs } from '../src/proto.js';
import { Wal } from '../src/wal/wal.js';
import { encodeEntry } from '../src/wire/raft.js';
import { assertLinearizable, Workload } from './fault-kit.js';
import { KvClient } from './kv-client.js';

const CYCLES = Number(process.env.KUBIT_STORE_SOAK_CYCLES ?? 10);
let cluster: StoreCluster;

before(async () => {
  // A small --snapshot-count: compactions (and segment releases) happen during the cycles.
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 3, snapshotCount: 300 });
});
after(async () => {
  await cluster?.destroy();
});

function entryKey(index: number): Buffer {
  const b = Buffer.alloc(9);
  b[0] = 0x65;
  b.writeUInt32BE(Math.floor(index / 2 ** 32), 1);
  b.writeUInt32BE(index >>> 0, 5);
  return b;
}

/** Rewrites member i's data directory into the old format: the raft log as level keys, no WAL. */
async function toLevelFormat(dataDir: string): Promise<number> {
  const walDir = join(dataDir, 'wal');
  const { wal, state } = await Wal.open(walDir);
  await wal.close();
  const db = new Level<Buffer, Buffer>(join(dataDir, 'member'), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await db.open();
  try {
    const batch = db.batch();
    if (state.hardState) batch.put(Buffer.from('h'), encodeHardState(state.hardState));
    batch.put(
      Buffer.from('s'),
      codecs.snapshot.encode({
        index: state.snapshot.index,
        term: state.snapshot.term,
        conf_state: state.snapshot.confState,
        data: new Uint8Array(0),
      }),
    );
    for (const e of state.entries) batch.put(entryKey(e.index), encodeEntry(e));
    await batch.write({ sync: true });
  } finally {
    await db.close();
  }
  rmSync(walDir, { recursive: true, force: true });
  return state.entries.length;
}

test('a data directory with the raft log in level is migrated into the WAL on first start', async () => {
  const writer = new KvClient(cluster.endpoints);
  try {
    for (let i = 0; i < 30; i++) await writer.put(`migrate/${i}`, `v${i}`);
  } finally {
    writer.close();
  }
  const i = ((await cluster.leaderIndex()) + 1) % 3;
  await cluster.stopMember(i);
  const dataDir = cluster.members[i].dataDir;
  const entries = await toLevelFormat(dataDir);
  assert.ok(entries > 30, `the old-format log holds ${entries} entries`);
  cluster.startMember(i);
  await cluster.waitReady();
  assert.ok(existsSync(join(dataDir, 'wal')), 'the WAL was created');
  // Its own copy of the data, read without a leader round trip.
  const out = await cluster.etcdctl(['get', 'migrate/', '--prefix', '--keys-only', '--consistency=s'], {
    endpoints: [cluster.members[i].endpoint],
  });
  assert.equal(out.stdout.split('\n').filter((l) => l.startsWith('migrate/')).length, 30);
  // The old keys are gone from level: the member now keeps its log in the WAL only.
  await cluster.stopMember(i);
  const db = new Level<Buffer, Buffer>(join(dataDir, 'member'), {
    keyEncoding: 'buffer',
    valueEncoding: 'buffer',
  });
  await db.open();
  try {
    assert.equal(await db.get(Buffer.from('h')), undefined);
    assert.equal(await db.get(entryKey(1)), undefined);
  } finally {
    await db.close();
  }
  const { wal, state } = await Wal.open(join(dataDir, 'wal'), {
    logger: createLogger({ name: 't', level: 'silent' }),
  });
  await wal.close();
  assert.ok(state.entries.length >= entries);
  cluster.startMember(i);
  await cluster.waitReady();
});

test(`${CYCLES} kill -9 / restart cycles under load: linearizable, no acknowledged write lost`, async () => {
  const load = new Workload(cluster.allEndpoints, { clients: 4 });
  load.start();
  try {
    await load.progress(20, 'before the first kill');
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // Every third cycle the leader; the others a follower, in turn.
      const leader = await cluster.leaderIndex();
      const victim = cycle % 3 === 0 && leader >= 0 ? leader : cycle % 3;
      await cluster.kill(victim);
      await load.progress(10, `with member ${victim} killed (cycle ${cycle})`);
      cluster.startMember(victim);
      await cluster.waitReady();
      await load.progress(10, `after member ${victim} restarted (cycle ${cycle})`);
    }
  } finally {
    await load.stop();
  }
  try {
    for (const m of cluster.members) await load.verifyAcknowledged(m.endpoint);
    assertLinearizable(load.history);
  } finally {
    load.close();
  }
});
