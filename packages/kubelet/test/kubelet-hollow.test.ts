// A hollow kubit-kubelet (--container-runtime-endpoint=fake://): the real node
// agent and apiserver side on an in-memory runtime, as load tests use by the hundred.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import { type ControlPlane, startControlPlane, startTestKubelet, tempDir, waitFor } from '@kubit/testkit';
import type { Pod } from 'kubernetes-types/core/v1.js';

let cp: ControlPlane;
let client: KubeClient;
let root: { path: string; cleanup: () => Promise<void> };

before(async () => {
  cp = await startControlPlane({ nodes: ['hollow-1'] });
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  root = await tempDir('kubit-kubelet-hollow-');
});

after(async () => {
  client?.close();
  await cp?.stop();
  await root?.cleanup();
});

test('a hollow kubelet (--container-runtime-endpoint=fake://) registers and runs pods in memory', async () => {
  const hollow = 'hollow-1';
  // No containerd: --container-runtime-endpoint=fake://.
  const kubelet = await startTestKubelet(cp, {
    node: hollow,
    dir: root.path,
    nodeIp: '127.0.0.2',
    tls: false,
    rootDir: join(root.path, 'hollow'),
    logFile: join(root.path, 'hollow.log'),
    name: 'kubit-kubelet-hollow',
  });
  try {
    await kubelet.waitReady(client, 60_000, 250);
    await client.create<Pod>(
      resources.pods,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'ghost', namespace: 'default' },
        spec: { nodeName: hollow, containers: [{ name: 'c', image: 'nginx:latest' }] },
      },
      { namespace: 'default' },
    );
    const p = await waitFor(
      'the hollow pod to run',
      async () => {
        const got = await client.get<Pod>(resources.pods, 'ghost', { namespace: 'default' });
        return got.status?.phase === 'Running' ? got : undefined;
      },
      60_000,
      250,
    );
    assert.match(p.status?.podIP ?? '', /^10\.88\./);
    assert.match(p.status?.containerStatuses?.[0]?.containerID ?? '', /^fake:\/\//);
  } finally {
    await kubelet.stop();
  }
});
