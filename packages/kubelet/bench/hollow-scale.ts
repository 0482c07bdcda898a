// A quick scale check of kubit-hollow's engine: N hollow nodes and P pods
// against a real control plane, printing how long registration and pod
// start-up took and the CPU this process used. Not a timed test.
//   node --conditions=kubit-source --import tsx packages/kubelet/bench/hollow-scale.ts [nodes] [pods]
import { cpuUsage, memoryUsage } from 'node:process';
import { KubeClient, resources } from '@kubit/client';
import { startControlPlane, waitFor } from '@kubit/testkit';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { startHollowNodes } from '../src/index.js';

const nodes = Number(process.argv[2] ?? 1000);
const pods = Number(process.argv[3] ?? 2000);
const cp = await startControlPlane();
const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
const t0 = Date.now();
const cpu0 = cpuUsage();
const hollow = await startHollowNodes({ nodes, kubeconfig: cp.kubeconfigPath, log: undefined });
try {
  await waitFor(
    `${nodes} nodes Ready`,
    async () => {
      const list = await client.list<Node>(resources.nodes);
      return (
        list.items.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          .length === nodes
      );
    },
    600_000,
    1000,
  );
  const tReady = Date.now() - t0;
  const t1 = Date.now();
  for (let i = 0; i < pods; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, pods - i) }, (_, j) =>
        client.create<Pod>(
          resources.pods,
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: `p-${i + j}`, namespace: 'default' },
            spec: { nodeName: `hollow-${(i + j) % nodes}`, containers: [{ name: 'c', image: 'nginx' }] },
          },
          { namespace: 'default' },
        ),
      ),
    );
  }
  await waitFor('pods Running', async () => hollow.stats().podsRunning >= pods, 600_000, 500);
  const tPods = Date.now() - t1;
  await new Promise((r) => setTimeout(r, 20_000)); // steady state: heartbeats only
  const cpu = cpuUsage(cpu0);
  const wall = (Date.now() - t0) / 1000;
  console.log(
    JSON.stringify({
      nodes,
      pods,
      nodesReadyMs: tReady,
      podsRunningMs: tPods,
      cpuPercentOfOneCore: Math.round(((cpu.user + cpu.system) / 1e6 / wall) * 100),
      rssMiB: Math.round(memoryUsage().rss / 2 ** 20),
      stats: hollow.stats(),
      load: (await import('node:os')).loadavg(),
    }),
  );
} finally {
  await hollow.stop();
  client.close();
  await cp.stop();
}
