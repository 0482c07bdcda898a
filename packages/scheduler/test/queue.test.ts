import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ActionType, type ClusterEvent, type ClusterEventRegistration } from '../src/framework/types.js';
import { newPodInfo } from '../src/pod-info.js';
import { type QueuedPodInfo, SchedulingQueue } from '../src/queue.js';
import { pod } from './fixtures.js';

const registrations = new Map<string, ClusterEventRegistration[]>([
  [
    'NodeResourcesFit',
    [
      { resource: 'Pod', actions: ActionType.Delete },
      { resource: 'Node', actions: ActionType.Add | ActionType.UpdateNodeAllocatable },
    ],
  ],
  ['NodeAffinity', [{ resource: 'Node', actions: ActionType.Add | ActionType.UpdateNodeLabel }]],
  ['TaintToleration', [{ resource: 'Node', actions: ActionType.Add | ActionType.UpdateNodeTaint }]],
  [
    'InterPodAffinity',
    [
      { resource: 'Pod', actions: ActionType.All },
      { resource: 'Node', actions: ActionType.Add | ActionType.UpdateNodeLabel },
    ],
  ],
]);

const ev = (resource: 'Node' | 'Pod', action: number): ClusterEvent => ({ resource, action, label: 'test' });

function setup() {
  let t = 10_000;
  const q = new SchedulingQueue({ now: () => t, registrations });
  return {
    q,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

function popName(q: SchedulingQueue): string | undefined {
  return q.tryPop()?.info.name;
}

describe('SchedulingQueue', () => {
  it('pops by priority, then first in first out', () => {
    const { q } = setup();
    q.add(newPodInfo(pod('a', { priority: 0 })));
    q.add(newPodInfo(pod('b', { priority: 10 })));
    q.add(newPodInfo(pod('c', { priority: 0 })));
    q.add(newPodInfo(pod('d', { priority: 10 })));
    assert.deepEqual(
      [popName(q), popName(q), popName(q), popName(q), popName(q)],
      ['b', 'd', 'a', 'c', undefined],
    );
  });

  it('backs off exponentially from 1 s to 10 s', () => {
    const { q } = setup();
    const qp = { attempts: 0 } as QueuedPodInfo;
    const got = [1, 2, 3, 4, 5, 6].map((n) => q.backoffDuration({ ...qp, attempts: n }));
    assert.deepEqual(got, [1000, 2000, 4000, 8000, 10_000, 10_000]);
  });

  it('wakes an unschedulable pod only for events its rejecting plugins care about', () => {
    const { q, advance } = setup();
    q.add(newPodInfo(pod('p')));
    const qp = q.tryPop()!;
    q.addUnschedulable(qp, new Set(['NodeAffinity']));
    assert.deepEqual(q.sizes(), { active: 0, backoff: 0, unschedulable: 1 });
    assert.equal(q.onEvent(ev('Pod', ActionType.Delete)), 0, 'a pod deletion cannot fix node affinity');
    assert.equal(q.onEvent(ev('Node', ActionType.UpdateNodeAllocatable)), 0);
    assert.equal(q.onEvent(ev('Node', ActionType.UpdateNodeTaint)), 0);
    advance(1500);
    assert.equal(q.onEvent(ev('Node', ActionType.UpdateNodeLabel)), 1);
    assert.deepEqual(q.sizes(), { active: 1, backoff: 0, unschedulable: 0 });
  });

  it('sends a woken pod to backoff while its backoff lasts', () => {
    const { q, advance } = setup();
    q.add(newPodInfo(pod('p')));
    q.addUnschedulable(q.tryPop()!, new Set(['NodeResourcesFit']));
    q.onEvent(ev('Node', ActionType.Add));
    assert.deepEqual(q.sizes(), { active: 0, backoff: 1, unschedulable: 0 });
    advance(999);
    q.flushBackoffCompleted();
    assert.equal(q.sizes().backoff, 1);
    advance(1);
    q.flushBackoffCompleted();
    assert.deepEqual(q.sizes(), { active: 1, backoff: 0, unschedulable: 0 });
  });

  it('remembers events that arrived while the pod was being scheduled', () => {
    const { q } = setup();
    q.add(newPodInfo(pod('p')));
    q.add(newPodInfo(pod('other')));
    const qp = q.tryPop()!;
    q.onEvent(ev('Node', ActionType.Add)); // arrives mid-cycle
    q.addUnschedulable(qp, new Set(['NodeResourcesFit']));
    assert.deepEqual(q.sizes(), { active: 1, backoff: 1, unschedulable: 0 });
    const qp2 = q.tryPop()!;
    q.onEvent(ev('Pod', ActionType.UpdatePodLabel)); // irrelevant to NodeResourcesFit
    q.addUnschedulable(qp2, new Set(['NodeResourcesFit']));
    assert.deepEqual(q.sizes(), { active: 0, backoff: 1, unschedulable: 1 });
  });

  it('while many pods are in flight, forgets only events older than all of them', () => {
    const { q } = setup();
    for (let i = 0; i < 3000; i++) q.add(newPodInfo(pod(`p${i}`)));
    const inFlight: QueuedPodInfo[] = [];
    // A burst: pods are popped and finish in order, each event arriving with one in flight.
    for (let i = 0; i < 2990; i++) {
      inFlight.push(q.tryPop()!);
      q.onEvent(ev('Pod', ActionType.Add));
      if (inFlight.length > 5) q.done(inFlight.shift()!.info.key);
    }
    const remembered = (q as unknown as { events: unknown[] }).events.length;
    assert.ok(remembered < 1100, `kept ${remembered} events`);
    const late = q.tryPop()!;
    q.onEvent(ev('Node', ActionType.Add)); // after `late` was popped: it must not be missed
    for (const p of inFlight) q.done(p.info.key);
    q.addUnschedulable(late, new Set(['NodeResourcesFit']));
    assert.equal(q.sizes().backoff, 1, 'the Node add during its attempt sends it to backoff');
  });

  it('retries pods left unschedulable for 5 minutes even without events', () => {
    const { q, advance } = setup();
    q.add(newPodInfo(pod('p')));
    q.addUnschedulable(q.tryPop()!, new Set(['TaintToleration']));
    advance(4 * 60_000);
    q.flushUnschedulableLeftover();
    assert.equal(q.sizes().unschedulable, 1);
    advance(60_000);
    q.flushUnschedulableLeftover();
    assert.deepEqual(q.sizes(), { active: 1, backoff: 0, unschedulable: 0 });
  });

  it('an update to an unschedulable pod gives it another try; a delete removes it', () => {
    const { q, advance } = setup();
    q.add(newPodInfo(pod('p')));
    q.addUnschedulable(q.tryPop()!, new Set(['NodeAffinity']));
    advance(2000);
    q.update(newPodInfo(pod('p', { nodeSelector: { a: 'b' } })));
    assert.deepEqual(q.sizes(), { active: 1, backoff: 0, unschedulable: 0 });
    q.delete('default/p');
    assert.deepEqual(q.sizes(), { active: 0, backoff: 0, unschedulable: 0 });
  });

  it('drops a pod deleted while it was being scheduled', () => {
    const { q } = setup();
    q.add(newPodInfo(pod('p')));
    const qp = q.tryPop()!;
    q.delete('default/p');
    q.addUnschedulable(qp, new Set(['NodeAffinity']));
    q.requeueWithBackoff(qp);
    assert.deepEqual(q.sizes(), { active: 0, backoff: 0, unschedulable: 0 });
  });

  it('pop waits for a pod, and close releases waiters', async () => {
    const { q } = setup();
    const waiting = q.pop();
    q.add(newPodInfo(pod('late')));
    assert.equal((await waiting)?.info.name, 'late');
    const never = q.pop();
    q.close();
    assert.equal(await never, null);
  });
});
