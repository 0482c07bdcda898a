import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkLinearizable,
  type KvInput,
  type KvOutput,
  kvModel,
  type Operation,
} from '../src/linearizability.js';

type Op = Operation<KvInput, KvOutput>;
const put = (key: string, value: string, call: number, ret: number): Op => ({
  input: { op: 'put', key, value },
  output: {},
  call,
  return: ret,
});
const get = (key: string, value: string | null, call: number, ret: number): Op => ({
  input: { op: 'get', key },
  output: { value },
  call,
  return: ret,
});

test('a sequential history that reads what was written is linearizable', () => {
  const h = [put('a', '1', 0, 1), get('a', '1', 2, 3), put('a', '2', 4, 5), get('a', '2', 6, 7)];
  assert.equal(checkLinearizable(kvModel, h).ok, true);
});

test('concurrent operations may take effect in either order', () => {
  // The read overlaps the write: both the old and the new value are fine.
  assert.equal(checkLinearizable(kvModel, [put('a', '1', 0, 10), get('a', null, 1, 2)]).ok, true);
  assert.equal(checkLinearizable(kvModel, [put('a', '1', 0, 10), get('a', '1', 1, 2)]).ok, true);
});

test('a stale read (old value after a completed write) is caught', () => {
  const h = [put('a', '1', 0, 1), put('a', '2', 2, 3), get('a', '1', 4, 5)];
  const r = checkLinearizable(kvModel, h);
  assert.equal(r.ok, false);
  assert.equal(r.failedPartition?.length, 3);
});

test('a lost write (acknowledged, then never seen) is caught', () => {
  const h = [put('a', '1', 0, 1), get('a', null, 2, 3)];
  assert.equal(checkLinearizable(kvModel, h).ok, false);
});

test('a write with an unknown outcome may or may not have happened', () => {
  const lost: Op = {
    input: { op: 'put', key: 'a', value: '9' },
    output: undefined,
    call: 0,
    return: Infinity,
  };
  assert.equal(checkLinearizable(kvModel, [lost, get('a', null, 5, 6)]).ok, true);
  assert.equal(checkLinearizable(kvModel, [lost, get('a', '9', 5, 6)]).ok, true);
  // ...but once seen, it cannot disappear again.
  assert.equal(checkLinearizable(kvModel, [lost, get('a', '9', 5, 6), get('a', null, 7, 8)]).ok, false);
});

test('keys are checked independently, and a bad key is reported', () => {
  const h = [put('a', '1', 0, 1), put('b', '1', 0, 1), get('a', '1', 2, 3), get('b', null, 2, 3)];
  const r = checkLinearizable(kvModel, h);
  assert.equal(r.ok, false);
  assert.ok(r.failedPartition?.every((op) => op.input.key === 'b'));
});

test('a larger concurrent history with many clients stays fast enough to check', () => {
  const h: Op[] = [];
  let t = 0;
  let last = '0';
  for (let i = 0; i < 300; i++) {
    // Three overlapping clients: a writer and two readers that see the latest completed or in-flight value.
    const v = String(i);
    h.push(put('k', v, t, t + 3));
    h.push(get('k', last, t + 1, t + 2));
    h.push(get('k', v, t + 2, t + 4));
    last = v;
    t += 5;
  }
  h.unshift(put('k', '0', -2, -1));
  assert.equal(checkLinearizable(kvModel, h).ok, true);
});
