// The NetworkPolicy planner and differ as pure logic: policies, pods and
// namespaces in, the node's ruleset out (table-driven), and the transactions
// between two rulesets touching only what changed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Namespace, NetworkPolicy, NetworkPolicySpec, Pod } from '@kubit/api';
import { hashAndTruncate } from '@kubit/proxy';
import { chainDigest, netpolDiff } from '../src/netpol/differ.js';
import { planPolicies } from '../src/netpol/planner.js';
import type { NetpolRuleset } from '../src/netpol/ruleset.js';

const NODE = { name: 'node-1' };

function pod(
  ns: string,
  name: string,
  ip: string | undefined,
  labels: Record<string, string> = {},
  extra: {
    nodeName?: string;
    ports?: { name: string; containerPort: number; protocol?: string }[];
    hostNetwork?: boolean;
    phase?: string;
  } = {},
): Pod {
  return {
    metadata: { namespace: ns, name, labels },
    spec: {
      nodeName: 'nodeName' in extra ? extra.nodeName : 'node-1',
      hostNetwork: extra.hostNetwork,
      containers: [{ name: 'c', image: 'x', ports: extra.ports }],
    },
    status: { podIP: ip, phase: extra.phase ?? 'Running' },
  } as Pod;
}

const namespace = (name: string, labels: Record<string, string> = {}): Namespace => ({
  metadata: { name, labels },
});

function policy(ns: string, name: string, spec: NetworkPolicySpec): NetworkPolicy {
  return { metadata: { namespace: ns, name }, spec };
}

const id = (ns: string, name: string) => hashAndTruncate(`${ns}/${name}`);
const rules = (r: NetpolRuleset, chain: string) => r.chains.get(chain)?.rules;
const elements = (r: NetpolRuleset, set: string) => [...(r.sets.get(set)?.elements ?? [])];
const map = (r: NetpolRuleset, name: string) => Object.fromEntries(r.maps.get(name)?.elements ?? []);
const nsIn = (ns: string) => `ns-in-${hashAndTruncate(ns)}`;
const nsOut = (ns: string) => `ns-out-${hashAndTruncate(ns)}`;

const NAMESPACES = [namespace('x', { team: 'x' }), namespace('y', { team: 'y' })];
const PODS = [
  pod('x', 'a', '10.1.0.11', { app: 'a' }, { ports: [{ name: 'http', containerPort: 8080 }] }),
  pod('x', 'b', '10.1.0.12', { app: 'b' }, { ports: [{ name: 'http', containerPort: 9090 }] }),
  pod('y', 'c', '10.1.0.13', { app: 'c' }),
  pod('x', 'remote', '10.1.1.5', { app: 'a' }, { nodeName: 'node-2' }),
];

interface Case {
  name: string;
  policies: NetworkPolicy[];
  pods?: Pod[];
  node?: { name: string; podCIDR?: string };
  check: (r: NetpolRuleset) => void;
}

const cases: Case[] = [
  {
    name: 'no policy: nothing is isolated, the base chains accept replies first',
    policies: [],
    check: (r) => {
      assert.deepEqual(map(r, 'ingress-pods'), {});
      assert.deepEqual(map(r, 'egress-pods'), {});
      assert.deepEqual(rules(r, 'forward-ingress'), [
        'ct state established,related accept',
        'ip daddr vmap @ingress-pods',
      ]);
      assert.deepEqual(r.chains.get('forward-egress')?.base, { hook: 'forward', priority: 0 });
      assert.deepEqual(r.chains.get('input-egress')?.base, { hook: 'input', priority: 0 });
      assert.match(r.table, /^kubit-netpol-[a-z2-7]{8}$/);
    },
  },
  {
    name: 'default deny ingress isolates this node’s pods of the namespace only',
    policies: [policy('x', 'deny', { podSelector: {}, policyTypes: ['Ingress'] })],
    check: (r) => {
      assert.deepEqual(map(r, 'ingress-pods'), {
        '10.1.0.11': `jump ${nsIn('x')}`,
        '10.1.0.12': `jump ${nsIn('x')}`,
      });
      assert.deepEqual(map(r, 'egress-pods'), {});
      assert.deepEqual(rules(r, nsIn('x')), [
        `ip daddr @tgt-${id('x', 'deny')} jump in-${id('x', 'deny')}`,
        'drop',
      ]);
      assert.deepEqual(rules(r, `in-${id('x', 'deny')}`), []);
      assert.deepEqual(elements(r, `tgt-${id('x', 'deny')}`), ['10.1.0.11', '10.1.0.12']);
    },
  },
  {
    name: 'policyTypes default to Egress too when egress rules are given; egress rules match the destination',
    policies: [policy('y', 'dns', { podSelector: {}, egress: [{ ports: [{ protocol: 'UDP', port: 53 }] }] })],
    check: (r) => {
      assert.deepEqual(map(r, 'egress-pods'), { '10.1.0.13': `jump ${nsOut('y')}` });
      assert.deepEqual(map(r, 'ingress-pods'), { '10.1.0.13': `jump ${nsIn('y')}` });
      assert.deepEqual(rules(r, `out-${id('y', 'dns')}`), ['meta l4proto udp th dport 53 accept']);
    },
  },
  {
    name: 'a policy that selects none of this node’s pods adds nothing',
    policies: [policy('x', 'only-remote', { podSelector: { matchLabels: { app: 'nobody' } } })],
    check: (r) => {
      assert.equal(r.stats.policies, 0);
      assert.deepEqual([...r.chains.keys()].sort(), ['forward-egress', 'forward-ingress', 'input-egress']);
    },
  },
  {
    name: 'podSelector peers are of the policy’s namespace; namespaceSelector peers of the selected namespaces; both AND',
    policies: [
      policy('x', 'p', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'c' } } }] },
          { from: [{ namespaceSelector: { matchLabels: { team: 'y' } } }] },
          { from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'a' } } }] },
        ],
      }),
    ],
    check: (r) => {
      const p = id('x', 'p');
      assert.deepEqual(elements(r, `in-${p}-0`), []);
      assert.deepEqual(elements(r, `in-${p}-1`), ['10.1.0.13']);
      // Peers on other nodes count: the remote pod is a source like any other.
      assert.deepEqual(elements(r, `in-${p}-2`), ['10.1.0.11', '10.1.1.5']);
      assert.deepEqual(rules(r, `in-${p}`), [
        `ip saddr @in-${p}-0 accept`,
        `ip saddr @in-${p}-1 accept`,
        `ip saddr @in-${p}-2 accept`,
      ]);
      // Only the local pod is a target.
      assert.deepEqual(elements(r, `tgt-${p}`), ['10.1.0.11']);
    },
  },
  {
    name: 'ipBlock minus its excepts, merged with pod peers into disjoint ranges',
    policies: [
      policy('x', 'blk', {
        podSelector: {},
        ingress: [
          {
            from: [
              { ipBlock: { cidr: '10.1.0.0/24', except: ['10.1.0.12/32', '10.1.0.128/25'] } },
              { podSelector: { matchLabels: { app: 'b' } } },
              { ipBlock: { cidr: '2001:db8::/64' } },
            ],
          },
        ],
      }),
    ],
    check: (r) => {
      assert.deepEqual(elements(r, `in-${id('x', 'blk')}-0`), ['10.1.0.0-10.1.0.127']);
      assert.equal(r.sets.get(`in-${id('x', 'blk')}-0`)?.interval, true);
    },
  },
  {
    name: 'numbered ports, ranges and protocols; a protocol without a port',
    policies: [
      policy('x', 'ports', {
        podSelector: {},
        ingress: [
          {
            ports: [
              { port: 80 },
              { protocol: 'TCP', port: 9000, endPort: 9010 },
              { protocol: 'SCTP', port: 7777 },
              { protocol: 'UDP' },
            ],
          },
        ],
      }),
    ],
    check: (r) => {
      assert.deepEqual(rules(r, `in-${id('x', 'ports')}`), [
        'meta l4proto tcp th dport 80 accept',
        'meta l4proto tcp th dport 9000-9010 accept',
        'meta l4proto sctp th dport 7777 accept',
        'meta l4proto udp accept',
      ]);
    },
  },
  {
    name: 'a named port is resolved per destination pod',
    policies: [
      policy('x', 'named', {
        podSelector: {},
        ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 'http' }] }],
      }),
      policy('y', 'named-out', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ port: 'http', protocol: 'TCP' }] }],
      }),
    ],
    check: (r) => {
      const p = id('x', 'named');
      assert.deepEqual(elements(r, `in-${p}-0-np`).sort(), [
        '10.1.0.11 . tcp . 8080',
        '10.1.0.12 . tcp . 9090',
      ]);
      assert.deepEqual(rules(r, `in-${p}`), [
        `ip saddr @in-${p}-0 ip daddr . meta l4proto . th dport @in-${p}-0-np accept`,
      ]);
      // Egress: every pod with that port name is a destination, wherever it runs.
      assert.deepEqual(elements(r, `out-${id('y', 'named-out')}-0-np`).sort(), [
        '10.1.0.11 . tcp . 8080',
        '10.1.0.12 . tcp . 9090',
      ]);
    },
  },
  {
    name: 'pods without an address, on the host network, or finished take no part',
    policies: [policy('x', 'deny', { podSelector: {} })],
    pods: [
      pod('x', 'pending', undefined),
      pod('x', 'host', '192.168.1.10', {}, { hostNetwork: true }),
      pod('x', 'done', '10.1.0.40', {}, { phase: 'Succeeded' }),
      pod('x', 'ok', '10.1.0.41'),
    ],
    check: (r) => assert.deepEqual(Object.keys(map(r, 'ingress-pods')), ['10.1.0.41']),
  },
  {
    name: 'a pod not yet bound is local when its address is in the node’s pod subnet',
    policies: [policy('x', 'deny', { podSelector: {} })],
    pods: [
      pod('x', 'mine', '10.1.0.50', {}, { nodeName: undefined }),
      pod('x', 'theirs', '10.1.1.50', {}, { nodeName: undefined }),
    ],
    node: { name: 'node-1', podCIDR: '10.1.0.0/24' },
    check: (r) => assert.deepEqual(Object.keys(map(r, 'ingress-pods')), ['10.1.0.50']),
  },
  {
    name: 'a policy whose selector does not compile is left out whole',
    policies: [
      policy('x', 'bad', { podSelector: { matchExpressions: [{ key: 'a', operator: 'Sometimes' }] } }),
      policy('x', 'good', { podSelector: {} }),
    ],
    check: (r) => {
      assert.deepEqual(
        r.skipped.map((s) => s.policy),
        ['x/bad'],
      );
      assert.equal(r.stats.policies, 1);
    },
  },
];

describe('planPolicies', () => {
  for (const c of cases) {
    it(c.name, () => c.check(planPolicies(c.policies, c.pods ?? PODS, NAMESPACES, c.node ?? NODE)));
  }

  it('gives each node its own table', () => {
    assert.notEqual(
      planPolicies([], [], [], { name: 'node-1' }).table,
      planPolicies([], [], [], { name: 'node-2' }).table,
    );
  });
});

describe('netpolDiff', () => {
  const deny = policy('x', 'deny', { podSelector: {} });
  const allow = (from: string) =>
    policy('x', 'allow', {
      podSelector: { matchLabels: { app: 'a' } },
      ingress: [{ from: [{ podSelector: { matchLabels: { app: from } } }] }],
    });
  const plan = (policies: NetworkPolicy[], pods = PODS) => planPolicies(policies, pods, NAMESPACES, NODE);

  it('writes the table once, then nothing while nothing changes', () => {
    const r = plan([deny, allow('b')]);
    const script = netpolDiff(undefined, r);
    assert.match(script, /^add table inet kubit-netpol-/);
    // Chains are declared before the map elements that jump to them.
    assert.ok(script.indexOf(`add chain inet ${r.table} ${nsIn('x')}`) < script.indexOf('add element'));
    assert.ok(script.includes(`comment "${chainDigest(r.chains.get(nsIn('x'))!)}"`));
    assert.equal(netpolDiff(r, plan([deny, allow('b')])), '');
  });

  it('changing one policy touches only its own sets and chains', () => {
    const before = plan([deny, allow('b')]);
    const after = plan([deny, allow('a')]);
    const script = netpolDiff(before, after);
    assert.ok(script.length > 0);
    assert.doesNotMatch(script, new RegExp(id('x', 'deny')));
    assert.doesNotMatch(script, /flush chain/);
    assert.match(script, /delete element .* in-.*-0 \{ 10\.1\.0\.12 \}/);
    assert.match(script, /add element .* in-.*-0 \{ 10\.1\.0\.11, 10\.1\.1\.5 \}/);
  });

  it('a new pod is element updates only', () => {
    const before = plan([deny]);
    const after = plan([deny], [...PODS, pod('x', 'new', '10.1.0.60')]);
    const lines = netpolDiff(before, after).trim().split('\n');
    assert.ok(
      lines.every((l) => l.startsWith('add element')),
      lines.join('\n'),
    );
  });

  it('a removed policy: references go first, then its chains and sets', () => {
    const before = plan([deny, allow('b')]);
    const after = plan([deny]);
    const script = netpolDiff(before, after);
    const a = id('x', 'allow');
    assert.ok(
      script.indexOf(`flush chain inet ${before.table} ${nsIn('x')}`) <
        script.indexOf(`delete chain inet ${before.table} in-${a}`),
    );
    assert.ok(
      script.indexOf(`delete chain inet ${before.table} in-${a}`) <
        script.indexOf(`delete set inet ${before.table} in-${a}-0`),
    );
  });

  it('a chain read back from the kernel is kept when its digest matches', () => {
    const r = plan([deny]);
    const kernel: NetpolRuleset = {
      ...r,
      chains: new Map(
        [...r.chains].map(([n, c]) => [n, { base: c.base, rules: [], digest: chainDigest(c) }]),
      ),
    };
    assert.equal(netpolDiff(kernel, r), '');
    kernel.chains.set(nsIn('x'), { rules: [], digest: 'kubit:00000000' });
    assert.match(netpolDiff(kernel, r), new RegExp(`^flush chain inet ${r.table} ${nsIn('x')}$`, 'm'));
  });
});
