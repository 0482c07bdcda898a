import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { parseCidr, SubnetSet } from '../src/cidr.js';
import { NodeIpamController } from '../src/nodeipam.js';
import { FakeCluster } from '../src/testing.js';
import type { Node } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const node = (name: string, podCIDR?: string): Node => ({
  metadata: { name },
  spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {},
});

async function setup(cluster = new FakeCluster(), clusterCIDR = '10.244.0.0/16', nodeCIDRMaskSize = 24) {
  const informers = newFactory(cluster);
  const ipam = new NodeIpamController(cluster, informers, { clusterCIDR, nodeCIDRMaskSize });
  await startInformers(informers);
  return { cluster, informers, ipam };
}

const cidrs = (c: FakeCluster): Record<string, [string | undefined, string[] | undefined]> =>
  Object.fromEntries(
    c.all<Node>(res.nodes).map((n) => [n.metadata!.name!, [n.spec?.podCIDR, n.spec?.podCIDRs]]),
  );

describe('CIDR arithmetic', () => {
  test('subnets of a cluster CIDR', () => {
    const s = new SubnetSet(parseCidr('10.244.0.0/16'), 24);
    assert.equal(s.count, 256);
    assert.equal(s.subnet(0), '10.244.0.0/24');
    assert.equal(s.subnet(255), '10.244.255.0/24');
    assert.equal(s.indexOf('10.244.7.0/24'), 7);
    assert.equal(s.indexOf('10.245.7.0/24'), undefined);
    assert.equal(s.indexOf('10.244.7.0/25'), undefined);
    const t = new SubnetSet(parseCidr('10.0.0.0/8'), 26);
    assert.equal(t.subnet(5), '10.0.1.64/26');
    assert.throws(() => parseCidr('10.0.0.0'), /invalid CIDR address: 10.0.0.0/);
    assert.throws(() => parseCidr('300.0.0.0/8'), /invalid CIDR/);
    assert.throws(() => new SubnetSet(parseCidr('10.244.0.0/16'), 8), /must not be smaller/);
  });
});

describe('node IPAM controller', () => {
  test('gives each node its own /24 from the cluster CIDR', async () => {
    const { cluster, informers, ipam } = await setup();
    for (const n of ['a', 'b', 'c']) await cluster.create(res.nodes, undefined, node(n));
    await settle([ipam]);
    const got = cidrs(cluster);
    const all = Object.values(got).map(([c, cs]) => {
      assert.deepEqual(cs, [c]);
      return c;
    });
    assert.equal(new Set(all).size, 3);
    for (const c of all) assert.match(c!, /^10\.244\.\d+\.0\/24$/);
    informers.stop();
  });

  test('rebuilds the map from existing nodes at start, and reuses a deleted node’s subnet', async () => {
    const cluster = new FakeCluster();
    await cluster.create(res.nodes, undefined, node('old-0', '10.244.0.0/24'));
    await cluster.create(res.nodes, undefined, node('old-1', '10.244.1.0/24'));
    await cluster.create(res.nodes, undefined, node('new'));
    const { informers, ipam } = await setup(cluster, '10.244.0.0/23', 24);
    await settle([ipam]);
    // /23 holds two /24s, both taken: the new node must wait.
    assert.equal(cidrs(cluster).new[0], undefined);
    await cluster.delete(res.nodes, undefined, 'old-0');
    await settle([ipam]);
    // The failed allocation retries with backoff; run it now.
    await ipam.reconcile('new');
    assert.equal(cidrs(cluster).new[0], '10.244.0.0/24');
    informers.stop();
  });

  test('reports a full range clearly', async () => {
    const { cluster, informers, ipam } = await setup(new FakeCluster(), '10.1.0.0/24', 25);
    for (const n of ['a', 'b']) await cluster.create(res.nodes, undefined, node(n));
    await settle([ipam]);
    await cluster.create(res.nodes, undefined, node('c'));
    await new Promise((r) => setImmediate(r));
    await assert.rejects(ipam.reconcile('c'), /no remaining CIDRs left to allocate/);
    informers.stop();
  });
});
