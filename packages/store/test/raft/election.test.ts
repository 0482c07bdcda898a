// Leader election: randomized timeouts, pre-vote, check-quorum, leader stickiness.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntryType, MemoryStorage, newMessage, RawNode } from '../../src/raft/index.js';
import { Sim } from './sim.js';

test('a cluster elects exactly one leader, which appends an empty entry of its term', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 11 });
  sim.runUntil(() => sim.leader() !== undefined);
  const leader = sim.leader()!;
  const st = sim.raw(leader).status();
  assert.equal(st.state, 'leader');
  for (const n of sim.live()) {
    const s = n.raw!.status();
    assert.equal(s.term, st.term);
    assert.equal(s.lead, leader);
    if (n.id !== leader) assert.equal(s.state, 'follower');
  }
  // The no-op entry is committed and applied everywhere.
  for (const n of sim.live()) assert.deepEqual(n.appliedKeys.slice(3), [`${st.term}/${EntryType.Normal}/`]);
});

test('randomized timeouts: different seeds spread election timeouts', () => {
  const firstCandidates = new Set<string>();
  for (let seed = 1; seed <= 8; seed++) {
    const sim = new Sim({ ids: ['1', '2', '3'], seed, preVote: false });
    sim.runUntil(() => sim.leader() !== undefined);
    firstCandidates.add(sim.leader()!);
  }
  assert.ok(firstCandidates.size > 1, 'the same node won every election: timeouts are not randomized');
});

test('a new leader is elected when the leader crashes; terms only grow', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 5 });
  sim.runUntil(() => sim.leader() !== undefined);
  const first = sim.leader()!;
  const term = sim.raw(first).status().term;
  sim.crash(first);
  sim.runUntil(() => sim.leader() !== undefined);
  const second = sim.leader()!;
  assert.notEqual(second, first);
  assert.ok(sim.raw(second).status().term > term);
  sim.restart(first);
  sim.runUntil(() => sim.raw(first).status().lead === second);
  assert.equal(sim.raw(first).status().state, 'follower');
});

test('pre-vote: a partitioned node rejoining does not disrupt the leader', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 3, preVote: true, checkQuorum: false });
  sim.elect('1');
  const term = sim.raw('1').status().term;
  sim.isolate('3');
  for (let i = 0; i < 100; i++) {
    sim.tickAll();
    sim.settle();
  }
  // Its pre-votes never succeed, so it never bumps its term.
  assert.equal(sim.raw('3').status().term, term);
  assert.equal(sim.raw('3').status().state, 'precandidate');
  sim.heal();
  sim.runUntil(() => sim.raw('3').status().lead === '1', 50);
  assert.equal(sim.leader(), '1');
  assert.equal(sim.raw('1').status().term, term);
});

test('without pre-vote the same rejoin forces a new election (the problem pre-vote solves)', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 3, preVote: false, checkQuorum: false });
  sim.elect('1');
  const term = sim.raw('1').status().term;
  sim.isolate('3');
  for (let i = 0; i < 100; i++) {
    sim.tickAll();
    sim.settle();
  }
  assert.ok(sim.raw('3').status().term > term + 1);
  sim.heal();
  sim.runUntil(() => sim.leader() !== undefined && sim.raw(sim.leader()!).status().term > term, 100);
});

test('check-quorum: a leader cut off from the majority steps down', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 9, checkQuorum: true });
  sim.elect('1');
  sim.isolate('1');
  for (let i = 0; i < 30; i++) {
    sim.tickAll();
    sim.settle();
  }
  assert.equal(sim.raw('1').status().state, 'follower');
  // The majority side elected someone else meanwhile.
  const other = sim.leader();
  assert.ok(other === '2' || other === '3');
});

test('check-quorum lease: followers ignore a vote request while they hear from the leader', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 9, checkQuorum: true, preVote: false });
  sim.elect('1');
  const term = sim.raw('1').status().term;
  // Node 3 campaigns on its own (e.g. it missed heartbeats); 1 and 2 still have a live leader.
  sim.raw('3').campaign();
  sim.settle();
  assert.equal(sim.leader(), '1');
  assert.equal(sim.raw('2').status().term, term);
});

test('a vote is durable before it is announced: a crash before persisting loses the vote and the message', () => {
  const storage = new MemoryStorage({ voters: ['1', '2'], learners: [] });
  const node = new RawNode({ id: '2', storage, electionTick: 10, heartbeatTick: 1 });
  const req = newMessage('MsgVote', '1', '2', 1);
  node.step(req);
  const rd = node.ready();
  assert.equal(rd.hardState?.vote, '1');
  assert.equal(rd.messages[0].type, 'MsgVoteResp');
  assert.equal(rd.messages[0].reject, false);
  // Crash before persisting: storage never saw the vote, and the response was never sent.
  const restarted = new RawNode({ id: '2', storage, electionTick: 10, heartbeatTick: 1 });
  assert.equal(restarted.status().vote, '');
  // After persisting, a restarted node remembers it and refuses a competing candidate of that term.
  storage.setHardState(rd.hardState!);
  const again = new RawNode({ id: '2', storage, electionTick: 10, heartbeatTick: 1 });
  const rival = newMessage('MsgVote', '3', '2', 1);
  again.step(rival);
  const rd2 = again.ready();
  assert.equal(rd2.messages[0].reject, true);
});

test('a candidate with a stale log is refused (election restriction)', () => {
  const storage = new MemoryStorage({ voters: ['1', '2', '3'], learners: [] });
  storage.append([
    { term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array() },
    { term: 2, index: 2, type: EntryType.Normal, data: new Uint8Array() },
  ]);
  storage.setHardState({ term: 2, vote: '', commit: 1 });
  const node = new RawNode({ id: '2', storage, electionTick: 10, heartbeatTick: 1 });
  const stale = newMessage('MsgVote', '1', '2', 3);
  stale.index = 5;
  stale.logTerm = 1; // longer log but older last term
  node.step(stale);
  assert.equal(node.ready().messages[0].reject, true);
});
