import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  RateLimitingQueue,
  WorkQueue,
} from '../src/workqueue.js';

describe('WorkQueue', () => {
  it('dedups waiting items and keeps order', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.len(), 2);
    assert.equal(await q.get(), 'a');
    assert.equal(await q.get(), 'b');
  });

  it('never hands an item to two workers; a re-add during processing queues it after done', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    const item = await q.get();
    q.add('a');
    assert.equal(q.len(), 0, 'not queued while processing');
    let second: string | undefined;
    const pending = q.get().then((v) => {
      second = v;
    });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(second, undefined);
    q.done(item!);
    await pending;
    assert.equal(second, 'a');
  });

  it('wakes waiting getters with undefined on shutdown and drains', async () => {
    const q = new WorkQueue<string>();
    const waiting = q.get();
    q.shutDown();
    assert.equal(await waiting, undefined);
    q.add('x');
    assert.equal(q.len(), 0);
    const q2 = new WorkQueue<string>();
    q2.add('a');
    const a = await q2.get();
    let drained = false;
    const d = q2.shutDownWithDrain().then(() => {
      drained = true;
    });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(drained, false);
    q2.done(a!);
    await d;
    assert.equal(drained, true);
  });
});

describe('rate limiting', () => {
  it('backs off per item exponentially until forgotten', () => {
    const l = new ItemExponentialFailureRateLimiter<string>(5, 100);
    assert.deepEqual([l.when('a'), l.when('a'), l.when('a'), l.when('b')], [5, 10, 20, 5]);
    for (let i = 0; i < 10; i++) l.when('a');
    assert.equal(l.when('a'), 100);
    assert.equal(l.numRequeues('a'), 14);
    l.forget('a');
    assert.equal(l.when('a'), 5);
  });

  it('a token bucket allows a burst then spaces requests', () => {
    let t = 0;
    const b = new BucketRateLimiter<string>(10, 2, () => t);
    assert.equal(b.when('x'), 0);
    assert.equal(b.when('x'), 0);
    assert.equal(b.when('x'), 100);
    t = 1000;
    assert.equal(b.when('x'), 0);
  });

  it('addAfter and addRateLimited deliver later; the earliest pending add wins', async () => {
    const q = new RateLimitingQueue<string>(new ItemExponentialFailureRateLimiter(5, 50));
    q.addAfter('a', 30);
    q.addAfter('a', 5);
    q.addRateLimited('b');
    // Delayed adds do not keep the process alive (a real process has its
    // informers' watches for that); stand in for them while waiting.
    const keepAlive = setInterval(() => {}, 1000);
    const got = [await q.get(), await q.get()];
    clearInterval(keepAlive);
    assert.deepEqual(got.sort(), ['a', 'b']);
    assert.equal(q.numRequeues('b'), 1);
    q.forget('b');
    assert.equal(q.numRequeues('b'), 0);
    q.addAfter('c', 10_000);
    q.shutDown();
    assert.equal(await q.get(), undefined);
  });

  it('a pending delayed add does not keep the process alive, and shutDown drops it', () => {
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const q = new RateLimitingQueue<string>();
    const before = refTimers();
    q.addAfter('slow', 600_000);
    q.addRateLimited('failing');
    q.addAfter('failing', 600_000);
    const refTimersWithPendingAdds = refTimers();
    q.shutDown();
    assert.equal(refTimersWithPendingAdds, before, "delayed-add timers are unref()'d");
    assert.equal(q.delayedLen(), 0, 'shutDown clears pending delayed adds');
    const q2 = new RateLimitingQueue<string>();
    q2.addAfter('a', 600_000);
    q2.addAfter('b', 600_000);
    q2.addAfter('a', 700_000);
    assert.equal(q2.delayedLen(), 2, 'one pending add per item');
    q2.shutDown();
    q.addAfter('late', 1000);
    assert.equal(q.delayedLen(), 0, 'nothing is scheduled after shutDown');
  });
});
