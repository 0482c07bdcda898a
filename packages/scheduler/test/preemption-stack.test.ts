// Preemption on a real stack (testkit's workload cluster: kubit-apiserver,
// kubit-scheduler, a hollow node of 4 CPUs): a high-priority pod that fits nowhere
// preempts the low-priority pod filling the node. The victim gets the
// DisruptionTarget condition and the Preempted event and is deleted, the preemptor
// is nominated to the node and bound there once the room is free; a pod whose
// class says Never waits instead.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Pod } from '@kubit/api';
import { KubeClient, type ResourceRef, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';

const NS = 'default';
const PRIORITY_CLASSES: ResourceRef = {
  group: 'scheduling.k8s.io',
  version: 'v1',
  resource: 'priorityclasses',
  kind: 'PriorityClass',
  namespaced: false,
};
let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 1, controllers: 'replicaset' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
  for (const [name, value, policy] of [
    ['low', 10, 'PreemptLowerPriority'],
    ['high', 1000, 'PreemptLowerPriority'],
    ['polite', 1000, 'Never'],
  ] as const) {
    await client.create(PRIORITY_CLASSES, {
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name },
      value,
      preemptionPolicy: policy,
    } as never);
  }
  // Admission reads classes from the apiserver's watch cache: wait until it lists them.
  await waitFor('the classes in the watch cache', async () => {
    const l = await client.list(PRIORITY_CLASSES, { resourceVersion: '0' });
    return l.items.filter((i) => ['low', 'high', 'polite'].includes(String(i.metadata?.name))).length === 3;
  });
});
after(async () => {
  client?.close();
  await cluster?.stop();
});

const pod = (name: string, priorityClassName: string, cpu: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: NS },
  spec: {
    priorityClassName,
    containers: [{ name: 'c', image: 'busybox:1.36', resources: { requests: { cpu } } }],
    terminationGracePeriodSeconds: 0,
  },
});

const getPod = async (name: string) => (await client.get(resources.pods, name, { namespace: NS })) as Pod;

test('a high-priority pod preempts the low one on the full node', async () => {
  await client.create(resources.pods, pod('filler', 'low', '3500m') as never, { namespace: NS });
  const filler = await waitFor('the filler bound', async () => {
    const p = await getPod('filler');
    return p.spec?.nodeName ? p : undefined;
  });
  assert.equal(filler.spec?.priority, 10);
  // Every version of the victim, so its DisruptionTarget condition is seen however short-lived.
  const seen: Pod[] = [];
  const watch = client.watch<Pod & { metadata?: object }>(resources.pods, {
    namespace: NS,
    fieldSelector: 'metadata.name=filler',
    resourceVersion: filler.metadata?.resourceVersion,
    onEvent: (ev) => seen.push(ev.object as Pod),
  });
  // The preemptor's nomination, seen while its victim goes (the kubelet's status writes may drop it later).
  let nominated: string | undefined;
  const preemptorWatch = client.watch<Pod & { metadata?: object }>(resources.pods, {
    namespace: NS,
    fieldSelector: 'metadata.name=urgent',
    resourceVersion: filler.metadata?.resourceVersion,
    onEvent: (ev) => {
      nominated ||= (ev.object as Pod).status?.nominatedNodeName;
    },
  });
  try {
    const high = (await client.create(resources.pods, pod('urgent', 'high', '2') as never, {
      namespace: NS,
    })) as Pod;
    assert.equal(high.spec?.priority, 1000);
    let bound: Pod | undefined;
    try {
      bound = await waitFor(
        'the preemptor bound',
        async () => {
          const p = await getPod('urgent');
          return p.spec?.nodeName ? p : undefined;
        },
        60_000,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${cluster.logs(20)}`);
    }
    assert.equal(bound.spec?.nodeName, filler.spec?.nodeName);
    assert.equal(nominated, filler.spec?.nodeName);
    await assert.rejects(getPod('filler'), /not found/);
    const disrupted = seen
      .flatMap((p) => p.status?.conditions ?? [])
      .find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual(
      { status: disrupted?.status, reason: disrupted?.reason, message: disrupted?.message },
      {
        status: 'True',
        reason: 'PreemptionByScheduler',
        message: 'default-scheduler: preempting to accommodate a higher priority pod',
      },
    );
    const events = await waitFor('the Preempted event', async () => {
      const l = await client.list(resources.events, {
        namespace: NS,
        fieldSelector: 'involvedObject.name=filler,reason=Preempted',
      });
      return l.items.length > 0 ? l.items : undefined;
    });
    const ev = events[0] as unknown as { type: string; message: string };
    assert.equal(ev.type, 'Normal');
    assert.equal(ev.message, `Preempted by pod ${high.metadata?.uid} on node ${filler.spec?.nodeName}`);
    // A pod whose class says Never does not take anyone's place: it waits.
    await client.create(resources.pods, pod('polite', 'polite', '3') as never, { namespace: NS });
    const cond = await waitFor('the polite pod marked unschedulable', async () => {
      const p = await getPod('polite');
      return p.status?.conditions?.find((c) => c.type === 'PodScheduled');
    });
    assert.match(String(cond.message), /preemption: not eligible due to preemptionPolicy=Never\.$/);
    assert.equal((await getPod('polite')).spec?.nodeName ?? '', '');
    assert.equal((await getPod('urgent')).spec?.nodeName, filler.spec?.nodeName);
  } finally {
    watch.stop();
    preemptorWatch.stop();
  }
});
