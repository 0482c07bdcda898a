// Leadership transfer and ReadIndex.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProposalDroppedError } from '../../src/raft/index.js';
import { bytes, Sim, text } from './sim.js';

test('leadership transfer to an up-to-date follower', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 31 });
  sim.elect('1');
  sim.propose('1', 'a');
  sim.settle();
  sim.raw('1').transferLeader('2');
  sim.settle();
  assert.equal(sim.leader(), '2');
  assert.equal(sim.raw('1').status().state, 'follower');
  assert.ok(sim.propose('2', 'b'));
  sim.settle();
  assert.ok(sim.hasApplied('3', 'b'));
});

test('leadership transfer to a lagging follower first catches it up', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 32 });
  sim.elect('1');
  sim.crash('3');
  for (let i = 0; i < 5; i++) sim.propose('1', `v${i}`);
  sim.settle();
  sim.restart('3');
  sim.raw('1').transferLeader('3');
  sim.settle();
  assert.equal(sim.leader(), '3');
  assert.ok(sim.hasApplied('3', 'v4'));
});

test('a follower forwards a transfer request to the leader', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 33 });
  sim.elect('1');
  sim.raw('3').transferLeader('3');
  sim.settle();
  assert.equal(sim.leader(), '3');
});

test('during a transfer proposals are refused; the transfer aborts after an election timeout', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 34, electionTick: 10, checkQuorum: false });
  sim.elect('1');
  sim.crash('2');
  sim.raw('1').transferLeader('2');
  sim.settle();
  assert.equal(sim.raw('1').status().leadTransferee, '2');
  assert.throws(() => sim.raw('1').propose(bytes('x')), ProposalDroppedError);
  for (let i = 0; i < 10; i++) {
    sim.raw('1').tick();
    sim.settle();
  }
  assert.equal(sim.raw('1').status().leadTransferee, '');
  assert.equal(sim.leader(), '1');
  assert.ok(sim.propose('1', 'y'));
  sim.settle();
  assert.ok(sim.hasApplied('3', 'y'));
});

test('read index on the leader: confirmed by a heartbeat round, at the commit index', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 41 });
  sim.elect('1');
  sim.propose('1', 'a');
  sim.settle();
  const commit = sim.raw('1').status().commit;
  sim.raw('1').readIndex(bytes('r1'));
  sim.raw('1').readIndex(bytes('r2'));
  sim.processReady('1');
  assert.equal(sim.node('1').readStates.length, 0, 'no read state before a quorum confirmed leadership');
  const beats = sim.queue.filter((m) => m.type === 'MsgHeartbeat');
  assert.equal(beats.length, 2, 'one heartbeat round confirms both reads');
  sim.settle();
  assert.deepEqual(
    sim.node('1').readStates.map((r) => [r.index, text(r.requestCtx)]),
    [
      [commit, 'r1'],
      [commit, 'r2'],
    ],
  );
});

test('read index is not served by a leader cut off from the quorum', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 42, checkQuorum: false });
  sim.elect('1');
  sim.isolate('1');
  sim.raw('1').readIndex(bytes('r'));
  sim.settle();
  assert.equal(sim.node('1').readStates.length, 0);
});

test('read index from a follower is forwarded to the leader and answered', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 43 });
  sim.elect('1');
  sim.propose('1', 'a');
  sim.settle();
  sim.raw('2').readIndex(bytes('f'));
  sim.settle();
  const rs = sim.node('2').readStates;
  assert.equal(rs.length, 1);
  assert.equal(text(rs[0].requestCtx), 'f');
  assert.equal(rs[0].index, sim.raw('1').status().commit);
});

test('read index without a known leader throws ProposalDroppedError', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 44 });
  assert.throws(() => sim.raw('1').readIndex(bytes('x')), ProposalDroppedError);
  assert.throws(() => sim.raw('1').propose(bytes('x')), ProposalDroppedError);
});

test('a new leader defers reads until it commits an entry of its term', () => {
  const sim = new Sim({ ids: ['1', '2', '3'], seed: 45 });
  sim.raw('1').campaign();
  // Deliver only what elects node 1, not the replication of its no-op.
  for (let i = 0; i < 10 && sim.leader() !== '1'; i++) {
    for (const n of sim.live()) sim.processReady(n.id);
    sim.deliverAll((m) => m.type !== 'MsgApp');
  }
  assert.equal(sim.leader(), '1');
  sim.raw('1').readIndex(bytes('early'));
  for (const n of sim.live()) sim.processReady(n.id);
  sim.deliverAll((m) => m.type !== 'MsgApp');
  for (const n of sim.live()) sim.processReady(n.id);
  sim.deliverAll((m) => m.type !== 'MsgApp');
  assert.equal(sim.node('1').readStates.length, 0);
  sim.settle();
  assert.equal(sim.node('1').readStates.length, 1);
  assert.ok(sim.node('1').readStates[0].index >= 1);
});
