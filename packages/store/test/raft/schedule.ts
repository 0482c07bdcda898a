// Random schedules for the property tests: ticks, deliveries of ticks, deliveries (reordered, lost,
// duplicated), partitions, crashes at every point of the Ready cycle,
// restarts, proposals and membership changes. The Sim checks election safety
// and state machine safety on every step; after each schedule the network heals
// and the cluster must make progress, with all logs matching.

import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type CrashPoint, Sim } from './sim.js';

export interface Scenario {
  seed: number;
  size: number;
  steps: number;
  preVote: boolean;
  checkQuorum: boolean;
  loss: number;
  duplication: number;
  snapshotEvery: number;
  maxSizePerMsg: number;
  maxInflightMsgs: number;
  membership: boolean;
  /** Drive the nodes as kubit-store's pipelined node loop does (see SimOptions.pipelined). */
  pipelined?: boolean;
}

export const scenario = fc.record({
  seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  size: fc.constantFrom(1, 3, 3, 5),
  steps: fc.integer({ min: 200, max: 600 }),
  preVote: fc.boolean(),
  checkQuorum: fc.boolean(),
  loss: fc.constantFrom(0, 0.05, 0.2),
  duplication: fc.constantFrom(0, 0.05),
  snapshotEvery: fc.constantFrom(0, 5, 20),
  maxSizePerMsg: fc.constantFrom(1, 100, 1024 * 1024),
  maxInflightMsgs: fc.constantFrom(1, 4, 256),
  membership: fc.boolean(),
});

// RAFT_PROP_RUNS / RAFT_PROP_SEED widen or vary the search when hunting bugs; the defaults keep CI fast.
const RUNS_SCALE = Number(process.env.RAFT_PROP_RUNS ?? '1');
const SEED_OFFSET = Number(process.env.RAFT_PROP_SEED ?? '0');
export function params(numRuns: number, seed: number) {
  return { numRuns: Math.max(1, Math.round(numRuns * RUNS_SCALE)), seed: seed + SEED_OFFSET };
}

const CRASH_POINTS: CrashPoint[] = ['beforePersist', 'afterPersist', 'afterSend', 'afterApply'];

function pick<T>(rng: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rng() * xs.length)];
}

export const stats = { reads: 0, readStates: 0 };

export function runScenario(s: Scenario): void {
  const ids = Array.from({ length: s.size }, (_, i) => String(i + 1));
  const sim = new Sim({
    ids,
    seed: s.seed,
    preVote: s.preVote,
    checkQuorum: s.checkQuorum,
    electionTick: 6,
    heartbeatTick: 2,
    snapshotEvery: s.snapshotEvery,
    maxSizePerMsg: s.maxSizePerMsg,
    maxInflightMsgs: s.maxInflightMsgs,
    pipelined: s.pipelined,
  });
  const rng = sim.rng;
  sim.loss = s.loss;
  sim.duplication = s.duplication;
  let proposals = 0;
  let reads = 0;
  // Linearizability of ReadIndex: a read must observe everything committed before it was issued.
  const readFloor = new Map<string, number>();
  sim.onReadState = (node, rs) => {
    const ctx = new TextDecoder().decode(rs.requestCtx);
    const floor = readFloor.get(ctx);
    assert.ok(floor !== undefined, `unknown read ${ctx}`);
    assert.ok(
      rs.index >= floor,
      `read ${ctx} on ${node.id} at ${rs.index}, but ${floor} was committed before it`,
    );
    served++;
  };
  let served = 0;
  let nextId = s.size + 1;

  for (let step = 0; step < s.steps; step++) {
    const all = [...sim.nodes.keys()];
    const r = rng();
    if (r < 0.3) {
      for (let k = 0; k < 4 && sim.queue.length > 0; k++) sim.deliver(Math.floor(rng() * sim.queue.length));
    } else if (r < 0.45) {
      const n = pick(rng, all);
      const crash = rng() < 0.02 ? pick(rng, CRASH_POINTS) : 'none';
      // Pipelined: writes complete at their own pace, between Readies.
      if (s.pipelined && rng() < 0.5) sim.persistOne(n);
      else sim.processReady(n, crash);
    } else if (r < 0.6) {
      for (const n of all) sim.processReady(n);
    } else if (r < 0.72) {
      sim.tickAll();
    } else if (r < 0.75) {
      sim.nodes.get(pick(rng, all))!.raw?.tick();
    } else if (r < 0.87) {
      const n = sim.nodes.get(pick(rng, all))!;
      if (n.up && rng() < 0.8) sim.propose(n.id, `p${proposals++}`);
      else if (n.up) {
        const ctx = `r${reads++}`;
        readFloor.set(ctx, sim.maxCommit());
        try {
          n.raw!.readIndex(new TextEncoder().encode(ctx));
        } catch {
          // no leader known: the read is refused, which is fine
        }
      }
    } else if (r < 0.88) {
      const n = pick(rng, all);
      if (!sim.removed.has(n)) sim.crash(n);
    } else if (r < 0.92) {
      // Crashed nodes come back soon, so that the cluster spends most of its time able to make progress.
      for (const n of all) if (!sim.nodes.get(n)!.up && rng() < 0.5) sim.restart(n);
    } else if (r < 0.94) {
      // Random split into two groups, or heal.
      if (rng() < 0.5) sim.heal();
      else {
        const a: string[] = [];
        const b: string[] = [];
        for (const id of all) (rng() < 0.5 ? a : b).push(id);
        sim.partition([a, b]);
      }
    } else if (r < 0.96 && s.membership) {
      const leader = sim.leader();
      if (leader !== undefined) {
        const st = sim.raw(leader).status();
        const kind = rng();
        if (kind < 0.3 && st.voters.length + st.learners.length < 6) {
          // Never reuse an ID: a removed member coming back with old state is unsafe (as in etcd).
          const id = String(nextId++);
          sim.addNode(id);
          sim.proposeConfChange(leader, { type: rng() < 0.5 ? 'addNode' : 'addLearner', nodeId: id });
        } else if (kind < 0.5 && st.learners.length > 0) {
          sim.proposeConfChange(leader, { type: 'promote', nodeId: pick(rng, st.learners) });
        } else if (kind < 0.7 && st.voters.length > 2) {
          sim.proposeConfChange(leader, { type: 'removeNode', nodeId: pick(rng, st.voters) });
        }
      }
    } else if (r < 0.975) {
      // Operator and transport actions: transfer leadership, force a campaign, report a peer unreachable.
      const n = sim.nodes.get(pick(rng, all))!;
      const target = pick(rng, all);
      const what = rng();
      try {
        if (what < 0.4) n.raw?.transferLeader(target);
        else if (what < 0.6) n.raw?.campaign();
        else if (target !== n.id) n.raw?.reportUnreachable(target);
      } catch {
        // no leader known to forward the transfer to
      }
    } else {
      for (let k = 0; k < 4 && sim.queue.length > 0; k++) sim.deliver(0);
    }
  }

  // Heal: reliable network, everyone (but removed members) back up.
  sim.heal();
  sim.loss = 0;
  sim.duplication = 0;
  for (const n of sim.nodes.values()) {
    if (sim.removed.has(n.id)) sim.crash(n.id);
    else sim.restart(n.id);
  }
  const dump = () =>
    [...sim.nodes.values()]
      .map((n) => {
        const st = n.raw?.status();
        return st
          ? `${n.id}:${st.state}/t${st.term}/c${st.commit}/a${n.applied}/last${st.lastIndex}/v[${st.voters}]/l[${st.learners}]`
          : `${n.id}:down`;
      })
      .join(' ');
  try {
    sim.runUntil(() => sim.leader() !== undefined, 1000);
    // Propose a marker; if leadership changes before it is applied, propose another in the new term.
    let marker = '';
    let markerTerm = -1;
    sim.runUntil(() => {
      const leader = sim.leader();
      if (leader === undefined) return false;
      const st = sim.raw(leader).status();
      if (marker === '' || (st.term !== markerTerm && !sim.hasApplied(leader, marker))) {
        if (sim.propose(leader, `final-${st.term}`)) {
          marker = `final-${st.term}`;
          markerTerm = st.term;
        }
        return false;
      }
      return [...st.voters, ...st.learners].every(
        (id) => sim.nodes.get(id)?.up && sim.hasApplied(id, marker),
      );
    }, 1000);
  } catch (err) {
    throw new Error(`${(err as Error).message}; cluster: ${dump()}`);
  }
  sim.checkLogMatching();
  stats.reads += readFloor.size;
  stats.readStates += served;
  if (process.env.RAFT_SIM_DEBUG)
    console.error(
      JSON.stringify({ applied: sim.node(sim.leader()!).applied, leaders: sim.leaders.size, ...sim.stats }),
    );
  // All members hold the same applied sequence up to the shortest.
  const leader = sim.leader()!;
  const members = [...sim.raw(leader).status().voters, ...sim.raw(leader).status().learners];
  const ref = sim.node(leader).appliedKeys;
  for (const id of members) {
    const keys = sim.node(id).appliedKeys;
    assert.deepEqual(keys, ref.slice(0, keys.length), `node ${id} applied a different sequence`);
  }
}
