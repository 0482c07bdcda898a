// The pipelined node loop (kubit-store's): a leader sends its entries to the
// followers before its own write is durable, and takes the next Ready while
// the write is under way (dissertation §10.2.1). Its own copy counts for
// commitment only once persisted() says it is on disk, so an entry is
// committed exactly when a majority holds it durably, with or without the
// leader; a leader that crashes before its write loses nothing committed.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStorage, type Message, RawNode } from '../../src/raft/index.js';
import { bytes, Sim } from './sim.js';

const isApp = (to: string) => (m: Message) => m.type === 'MsgApp' && m.to === to;
const isAppResp = (from: string) => (m: Message) => m.type === 'MsgAppResp' && m.from === from;

/** A 3-member pipelined cluster led by 1, with `x` proposed and its MsgApps on the wire; the leader's write pending. */
function proposed(): { sim: Sim; index: number } {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 7, pipelined: true });
  sim.elect('1');
  assert.ok(sim.propose('1', 'x'));
  assert.ok(sim.processReady('1'));
  const index = sim.raw('1').status().lastIndex;
  assert.equal(sim.node('1').pending.length, 1, "the leader's write is still pending");
  assert.equal(sim.queue.filter((m) => m.type === 'MsgApp').length, 2, 'sent before its own write');
  return { sim, index };
}

/** Follower `id` receives the MsgApp, writes it durably and acks; the ack reaches the leader. */
function followerAcks(sim: Sim, id: string): void {
  sim.deliverAll(isApp(id));
  assert.ok(sim.processReady(id));
  assert.equal(sim.queue.filter(isAppResp(id)).length, 0, 'no ack before the follower write is durable');
  assert.ok(sim.persistOne(id));
  assert.equal(sim.deliverAll(isAppResp(id)), 1);
}

test("one follower's ack plus the leader's pending write is not a majority", () => {
  const { sim, index } = proposed();
  followerAcks(sim, '2');
  assert.ok(sim.raw('1').status().commit < index, 'committed with only one durable copy');
  // The leader's own write completing makes two durable copies: now it commits.
  assert.ok(sim.persistOne('1'));
  assert.equal(sim.raw('1').status().commit, index);
});

test('two follower acks commit without the leader write, and the entry survives the leader crashing', () => {
  const { sim, index } = proposed();
  followerAcks(sim, '2');
  followerAcks(sim, '3');
  assert.equal(sim.raw('1').status().commit, index, 'a majority excluding the leader holds it durably');
  // The leader applies (answers its client) while its own write is still pending.
  assert.ok(sim.processReady('1'));
  assert.ok(sim.hasApplied('1', 'x'));
  assert.ok(sim.node('1').pending.length > 0);
  // It crashes before its write: its disk never had the entry.
  sim.crash('1');
  assert.ok(sim.node('1').storage.lastIndex() < index);
  sim.runUntil(() => sim.leader() !== undefined && sim.leader() !== '1');
  sim.restart('1');
  sim.runUntil(() => ['1', '2', '3'].every((id) => sim.hasApplied(id, 'x')));
  sim.checkLogMatching();
});

test('a leader that crashes before its write with one ack loses an entry nobody was told about', () => {
  const { sim, index } = proposed();
  followerAcks(sim, '2');
  assert.ok(sim.processReady('1') === false || !sim.hasApplied('1', 'x'));
  assert.ok(!sim.hasApplied('1', 'x'), 'applied (answered) without a durable majority');
  sim.crash('1');
  // Node 3 never saw x; whoever leads next, the cluster stays consistent (the Sim checks every commit).
  sim.runUntil(() => sim.leader() !== undefined);
  sim.restart('1');
  sim.runUntil(() => {
    const l = sim.leader();
    return l !== undefined && sim.raw(l).status().commit >= index;
  });
  sim.checkLogMatching();
});

test('a follower applies a commit while its own write of later entries is pending, and acks only after it', () => {
  const { sim } = proposed();
  followerAcks(sim, '2');
  followerAcks(sim, '3');
  // A second entry: the followers take it but their writes stay pending.
  assert.ok(sim.processReady('1'));
  assert.ok(sim.propose('1', 'y'));
  assert.ok(sim.processReady('1'));
  sim.deliverAll(isApp('2'));
  assert.ok(sim.processReady('2'));
  // x is committed (the leader said so along with y): node 2 applies it now.
  assert.ok(sim.hasApplied('2', 'x'));
  assert.equal(sim.queue.filter(isAppResp('2')).length, 0, 'the ack for y waits for its write');
  assert.ok(sim.persistOne('2'));
  assert.ok(sim.queue.filter(isAppResp('2')).length > 0);
});

/** A lone voter that won its election, with its first Ready (the empty entry of its term) accepted but not written. */
function loneLeader(): { node: RawNode; storage: MemoryStorage; index: number; term: number } {
  const storage = new MemoryStorage({ voters: ['1'], learners: [] });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1 });
  node.campaign();
  const rd = node.ready();
  const last = rd.entries[rd.entries.length - 1];
  assert.ok(last, 'a new leader appends an empty entry');
  if (rd.hardState) storage.setHardState(rd.hardState);
  storage.append(rd.entries);
  node.accept(rd);
  return { node, storage, index: last.index, term: last.term };
}

test('a lone voter commits only once its own write is durable', () => {
  const { node, index, term } = loneLeader();
  assert.equal(node.status().state, 'leader');
  assert.ok(node.status().commit < index);
  assert.ok(!node.hasReady() || node.ready().committedEntries.length === 0);
  node.persisted(index, term);
  assert.equal(node.status().commit, index);
});

test('an ack for an entry that is no longer in the log (another term there) counts for nothing', () => {
  const { node, index, term } = loneLeader();
  node.persisted(index, term + 1);
  node.persisted(index + 5, term);
  assert.ok(node.status().commit < index);
  node.persisted(index, term);
  assert.equal(node.status().commit, index);
});

test('advance() still means durable: a serial loop commits as before', () => {
  const storage = new MemoryStorage({ voters: ['1'], learners: [] });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1 });
  node.campaign();
  const rd = node.ready();
  storage.append(rd.entries);
  node.advance(rd);
  node.propose(bytes('x'));
  const rd2 = node.ready();
  storage.append(rd2.entries);
  node.advance(rd2);
  const rd3 = node.ready();
  const text = (es: { data: Uint8Array }[]) => es.map((e) => new TextDecoder().decode(e.data));
  // The empty entry committed as soon as its Ready was advanced; x as soon as its own was.
  assert.deepEqual(text(rd2.committedEntries), ['']);
  assert.deepEqual(text(rd3.committedEntries), ['x']);
});
