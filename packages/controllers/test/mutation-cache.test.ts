import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MutationCache } from '../src/mutation-cache.js';
import type { ReplicaSet } from '../src/types.js';

const rs = (uid: string, rv: number | string, replicas: number, namespace = 'default'): ReplicaSet => ({
  metadata: { name: `rs-${uid}`, namespace, uid, resourceVersion: String(rv) },
  spec: { replicas, selector: {}, template: {} },
});
const sizes = (list: ReplicaSet[]) => list.map((o) => `${o.metadata?.uid}=${o.spec?.replicas}`).sort();

describe('MutationCache', () => {
  test('a written copy stands in for an older cached one until the cache catches up', () => {
    const c = new MutationCache<ReplicaSet>();
    c.wrote(rs('a', 5, 3));
    assert.deepEqual(sizes(c.view([rs('a', 4, 4), rs('b', 2, 1)], 'default')), ['a=3', 'b=1']);
    // The cache shows the write (or something newer): the cache wins from then on.
    assert.deepEqual(sizes(c.view([rs('a', 7, 2)], 'default')), ['a=2']);
    assert.deepEqual(sizes(c.view([rs('a', 4, 4)], 'default')), ['a=4'], 'the write was forgotten');
  });

  test('a created object shows before the cache has it, in its own namespace only', () => {
    const c = new MutationCache<ReplicaSet>();
    c.wrote(rs('new', 9, 2, 'prod'));
    assert.deepEqual(sizes(c.view([], 'default')), []);
    assert.deepEqual(sizes(c.view([rs('old', 3, 1, 'prod')], 'prod')), ['new=2', 'old=1']);
  });

  test('a deleted object is left out while the cache still shows it', () => {
    const c = new MutationCache<ReplicaSet>();
    c.deleted(rs('a', 5, 0));
    assert.deepEqual(sizes(c.view([rs('a', 5, 0), rs('b', 2, 1)], 'default')), ['b=1']);
    assert.deepEqual(sizes(c.view([rs('b', 2, 1)], 'default')), ['b=1']);
  });

  test('writes older than the TTL are not trusted', () => {
    const clock = { now: 0 };
    const c = new MutationCache<ReplicaSet>(() => clock.now, 1000);
    c.wrote(rs('a', 5, 3));
    c.wrote(rs('created', 6, 1));
    clock.now = 1001;
    assert.deepEqual(sizes(c.view([rs('a', 4, 4)], 'default')), ['a=4']);
  });

  test('resource versions that are not numbers leave the cache in charge', () => {
    const c = new MutationCache<ReplicaSet>();
    c.wrote(rs('a', 'x9', 3));
    assert.deepEqual(sizes(c.view([rs('a', 4, 4)], 'default')), ['a=4']);
  });

  test('the caller cannot change a recorded write through the object it passed', () => {
    const c = new MutationCache<ReplicaSet>();
    const o = rs('a', 5, 3);
    c.wrote(o);
    o.spec!.replicas = 99;
    assert.deepEqual(sizes(c.view([rs('a', 4, 4)], 'default')), ['a=3']);
  });
});
