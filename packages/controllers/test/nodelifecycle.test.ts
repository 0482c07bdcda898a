import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { NodeLifecycleController } from '../src/nodelifecycle.js';
import { evictionTime, tolerates } from '../src/taints.js';
import { FakeCluster } from '../src/testing.js';
import type { Lease, Node, Pod } from '../src/types.js';
import { newFactory, settle, startInformers } from './helpers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

async function setup() {
  const clock = { now: T0 };
  const now = () => clock.now;
  const cluster = new FakeCluster({ now });
  const informers = newFactory(cluster);
  const nlc = new NodeLifecycleController(cluster, informers, { now, gracePeriodMs: 40_000 });
  await startInformers(informers);
  const readyNode = async (name: string) => {
    await cluster.create(res.nodes, undefined, {
      metadata: { name },
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            lastHeartbeatTime: new Date(clock.now).toISOString(),
          },
          { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory' },
        ],
      },
    } satisfies Node);
    // The status subresource is ignored on create by a real apiserver; write it the kubelet's way.
    const n = await cluster.get<Node>(res.nodes, undefined, name);
    await cluster.create(res.leases, 'kube-node-lease', {
      metadata: { name },
      spec: { holderIdentity: name, renewTime: new Date(clock.now).toISOString(), leaseDurationSeconds: 40 },
    } satisfies Lease);
    return n;
  };
  const renew = async (name: string) => {
    const l = await cluster.get<Lease>(res.leases, 'kube-node-lease', name);
    await cluster.update(res.leases, {
      ...l,
      spec: { ...l.spec, renewTime: new Date(clock.now).toISOString() },
    });
  };
  const pod = async (name: string, node: string, tolerations?: NonNullable<Pod['spec']>['tolerations']) => {
    const p = await cluster.create(res.pods, 'default', {
      metadata: { name },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }], tolerations },
    } satisfies Pod);
    await cluster.update(
      res.pods,
      { ...p, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } },
      'status',
    );
  };
  return { clock, cluster, informers, nlc, readyNode, renew, pod, run: () => settle([nlc]) };
}

const getNode = (c: FakeCluster, name: string) => c.get<Node>(res.nodes, undefined, name);
const podNames = (c: FakeCluster) =>
  c
    .all<Pod>(res.pods)
    .map((p) => p.metadata!.name)
    .sort();

describe('taints and tolerations', () => {
  test('matching', () => {
    const taint = { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' };
    assert.ok(
      tolerates({ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' }, taint),
    );
    assert.ok(tolerates({ operator: 'Exists' }, taint));
    assert.ok(!tolerates({ key: 'other', operator: 'Exists' }, taint));
    assert.ok(
      !tolerates({ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoSchedule' }, taint),
    );
    assert.ok(tolerates({ key: 'k', value: 'v' }, { key: 'k', value: 'v', effect: 'NoExecute' }));
    assert.ok(!tolerates({ key: 'k', value: 'w' }, { key: 'k', value: 'v', effect: 'NoExecute' }));
  });

  test('eviction time', () => {
    const taints = [
      { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', timeAdded: new Date(T0).toISOString() },
    ];
    const p = (tolerations: NonNullable<Pod['spec']>['tolerations']): Pod => ({
      spec: { containers: [], tolerations },
    });
    assert.equal(evictionTime(p(undefined), taints, T0), 'now');
    assert.equal(
      evictionTime(
        p([
          {
            operator: 'Exists',
            key: 'node.kubernetes.io/unreachable',
            effect: 'NoExecute',
            tolerationSeconds: 300,
          },
        ]),
        taints,
        T0,
      ),
      T0 + 300_000,
    );
    assert.equal(evictionTime(p([{ operator: 'Exists' }]), taints, T0), undefined);
    assert.equal(evictionTime(p(undefined), [{ key: 'x', effect: 'NoSchedule' }], T0), undefined);
  });
});

describe('node lifecycle controller', () => {
  test('a silent node goes Unknown, is tainted, and its pods are evicted as their tolerations run out', async () => {
    const { clock, cluster, informers, nlc, readyNode, renew, pod, run } = await setup();
    await readyNode('n1');
    await readyNode('n2');
    await pod('no-toleration', 'n1');
    await pod('tolerates-300s', 'n1', [
      {
        key: 'node.kubernetes.io/unreachable',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 300,
      },
    ]);
    await pod('tolerates-forever', 'n1', [
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    ]);
    await pod('on-n2', 'n2');
    await run();
    assert.equal((await getNode(cluster, 'n1')).spec?.taints, undefined);

    clock.now += 30_000;
    await renew('n2');
    await nlc.reconcile('n1');
    assert.equal(
      (await getNode(cluster, 'n1')).status!.conditions!.find((c) => c.type === 'Ready')!.status,
      'True',
    );

    clock.now += 15_000; // 45 s without a heartbeat from n1
    await renew('n2');
    await run();
    await nlc.reconcile('n1');
    await nlc.reconcile('n2');
    await run();
    const n1 = await getNode(cluster, 'n1');
    for (const c of n1.status!.conditions!) {
      assert.equal(c.status, 'Unknown', c.type);
      assert.equal(c.reason, 'NodeStatusUnknown');
      assert.equal(c.message, 'Kubelet stopped posting node status.');
    }
    assert.deepEqual(n1.spec!.taints!.map((t) => `${t.key}:${t.effect}`).sort(), [
      'node.kubernetes.io/unreachable:NoExecute',
      'node.kubernetes.io/unreachable:NoSchedule',
    ]);
    assert.equal((await getNode(cluster, 'n2')).spec?.taints, undefined);
    assert.deepEqual(podNames(cluster), ['on-n2', 'tolerates-300s', 'tolerates-forever']);
    const tolerant = await cluster.get<Pod>(res.pods, 'default', 'tolerates-forever');
    assert.equal(tolerant.status!.conditions!.find((c) => c.type === 'Ready')!.status, 'False');

    clock.now += 301_000;
    await nlc.reconcile('n1');
    assert.deepEqual(podNames(cluster), ['on-n2', 'tolerates-forever']);
    informers.stop();
  });

  test('the taints go away when the node reports Ready again; Ready=False gets the not-ready taint', async () => {
    const { clock, cluster, informers, nlc, readyNode, renew, run } = await setup();
    await readyNode('n1');
    await run();
    clock.now += 41_000;
    await nlc.reconcile('n1');
    await run();
    assert.ok(
      (await getNode(cluster, 'n1')).spec!.taints!.some((t) => t.key === 'node.kubernetes.io/unreachable'),
    );
    // The kubelet comes back: renews its lease and posts Ready=False first, then True.
    await renew('n1');
    let n = await getNode(cluster, 'n1');
    const post = async (status: string) => {
      n = await getNode(cluster, 'n1');
      await cluster.update(
        res.nodes,
        {
          ...n,
          status: {
            conditions: [{ type: 'Ready', status, lastHeartbeatTime: new Date(clock.now).toISOString() }],
          },
        },
        'status',
      );
      await run();
      await nlc.reconcile('n1');
      await run();
      return (await getNode(cluster, 'n1')).spec?.taints?.map((t) => `${t.key}:${t.effect}`).sort();
    };
    assert.deepEqual(await post('False'), [
      'node.kubernetes.io/not-ready:NoExecute',
      'node.kubernetes.io/not-ready:NoSchedule',
    ]);
    assert.equal(await post('True'), undefined);
    informers.stop();
  });

  test('keeps taints that are not its own', async () => {
    const { clock, cluster, informers, nlc, readyNode, run } = await setup();
    const n = await readyNode('n1');
    await cluster.update(res.nodes, {
      ...n,
      spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    });
    await run(); // first seen now: the grace period counts from here
    clock.now += 41_000;
    await nlc.reconcile('n1');
    const keys = (await getNode(cluster, 'n1')).spec!.taints!.map((t) => t.key);
    assert.ok(keys.includes('dedicated'));
    assert.ok(keys.includes('node.kubernetes.io/unreachable'));
    informers.stop();
  });
});
