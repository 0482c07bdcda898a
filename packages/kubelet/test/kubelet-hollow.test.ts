// A hollow kubit-kubelet (--container-runtime-endpoint=fake://): the real node
// agent and apiserver side on an in-memory runtime, as load tests use by the hundred.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  daemonCommand,
  freePort,
  startControlPlane,
  startProcess,
  tempDir,
  waitFor,
} from '@kubit/testkit';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';

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
  const cmd = daemonCommand('kubelet', 'main.ts');
  const proc = startProcess({
    command: cmd.command,
    args: [
      ...cmd.args,
      `--kubeconfig=${await cp.kubeconfigForNode(hollow)}`,
      '--container-runtime-endpoint=fake://',
      `--hostname-override=${hollow}`,
      '--node-ip=127.0.0.2',
      '--address=127.0.0.1',
      `--port=${await freePort()}`,
      `--root-dir=${join(root.path, 'hollow')}`,
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(root.path, 'hollow.log'),
    name: 'kubit-kubelet-hollow',
  });
  try {
    await waitFor(
      'the hollow node to be Ready',
      async () => {
        const n = await client.get<Node>(resources.nodes, hollow).catch(() => undefined);
        return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      },
      60_000,
      250,
    );
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
    await proc.stop();
  }
});
