// Single-server membership changes: learners, promotion, removal (of the
// leader too), one change at a time, and the errata rule for new leaders.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeConfChange,
  encodeConfChange,
  MemoryStorage,
  newMessage,
  RawNode,
} from '../../src/raft/index.js';
import { Sim } from './sim.js';

test('conf changes round-trip through entry bytes and reject garbage', () => {
  const cc = { type: 'addLearner' as const, nodeId: '42', context: new Uint8Array([1, 2, 3]) };
  assert.deepEqual(decodeConfChange(encodeConfChange(cc)), cc);
  assert.throws(() => decodeConfChange(new TextEncoder().encode('{"type":"nuke","nodeId":"1"}')), /nuke/);
  assert.throws(() => decodeConfChange(new Uint8Array([0xff])), /JSON/);
});

test('a learner receives the log but neither votes nor counts for commitment; promotion makes it a voter', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 21 });
  sim.elect('1');
  sim.addNode('4');
  assert.ok(sim.proposeConfChange('1', { type: 'addLearner', nodeId: '4' }));
  sim.settle();
  assert.deepEqual(sim.raw('1').status().learners, ['4']);
  sim.propose('1', 'x');
  sim.settle();
  assert.ok(sim.hasApplied('4', 'x'), 'the learner gets the log');
  assert.deepEqual(sim.node('4').confState, { voters: ['1', '2', '3'], learners: ['4'] });

  // With two voters down, the learner's copy does not make a quorum.
  sim.crash('2');
  sim.crash('3');
  sim.propose('1', 'y');
  sim.settle();
  assert.equal(sim.hasApplied('1', 'y'), false);
  assert.equal(sim.hasApplied('4', 'y'), false);
  // A learner never campaigns, however long it waits.
  for (let i = 0; i < 50; i++) sim.raw('4').tick();
  sim.settle();
  assert.equal(sim.raw('4').status().state, 'follower');

  sim.restart('2');
  sim.restart('3');
  sim.runUntil(() => sim.leader() !== undefined && sim.hasApplied(sim.leader()!, 'y'), 200);
  const leader = sim.leader()!;
  sim.runUntil(() => sim.proposeConfChange(leader, { type: 'promote', nodeId: '4' }), 100);
  sim.settle();
  assert.deepEqual(sim.raw(leader).status().voters, ['1', '2', '3', '4']);
  assert.deepEqual(sim.raw(leader).status().learners, []);
  assert.equal(sim.raw(leader).status().progress?.['4'].isLearner, false);
});

test('adding a voter grows the quorum: with 4 voters, 2 live are not enough', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 22 });
  sim.elect('1');
  sim.addNode('4');
  assert.ok(sim.proposeConfChange('1', { type: 'addNode', nodeId: '4' }));
  sim.settle();
  assert.deepEqual(sim.raw('4').status().voters, ['1', '2', '3', '4']);
  sim.crash('3');
  sim.crash('4');
  sim.propose('1', 'z');
  sim.settle();
  assert.equal(sim.hasApplied('1', 'z'), false);
  sim.restart('4');
  sim.runUntil(() => sim.hasApplied('1', 'z'), 100);
});

test('only one membership change may be pending at a time', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 23 });
  sim.elect('1');
  sim.addNode('4');
  sim.addNode('5');
  assert.ok(sim.proposeConfChange('1', { type: 'addLearner', nodeId: '4' }));
  assert.equal(sim.proposeConfChange('1', { type: 'addLearner', nodeId: '5' }), false);
  sim.settle();
  assert.ok(sim.proposeConfChange('1', { type: 'addLearner', nodeId: '5' }));
  sim.settle();
  assert.deepEqual(sim.raw('1').status().learners, ['4', '5']);
});

test('errata: a new leader refuses a conf change until it has committed an entry of its term', () => {
  const storage = new MemoryStorage({ voters: ['1', '2', '3'], learners: [] });
  const node = new RawNode({ id: '1', storage, electionTick: 10, heartbeatTick: 1 });
  node.campaign();
  const rd = node.ready();
  storage.setHardState(rd.hardState!);
  node.advance(rd);
  node.step(newMessage('MsgVoteResp', '2', '1', 1));
  assert.equal(node.status().state, 'leader');
  assert.throws(
    () => node.proposeConfChange({ type: 'addNode', nodeId: '4' }),
    /committed an entry in its term/,
  );
  const rd2 = node.ready();
  storage.setHardState(rd2.hardState!);
  storage.append(rd2.entries);
  node.advance(rd2);
  const ack = newMessage('MsgAppResp', '2', '1', 1);
  ack.index = 1;
  node.step(ack);
  assert.equal(node.status().commit, 1);
  node.proposeConfChange({ type: 'addNode', nodeId: '4' });
});

test('removing a follower: it no longer counts, the rest keep going', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 24 });
  sim.elect('1');
  assert.ok(sim.proposeConfChange('1', { type: 'removeNode', nodeId: '3' }));
  sim.settle();
  assert.deepEqual(sim.raw('1').status().voters, ['1', '2']);
  sim.crash('3');
  sim.propose('1', 'after');
  sim.settle();
  assert.ok(sim.hasApplied('2', 'after'));
});

test('removing the leader: it steps down and the others elect a new leader promptly', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 25 });
  sim.elect('1');
  assert.ok(sim.proposeConfChange('1', { type: 'removeNode', nodeId: '1' }));
  sim.settle();
  assert.equal(sim.raw('1').status().state, 'follower');
  // The old leader handed over with MsgTimeoutNow: no election timeout needed.
  const leader = sim.leader();
  assert.ok(leader === '2' || leader === '3', `expected a new leader, got ${leader}`);
  assert.deepEqual(sim.raw(leader!).status().voters, ['2', '3']);
  sim.crash('1');
  sim.propose(leader!, 'next');
  sim.settle();
  assert.ok(sim.hasApplied('2', 'next') && sim.hasApplied('3', 'next'));
});
