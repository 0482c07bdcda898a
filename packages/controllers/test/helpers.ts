// Test helpers: drive controllers over a FakeCluster until nothing is left to do,
// and play the parts of the scheduler and kubelet on pods.
import { resources as res, SharedInformerFactory } from '@kubit/client';
import { type Controller, processOne } from '../src/controller.js';
import { type FakeCluster, fakeKubeClient } from '../src/testing.js';
import type { Pod, PodTemplateSpec, ReplicaSet } from '../src/types.js';

export const tick = () => new Promise<void>((r) => setImmediate(r));
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startInformers(f: SharedInformerFactory): Promise<void> {
  f.start();
  await f.waitForCacheSync();
}

/** Delivers watch events and runs every queued key until all queues stay empty. */
export async function settle(controllers: Controller[], maxRounds = 500): Promise<void> {
  let idle = 0;
  for (let round = 0; round < maxRounds && idle < 3; round++) {
    await tick();
    let did = false;
    for (const c of controllers) {
      // len() > 0 means get() hands out a key at once, without waiting.
      while (c.queue.len() > 0) {
        const k = await c.queue.get();
        if (k === undefined) break;
        await processOne(c, k);
        did = true;
      }
    }
    idle = did ? 0 : idle + 1;
  }
}

export function template(labels: Record<string, string>, image = 'nginx:1'): PodTemplateSpec {
  return { metadata: { labels }, spec: { containers: [{ name: 'c', image }] } };
}

export function replicaSet(name: string, replicas: number, labels = { app: name }): ReplicaSet {
  return {
    metadata: { name, namespace: 'default' },
    spec: { replicas, selector: { matchLabels: labels }, template: template(labels) },
  };
}

/** What the scheduler and kubelet would do: bind the pod and make it Running and Ready. */
export async function runPod(
  cluster: FakeCluster,
  p: Pod,
  node = 'node-1',
  readyAt = cluster.now(),
): Promise<Pod> {
  const bound = await cluster.update(res.pods, { ...p, spec: { ...p.spec!, nodeName: node } });
  return cluster.update(
    res.pods,
    {
      ...bound,
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(readyAt).toISOString() }],
      },
    },
    'status',
  );
}

export async function runAllPods(cluster: FakeCluster, readyAt?: number): Promise<void> {
  for (const p of cluster.all<Pod>(res.pods)) {
    if (p.status?.phase !== 'Running' && !p.metadata?.deletionTimestamp)
      await runPod(cluster, p, 'node-1', readyAt);
  }
}

/** The client's real shared informers, listing and watching the FakeCluster. */
export function newFactory(cluster: FakeCluster): SharedInformerFactory {
  return new SharedInformerFactory(fakeKubeClient(cluster));
}
