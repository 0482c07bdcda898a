import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EndpointSlice, Service } from '@kubit/api';
import { affinitySet, serviceChain } from '../src/names.js';
import { planRuleset } from '../src/planner.js';
import type { Ruleset } from '../src/ruleset.js';
import { opts, service, slice } from './fixtures.js';

/** The per-service chains of a kind ("service-", "local-", …): prefix, then the 8-character hash. */
const chainsLike = (r: Ruleset, prefix: string) =>
  [...r.chains.keys()].filter((n) => n.startsWith(prefix) && /^[A-Z2-7]{8}-/.test(n.slice(prefix.length)));
const el = (r: Ruleset, map: string) => Object.fromEntries(r.maps.get(map)?.elements ?? []);
const webId = { namespace: 'default', name: 'web', protocol: 'tcp', port: 'http' };

interface Case {
  name: string;
  services: Service[];
  slices: EndpointSlice[];
  options?: Partial<typeof opts>;
  check: (r: Ruleset) => void;
}

const cases: Case[] = [
  {
    name: 'ClusterIP with no endpoints rejects at once',
    services: [service('web', { clusterIP: '10.96.0.20' })],
    slices: [],
    check: (r) => {
      assert.deepEqual(el(r, 'no-endpoint-services'), { '10.96.0.20 . tcp . 80': 'goto reject-chain' });
      assert.deepEqual(el(r, 'service-ips'), {});
      assert.deepEqual(chainsLike(r, 'service-'), []);
      assert.ok(r.sets.get('cluster-ips')?.elements.has('10.96.0.20'));
    },
  },
  {
    name: 'ClusterIP with one endpoint DNATs to it',
    services: [service('web', { clusterIP: '10.96.0.20' })],
    slices: [slice('web', [{ ip: '10.244.1.5' }])],
    check: (r) => {
      const svc = serviceChain(webId);
      assert.deepEqual(el(r, 'service-ips'), { '10.96.0.20 . tcp . 80': `goto ${svc}` });
      assert.deepEqual(r.chains.get(svc)?.rules, [
        'ip daddr 10.96.0.20 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade',
        'meta l4proto tcp dnat to 10.244.1.5:8080',
      ]);
      // Hairpin: the endpoint reaching itself through the Service is masqueraded in nat-postrouting.
      assert.deepEqual([...(r.sets.get('hairpin-ips')?.elements ?? [])], ['10.244.1.5 . 10.244.1.5']);
      assert.deepEqual(r.chains.get('nat-postrouting')?.rules, [
        'ct status dnat ip saddr . ip daddr @hairpin-ips jump mark-for-masquerade',
        'jump masquerading',
      ]);
      assert.deepEqual(el(r, 'no-endpoint-services'), {});
      assert.deepEqual(chainsLike(r, 'endpoint-'), [], 'no per-endpoint chains');
    },
  },
  {
    name: 'ClusterIP with three ready endpoints (and one unready) picks among the three, equally',
    services: [service('web', { clusterIP: '10.96.0.20' })],
    slices: [
      slice('web', [{ ip: '10.244.1.7' }, { ip: '10.244.1.5' }], undefined, 'web-1'),
      slice(
        'web',
        [
          { ip: '10.244.2.5', node: 'node-b' },
          { ip: '10.244.2.9', ready: false },
        ],
        undefined,
        'web-2',
      ),
    ],
    check: (r) => {
      // Sorted by address: 10.244.1.5, 10.244.1.7, 10.244.2.5; picked with 1/3, then 1/2 of
      // the rest, then the last: 1/3 each.
      assert.deepEqual(r.chains.get(serviceChain(webId))?.rules.slice(1), [
        'meta l4proto tcp numgen random mod 3 == 0 dnat to 10.244.1.5:8080',
        'meta l4proto tcp numgen random mod 2 == 0 dnat to 10.244.1.7:8080',
        'meta l4proto tcp dnat to 10.244.2.5:8080',
      ]);
      assert.equal(r.sets.get('hairpin-ips')?.elements.size, 3);
      assert.equal(r.stats.endpoints, 3);
    },
  },
  {
    name: 'no ready endpoint: the serving terminating ones are used',
    services: [service('web', { clusterIP: '10.96.0.20' })],
    slices: [
      slice('web', [
        { ip: '10.244.1.5', ready: false, serving: true, terminating: true },
        { ip: '10.244.1.6', ready: false, serving: false, terminating: true },
      ]),
    ],
    check: (r) => {
      assert.deepEqual(r.chains.get(serviceChain(webId))?.rules.slice(1), [
        'meta l4proto tcp dnat to 10.244.1.5:8080',
      ]);
    },
  },
  {
    name: 'NodePort: the node port enters through external-, masqueraded',
    services: [
      service('web', {
        clusterIP: '10.96.0.20',
        type: 'NodePort',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
      }),
    ],
    slices: [slice('web', [{ ip: '10.244.1.5' }])],
    check: (r) => {
      const ext = chainsLike(r, 'external-');
      assert.equal(ext.length, 1);
      assert.deepEqual(el(r, 'service-nodeports'), { 'tcp . 30080': `goto ${ext[0]}` });
      assert.deepEqual(r.chains.get(ext[0])?.rules, [
        'jump mark-for-masquerade',
        `goto ${serviceChain(webId)}`,
      ]);
    },
  },
  {
    name: 'NodePort with no endpoints rejects on the node port too',
    services: [
      service('dns', {
        clusterIP: '10.96.0.10',
        type: 'NodePort',
        ports: [{ port: 53, protocol: 'UDP', nodePort: 30053 }],
      }),
    ],
    slices: [],
    check: (r) => {
      assert.deepEqual(el(r, 'no-endpoint-nodeports'), { 'udp . 30053': 'goto reject-chain' });
      assert.deepEqual(el(r, 'no-endpoint-services'), { '10.96.0.10 . udp . 53': 'goto reject-chain' });
    },
  },
  {
    name: 'LoadBalancer ingress IPs answer like the cluster IP, through external-',
    services: [
      service(
        'web',
        {
          clusterIP: '10.96.0.20',
          type: 'LoadBalancer',
          ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
        },
        { status: { loadBalancer: { ingress: [{ ip: '192.168.240.5' }, { hostname: 'lb.example' }] } } },
      ),
    ],
    slices: [slice('web', [{ ip: '10.244.1.5' }])],
    check: (r) => {
      const [ext] = chainsLike(r, 'external-');
      assert.equal(el(r, 'service-ips')['192.168.240.5 . tcp . 80'], `goto ${ext}`);
      assert.equal(el(r, 'service-nodeports')['tcp . 30080'], `goto ${ext}`);
    },
  },
  {
    name: 'ClientIP affinity: a timeout set per endpoint, checked before the random pick',
    services: [
      service('web', {
        clusterIP: '10.96.0.20',
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
      }),
      service('other', { clusterIP: '10.96.0.21', sessionAffinity: 'ClientIP' }),
    ],
    slices: [
      slice('web', [{ ip: '10.244.1.5' }, { ip: '10.244.1.6' }]),
      slice('other', [{ ip: '10.244.1.9' }]),
    ],
    check: (r) => {
      const aff = [...r.sets.entries()].filter(([n]) => n.startsWith('affinity-'));
      assert.equal(aff.length, 3);
      const web = aff.filter(([n]) => n.includes('/web/'));
      for (const [, s] of web) {
        assert.equal(s.timeoutSeconds, 60);
        assert.deepEqual(s.flags, ['dynamic', 'timeout']);
      }
      assert.equal(aff.find(([n]) => n.includes('/other/'))?.[1].timeoutSeconds, 10_800);
      const a5 = affinitySet(webId, '10.244.1.5', 8080);
      const a6 = affinitySet(webId, '10.244.1.6', 8080);
      assert.match(a5, /^affinity-\S+__10\.244\.1\.5\/8080$/);
      // A remembered client goes back to its endpoint (refreshing the entry); a new one is
      // picked at random and remembered.
      assert.deepEqual(r.chains.get(serviceChain(webId))?.rules.slice(1), [
        `ip saddr @${a5} meta l4proto tcp update @${a5} { ip saddr } dnat to 10.244.1.5:8080`,
        `ip saddr @${a6} meta l4proto tcp update @${a6} { ip saddr } dnat to 10.244.1.6:8080`,
        `meta l4proto tcp numgen random mod 2 == 0 update @${a5} { ip saddr } dnat to 10.244.1.5:8080`,
        `meta l4proto tcp update @${a6} { ip saddr } dnat to 10.244.1.6:8080`,
      ]);
    },
  },
  {
    name: 'internalTrafficPolicy Local: the cluster IP reaches only this node’s endpoints',
    services: [service('web', { clusterIP: '10.96.0.20', internalTrafficPolicy: 'Local' })],
    slices: [slice('web', [{ ip: '10.244.1.5' }, { ip: '10.244.2.5', node: 'node-b' }])],
    check: (r) => {
      const [local] = chainsLike(r, 'local-');
      assert.equal(el(r, 'service-ips')['10.96.0.20 . tcp . 80'], `goto ${local}`);
      assert.equal(r.chains.get(local)?.rules.at(-1), 'meta l4proto tcp dnat to 10.244.1.5:8080');
      assert.ok(!r.chains.get(local)?.rules.some((x) => x.includes('10.244.2.5')));
    },
  },
  {
    name: 'internalTrafficPolicy Local with no local endpoint drops',
    services: [service('web', { clusterIP: '10.96.0.20', internalTrafficPolicy: 'Local' })],
    slices: [slice('web', [{ ip: '10.244.2.5', node: 'node-b' }])],
    check: (r) => {
      assert.deepEqual(el(r, 'no-endpoint-services'), { '10.96.0.20 . tcp . 80': 'drop' });
      assert.deepEqual(el(r, 'service-ips'), {});
    },
  },
  {
    name: 'externalTrafficPolicy Local: node-port clients keep their address and reach local endpoints',
    services: [
      service('web', {
        clusterIP: '10.96.0.20',
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
      }),
    ],
    slices: [slice('web', [{ ip: '10.244.1.5' }, { ip: '10.244.2.5', node: 'node-b' }])],
    check: (r) => {
      const [ext] = chainsLike(r, 'external-');
      const [local] = chainsLike(r, 'local-');
      const rules = r.chains.get(ext)?.rules ?? [];
      assert.ok(!rules.includes('jump mark-for-masquerade'), 'no unconditional masquerade');
      assert.equal(rules.at(-1), `goto ${local}`);
      assert.ok(rules.includes(`ip saddr 10.244.0.0/16 goto ${serviceChain(webId)}`));
      // The cluster IP still reaches every endpoint.
      assert.equal(el(r, 'service-ips')['10.96.0.20 . tcp . 80'], `goto ${serviceChain(webId)}`);
    },
  },
  {
    name: 'headless and ExternalName Services get no rules',
    services: [
      service('headless', { clusterIP: 'None' }),
      service('ext', { type: 'ExternalName', externalName: 'example.com', ports: [] }),
    ],
    slices: [slice('headless', [{ ip: '10.244.1.5' }])],
    check: (r) => {
      for (const m of r.maps.values()) assert.equal(m.elements.size, 0);
      assert.equal(r.sets.get('cluster-ips')?.elements.size, 0);
      assert.equal(r.sets.get('hairpin-ips')?.elements.size, 0);
      assert.deepEqual(chainsLike(r, 'service-'), []);
      assert.equal(r.stats.servicePorts, 0);
    },
  },
  {
    name: 'named target ports: each service port takes the slice port of its own name',
    services: [
      service('web', {
        clusterIP: '10.96.0.20',
        ports: [
          { name: 'http', port: 80, protocol: 'TCP', targetPort: 'web' },
          { name: 'metrics', port: 9090, protocol: 'TCP', targetPort: 'prom' },
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 'dns' },
        ],
      }),
    ],
    slices: [
      slice(
        'web',
        [{ ip: '10.244.1.5' }],
        [
          { name: 'metrics', port: 9191 },
          { name: 'http', port: 8080 },
          { name: 'dns', port: 5353, protocol: 'UDP' },
        ],
      ),
    ],
    check: (r) => {
      const dnats = chainsLike(r, 'service-')
        .map((n) => r.chains.get(n)?.rules.at(-1))
        .sort();
      assert.deepEqual(dnats, [
        'meta l4proto tcp dnat to 10.244.1.5:8080',
        'meta l4proto tcp dnat to 10.244.1.5:9191',
        'meta l4proto udp dnat to 10.244.1.5:5353',
      ]);
      assert.equal(r.maps.get('service-ips')?.elements.size, 3);
    },
  },
  {
    name: 'several --cluster-cidr ranges: one named set, no anonymous set in any chain',
    services: [
      service('web', {
        clusterIP: '10.96.0.20',
        type: 'NodePort',
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
      }),
    ],
    slices: [slice('web', [{ ip: '10.244.1.5' }, { ip: '10.244.2.5' }])],
    options: { clusterCidrs: ['10.244.0.0/16', '10.245.0.0/16'] },
    check: (r) => {
      assert.deepEqual(
        [...(r.sets.get('cluster-cidrs')?.elements ?? [])],
        ['10.244.0.0/16', '10.245.0.0/16'],
      );
      assert.equal(
        r.chains.get(serviceChain(webId))?.rules[0],
        'ip daddr 10.96.0.20 tcp dport 80 ip saddr != @cluster-cidrs jump mark-for-masquerade',
      );
      const [ext] = chainsLike(r, 'external-');
      assert.ok(r.chains.get(ext)?.rules.includes(`ip saddr @cluster-cidrs goto ${serviceChain(webId)}`));
      // Every anonymous set or map ("{ a, b }" or "vmap { … }") costs a walk of the whole
      // transaction when the kernel binds it: the planner writes none.
      for (const [name, c] of r.chains)
        for (const rule of c.rules)
          assert.ok(!/(^|\s)(vmap |map )?\{ [^}]*[,:]/.test(rule), `${name}: ${rule}`);
    },
  },
  {
    name: '--masquerade-all masquerades every packet to the cluster IP',
    services: [service('web', { clusterIP: '10.96.0.20' })],
    slices: [slice('web', [{ ip: '10.244.1.5' }])],
    options: { masqueradeAll: true },
    check: (r) => {
      assert.equal(
        r.chains.get(serviceChain(webId))?.rules[0],
        'ip daddr 10.96.0.20 tcp dport 80 jump mark-for-masquerade',
      );
    },
  },
  {
    name: '--nodeport-addresses limits node ports to local addresses in those ranges',
    services: [],
    slices: [],
    options: { nodePortAddresses: ['192.168.1.0/24', '10.0.0.7/32'] },
    check: (r) => {
      assert.deepEqual([...(r.sets.get('nodeport-ips')?.elements ?? [])], ['192.168.1.0/24', '10.0.0.7']);
      assert.ok(r.chains.get('services')?.rules[1].startsWith('ip daddr @nodeport-ips fib daddr type local'));
    },
  },
];

describe('planner', () => {
  for (const c of cases) {
    it(c.name, () => c.check(planRuleset(c.services, c.slices, { ...opts, ...c.options })));
  }

  it('plans the same ruleset whatever order the objects come in', () => {
    const svcs = [service('a', { clusterIP: '10.96.0.2' }), service('b', { clusterIP: '10.96.0.3' })];
    const sl = [slice('a', [{ ip: '10.244.1.2' }, { ip: '10.244.1.1' }]), slice('b', [{ ip: '10.244.1.3' }])];
    const one = planRuleset(svcs, sl, opts);
    const two = planRuleset([...svcs].reverse(), [...sl].reverse(), opts);
    assert.deepEqual([...one.chains.keys()], [...two.chains.keys()]);
    assert.deepEqual([...one.chains.values()], [...two.chains.values()]);
  });

  it('ClientIP affinity grows linearly with endpoints: one set each, referenced by a fixed number of rules', () => {
    // The kernel looks every referenced set up by name along the table's list of sets, so
    // a form where each endpoint's rule checked the other endpoints' sets would cost
    // endpoints² in the plan and more in the kernel. Count what 100 and 200 endpoints plan.
    const size = (n: number) => {
      const eps = Array.from({ length: n }, (_, i) => ({ ip: `10.244.${1 + (i >> 8)}.${i & 255}` }));
      const r = planRuleset(
        [service('web', { clusterIP: '10.96.0.20', sessionAffinity: 'ClientIP' })],
        [slice('web', eps)],
        opts,
      );
      const rules = r.chains.get(serviceChain(webId))?.rules ?? [];
      const refs = new Map<string, number>();
      for (const rule of rules)
        for (const m of rule.matchAll(/@(affinity-\S+)/g)) refs.set(m[1], (refs.get(m[1]) ?? 0) + 1);
      const sets = [...r.sets.keys()].filter((k) => k.startsWith('affinity-'));
      return {
        rules: rules.length,
        sets: sets.length,
        refs,
        total: [...refs.values()].reduce((a, b) => a + b, 0),
      };
    };
    for (const n of [100, 200]) {
      const s = size(n);
      assert.equal(s.sets, n, 'one affinity set per endpoint');
      // The masquerade rule, then per endpoint one affinity check and one arm of the random pick.
      assert.equal(s.rules, 1 + 2 * n);
      // Each set: the check's lookup and refresh, and its own arm's update — never another endpoint's rules.
      assert.deepEqual([...new Set(s.refs.values())], [3]);
      assert.equal(s.refs.size, n);
      assert.equal(s.total, 3 * n);
    }
  });

  it('keeps chain names within nft’s limit and stable for long names', () => {
    const long = 'x'.repeat(63);
    const svc = service(long, { clusterIP: '10.96.0.20', ports: [{ name: 'y'.repeat(15), port: 80 }] });
    svc.metadata = { ...svc.metadata, namespace: 'n'.repeat(63) };
    const sl = slice(long, [{ ip: '10.244.1.5' }], [{ name: 'y'.repeat(15), port: 80 }]);
    sl.metadata = { ...sl.metadata, namespace: 'n'.repeat(63) };
    const r = planRuleset([svc], [sl], opts);
    for (const name of [...r.chains.keys(), ...r.sets.keys()]) {
      assert.ok(name.length < 256, `${name} is ${name.length} long`);
      assert.match(name, /^[A-Za-z][A-Za-z0-9_./-]*$/);
    }
    assert.deepEqual([...planRuleset([svc], [sl], opts).chains.keys()], [...r.chains.keys()]);
  });
});
