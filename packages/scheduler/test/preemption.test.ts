// Preemption: victim selection and node choice (preemption/victims.ts) as tables,
// then the whole PostFilter on an in-memory cluster: the profile's real filters
// judge a node without its victims, the scheduler evicts them, nominates the node
// and binds the preemptor once the victims' deletes come back.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildFramework } from '../src/framework/profile.js';
import { newPodInfo, type PodInfo } from '../src/pod-info.js';
import {
  type DisruptionBudget,
  type NodeVictims,
  pickNode,
  selectVictimsOnNode,
  splitByBudgetViolation,
} from '../src/preemption/victims.js';
import { Scheduler } from '../src/scheduler.js';
import type { Pod, PodCondition } from '../src/types.js';
import { FakeApi } from './fake-api.js';
import { antiAffinityByHostname, node, onNode, pod } from './fixtures.js';

interface P {
  name: string;
  priority: number;
  cpu: number;
  start?: string;
  labels?: Record<string, string>;
}

function info(p: P): PodInfo {
  const base = pod(p.name, { cpu: `${p.cpu}m`, priority: p.priority }, { labels: p.labels });
  return newPodInfo(p.start ? { ...base, status: { startTime: p.start } } : base);
}

/** A node of `capacity` millicores: the preemptor fits when what is left leaves it room. */
function fitsBy(capacity: number, pods: PodInfo[], preemptor: PodInfo) {
  return (without: ReadonlySet<string>) => {
    const used = pods.filter((p) => !without.has(p.key)).reduce((s, p) => s + p.requests.milliCpu, 0);
    return used + preemptor.requests.milliCpu <= capacity;
  };
}

const budget = (
  selector: Record<string, string>,
  allowed: number,
  disrupted: string[] = [],
): DisruptionBudget => ({
  namespace: 'default',
  selector: { matchLabels: selector },
  disruptionsAllowed: allowed,
  disruptedPods: new Set(disrupted),
});

describe('victims on one node', () => {
  const cases: {
    name: string;
    capacity: number;
    preemptor: P;
    pods: P[];
    budgets?: DisruptionBudget[];
    victims: string[] | undefined;
    violations?: number;
  }[] = [
    {
      name: 'the lowest priority goes first, the others are reprieved',
      capacity: 3000,
      preemptor: { name: 'hi', priority: 100, cpu: 1000 },
      pods: [
        { name: 'a', priority: 10, cpu: 1000 },
        { name: 'b', priority: 1, cpu: 1000 },
        { name: 'c', priority: 5, cpu: 1000 },
      ],
      victims: ['b'],
    },
    {
      name: 'as many as it takes, most important first',
      capacity: 3000,
      preemptor: { name: 'hi', priority: 100, cpu: 2500 },
      pods: [
        { name: 'a', priority: 10, cpu: 1000 },
        { name: 'b', priority: 1, cpu: 1000 },
        { name: 'c', priority: 5, cpu: 1000 },
      ],
      victims: ['a', 'c', 'b'],
    },
    {
      name: 'pods of equal or higher priority are never victims',
      capacity: 2000,
      preemptor: { name: 'hi', priority: 10, cpu: 1500 },
      pods: [
        { name: 'same', priority: 10, cpu: 1000 },
        { name: 'low', priority: 1, cpu: 1000 },
      ],
      victims: undefined,
    },
    {
      name: 'a node with nothing lower is no candidate',
      capacity: 1000,
      preemptor: { name: 'hi', priority: 10, cpu: 500 },
      pods: [{ name: 'top', priority: 100, cpu: 1000 }],
      victims: undefined,
    },
    {
      name: 'among equals, the newest goes (the older one is more important)',
      capacity: 2000,
      preemptor: { name: 'hi', priority: 100, cpu: 1000 },
      pods: [
        { name: 'old', priority: 1, cpu: 1000, start: '2026-01-01T00:00:00Z' },
        { name: 'new', priority: 1, cpu: 1000, start: '2026-06-01T00:00:00Z' },
      ],
      victims: ['new'],
    },
    {
      name: 'a pod its budget protects is kept when another will do',
      capacity: 2000,
      preemptor: { name: 'hi', priority: 100, cpu: 1000 },
      pods: [
        { name: 'guarded', priority: 1, cpu: 1000, labels: { app: 'db' } },
        { name: 'free', priority: 5, cpu: 1000 },
      ],
      budgets: [budget({ app: 'db' }, 0)],
      victims: ['free'],
      violations: 0,
    },
    {
      name: 'a budget is broken only when nothing else makes room, and counted',
      capacity: 2000,
      preemptor: { name: 'hi', priority: 100, cpu: 2000 },
      pods: [
        { name: 'guarded', priority: 1, cpu: 1000, labels: { app: 'db' } },
        { name: 'free', priority: 5, cpu: 1000 },
      ],
      budgets: [budget({ app: 'db' }, 0)],
      victims: ['free', 'guarded'],
      violations: 1,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const pre = info(c.preemptor);
      const pods = c.pods.map(info);
      const r = selectVictimsOnNode('n', pre, pods, c.budgets ?? [], fitsBy(c.capacity, pods, pre));
      assert.deepEqual(
        r?.victims.map((v) => v.name),
        c.victims,
      );
      if (c.violations !== undefined) assert.equal(r?.pdbViolations, c.violations);
    });
  }
});

describe('budget violations', () => {
  it('counts each removal against the budget; already-disrupted pods and other namespaces are free', () => {
    const pods = ['a', 'b', 'c'].map((n) => info({ name: n, priority: 0, cpu: 1, labels: { app: 'x' } }));
    const r = splitByBudgetViolation(pods, [budget({ app: 'x' }, 1, ['b'])]);
    assert.deepEqual(
      r.nonViolating.map((p) => p.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      r.violating.map((p) => p.name),
      ['c'],
    );
    const elsewhere = splitByBudgetViolation(pods, [{ ...budget({ app: 'x' }, 0), namespace: 'other' }]);
    assert.equal(elsewhere.violating.length, 0);
    const empty = splitByBudgetViolation(pods, [{ ...budget({}, 0) }]);
    assert.equal(empty.violating.length, 0, 'an empty selector matches nothing');
  });
});

describe('choosing the node', () => {
  const cand = (node: string, victims: P[], pdbViolations = 0): NodeVictims => ({
    node,
    victims: victims.map(info),
    pdbViolations,
  });
  const cases: { name: string; candidates: NodeVictims[]; want: string }[] = [
    {
      name: 'fewest budget violations first',
      candidates: [
        cand('a', [{ name: 'x', priority: 1, cpu: 1 }], 1),
        cand('b', [{ name: 'y', priority: 9, cpu: 1 }]),
      ],
      want: 'b',
    },
    {
      name: 'then the lowest highest-priority victim',
      candidates: [
        cand('a', [{ name: 'x', priority: 9, cpu: 1 }]),
        cand('b', [
          { name: 'y', priority: 5, cpu: 1 },
          { name: 'z', priority: 5, cpu: 1 },
        ]),
      ],
      want: 'b',
    },
    {
      name: 'then the lowest sum of priorities',
      candidates: [
        cand('a', [
          { name: 'x', priority: 5, cpu: 1 },
          { name: 'y', priority: 4, cpu: 1 },
        ]),
        cand('b', [
          { name: 'z', priority: 5, cpu: 1 },
          { name: 'w', priority: 1, cpu: 1 },
        ]),
      ],
      want: 'b',
    },
    {
      name: 'then the fewest victims (negative priorities still cost)',
      candidates: [
        cand('a', [
          { name: 'x', priority: -5, cpu: 1 },
          { name: 'y', priority: -5, cpu: 1 },
        ]),
        cand('b', [{ name: 'z', priority: -5, cpu: 1 }]),
      ],
      want: 'b',
    },
    {
      name: 'then the latest start of the most important victims',
      candidates: [
        cand('a', [{ name: 'x', priority: 5, cpu: 1, start: '2026-01-01T00:00:00Z' }]),
        cand('b', [{ name: 'y', priority: 5, cpu: 1, start: '2026-03-01T00:00:00Z' }]),
      ],
      want: 'b',
    },
    {
      name: 'then the first',
      candidates: [
        cand('a', [{ name: 'x', priority: 5, cpu: 1 }]),
        cand('b', [{ name: 'y', priority: 5, cpu: 1 }]),
      ],
      want: 'a',
    },
  ];
  for (const c of cases) it(c.name, () => assert.equal(pickNode(c.candidates)?.node, c.want));
  it('no candidates, no node', () => assert.equal(pickNode([]), undefined));
});

class PreemptingApi extends FakeApi {
  readonly preempted: { victim: string; preemptor: string; node: string }[] = [];
  readonly nominations = new Map<string, string>();
  onPreempted: ((victim: Pod) => void) | null = null;

  override async updatePodCondition(p: Pod, c: PodCondition, nominated?: string): Promise<void> {
    if (nominated) this.nominations.set(`${p.metadata?.namespace}/${p.metadata?.name}`, nominated);
    await super.updatePodCondition(p, c);
  }

  async preemptVictim(victim: Pod, preemptor: Pod, node: string): Promise<void> {
    this.preempted.push({
      victim: victim.metadata?.name ?? '',
      preemptor: preemptor.metadata?.name ?? '',
      node,
    });
    this.onPreempted?.(victim);
  }
}

describe('the PostFilter in the scheduler', () => {
  function setup() {
    const api = new PreemptingApi();
    let t = 1_000_000;
    const s = new Scheduler({ api, frameworks: [buildFramework()], now: () => t, random: () => 0.5 });
    api.onBound = (p, n) => s.onPodUpdate(p, onNode(p, n));
    s.onNodeAdd(node('full', { cpu: '2' }));
    s.onNodeAdd(node('tainted', { cpu: '8', taints: [{ key: 'k', effect: 'NoSchedule' }] }));
    const run = async () => {
      s.drainActive();
      await s.waitForBindings();
    };
    const afterBackoff = () => {
      t += 10_000;
      s.queue.flushBackoffCompleted();
    };
    return { api, s, run, afterBackoff };
  }

  it('evicts the low pod on the full node, nominates it, and binds the preemptor when the room is free', async () => {
    const { api, s, run, afterBackoff } = setup();
    const low = onNode(pod('low', { cpu: '1500m', priority: 1 }), 'full');
    const keep = onNode(pod('keep', { cpu: '500m', priority: 1000 }), 'full');
    s.onPodAdd(low);
    s.onPodAdd(keep);
    s.onPodAdd(pod('high', { cpu: '1', priority: 100 }));
    await run();
    assert.deepEqual(api.preempted, [{ victim: 'low', preemptor: 'high', node: 'full' }]);
    assert.equal(api.nominations.get('default/high'), 'full');
    assert.equal(api.bindings.has('default/high'), false);
    // Tried again while its victim is still terminating (a new node wakes it), the
    // preemptor waits for it rather than preempting again.
    s.onPodUpdate(low, { ...low, metadata: { ...low.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
    s.onNodeAdd(node('tiny', { cpu: '100m' }));
    afterBackoff();
    await run();
    assert.equal(api.preempted.length, 1);
    assert.match(
      String(api.conditions.get('default/high')?.message),
      / preemption: not eligible due to a terminating pod on the nominated node\.$/,
    );
    // The victim's delete wakes the preemptor (into its backoff). A lower-priority pod
    // tried meanwhile would fit in the freed room, but the room is the nominated pod's.
    s.onPodDelete(low);
    s.onPodAdd(pod('sneaky', { cpu: '1', priority: 50 }));
    await run();
    assert.equal(api.bindings.has('default/sneaky'), false);
    assert.match(
      String(api.conditions.get('default/sneaky')?.message),
      /^0\/3 nodes are available: 1 node\(s\) had untolerated taint \{k: \}, 2 Insufficient cpu\./,
    );
    afterBackoff();
    await run();
    assert.equal(api.bindings.get('default/high'), 'full');
  });

  it('preempts the pods its anti-affinity, or theirs, keeps it from', async () => {
    const { api, s, run } = setup();
    // The incoming pod's anti-affinity toward app=low, then a pod whose own anti-affinity repels app=vip.
    s.onPodAdd(onNode(pod('low', { cpu: '100m', priority: 1 }, { labels: { app: 'low' } }), 'full'));
    s.onPodAdd(pod('picky', { cpu: '100m', priority: 100, affinity: antiAffinityByHostname('low') }));
    await run();
    assert.deepEqual(api.preempted, [{ victim: 'low', preemptor: 'picky', node: 'full' }]);
    const { api: api2, s: s2, run: run2 } = setup();
    s2.onPodAdd(
      onNode(pod('grumpy', { cpu: '100m', priority: 1, affinity: antiAffinityByHostname('vip') }), 'full'),
    );
    s2.onPodAdd(onNode(pod('friend', { cpu: '100m', priority: 1 }), 'full'));
    s2.onPodAdd(pod('vip', { cpu: '100m', priority: 100 }, { labels: { app: 'vip' } }));
    await run2();
    assert.deepEqual(api2.preempted, [{ victim: 'grumpy', preemptor: 'vip', node: 'full' }]);
  });

  it('preempts the pods that break its topology spread', async () => {
    const api = new PreemptingApi();
    const s = new Scheduler({ api, frameworks: [buildFramework()], random: () => 0.5 });
    s.onNodeAdd(node('a', { cpu: '4' }));
    s.onNodeAdd(node('b', { cpu: '1' }));
    const web = { labels: { app: 'web' } };
    s.onPodAdd(onNode(pod('web-1', { cpu: '100m', priority: 1 }, web), 'a'));
    s.onPodAdd(onNode(pod('web-2', { cpu: '100m', priority: 1 }, web), 'a'));
    s.onPodAdd(onNode(pod('boss', { cpu: '1', priority: 1000 }), 'b'));
    const spread = [
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'DoNotSchedule' as const,
        labelSelector: { matchLabels: { app: 'web' } },
      },
    ];
    s.onPodAdd(pod('web-new', { cpu: '100m', priority: 100, topologySpreadConstraints: spread }, web));
    s.drainActive();
    await s.waitForBindings();
    assert.deepEqual(api.preempted.map((p) => p.victim).sort(), ['web-1', 'web-2']);
  });

  it('does not preempt for a pod whose policy is Never, nor for a node no eviction can fix', async () => {
    const { api, s, run } = setup();
    s.onPodAdd(onNode(pod('low', { cpu: '2', priority: 1 }), 'full'));
    s.onPodAdd(pod('calm', { cpu: '1', priority: 100, preemptionPolicy: 'Never' }));
    s.onPodAdd(pod('nowhere', { cpu: '4', priority: 100 }));
    await run();
    assert.deepEqual(api.preempted, []);
    assert.equal(
      api.conditions.get('default/calm')?.message,
      '0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {k: }. preemption: not eligible due to preemptionPolicy=Never.',
    );
    assert.equal(
      api.conditions.get('default/nowhere')?.message,
      '0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {k: }. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.',
    );
  });
});
