// Log replication: log matching and conflict resolution, the commit rule
// (Figure 8), batching and flow control, snapshots for lagging followers.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Entry, EntryType, MemoryStorage, newMessage, RawNode } from '../../src/raft/index.js';
import { bytes, Sim } from './sim.js';

function ent(index: number, term: number, data = ''): Entry {
  return { index, term, type: EntryType.Normal, data: bytes(data) };
}

function nodeWithLog(id: string, voters: string[], entries: Entry[], term: number, commit: number) {
  const storage = new MemoryStorage({ voters, learners: [] });
  storage.append(entries);
  storage.setHardState({ term, vote: '', commit });
  const node = new RawNode({ id, storage, electionTick: 10, heartbeatTick: 1, preVote: false });
  return { storage, node };
}

/** Persists a Ready into storage the way the node loop must, and advances. */
function handle(node: RawNode, storage: MemoryStorage) {
  const rd = node.ready();
  if (rd.snapshot) storage.applySnapshot(rd.snapshot);
  if (rd.hardState) storage.setHardState(rd.hardState);
  storage.append(rd.entries);
  node.advance(rd);
  return rd;
}

test('a follower overwrites a conflicting uncommitted suffix with the leader entries', () => {
  const { storage, node } = nodeWithLog(
    '2',
    ['1', '2', '3'],
    [ent(1, 1, 'a'), ent(2, 2, 'b'), ent(3, 2, 'c')],
    2,
    1,
  );
  const app = newMessage('MsgApp', '1', '2', 3);
  app.index = 1;
  app.logTerm = 1;
  app.entries = [ent(2, 3, 'B')];
  app.commit = 1;
  node.step(app);
  const rd = handle(node, storage);
  assert.deepEqual(
    rd.entries.map((e) => [e.index, e.term]),
    [[2, 3]],
  );
  assert.equal(storage.lastIndex(), 2);
  assert.equal(storage.term(2), 3);
  const resp = rd.messages.find((m) => m.type === 'MsgAppResp')!;
  assert.equal(resp.reject, false);
  assert.equal(resp.index, 2);
});

test('a follower rejects a MsgApp whose previous entry does not match, hinting where to retry', () => {
  const { storage, node } = nodeWithLog('2', ['1', '2', '3'], [ent(1, 1), ent(2, 2), ent(3, 2)], 2, 1);
  const app = newMessage('MsgApp', '1', '2', 4);
  app.index = 5;
  app.logTerm = 4;
  app.entries = [ent(6, 4)];
  node.step(app);
  const rd = handle(node, storage);
  const resp = rd.messages[0];
  assert.equal(resp.reject, true);
  assert.equal(resp.index, 5);
  // Our last entry is (3, term 2): the leader can skip straight to it.
  assert.equal(resp.rejectHint, 3);
  assert.equal(resp.logTerm, 2);
  assert.equal(storage.lastIndex(), 3);
});

test('duplicate or stale MsgApps do not truncate a longer matching log', () => {
  const { storage, node } = nodeWithLog('2', ['1', '2', '3'], [ent(1, 1), ent(2, 1), ent(3, 1)], 1, 1);
  const app = newMessage('MsgApp', '1', '2', 1);
  app.index = 1;
  app.logTerm = 1;
  app.entries = [ent(2, 1)];
  node.step(app);
  const rd = handle(node, storage);
  assert.equal(rd.entries.length, 0);
  assert.equal(storage.lastIndex(), 3);
});

test('figure 8: an old-term entry on a majority is not committed until a current-term entry is', () => {
  // S1 holds (2, term 2) from its earlier leadership and is now leader of term 4 among five voters.
  const voters = ['1', '2', '3', '4', '5'];
  const { storage, node } = nodeWithLog('1', voters, [ent(1, 1, 'x'), ent(2, 2, 'old')], 3, 1);
  node.campaign();
  handle(node, storage);
  for (const from of ['2', '3']) node.step(newMessage('MsgVoteResp', from, '1', 4));
  assert.equal(node.status().state, 'leader');
  handle(node, storage); // persists the no-op (3, term 4)
  // S2 and S3 now hold index 2: with S1 that is a majority of five, but index 2 is from term 2.
  for (const from of ['2', '3']) {
    const ack = newMessage('MsgAppResp', from, '1', 4);
    ack.index = 2;
    node.step(ack);
  }
  assert.equal(node.status().commit, 1, 'committed an old-term entry by counting replicas');
  // Once the term-4 entry after it is on a majority, both are committed.
  for (const from of ['2', '3']) {
    const ack = newMessage('MsgAppResp', from, '1', 4);
    ack.index = 3;
    node.step(ack);
  }
  assert.equal(node.status().commit, 3);
});

test('figure 8, continued: that uncommitted old-term entry can be overwritten by a later leader', () => {
  // S2 has (2, term 2) like a majority did; S5 won term 5 with (2, term 3) and overwrites it.
  const { storage, node } = nodeWithLog(
    '2',
    ['1', '2', '3', '4', '5'],
    [ent(1, 1, 'x'), ent(2, 2, 'old')],
    4,
    1,
  );
  const app = newMessage('MsgApp', '5', '2', 5);
  app.index = 1;
  app.logTerm = 1;
  app.entries = [ent(2, 3, 'new'), ent(3, 5, '')];
  app.commit = 3;
  node.step(app);
  const rd = handle(node, storage);
  assert.deepEqual(
    rd.committedEntries.map((e) => [e.index, e.term]),
    [
      [1, 1],
      [2, 3],
      [3, 5],
    ],
  );
  assert.equal(storage.term(2), 3);
});

test('batching: proposals between two Readies go to each follower in one MsgApp', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 1 });
  sim.elect('1');
  for (let i = 0; i < 20; i++) assert.ok(sim.propose('1', `v${i}`));
  sim.processReady('1');
  const apps = sim.queue.filter((m) => m.type === 'MsgApp');
  assert.equal(apps.length, 2);
  for (const m of apps) assert.equal(m.entries.length, 20);
  sim.settle();
  for (const n of sim.live()) assert.ok(sim.hasApplied(n.id, 'v19'));
});

test('maxSizePerMsg splits batches; maxInflightMsgs bounds unacknowledged MsgApps', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 1, maxSizePerMsg: 1, maxInflightMsgs: 3 });
  sim.elect('1');
  for (let i = 0; i < 10; i++) sim.propose('1', `v${i}`);
  sim.processReady('1');
  const to2 = sim.queue.filter((m) => m.type === 'MsgApp' && m.to === '2');
  assert.equal(to2.length, 3, 'the inflight window allows exactly three messages');
  for (const m of to2) assert.equal(m.entries.length, 1);
  sim.settle();
  for (const n of sim.live()) assert.ok(sim.hasApplied(n.id, 'v9'));
});

test('probe state: after a rejection the leader sends one MsgApp at a time until the log matches', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 2, snapshotEvery: 0 });
  sim.elect('1');
  sim.crash('3');
  for (let i = 0; i < 5; i++) sim.propose('1', `v${i}`);
  sim.settle();
  sim.restart('3');
  sim.runUntil(() => sim.hasApplied('3', 'v4'), 50);
  assert.equal(sim.raw('1').status().progress?.['3'].state, 'replicate');
});

test('a follower behind the compacted log receives a snapshot (MsgSnap) and catches up', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 4, snapshotEvery: 5 });
  sim.elect('1');
  sim.crash('3');
  for (let i = 0; i < 30; i++) {
    sim.propose('1', `v${i}`);
    sim.settle();
  }
  assert.ok(sim.node('1').storage.firstIndex() > 2, 'the leader compacted its log');
  sim.restart('3');
  sim.runUntil(() => sim.hasApplied('3', 'v29'), 50);
  assert.ok(sim.node('3').storage.snapshot().meta.index > 0, 'node 3 installed a snapshot');
  assert.deepEqual(sim.node('3').appliedKeys, sim.node('1').appliedKeys);
  // And it keeps replicating normally afterwards.
  sim.propose('1', 'after');
  sim.settle();
  assert.ok(sim.hasApplied('3', 'after'));
});

test('a restarted node does not re-apply entries its state machine already holds', () => {
  const storage = new MemoryStorage({ voters: ['1'], learners: [] });
  storage.append([ent(1, 1, 'a'), ent(2, 1, 'b'), ent(3, 1, 'c')]);
  storage.setHardState({ term: 1, vote: '1', commit: 3 });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1, applied: 2 });
  const rd = node.ready();
  assert.deepEqual(
    rd.committedEntries.map((e) => e.index),
    [3],
  );
});

/**
 * A 3-node cluster led by 1 whose followers took a new entry 'a' and queued
 * their acks (not yet delivered to the leader).
 */
function followersAckingNewEntry(seed: number): Sim {
  const sim = new Sim({ ids: ['1', '2', '3'], seed });
  sim.elect('1');
  sim.settle();
  assert.ok(sim.propose('1', 'a'));
  sim.processReady('1');
  sim.deliverAll((m) => m.type === 'MsgApp');
  sim.processReady('2');
  sim.processReady('3');
  return sim;
}

test('a commit-only MsgApp to a caught-up follower wants no answer; other appends still get one', () => {
  // Both followers take the entry and ack; the leader commits and tells them.
  const sim = followersAckingNewEntry(3);
  sim.deliverAll((m) => m.type === 'MsgAppResp');
  sim.processReady('1');
  const commits = sim.queue.filter((m) => m.type === 'MsgApp' && m.entries.length === 0);
  assert.equal(commits.length, 2);
  for (const m of commits) assert.equal(m.noAck, true, `commit-only MsgApp to ${m.to}`);
  sim.deliverAll((m) => m.type === 'MsgApp');
  sim.processReady('2');
  sim.processReady('3');
  assert.equal(
    sim.queue.filter((m) => m.type === 'MsgAppResp').length,
    0,
    'followers do not answer a commit-only MsgApp',
  );
  sim.settle();
  for (const n of sim.live()) assert.ok(sim.hasApplied(n.id, 'a'));
});

test('a commit-only MsgApp to a follower whose ack is still on its way wants no answer either', () => {
  const sim = followersAckingNewEntry(5);
  // Only follower 2's ack arrives: the leader commits with it, while 3's ack is still queued.
  sim.deliverAll((m) => m.type === 'MsgAppResp' && m.from === '2');
  sim.processReady('1');
  const commit = sim.queue.find((m) => m.type === 'MsgApp' && m.to === '3');
  assert.equal(commit?.entries.length, 0);
  assert.equal(commit?.noAck, true, 'follower 3 acks the entry anyway');
  // 3's ack (for the entry) is the one answer it owes; the commit-only MsgApp adds none.
  sim.deliverAll((m) => m.type === 'MsgApp' && m.to === '3');
  sim.processReady('3');
  const fromThree = sim.queue.filter((m) => m.type === 'MsgAppResp' && m.from === '3');
  assert.equal(fromThree.length, 1);
  sim.settle();
  for (const n of sim.live()) assert.ok(sim.hasApplied(n.id, 'a'));
  assert.equal(sim.raw('1').status().progress?.['3']?.match, sim.raw('1').status().lastIndex);
});

test('a lost ack under a commit-only MsgApp is repaired by the next heartbeat answer', () => {
  const sim = followersAckingNewEntry(6);
  sim.drop((m) => m.type === 'MsgAppResp' && m.from === '3');
  sim.deliverAll((m) => m.type === 'MsgAppResp');
  sim.processReady('1');
  sim.settle();
  const last = sim.raw('1').status().lastIndex;
  assert.ok((sim.raw('1').status().progress?.['3']?.match ?? 0) < last, 'the leader has not heard from 3');
  for (let i = 0; i < 10 && sim.raw('1').status().progress?.['3']?.match !== last; i++) {
    sim.raw('1').tick();
    sim.settle();
  }
  assert.equal(sim.raw('1').status().progress?.['3']?.match, last);
});

test('a follower still rejects a commit-only MsgApp that does not match its log', () => {
  const { storage, node } = nodeWithLog('2', ['1', '2', '3'], [ent(1, 1)], 1, 1);
  /** A commit-only MsgApp from leader 1 in term 1, after the entry at `index` (term 1). */
  const commitOnly = (index: number) => {
    const m = newMessage('MsgApp', '1', '2', 1);
    m.index = index;
    m.logTerm = 1;
    m.commit = index;
    m.noAck = true;
    return m;
  };
  node.step(commitOnly(3));
  const rd = handle(node, storage);
  const resp = rd.messages.find((m) => m.type === 'MsgAppResp');
  assert.equal(resp?.reject, true);
  // A matching one commits and stays silent.
  node.step(commitOnly(1));
  assert.equal(node.hasReady() ? node.ready().messages.length : 0, 0);
});

test('a follower that fell behind still catches up (the leader asks for answers until it knows)', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 4 });
  sim.elect('1');
  sim.settle();
  sim.isolate('3');
  for (let i = 0; i < 3; i++) sim.propose('1', `v${i}`);
  sim.settle();
  sim.heal();
  for (let round = 0; round < 20 && !sim.hasApplied('3', 'v2'); round++) {
    sim.raw('1').tick();
    for (const m of sim.queue) {
      if (m.noAck) assert.equal(m.entries.length, 0, 'only commit-only appends go unanswered');
    }
    sim.settle();
  }
  assert.ok(sim.hasApplied('3', 'v2'));
});
