// The resourcequota controller on a real stack (testkit's workload cluster:
// kubit-apiserver, kubit-controller-manager with the resourcequota controller,
// the scheduler and a hollow node): a quota's status shows its hard limits and
// what the namespace uses, and follows pods as they come and go; the apiserver's
// admission refuses the pod past the quota.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Pod } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';
import { w } from './cm-process.js';

const NS = 'default';
let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 1, controllers: 'resourcequota' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});
after(async () => {
  client?.close();
  await cluster?.stop();
});

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: {
    containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu: '100m' } } }],
    terminationGracePeriodSeconds: 0,
  },
});

interface Quota {
  status?: { hard?: Record<string, string>; used?: Record<string, string> };
}

async function usedWhen(what: string, want: Record<string, string>): Promise<void> {
  let last: Quota | undefined;
  try {
    await waitFor(what, async () => {
      last = (await client.get(resources.resourcequotas, 'q', { namespace: NS })) as unknown as Quota;
      return JSON.stringify(last.status?.used) === JSON.stringify(want);
    });
  } catch (err) {
    throw new Error(
      `${(err as Error).message}: last status ${JSON.stringify(last?.status)}\n${cluster.logs(15)}`,
    );
  }
}

test('a quota status counts the namespace pods and their requests', async () => {
  await client.create(
    resources.resourcequotas,
    w({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'q', namespace: NS },
      spec: { hard: { pods: '2', 'requests.cpu': '1' } },
    }),
    { namespace: NS },
  );
  await usedWhen('an empty use', { pods: '0', 'requests.cpu': '0' });
  const q = (await client.get(resources.resourcequotas, 'q', { namespace: NS })) as unknown as Quota;
  assert.deepEqual(q.status?.hard, { pods: '2', 'requests.cpu': '1' });
  await client.create(resources.pods, w(pod('a')), { namespace: NS });
  await client.create(resources.pods, w(pod('b')), { namespace: NS });
  await usedWhen('two pods', { pods: '2', 'requests.cpu': '200m' });
  await assert.rejects(
    client.create(resources.pods, w(pod('c')), { namespace: NS }),
    /exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2/,
  );
  await client.delete(resources.pods, 'a', { namespace: NS, gracePeriodSeconds: 0 });
  await usedWhen('one pod', { pods: '1', 'requests.cpu': '100m' });
});
