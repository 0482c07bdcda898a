// The incremental plan against the full one: random sequences of changes to
// Services and EndpointSlices (shared endpoint addresses, colliding external IPs and
// node ports, policies, affinity, UDP, slices moving between Services), each applied
// as the proxier applies it (re-planning only the Services touched), must leave
// exactly the ruleset planRuleset plans from scratch, and write exactly the
// operations a full diff would. The incremental scripts are also applied, one after
// the other, to a real nft table, which must end as a from-scratch apply leaves it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { EndpointSlice, Service } from '@kubit/api';
import { SERVICE_NAME_LABEL } from '@kubit/api';
import { deltaScript, diffScript } from '../src/differ.js';
import { IncrementalPlan } from '../src/incremental.js';
import { NftRunner } from '../src/nft.js';
import { type PlannerOptions, planRuleset, serviceKey, sliceServiceKey } from '../src/planner.js';
import { fullScript, type Ruleset } from '../src/ruleset.js';
import { opts } from './fixtures.js';
import { createNetns, deleteNetns, normalizedTable } from './netns.js';

/** mulberry32: a small seeded generator, so a failure names the seed that reproduces it. */
function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const chance = (p: number) => next() < p;
  return { int, pick, chance };
}
type Rng = ReturnType<typeof rng>;

const NAMES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].flatMap((n) => [`default/${n}`, `other/${n}`]);
const EXTERNAL = ['192.0.2.1', '192.0.2.2', '192.0.2.3'];
const NODE_PORTS = [30001, 30002, 30003, 30004];
const ENDPOINTS = Array.from({ length: 12 }, (_, i) => `10.244.${i % 3}.${10 + i}`);

function randomService(r: Rng, key: string, index: number): Service {
  const [namespace, name] = key.split('/');
  const type = r.pick(['ClusterIP', 'ClusterIP', 'NodePort', 'LoadBalancer', 'LoadBalancer', 'ExternalName']);
  const ports = [
    { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 },
    { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 },
    { name: 'https', port: 443, protocol: 'TCP', targetPort: 8443 },
  ]
    .filter(() => r.chance(0.6))
    .map((p) =>
      type === 'NodePort' || type === 'LoadBalancer' ? { ...p, nodePort: r.pick(NODE_PORTS) } : p,
    );
  const lb =
    type === 'LoadBalancer' && r.chance(0.7)
      ? { loadBalancer: { ingress: EXTERNAL.filter(() => r.chance(0.5)).map((ip) => ({ ip })) } }
      : undefined;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      namespace,
      name,
      ...(r.chance(0.05) ? { labels: { 'service.kubernetes.io/service-proxy-name': 'other' } } : {}),
    },
    spec: {
      type,
      // Now and then two Services share a cluster IP (never valid, but the plan must still agree).
      clusterIP: r.chance(0.1) ? 'None' : `10.96.0.${r.chance(0.05) ? 1 : 10 + index}`,
      ports,
      ...(r.chance(0.3) ? { externalIPs: EXTERNAL.filter(() => r.chance(0.4)) } : {}),
      ...(r.chance(0.3) ? { externalTrafficPolicy: 'Local' } : {}),
      ...(r.chance(0.3) ? { internalTrafficPolicy: 'Local' } : {}),
      ...(r.chance(0.25)
        ? {
            sessionAffinity: 'ClientIP',
            ...(r.chance(0.5)
              ? { sessionAffinityConfig: { clientIP: { timeoutSeconds: r.pick([60, 120]) } } }
              : {}),
          }
        : {}),
    },
    ...(lb ? { status: lb } : {}),
  };
}

function randomSlice(r: Rng, name: string, namespace: string): EndpointSlice {
  const svcName = r.pick(NAMES.filter((k) => k.startsWith(`${namespace}/`))).split('/')[1];
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name,
      namespace,
      labels: r.chance(0.05) ? {} : { [SERVICE_NAME_LABEL]: svcName },
    },
    addressType: r.chance(0.05) ? 'IPv6' : 'IPv4',
    ports: [
      { name: 'http', port: 8080, protocol: 'TCP' },
      { name: 'dns', port: 5353, protocol: 'UDP' },
      { name: 'https', port: 8443, protocol: 'TCP' },
    ].filter(() => r.chance(0.7)),
    endpoints: ENDPOINTS.filter(() => r.chance(0.3)).map((ip) => {
      const ready = r.chance(0.75);
      return {
        addresses: [ip],
        nodeName: r.pick(['node-a', 'node-b']),
        conditions: { ready, serving: ready || r.chance(0.5), terminating: !ready && r.chance(0.6) },
      };
    }),
  };
}

/** The world the caches hold, changed at random; each change says which Services it touched. */
class World {
  services = new Map<string, Service>();
  slices = new Map<string, EndpointSlice>();
  constructor(private readonly r: Rng) {}

  change(): string[] {
    const r = this.r;
    if (r.chance(0.4)) {
      const key = r.pick(NAMES);
      if (this.services.has(key) && r.chance(0.25)) this.services.delete(key);
      else this.services.set(key, randomService(r, key, NAMES.indexOf(key)));
      return [key];
    }
    const namespace = r.pick(['default', 'other']);
    const key = `${namespace}/slice-${r.int(10)}`;
    const old = this.slices.get(key);
    const touched = old ? [sliceServiceKey(old)] : [];
    if (old && r.chance(0.25)) this.slices.delete(key);
    else {
      const s = randomSlice(r, key.split('/')[1], namespace);
      this.slices.set(key, s);
      touched.push(sliceServiceKey(s));
    }
    return touched.filter((k): k is string => k !== undefined);
  }

  plan(o: PlannerOptions): Ruleset {
    return planRuleset([...this.services.values()], [...this.slices.values()], o);
  }

  slicesFor = (key: string) => [...this.slices.values()].filter((s) => sliceServiceKey(s) === key);
}

/** A ruleset as comparable data: everything the kernel would hold, plus udp and stats; no order but rules'. */
function canonical(r: Ruleset): unknown {
  const sorted = <T>(m: Map<string, T>) => [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return {
    chains: sorted(r.chains).map(([n, c]) => [n, c.base ?? null, c.rules]),
    sets: sorted(r.sets).map(([n, s]) => [
      n,
      s.type,
      s.flags ?? [],
      s.timeoutSeconds,
      [...s.elements].sort(),
    ]),
    maps: sorted(r.maps).map(([n, m]) => [n, m.type, sorted(m.elements)]),
    udp: sorted(r.udp),
    stats: r.stats,
  };
}

/** A script as a multiset of single operations (element statements split one element each). */
function operations(script: string): string[] {
  const out: string[] = [];
  for (const line of script.split('\n').filter(Boolean)) {
    const m = /^((?:add|delete) element \S+ \S+ \S+) \{ (.*) \}$/.exec(line);
    if (m) for (const e of m[2].split(', ')) out.push(`${m[1]} ${e}`);
    else out.push(line);
  }
  return out.sort();
}

const variants: [string, PlannerOptions][] = [
  ['defaults', opts],
  [
    'two cluster CIDRs, node-port addresses',
    { ...opts, clusterCidrs: ['10.244.0.0/16', '10.245.0.0/16'], nodePortAddresses: ['192.168.1.0/24'] },
  ],
  ['--masquerade-all, no cluster CIDR', { ...opts, clusterCidrs: [], masqueradeAll: true }],
];

describe('incremental plan', () => {
  for (const [what, o] of variants) {
    it(`equals the full plan after every step of random changes (${what})`, () => {
      for (let seed = 1; seed <= 6; seed++) {
        const r = rng(seed * 7919 + what.length);
        const world = new World(r);
        // Start from a populated world, as a proxy's first sync does.
        for (let i = 0; i < 30; i++) world.change();
        const inc = IncrementalPlan.full([...world.services.values()], [...world.slices.values()], o);
        let full = world.plan(o);
        assert.deepEqual(canonical(inc.ruleset), canonical(full), `seed ${seed}: the full build`);
        assert.equal(diffScript(full, inc.ruleset), '', `seed ${seed}`);
        for (let step = 0; step < 150; step++) {
          const touched = new Set<string>();
          for (let n = 1 + r.int(4); n > 0; n--) for (const k of world.change()) touched.add(k);
          const change = inc.update(touched, (k) => world.services.get(k), world.slicesFor);
          const next = world.plan(o);
          const where = `seed ${seed}, step ${step}, touched ${[...touched].join(' ')}`;
          assert.deepEqual(canonical(inc.ruleset), canonical(next), where);
          assert.deepEqual(
            operations(deltaScript(change.delta, inc.ruleset)),
            operations(diffScript(full, next)),
            `${where}: the incremental script`,
          );
          // The UDP ports whose endpoints changed are exactly those the full comparison finds.
          const udpChanged = [...new Set([...full.udp.keys(), ...next.udp.keys()])]
            .filter((k) => JSON.stringify(full.udp.get(k)) !== JSON.stringify(next.udp.get(k)))
            .sort();
          assert.deepEqual([...change.udp.keys()].sort(), udpChanged, `${where}: udp`);
          full = next;
        }
      }
    });
  }

  it('keeps the keys it was given and nothing else: an untouched Service stays as it was planned', () => {
    const r = rng(42);
    const world = new World(r);
    for (let i = 0; i < 40; i++) world.change();
    const inc = IncrementalPlan.full([...world.services.values()], [...world.slices.values()], opts);
    const before = canonical(inc.ruleset);
    // The caches change, but nobody says so: nothing is re-planned.
    for (let i = 0; i < 10; i++) world.change();
    const change = inc.update([], (k) => world.services.get(k), world.slicesFor);
    assert.equal(deltaScript(change.delta, inc.ruleset), '');
    assert.deepEqual(canonical(inc.ruleset), before);
  });

  describe('against the real nft', () => {
    let ns = '';
    let check = '';
    let nft: NftRunner;
    before(() => {
      ns = createNetns();
      check = createNetns();
      nft = new NftRunner({ netns: ns });
    });
    after(() => {
      deleteNetns(ns);
      deleteNetns(check);
    });

    it('applying each incremental script in turn ends where a from-scratch apply does', async () => {
      const r = rng(2024);
      const world = new World(r);
      for (let i = 0; i < 30; i++) world.change();
      const inc = IncrementalPlan.full([...world.services.values()], [...world.slices.values()], opts);
      await nft.apply(fullScript(inc.ruleset));
      for (let step = 0; step < 60; step++) {
        const touched = new Set<string>();
        for (let n = 1 + r.int(3); n > 0; n--) for (const k of world.change()) touched.add(k);
        const change = inc.update(touched, (k) => world.services.get(k), world.slicesFor);
        const script = deltaScript(change.delta, inc.ruleset);
        if (script)
          await nft.apply(script).catch((err) => assert.fail(`step ${step}: ${err.message}\n${script}`));
      }
      await new NftRunner({ netns: check }).apply(fullScript(world.plan(opts)));
      assert.equal(normalizedTable(ns), normalizedTable(check));
    });
  });
});

// serviceKey is the proxier's key for a Service: the same "namespace/name" the informer's store uses.
assert.equal(serviceKey({ metadata: { namespace: 'default', name: 'web' } } as Service), 'default/web');
