// The service-lb-ipam controller over the in-memory cluster: its own writes
// not yet in its cache never hand one address out twice, two Services claiming
// one address are settled oldest-first, and a new controller (a restart) keeps
// every address where it is.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Service } from '@kubit/api';
import { type ResourceRef, resources as res } from '@kubit/client';
import { RecordingEvents } from '../src/events.js';
import { LoadBalancerIpamController } from '../src/loadbalancer/controller.js';
import { parsePool } from '../src/loadbalancer/pool.js';
import { FakeCluster } from '../src/testing.js';
import type { KubeObject } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const pool = parsePool('10.0.0.1-10.0.0.2');

function lb(name: string, ip?: string): Service {
  return {
    metadata: { name, namespace: 'default' },
    spec: { type: 'LoadBalancer', ports: [{ port: 80 }] },
    status: ip ? { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } : {},
  };
}

async function controller(cluster: FakeCluster) {
  const informers = newFactory(cluster);
  const events = new RecordingEvents();
  const c = new LoadBalancerIpamController(cluster, informers, { pool, events });
  await startInformers(informers);
  return { c, events, stop: () => informers.stop() };
}

const addresses = (cluster: FakeCluster) =>
  Object.fromEntries(
    cluster
      .all<Service>(res.services)
      .map((s) => [s.metadata?.name, s.status?.loadBalancer?.ingress?.map((i) => i.ip).join(',') ?? '']),
  );

describe('service-lb-ipam', () => {
  test('an address written but not yet seen in the cache counts as taken', async () => {
    const cluster = new FakeCluster();
    // Status writes answer at once but reach the store (and so the cache) only on flush(),
    // as when the watch lags behind the write.
    const delayed: Service[] = [];
    const lagging = Object.create(cluster) as FakeCluster;
    lagging.update = async <T extends KubeObject>(
      r: ResourceRef,
      obj: T,
      sub?: 'status' | 'finalize',
    ): Promise<T> => {
      if (r.resource !== 'services' || sub !== 'status') return cluster.update(r, obj, sub);
      delayed.push(obj as Service);
      return obj;
    };
    const flush = async () => {
      for (const s of delayed.splice(0)) await cluster.update(res.services, s, 'status');
    };
    await cluster.create(res.services, 'default', lb('b'));
    const informers = newFactory(cluster);
    const c = new LoadBalancerIpamController(lagging, informers, { pool, events: new RecordingEvents() });
    await startInformers(informers);
    await c.reconcile('default/b');
    assert.equal(delayed[0]?.status?.loadBalancer?.ingress?.[0]?.ip, '10.0.0.1');
    // A Service asking for that very address arrives before b's write shows.
    await cluster.create(res.services, 'default', {
      ...lb('c'),
      spec: { ...lb('c').spec, loadBalancerIP: '10.0.0.1' },
    });
    await settle([]);
    await c.reconcile('default/c');
    assert.equal(delayed.length, 1, 'c was given nothing');
    await flush();
    await settle([c]);
    assert.deepEqual(addresses(cluster), { b: '10.0.0.1', c: '' });
    await informers.stop();
  });

  test('two Services on one address: the older keeps it; the pool runs out; a restart moves nothing', async () => {
    // The in-memory apiserver stamps creationTimestamp from its clock.
    const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
    const cluster = new FakeCluster({ now: () => clock.now });
    await cluster.create(res.services, 'default', lb('old', '10.0.0.2'));
    clock.now += 1000;
    await cluster.create(res.services, 'default', lb('young', '10.0.0.2'));
    clock.now += 1000;
    await cluster.create(res.services, 'default', lb('late'));
    const first = await controller(cluster);
    await settle([first.c]);
    assert.deepEqual(addresses(cluster), { young: '10.0.0.1', old: '10.0.0.2', late: '' });
    const failed = first.events.events.filter((e) => e.reason === 'AllocationFailed');
    assert.equal(failed.length, 1, 'warned once');
    assert.match(
      failed[0].message,
      /no available IPs: all 2 addresses of the pool 10\.0\.0\.1-10\.0\.0\.2 are in use/,
    );
    await first.stop();
    const second = await controller(cluster);
    await settle([second.c]);
    assert.deepEqual(addresses(cluster), { young: '10.0.0.1', old: '10.0.0.2', late: '' });
    assert.equal(second.events.reasons().filter((r) => r === 'IPAllocated').length, 0, 'nothing re-assigned');
    await second.stop();
  });
});
