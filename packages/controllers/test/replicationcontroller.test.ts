// The replication controller on a real stack (testkit's workload cluster: etcd,
// kubit-apiserver, kubit-controller-manager with replicationcontroller and
// garbagecollector, kubit-scheduler, kubit-hollow nodes whose pods become Ready):
// a core/v1 ReplicationController of 3 gets 3 Ready pods, `kubectl scale rc` to 5
// and to 1, a deleted pod comes back, and deleting the RC takes its pods with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import type { Pod, ReplicationController } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';
import { w } from './cm-process.js';

const exec = promisify(execFile);
const NS = 'default';

let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 2, controllers: 'replicationcontroller,garbagecollector' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

async function kubectl(args: string[]): Promise<string> {
  const cp = cluster.cp;
  const full = ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(cp.dir, 'kubectl-cache'), ...args];
  try {
    return (await exec('kubectl', full, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `kubectl ${args.join(' ')} failed: ${e.message}\n${e.stdout}\n${e.stderr}\n${cluster.logs(15)}`,
    );
  }
}

const isReady = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** The RC's live pods (not being deleted). */
async function livePods(app: string): Promise<Pod[]> {
  const list = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` });
  return list.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** Waits for exactly n live Ready pods owned by the RC, and an RC status saying so. */
async function readyPods(name: string, n: number): Promise<Pod[]> {
  let pods: Pod[] = [];
  let rc: ReplicationController | undefined;
  try {
    await waitFor(
      `${n} Ready pods of rc/${name}`,
      async () => {
        pods = await livePods(name);
        rc = await client.get<ReplicationController>(resources.replicationcontrollers, name, {
          namespace: NS,
        });
        return (
          pods.length === n &&
          pods.every(isReady) &&
          rc.status?.replicas === n &&
          rc.status?.readyReplicas === n &&
          rc.status?.observedGeneration === rc.metadata?.generation
        );
      },
      60_000,
      200,
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message}: ${pods.length} pods, status ${JSON.stringify(rc?.status)}\n${cluster.logs(15)}`,
    );
  }
  return pods;
}

test('a ReplicationController keeps its pods, scales with kubectl and takes them with it', async () => {
  const rc: ReplicationController = {
    apiVersion: 'v1',
    kind: 'ReplicationController',
    metadata: { name: 'web', namespace: NS },
    spec: {
      replicas: 3,
      // No selector: it defaults to the template's labels.
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }], terminationGracePeriodSeconds: 0 },
      },
    },
  };
  const created = await client.create(resources.replicationcontrollers, w(rc), { namespace: NS });
  assert.deepEqual((created as ReplicationController).spec?.selector, { app: 'web' });
  let pods = await readyPods('web', 3);
  for (const p of pods) {
    assert.match(p.metadata?.name ?? '', /^web-[a-z0-9]{5}$/);
    const ref = p.metadata?.ownerReferences?.[0];
    assert.equal(ref?.apiVersion, 'v1');
    assert.equal(ref?.kind, 'ReplicationController');
    assert.equal(ref?.uid, created.metadata?.uid);
    assert.equal(ref?.controller, true);
  }

  assert.match(await kubectl(['scale', 'rc', 'web', '--replicas=5']), /replicationcontroller\/web scaled/);
  await readyPods('web', 5);
  assert.match(
    await kubectl(['get', 'rc', 'web']),
    /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\nweb\s+5\s+5\s+5\s+\S+\n$/,
  );
  assert.match(await kubectl(['scale', 'rc', 'web', '--replicas=1']), /replicationcontroller\/web scaled/);
  pods = await readyPods('web', 1);

  // A deleted pod is replaced.
  const [gone] = pods;
  await client.delete(resources.pods, gone.metadata?.name ?? '', { namespace: NS });
  const back = await readyPods('web', 1);
  assert.notEqual(back[0].metadata?.uid, gone.metadata?.uid);

  // Deleting the RC (kubectl's background cascade) lets the garbage collector take its pods.
  assert.match(await kubectl(['delete', 'rc', 'web']), /replicationcontroller "web" deleted/);
  await waitFor(
    'the RC and its pods to be gone',
    async () => {
      const list = await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: 'app=web' });
      const rcs = await client.list(resources.replicationcontrollers, { namespace: NS });
      return list.items.length === 0 && rcs.items.length === 0;
    },
    60_000,
    200,
  );
});
