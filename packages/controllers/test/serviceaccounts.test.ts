// The serviceaccount controller and the root CA publisher, on the in-memory cluster.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resources as res } from '@kubit/client';
import { ROOT_CA_CONFIGMAP, RootCAPublisher, ServiceAccountsController } from '../src/serviceaccounts.js';
import { FakeCluster } from '../src/testing.js';
import type { ConfigMap, Namespace } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

async function setup() {
  const cluster = new FakeCluster();
  const informers = newFactory(cluster);
  const controllers = [
    new ServiceAccountsController(cluster, informers),
    new RootCAPublisher(cluster, informers, CA),
  ];
  await startInformers(informers);
  return { cluster, controllers };
}

test('every active namespace gets a default ServiceAccount and kube-root-ca.crt', async () => {
  const { cluster, controllers } = await setup();
  await cluster.create(res.namespaces, undefined, { metadata: { name: 'team' } } satisfies Namespace);
  await cluster.create(res.namespaces, undefined, {
    metadata: { name: 'leaving', deletionTimestamp: new Date().toISOString() },
    status: { phase: 'Terminating' },
  } satisfies Namespace);
  await settle(controllers);
  assert.deepEqual(
    cluster.all(res.serviceaccounts, 'team').map((s) => s.metadata?.name),
    ['default'],
  );
  const cm = cluster.all(res.configmaps, 'team')[0] as ConfigMap;
  assert.equal(cm.metadata?.name, ROOT_CA_CONFIGMAP);
  assert.deepEqual(cm.data, { 'ca.crt': CA });
  assert.match(cm.metadata?.annotations?.['kubernetes.io/description'] ?? '', /verify the kube-apiserver/);
  assert.equal(
    cluster.all(res.serviceaccounts, 'leaving').length,
    0,
    'nothing is made in a terminating namespace',
  );
  assert.equal(cluster.all(res.configmaps, 'leaving').length, 0);
});

test('a deleted default account comes back; an edited CA bundle is written back', async () => {
  const { cluster, controllers } = await setup();
  await cluster.create(res.namespaces, undefined, { metadata: { name: 'team' } } satisfies Namespace);
  await settle(controllers);
  await cluster.delete(res.serviceaccounts, 'team', 'default');
  const cm = (await cluster.get<ConfigMap>(res.configmaps, 'team', ROOT_CA_CONFIGMAP)) as ConfigMap;
  await cluster.update(res.configmaps, { ...cm, data: { 'ca.crt': 'tampered', extra: 'x' } });
  await settle(controllers);
  assert.equal(cluster.all(res.serviceaccounts, 'team').length, 1);
  assert.deepEqual((await cluster.get<ConfigMap>(res.configmaps, 'team', ROOT_CA_CONFIGMAP)).data, {
    'ca.crt': CA,
  });
});
