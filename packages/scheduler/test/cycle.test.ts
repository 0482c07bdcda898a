// The whole scheduling cycle on an in-memory cluster: informer callbacks in,
// bindings, conditions and events out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildFramework } from '../src/framework/profile.js';
import { Scheduler } from '../src/scheduler.js';
import type { Node } from '../src/types.js';
import { FakeApi } from './fake-api.js';
import { antiAffinityByHostname, node, onNode, pod } from './fixtures.js';

function setup(nodes: Node[]) {
  const api = new FakeApi();
  let t = 1_000_000;
  const s = new Scheduler({ api, frameworks: [buildFramework()], now: () => t, random: () => 0.5 });
  // Echo bindings back as the watch would, so the cache confirms them.
  api.onBound = (p, n) => s.onPodUpdate(p, onNode(p, n));
  for (const n of nodes) s.onNodeAdd(n);
  const advance = (ms: number) => {
    t += ms;
  };
  const run = async () => {
    s.drainActive();
    await s.waitForBindings();
  };
  return { api, s, advance, run };
}

const three = () => [node('n1'), node('n2'), node('n3')];
const replica = (i: number) =>
  pod(`web-${i}`, { affinity: antiAffinityByHostname('web') }, { labels: { app: 'web' } });

describe('scheduling cycle', () => {
  it('spreads 3 anti-affine replicas over 3 nodes and reports the 4th exactly as Kubernetes does', async () => {
    const { api, s, run } = setup(three());
    for (let i = 0; i < 4; i++) s.onPodAdd(replica(i));
    await run();
    const nodes = [0, 1, 2].map((i) => api.bindings.get(`default/web-${i}`));
    assert.deepEqual([...new Set(nodes)].sort(), ['n1', 'n2', 'n3']);
    assert.equal(api.bindings.has('default/web-3'), false);
    const msg = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.";
    const cond = api.conditions.get('default/web-3');
    assert.deepEqual(
      { type: cond?.type, status: cond?.status, reason: cond?.reason, message: cond?.message },
      { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: msg },
    );
    assert.deepEqual(api.lastEvent('default/web-3'), {
      pod: 'default/web-3',
      type: 'Warning',
      reason: 'FailedScheduling',
      message: msg,
    });
    assert.deepEqual(api.lastEvent('default/web-0'), {
      pod: 'default/web-0',
      type: 'Normal',
      reason: 'Scheduled',
      message: `Successfully assigned default/web-0 to ${nodes[0]}`,
    });
    assert.deepEqual(s.queue.sizes(), { active: 0, backoff: 0, unschedulable: 1 });
  });

  it('mixes reasons, counted and sorted as strings', async () => {
    const { api, s, run } = setup([node('n1', { memory: '1Gi' }), node('n2', { memory: '1Gi' }), node('n3')]);
    s.onPodAdd(onNode(pod('web-0', {}, { labels: { app: 'web' } }), 'n3'));
    s.onPodAdd(
      pod('p', { memory: '2Gi', affinity: antiAffinityByHostname('web') }, { labels: { app: 'x' } }),
    );
    await run();
    assert.equal(
      api.conditions.get('default/p')?.message,
      "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 Insufficient memory.",
    );
  });

  it('co-locates a pod with the pods it has affinity to', async () => {
    const { api, s, run } = setup([
      node('a1', { labels: { zone: 'a' } }),
      node('b1', { labels: { zone: 'b' } }),
      node('b2', { labels: { zone: 'b' } }),
    ]);
    s.onPodAdd(onNode(pod('cache', {}, { labels: { app: 'cache' } }), 'b2'));
    for (let i = 0; i < 4; i++) {
      s.onPodAdd(
        pod(`app-${i}`, {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'cache' } }, topologyKey: 'zone' },
              ],
            },
          },
        }),
      );
    }
    await run();
    for (let i = 0; i < 4; i++) assert.match(api.bindings.get(`default/app-${i}`) ?? '', /^b[12]$/);
  });

  it('honours taints and tolerations', async () => {
    const { api, s, run } = setup([
      node('gpu', { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] }),
      node('plain'),
    ]);
    s.onPodAdd(pod('normal'));
    s.onPodAdd(
      pod('trainer', {
        nodeSelector: { 'kubernetes.io/hostname': 'gpu' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      }),
    );
    s.onPodAdd(pod('picky', { nodeSelector: { 'kubernetes.io/hostname': 'gpu' } }));
    await run();
    assert.equal(api.bindings.get('default/normal'), 'plain');
    assert.equal(api.bindings.get('default/trainer'), 'gpu');
    assert.equal(
      api.conditions.get('default/picky')?.message,
      "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}.",
    );
  });

  it('reports insufficient resources, and schedules the pod when a node is added', async () => {
    const { api, s, run, advance } = setup([node('small1', { cpu: '1' }), node('small2', { cpu: '1' })]);
    s.onPodAdd(pod('big', { cpu: '2' }));
    await run();
    assert.equal(api.conditions.get('default/big')?.message, '0/2 nodes are available: 2 Insufficient cpu.');
    assert.equal(s.queue.sizes().unschedulable, 1);
    // An unrelated event (a pod label change) does not wake it: NodeResourcesFit does not care.
    s.onPodUpdate(
      onNode(pod('x', {}, { labels: { a: '1' } }), 'small1'),
      onNode(pod('x', {}, { labels: { a: '2' } }), 'small1'),
    );
    assert.equal(s.queue.sizes().unschedulable, 1);
    s.onNodeAdd(node('big1', { cpu: '4' }));
    assert.equal(s.queue.sizes().unschedulable, 0);
    advance(1000); // the first failure's backoff
    s.queue.flushBackoffCompleted();
    await run();
    assert.equal(api.bindings.get('default/big'), 'big1');
  });

  it('counts assumed pods before their binding is confirmed', async () => {
    const { api, s, run } = setup([node('n1', { cpu: '1' })]);
    api.onBound = null; // no watch echo: the pods stay assumed
    s.onPodAdd(pod('a', { cpu: '600m' }));
    s.onPodAdd(pod('b', { cpu: '600m' }));
    await run();
    assert.equal(api.bindings.get('default/a'), 'n1');
    assert.equal(api.bindings.has('default/b'), false);
    assert.equal(s.cache.isAssumed('default/a'), true);
  });

  it('forgets the assumption and backs off when binding fails', async () => {
    const { api, s, run, advance } = setup([node('n1', { cpu: '1' })]);
    api.failBindings = true;
    s.onPodAdd(pod('a', { cpu: '600m' }));
    await run();
    assert.equal(s.cache.podCount(), 0);
    assert.deepEqual(s.queue.sizes(), { active: 0, backoff: 1, unschedulable: 0 });
    assert.match(api.lastEvent('default/a')?.message ?? '', /^Binding rejected: /);
    api.failBindings = false;
    advance(1000);
    s.queue.flushBackoffCompleted();
    await run();
    assert.equal(api.bindings.get('default/a'), 'n1');
  });

  it('drops assumed pods whose binding is never confirmed within the TTL', async () => {
    const { api, s, run, advance } = setup([node('n1', { cpu: '1' })]);
    api.onBound = null;
    s.onPodAdd(pod('a', { cpu: '600m' }));
    await run();
    assert.equal(s.cache.isAssumed('default/a'), true);
    advance(31_000);
    assert.deepEqual(s.cache.cleanupExpiredAssumedPods(), ['default/a']);
    assert.equal(s.cache.podCount(), 0);
  });

  it('ignores pods for other schedulers and keeps priority order', async () => {
    const { api, s } = setup([node('n1', { cpu: '1' })]);
    s.onPodAdd(pod('mine-low', { cpu: '600m', priority: 1 }));
    s.onPodAdd(pod('mine-high', { cpu: '600m', priority: 100 }));
    s.onPodAdd(pod('theirs', { schedulerName: 'other-scheduler' }));
    s.drainActive();
    await s.waitForBindings();
    assert.equal(api.bindings.get('default/mine-high'), 'n1');
    assert.equal(api.bindings.has('default/mine-low'), false);
    assert.equal(api.bindings.has('default/theirs'), false);
  });

  it('frees room when a bound pod is deleted and retries the waiting pod', async () => {
    const { api, s, run, advance } = setup([node('n1', { cpu: '1' })]);
    const first = pod('first', { cpu: '800m' });
    s.onPodAdd(first);
    await run();
    s.onPodAdd(pod('second', { cpu: '800m' }));
    await run();
    assert.equal(s.queue.sizes().unschedulable, 1);
    s.onPodDelete(onNode(first, 'n1'));
    advance(1000);
    s.queue.flushBackoffCompleted();
    await run();
    assert.equal(api.bindings.get('default/second'), 'n1');
  });

  it('leaves gated pods alone until their gates are removed', async () => {
    const { api, s, run } = setup(three());
    const gated = pod('gated', { schedulingGates: [{ name: 'example.com/wait' }] });
    s.onPodAdd(gated);
    await run();
    assert.equal(api.bindings.has('default/gated'), false);
    s.onPodUpdate(gated, pod('gated'));
    await run();
    assert.ok(api.bindings.has('default/gated'));
  });

  it('reports a pod it cannot read instead of retrying it', async () => {
    const { api, s } = setup(three());
    s.onPodAdd(pod('bad', { cpu: 'lots' }));
    assert.equal(s.queue.sizes().active, 0);
    const event = api.lastEvent('default/bad');
    assert.equal(event?.type, 'Warning');
    assert.equal(event?.reason, 'FailedScheduling');
    assert.match(
      event?.message ?? '',
      /^cannot schedule the pod: cannot parse 'lots': quantities must match/,
    );
  });

  it('runs the loop asynchronously: start, schedule, stop', async () => {
    const { api, s } = setup(three());
    const loop = s.start();
    for (let i = 0; i < 3; i++) s.onPodAdd(replica(i));
    for (let i = 0; i < 50 && api.bindings.size < 3; i++) await new Promise((r) => setTimeout(r, 10));
    await s.stop();
    await loop;
    assert.equal(api.bindings.size, 3);
  });
});
