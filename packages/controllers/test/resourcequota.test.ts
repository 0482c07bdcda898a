// The resourcequota controller over the fake cluster: a quota's status.hard
// mirrors spec.hard and status.used follows the pods, configmaps and claims of
// its namespace (terminal pods not counted), other namespaces left out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resources as res } from '@kubit/client';
import { ResourceQuotaController } from '../src/resourcequota/controller.js';
import { FakeCluster } from '../src/testing.js';
import type { KubeObject } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const pod = (name: string, ns: string, cpu?: string): KubeObject =>
  ({
    metadata: { name, namespace: ns },
    spec: { containers: [{ name: 'c', image: 'x', ...(cpu ? { resources: { requests: { cpu } } } : {}) }] },
  }) as KubeObject;

async function statusOf(c: FakeCluster, ns: string, name: string) {
  return (await c.get<KubeObject & { status?: unknown }>(res.resourcequotas, ns, name)).status;
}

test('keeps status.hard and status.used of each quota', async () => {
  const cluster = new FakeCluster();
  const informers = newFactory(cluster);
  const ctl = new ResourceQuotaController(cluster, informers);
  await startInformers(informers);
  await cluster.create(res.resourcequotas, 'a', {
    metadata: { name: 'q', namespace: 'a' },
    spec: { hard: { pods: '3', 'requests.cpu': '2', 'count/configmaps': '5', 'requests.storage': '10Gi' } },
  } as KubeObject);
  await settle([ctl]);
  assert.deepEqual(await statusOf(cluster, 'a', 'q'), {
    hard: { pods: '3', 'requests.cpu': '2', 'count/configmaps': '5', 'requests.storage': '10Gi' },
    used: { pods: '0', 'requests.cpu': '0', 'count/configmaps': '0', 'requests.storage': '0' },
  });
  await cluster.create(res.pods, 'a', pod('p1', 'a', '500m'));
  await cluster.create(res.pods, 'a', pod('p2', 'a', '250m'));
  await cluster.create(res.pods, 'b', pod('elsewhere', 'b', '1'));
  await cluster.create(res.configmaps, 'a', { metadata: { name: 'cm', namespace: 'a' } } as KubeObject);
  await cluster.create(res.persistentvolumeclaims, 'a', {
    metadata: { name: 'claim', namespace: 'a' },
    spec: { resources: { requests: { storage: '1Gi' } } },
  } as KubeObject);
  await settle([ctl]);
  assert.deepEqual((await statusOf(cluster, 'a', 'q')) as unknown, {
    hard: { pods: '3', 'requests.cpu': '2', 'count/configmaps': '5', 'requests.storage': '10Gi' },
    used: { pods: '2', 'requests.cpu': '750m', 'count/configmaps': '1', 'requests.storage': '1Gi' },
  });
  // A quota with a scope counts only the pods it takes in.
  await cluster.create(res.resourcequotas, 'a', {
    metadata: { name: 'terminating', namespace: 'a' },
    spec: { hard: { pods: '5' }, scopes: ['Terminating'] },
  } as KubeObject);
  await cluster.create(res.pods, 'a', {
    ...pod('deadline', 'a', '100m'),
    spec: { activeDeadlineSeconds: 60, containers: [{ name: 'c', image: 'x' }] },
  } as KubeObject);
  await settle([ctl]);
  assert.deepEqual(((await statusOf(cluster, 'a', 'terminating')) as { used: unknown }).used, { pods: '1' });
  await cluster.delete(res.pods, 'a', 'deadline');
  await settle([ctl]);
  // A pod that ended uses nothing any more.
  const p1 = await cluster.get<KubeObject & { status?: unknown }>(res.pods, 'a', 'p1');
  await cluster.update(res.pods, { ...p1, status: { phase: 'Succeeded' } }, 'status');
  await settle([ctl]);
  const used = ((await statusOf(cluster, 'a', 'q')) as { used: Record<string, string> }).used;
  assert.equal(used.pods, '1');
  assert.equal(used['requests.cpu'], '250m');
  ctl.stop();
});
