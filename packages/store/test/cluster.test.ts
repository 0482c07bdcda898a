// A 3-member kubit-store cluster of real processes: kill -9 of the leader
// under concurrent writes and reads (the recorded history must be
// linearizable, no acknowledged write lost), then kill -9 of every member and
// a restart (every acknowledged write still there).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  checkLinearizable,
  HistoryRecorder,
  type KvInput,
  type KvOutput,
  kvModel,
  StoreCluster,
  sleep,
  waitFor,
} from '@kubit/testkit';
import { Etcd3 } from 'etcd3';
import { KvClient } from './kv-client.js';

let cluster: StoreCluster;

before(async () => {
  cluster = await StoreCluster.start({ program: 'kubit-store', size: 3 });
});
after(async () => {
  await cluster?.destroy();
});

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error('client timeout')), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        res(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        rej(e);
      },
    );
  });
}

const acknowledged = new Map<string, string>();

test('kill -9 of the leader under load: a new leader, a linearizable history, no acknowledged write lost', async () => {
  const leader = await cluster.leaderIndex();
  assert.ok(leader >= 0, 'a leader is elected');
  const history = new HistoryRecorder<KvInput, KvOutput>();
  // Each client spreads its calls over every member, dead or alive.
  const clients = Array.from({ length: 3 }, () => new KvClient(cluster.allEndpoints));
  let killed = false;
  let okAfterKill = 0;
  let seq = 0;
  const run = async (c: number) => {
    const client = clients[c];
    for (let i = 0; (!killed || okAfterKill < 45) && i < 400; i++) {
      const key = `lin/${i % 3}`;
      try {
        if (i % 2 === 0) {
          const value = `c${c}-${seq++}`;
          await history.record(
            { op: 'put', key, value },
            async () => {
              await withTimeout(client.put(key, value), 5000);
              return {};
            },
            c,
          );
          acknowledged.set(`ack/${c}/${i}`, value);
          await withTimeout(client.put(`ack/${c}/${i}`, value), 5000).catch(() =>
            acknowledged.delete(`ack/${c}/${i}`),
          );
        } else {
          await history.record(
            { op: 'get', key },
            async () => ({ value: await withTimeout(client.get(key), 5000) }),
            c,
          );
        }
        if (killed) okAfterKill++;
      } catch {
        await sleep(50);
      }
    }
  };
  const runners = clients.map((_, c) => run(c));
  await waitFor('some operations before the kill', () => history.ops.length >= 30, 60_000, 50);
  await cluster.kill(leader);
  killed = true;
  await Promise.all(runners);
  for (const c of clients) c.close();

  const newLeader = await waitFor('a new leader', async () => {
    const i = await cluster.leaderIndex();
    return i >= 0 && i !== leader ? i : undefined;
  });
  assert.notEqual(newLeader, leader);
  const done = history.ops.filter((o) => o.output !== undefined).length;
  assert.ok(done >= 60, `only ${done} operations completed`);
  const result = checkLinearizable(kvModel, history.ops);
  assert.ok(result.ok, `not linearizable: ${JSON.stringify(result.failedPartition?.slice(0, 20))}`);
  // Every acknowledged write is readable from the survivors.
  const client = new Etcd3({ hosts: cluster.endpoints.map((e) => `http://${e}`) });
  try {
    const all = await client.getAll().prefix('ack/').strings();
    for (const [k, v] of acknowledged) assert.equal(all[k], v, `acknowledged ${k}=${v} is missing`);
  } finally {
    client.close();
  }
  // The killed member comes back and catches up.
  cluster.startMember(leader);
  await cluster.waitReady();
  await waitFor('the restarted member to catch up', async () => {
    const out = await cluster.etcdctl(['get', 'ack/', '--prefix', '--keys-only', '--consistency=s'], {
      endpoints: [cluster.members[leader].endpoint],
    });
    return out.stdout.split('\n').filter((l) => l.startsWith('ack/')).length >= acknowledged.size;
  });
});

test('kill -9 of every member, then restart: acknowledged writes are all there', async () => {
  const writer = new KvClient(cluster.endpoints);
  try {
    for (let i = 0; i < 20; i++) {
      await writer.put(`durable/${i}`, `v${i}`);
      acknowledged.set(`durable/${i}`, `v${i}`);
    }
  } finally {
    writer.close();
  }
  await Promise.all(cluster.members.map((_, i) => cluster.kill(i)));
  for (let i = 0; i < cluster.members.length; i++) cluster.startMember(i);
  await cluster.waitReady();
  const client = new Etcd3({ hosts: cluster.endpoints.map((e) => `http://${e}`) });
  try {
    const durable = await client.getAll().prefix('durable/').strings();
    const acks = await client.getAll().prefix('ack/').strings();
    for (const [k, v] of acknowledged)
      assert.equal(durable[k] ?? acks[k], v, `acknowledged ${k}=${v} is missing after restart`);
  } finally {
    client.close();
  }
});
