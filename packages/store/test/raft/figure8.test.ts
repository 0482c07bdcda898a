// Figure 8 of the Raft paper, played out on a simulated five-node cluster:
// an entry from an old term that reaches a majority is not committed by
// counting replicas, and a later leader may indeed overwrite it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Message } from '../../src/raft/index.js';
import { Sim, text } from './sim.js';

/** What the network does to a message: pass it on (possibly altered) or lose it (undefined). */
type Filter = (m: Message) => Message | undefined;

/** Runs Ready cycles and deliveries through `filter` for a few rounds. */
function pump(sim: Sim, filter: Filter = (m) => m, rounds = 30): void {
  for (let i = 0; i < rounds; i++) {
    for (const n of sim.live()) sim.processReady(n.id);
    sim.queue = sim.queue.map(filter).filter((m): m is Message => m !== undefined);
    sim.deliverAll();
  }
}

function campaignUntilLeader(sim: Sim, id: string, drop?: Filter): void {
  for (let i = 0; i < 5 && sim.raw(id).status().state !== 'leader'; i++) {
    sim.raw(id).campaign();
    pump(sim, drop);
  }
  assert.equal(sim.raw(id).status().state, 'leader', `${id} could not be elected`);
}

test('figure 8: an old-term entry on a majority is not committed, and is later overwritten', () => {
  const sim = new Sim({
    ids: ['1', '2', '3', '4', '5'],
    seed: 8,
    preVote: false,
    checkQuorum: false,
    maxSizePerMsg: 1,
  });

  // (a) S1 leads and replicates X only to S2.
  campaignUntilLeader(sim, '1');
  sim.partition([
    ['1', '2'],
    ['3', '4', '5'],
  ]);
  assert.ok(sim.propose('1', 'X'));
  pump(sim);
  const k = sim.raw('1').status().lastIndex;
  const termX = sim.node('1').storage.term(k);
  assert.equal(text(sim.node('2').storage.entries(k, k + 1)[0].data), 'X');
  assert.ok(sim.raw('1').status().commit < k);
  sim.crash('1');

  // (b) S5 wins the next term with S3 and S4 and appends its own entry at k, but replicates nothing.
  sim.partition([['3', '4', '5'], ['2']]);
  campaignUntilLeader(sim, '5', (m) => (m.from === '5' && m.type === 'MsgApp' ? undefined : m));
  assert.equal(sim.node('5').storage.lastIndex(), k);
  const termS5 = sim.node('5').storage.term(k);
  assert.ok(termS5 > termX);
  sim.crash('5');

  // (c) S1 comes back and wins a later term with S2 and S3; it brings X to S3 (a majority: S1, S2, S3),
  //     while every entry of its own term is lost on the way.
  sim.heal();
  sim.restart('1');
  sim.partition([['1', '2', '3'], ['4']]);
  const dropNewTerm: Filter = (m) =>
    m.from === '1' && m.type === 'MsgApp' ? { ...m, entries: m.entries.filter((e) => e.term <= termX) } : m;
  campaignUntilLeader(sim, '1', dropNewTerm);
  pump(sim, dropNewTerm);
  for (const id of ['1', '2', '3']) assert.equal(sim.node(id).storage.term(k), termX, `S${id} holds X`);
  assert.ok(sim.raw('1').status().commit < k, 'X was committed by counting replicas of an old-term entry');
  assert.ok(!sim.history.has(k), 'nobody applied anything at k');
  sim.crash('1');

  // (d) S5 comes back, wins with S2, S3, S4 (its last term is higher) and overwrites X everywhere.
  sim.heal();
  sim.restart('5');
  campaignUntilLeader(sim, '5');
  sim.settle();
  for (const id of ['2', '3', '4', '5']) assert.equal(sim.node(id).storage.term(k), termS5);
  assert.equal(sim.history.get(k)?.startsWith(`${termS5}/`), true);
  sim.restart('1');
  sim.runUntil(() => sim.node('1').applied >= k + 1, 100);
  assert.equal(sim.node('1').storage.term(k), termS5);
  for (const n of sim.nodes.values()) assert.equal(sim.hasApplied(n.id, 'X'), false);
});
