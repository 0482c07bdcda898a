// Table-driven tests of the LoadBalancer address pool: parsing the flag and
// assigning addresses to Services deterministically.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assign, type Claim, parsePool, poolSize } from '../src/loadbalancer/pool.js';

describe('--load-balancer-ip-range', () => {
  const good: [string, string, string, number][] = [
    ['192.168.50.0/29', '192.168.50.1', '192.168.50.6', 6],
    ['192.168.50.8/31', '192.168.50.8', '192.168.50.9', 2],
    ['10.0.0.5/32', '10.0.0.5', '10.0.0.5', 1],
    ['10.0.0.10-10.0.0.12', '10.0.0.10', '10.0.0.12', 3],
  ];
  for (const [text, first, last, size] of good) {
    test(`parses ${text}`, () => {
      const p = parsePool(text);
      assert.deepEqual([p.first, p.last, poolSize(p)], [ip(first), ip(last), size]);
    });
  }
  const bad: [string, RegExp][] = [
    ['10.0.0.0/33', /not an IPv4 CIDR/],
    ['10.0.0.300-10.0.0.4', /not an IPv4 CIDR .* or range/],
    ['10.0.0.9-10.0.0.4', /ends before it starts/],
    ['banana', /not an IPv4 CIDR/],
  ];
  for (const [text, re] of bad) test(`refuses ${text}`, () => assert.throws(() => parsePool(text), re));
});

function ip(s: string): number {
  return s.split('.').reduce((n, o) => n * 256 + Number(o), 0);
}

const claim = (key: string, created: number, o: Partial<Claim> = {}): Claim => ({
  key,
  uid: key,
  created,
  ...o,
});

describe('assignment', () => {
  const pool = parsePool('10.0.0.1-10.0.0.3');
  const cases: { name: string; claims: Claim[]; want: Record<string, string> }[] = [
    {
      name: 'lowest free address, oldest first',
      claims: [claim('b', 2), claim('a', 1)],
      want: { a: '10.0.0.1', b: '10.0.0.2' },
    },
    {
      name: 'held addresses stay where they are',
      claims: [claim('a', 1), claim('b', 2, { current: '10.0.0.1' })],
      want: { b: '10.0.0.1', a: '10.0.0.2' },
    },
    {
      name: 'two claim one address: the oldest keeps it, the other gets a new one',
      claims: [claim('new', 5, { current: '10.0.0.2' }), claim('old', 1, { current: '10.0.0.2' })],
      want: { old: '10.0.0.2', new: '10.0.0.1' },
    },
    {
      name: 'a requested free address is honoured',
      claims: [claim('a', 1), claim('b', 2, { requested: '10.0.0.1' })],
      want: { b: '10.0.0.1', a: '10.0.0.2' },
    },
    {
      name: 'a requested address outside the pool is an error',
      claims: [claim('a', 1, { requested: '10.9.9.9' })],
      want: { a: 'error: requested loadBalancerIP 10.9.9.9 is not in the pool 10.0.0.1-10.0.0.3' },
    },
    {
      name: 'a requested address taken is an error',
      claims: [claim('a', 1, { current: '10.0.0.3' }), claim('b', 2, { requested: '10.0.0.3' })],
      want: { a: '10.0.0.3', b: 'error: requested loadBalancerIP 10.0.0.3 is already in use by Service a' },
    },
    {
      name: 'a held address outside the pool is replaced',
      claims: [claim('a', 1, { current: '192.168.0.1' })],
      want: { a: '10.0.0.1' },
    },
    {
      name: 'pool exhausted: the youngest waits',
      claims: [claim('a', 1), claim('b', 2), claim('c', 3), claim('d', 4)],
      want: {
        a: '10.0.0.1',
        b: '10.0.0.2',
        c: '10.0.0.3',
        d: 'error: no available IPs: all 3 addresses of the pool 10.0.0.1-10.0.0.3 are in use',
      },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = Object.fromEntries(
        [...assign(pool, c.claims)].map(([k, a]) => [k, 'ip' in a ? a.ip : `error: ${a.error}`]),
      );
      assert.deepEqual(got, c.want);
    });
  }

  test('the same assignment whatever the order of the claims', () => {
    const claims = [
      claim('a', 3),
      claim('b', 1, { current: '10.0.0.3' }),
      claim('c', 2, { requested: '10.0.0.2' }),
      claim('d', 4),
    ];
    const once = JSON.stringify([...assign(pool, claims)].sort());
    for (let i = 0; i < 10; i++) {
      const shuffled = [...claims].sort(() => Math.random() - 0.5);
      assert.equal(JSON.stringify([...assign(pool, shuffled)].sort()), once);
    }
  });
});
