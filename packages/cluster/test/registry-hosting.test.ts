// The launcher's ConfigMap naming the cluster's registry (KEP-1755), on a real control plane.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { load } from 'js-yaml';
import { publishRegistryHosting, REGISTRY_HOSTING } from '../src/registry-hosting.js';

let cp: ControlPlane;
let client: KubeClient;
before(async () => {
  cp = await startControlPlane();
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
});
after(async () => {
  client?.close();
  await cp?.stop();
});

test('publishes kube-public/local-registry-hosting, and publishing again moves it', async () => {
  const read = async () => {
    const cm = await client.get<{ kind?: string; data?: Record<string, string> }>(
      resources.configmaps,
      REGISTRY_HOSTING.name,
      {
        namespace: REGISTRY_HOSTING.namespace,
      },
    );
    return (load(cm.data?.['localRegistryHosting.v1'] ?? '') as { host?: string }).host;
  };
  await publishRegistryHosting(client, '10.199.3.1:5000');
  assert.equal(await read(), '10.199.3.1:5000');
  await publishRegistryHosting(client, '10.199.3.1:5001');
  assert.equal(await read(), '10.199.3.1:5001');
});
