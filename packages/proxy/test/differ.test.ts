// The differ, checked twice: the scripts it writes are minimal (only what
// changed), and they are right against the real nft — every script passes
// `nft -c`, and applying the incremental script to the previous state leaves
// exactly the table a from-scratch apply of the desired state leaves.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { EndpointSlice, Service } from '@kubit/api';
import { diffScript } from '../src/differ.js';
import { NftRunner } from '../src/nft.js';
import { planRuleset } from '../src/planner.js';
import { deleteTableScript, fullScript, TABLE_FAMILY, TABLE_NAME } from '../src/ruleset.js';
import { opts, service, slice } from './fixtures.js';
import { createNetns, deleteNetns, inNetns, normalizedTable } from './netns.js';

type World = { services: Service[]; slices: EndpointSlice[] };
const plan = (w: World) => planRuleset(w.services, w.slices, opts);

const base: World = {
  services: [
    service('web', { clusterIP: '10.96.0.20', sessionAffinity: 'ClientIP' }),
    service(
      'api',
      {
        clusterIP: '10.96.0.21',
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }],
      },
      { status: { loadBalancer: { ingress: [{ ip: '192.168.240.5' }] } } },
    ),
    service('dns', { clusterIP: '10.96.0.10', ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] }),
  ],
  slices: [
    slice('web', [{ ip: '10.244.1.5' }, { ip: '10.244.2.5', node: 'node-b' }]),
    slice('api', [{ ip: '10.244.1.6' }]),
  ],
};

const withWebEndpoints = (ips: string[]): World => ({
  services: base.services,
  slices: [
    slice(
      'web',
      ips.map((ip) => ({ ip })),
    ),
    base.slices[1],
  ],
});

const lines = (script: string) => script.split('\n').filter(Boolean);

describe('differ', () => {
  let ns = '';
  let nft: NftRunner;
  before(() => {
    ns = createNetns();
    nft = new NftRunner({ netns: ns });
  });
  after(() => deleteNetns(ns));

  /** Applies `from` fully, then the diff to `to`; returns the diff. Asserts the end state is `to`'s. */
  async function roundTrip(from: World, to: World): Promise<string> {
    const script = diffScript(plan(from), plan(to));
    await nft.apply(deleteTableScript());
    await nft.apply(fullScript(plan(to)));
    const expected = normalizedTable(ns);
    await nft.apply(fullScript(plan(from)));
    await nft.check(script);
    await nft.apply(script);
    assert.equal(normalizedTable(ns), expected, `the incremental script gave another table:\n${script}`);
    return script;
  }

  it('writes nothing when nothing changed', () => {
    assert.equal(diffScript(plan(base), plan(base)), '');
  });

  it('the first sync replaces the whole table in one script, and twice gives no duplicates', async () => {
    const script = diffScript(undefined, plan(base));
    assert.deepEqual(lines(script).slice(0, 2), [
      `add table ${TABLE_FAMILY} ${TABLE_NAME}`,
      `delete table ${TABLE_FAMILY} ${TABLE_NAME}`,
    ]);
    await nft.check(script);
    await nft.apply(script);
    const once = normalizedTable(ns);
    await nft.apply(script);
    assert.equal(normalizedTable(ns), once);
  });

  it('a second table (--nft-table) lives beside the first: its scripts and its removal name only it', async () => {
    const other = 'kubit-proxy-other';
    await nft.apply(fullScript(plan(base)));
    const first = normalizedTable(ns);
    const otherPlan = planRuleset([], [], { ...opts, tableName: other });
    const script = diffScript(undefined, otherPlan);
    assert.ok(
      lines(script).every((l) => !l.includes(` ${TABLE_NAME} `) || l.includes(` ${other} `)),
      `only ${other} is named:\n${script}`,
    );
    await nft.apply(script);
    assert.ok(await nft.listTable(TABLE_FAMILY, other), 'the second table is there');
    assert.equal(normalizedTable(ns), first, 'the first table is untouched');
    await nft.apply(deleteTableScript(other));
    assert.equal(await nft.listTable(TABLE_FAMILY, other), undefined);
    assert.equal(normalizedTable(ns), first);
  });

  it('an applied and listed ruleset parses back with nft -f', async () => {
    await nft.apply(fullScript(plan(base)));
    const listed = await nft.listTable(TABLE_FAMILY, TABLE_NAME);
    assert.ok(listed?.includes('numgen random mod 2'));
    assert.ok(listed?.includes('@hairpin-ips'));
    await nft.check(listed ?? '');
    inNetns(ns, 'nft', ['-f', '-'], `${deleteTableScript()}${listed}`);
    await nft.apply(fullScript(plan(base)));
  });

  it('adding an endpoint touches only that service’s chains', async () => {
    const script = await roundTrip(
      withWebEndpoints(['10.244.1.5', '10.244.2.5']),
      withWebEndpoints(['10.244.1.5', '10.244.2.5', '10.244.3.5']),
    );
    const l = lines(script);
    const hairpin = 'add element ip kubit-proxy hairpin-ips { 10.244.3.5 . 10.244.3.5 }';
    for (const line of l)
      assert.ok(line.includes('/web/') || line === hairpin, `touches another service: ${line}`);
    assert.ok(l.includes(hairpin), script);
    assert.ok(l.some((x) => x.startsWith('add set') && x.includes('affinity-') && x.includes('10.244.3.5')));
    assert.ok(l.some((x) => /^flush chain ip kubit-proxy service-\S+\/web\//.test(x)));
    assert.ok(
      l.some((x) => /^add rule ip kubit-proxy service-\S+\/web\/.* dnat to 10\.244\.3\.5:8080$/.test(x)),
    );
    assert.ok(!l.some((x) => x.startsWith('add chain')), 'no new chain for an endpoint');
    assert.equal(l.filter((x) => x.includes('element')).length, 1, 'the service-ips element stays as it was');
  });

  it('removing an endpoint removes its rules, affinity set and hairpin element only', async () => {
    const script = await roundTrip(
      withWebEndpoints(['10.244.1.5', '10.244.2.5']),
      withWebEndpoints(['10.244.1.5']),
    );
    const l = lines(script);
    assert.ok(l.some((x) => x.startsWith('delete set') && x.includes('10.244.2.5')));
    assert.ok(l.includes('delete element ip kubit-proxy hairpin-ips { 10.244.2.5 . 10.244.2.5 }'), script);
    assert.ok(!l.some((x) => x.startsWith('delete chain')), script);
    // The remaining endpoint's affinity set (its clients' memory) and hairpin element are left alone.
    assert.ok(
      !l.some((x) => /^(add|delete) set ip kubit-proxy affinity-\S+__10\.244\.1\.5\/8080/.test(x)),
      script,
    );
    assert.ok(!l.some((x) => x.includes('element') && x.includes('10.244.1.5')), script);
  });

  it('the last endpoint going turns the service into a reject, and back', async () => {
    const script = await roundTrip(withWebEndpoints(['10.244.1.5']), withWebEndpoints([]));
    assert.ok(lines(script).some((x) => x.startsWith('add element ip kubit-proxy no-endpoint-services')));
    assert.ok(lines(script).some((x) => x.startsWith('delete element ip kubit-proxy service-ips')));
    await roundTrip(withWebEndpoints([]), withWebEndpoints(['10.244.1.5']));
  });

  it('deleting a service removes its elements and chains and nothing else', async () => {
    const to: World = {
      services: base.services.filter((s) => s.metadata?.name !== 'api'),
      slices: base.slices,
    };
    const script = await roundTrip(base, to);
    for (const line of lines(script)) {
      assert.ok(
        line.includes('/api/') ||
          line.includes('10.96.0.21') ||
          line.includes('30080') ||
          line.includes('192.168.240.5') ||
          // api's endpoint, no longer anyone's: its hairpin element goes too.
          line === 'delete element ip kubit-proxy hairpin-ips { 10.244.1.6 . 10.244.1.6 }',
        `touches something else: ${line}`,
      );
    }
  });

  it('changing a service port, a node port and the affinity timeout all apply cleanly', async () => {
    const changed = structuredClone(base);
    changed.services[1].spec = {
      ...changed.services[1].spec,
      ports: [{ name: 'http', port: 8080, nodePort: 30081 }],
    };
    changed.services[0].spec = {
      ...changed.services[0].spec,
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 5 } },
    };
    changed.services.push(
      service('new', { clusterIP: '10.96.0.30', type: 'NodePort', ports: [{ port: 81, nodePort: 30090 }] }),
    );
    await roundTrip(base, changed);
    await roundTrip(changed, base);
  });
});
