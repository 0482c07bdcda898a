// Property tests: random schedules of ticks, deliveries (reordered, lost,
// duplicated), partitions, crashes at every point of the Ready cycle,
// restarts, proposals, reads and membership changes (see schedule.ts). The Sim
// checks election safety and state machine safety on every step; reads are
// checked for linearizability; after each schedule the network heals and the
// cluster must make progress, with all logs matching.

import { test } from 'node:test';
import fc from 'fast-check';
import { params, runScenario, scenario, stats } from './schedule.js';

test.after(() => {
  if (process.env.RAFT_SIM_DEBUG) console.error('reads', stats);
});

test('random schedules keep raft safe and live after healing', () => {
  fc.assert(
    fc.property(scenario, (s) => {
      runScenario(s);
    }),
    params(40, 4242),
  );
});

test('five nodes, lossy network, frequent partitions', () => {
  fc.assert(
    fc.property(scenario, (s) => {
      runScenario({ ...s, size: 5, loss: 0.1, membership: false });
    }),
    params(25, 99),
  );
});

test('random schedules with membership changes and snapshots', () => {
  fc.assert(
    fc.property(scenario, (s) => {
      runScenario({ ...s, membership: true, size: 3, snapshotEvery: 5 });
    }),
    params(40, 777),
  );
});

test('pipelined node loop: Readies overlap their writes, crashes lose pending writes', () => {
  fc.assert(
    fc.property(scenario, (s) => {
      runScenario({ ...s, pipelined: true });
    }),
    params(40, 2024),
  );
});

test('pipelined node loop with membership changes and snapshots', () => {
  fc.assert(
    fc.property(scenario, (s) => {
      runScenario({ ...s, pipelined: true, membership: true, size: 3, snapshotEvery: 5 });
    }),
    params(30, 31337),
  );
});
