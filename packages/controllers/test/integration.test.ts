// kubit-controller-manager as a real process against a real apiserver (and etcd):
// health and the leader Lease, node IPAM, node lifecycle, garbage collection,
// namespaces, and ReplicaSets/Deployments when the apiserver serves apps/v1.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConfigMap, Deployment, Lease, Namespace, Node, Pod, ReplicaSet } from '@kubit/api';
import { isConflict, isNotFound } from '@kubit/api';
import { KubeClient as Client, type KubeClient, loadClientConfig, resources } from '@kubit/client';
import { type ControlPlane, freePort, startControlPlane, type TestProcess, waitFor } from '@kubit/testkit';
import { httpsGetInsecure, startControllerManager, type Wire, w } from './cm-process.js';

let cp: ControlPlane;
let cm: TestProcess;
let client: KubeClient;
let healthPort: number;

async function gone(r: Parameters<KubeClient['get']>[0], name: string, namespace?: string): Promise<boolean> {
  try {
    await client.get(r, name, { namespace });
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
}

async function appsServed(): Promise<boolean> {
  try {
    await client.list(resources.deployments, { namespace: 'default' });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** The pods of an app that are not being deleted. */
async function appPods(app: string): Promise<(Pod & Wire)[]> {
  const l = await client.list<Pod & Wire>(resources.pods, {
    namespace: 'default',
    labelSelector: `app=${app}`,
  });
  return l.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/** Stands in for a kubelet (none runs here): reports the app's pods Running and Ready. */
async function markReady(app: string): Promise<void> {
  for (const p of await appPods(app)) {
    if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) continue;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const ready: Pod = {
      ...p,
      status: {
        ...p.status,
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
      },
    };
    try {
      await client.updateStatus(resources.pods, w(ready));
    } catch (err) {
      // A pod deleted or changed meanwhile is seen again on the next round.
      if (!isNotFound(err) && !isConflict(err)) throw err;
    }
  }
}

before(async () => {
  cp = await startControlPlane();
  const kubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
  healthPort = await freePort();
  cm = startControllerManager(cp, kubeconfig, 'controller-manager', healthPort);
  client = new Client(loadClientConfig({ kubeconfig: cp.kubeconfigPath }));
});

after(async () => {
  await cm?.stop();
  client?.close();
  await cp?.stop();
});

describe('kubit-controller-manager against a real apiserver', { timeout: 150_000 }, () => {
  test('serves /healthz over HTTPS and holds the leader Lease', async () => {
    await waitFor(
      'healthz',
      async () => (await httpsGetInsecure(`https://127.0.0.1:${healthPort}/healthz`)).body === 'ok',
      60_000, // a daemon started from TypeScript sources is slow to start on a busy machine
    );
    const lease = await waitFor('the leader lease', async () => {
      const l = await client.get<Lease & Wire>(resources.leases, 'kube-controller-manager', {
        namespace: 'kube-system',
      });
      return l.spec?.holderIdentity ? l : undefined;
    });
    assert.ok(lease.spec!.holderIdentity!.length > 0);
    const metrics = await httpsGetInsecure(`https://127.0.0.1:${healthPort}/metrics`);
    assert.match(metrics.body, /^leader_election_master_status 1$/m);
  });

  test('node IPAM gives each node its own podCIDR', async () => {
    for (const name of ['ipam-a', 'ipam-b'])
      await client.create(resources.nodes, w<Node>({ metadata: { name } }));
    const cidrs = await waitFor('podCIDRs', async () => {
      const got: string[] = [];
      for (const name of ['ipam-a', 'ipam-b']) {
        const n = await client.get<Node & Wire>(resources.nodes, name);
        if (!n.spec?.podCIDR) return undefined;
        assert.deepEqual(n.spec.podCIDRs, [n.spec.podCIDR]);
        got.push(n.spec.podCIDR);
      }
      return got;
    });
    assert.equal(new Set(cidrs).size, 2);
    for (const c of cidrs) assert.match(c, /^10\.244\.\d+\.0\/24$/);
  });

  test('a node that never heartbeats goes Unknown, is tainted, and pods without enough toleration are evicted', async () => {
    await client.create(resources.nodes, w<Node>({ metadata: { name: 'silent' } }));
    const pod = (name: string, tolerationSeconds?: number): Pod => ({
      metadata: { name, namespace: 'default' },
      spec: {
        nodeName: 'silent',
        containers: [{ name: 'c', image: 'busybox' }],
        tolerations: [
          {
            key: 'node.kubernetes.io/unreachable',
            operator: 'Exists',
            effect: 'NoExecute',
            tolerationSeconds,
          },
          { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds },
        ],
      },
    });
    await client.create(resources.pods, w(pod('short', 1)));
    await client.create(resources.pods, w(pod('forever')));
    const node = await waitFor('the unreachable taint', async () => {
      const n = await client.get<Node & Wire>(resources.nodes, 'silent');
      return n.spec?.taints?.some(
        (t) => t.key === 'node.kubernetes.io/unreachable' && t.effect === 'NoExecute',
      )
        ? n
        : undefined;
    });
    const ready = node.status!.conditions!.find((c) => c.type === 'Ready')!;
    assert.equal(ready.status, 'Unknown');
    // Eviction is a graceful delete: with no kubelet to confirm, the pod stays Terminating.
    const terminating = async (name: string) => {
      try {
        const p = await client.get<Pod & Wire>(resources.pods, name, { namespace: 'default' });
        return p.metadata?.deletionTimestamp !== undefined;
      } catch (err) {
        if (isNotFound(err)) return true;
        throw err;
      }
    };
    await waitFor('the short-tolerating pod to be evicted', () => terminating('short'));
    assert.equal(await terminating('forever'), false);
  });

  test('the garbage collector deletes dependents in the background and the foreground, and orphans', async () => {
    const owner = async (name: string) =>
      client.create(
        resources.configmaps,
        w<ConfigMap>({ metadata: { name, namespace: 'default' } }),
      ) as Promise<ConfigMap>;
    const dependent = async (name: string, o: ConfigMap) =>
      client.create(
        resources.configmaps,
        w<ConfigMap>({
          metadata: {
            name,
            namespace: 'default',
            ownerReferences: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                name: o.metadata!.name!,
                uid: o.metadata!.uid!,
                blockOwnerDeletion: true,
              },
            ],
          },
        }),
      );
    const bg = await owner('bg-owner');
    await dependent('bg-dep', bg);
    const fg = await owner('fg-owner');
    await dependent('fg-dep', fg);
    const orphan = await owner('or-owner');
    await dependent('or-dep', orphan);

    await client.delete(resources.configmaps, 'bg-owner', {
      namespace: 'default',
      propagationPolicy: 'Background',
    });
    await client.delete(resources.configmaps, 'fg-owner', {
      namespace: 'default',
      propagationPolicy: 'Foreground',
    });
    await client.delete(resources.configmaps, 'or-owner', {
      namespace: 'default',
      propagationPolicy: 'Orphan',
    });
    await waitFor('background dependent to go', () => gone(resources.configmaps, 'bg-dep', 'default'));
    await waitFor(
      'foreground owner and dependent to go',
      async () =>
        (await gone(resources.configmaps, 'fg-dep', 'default')) &&
        gone(resources.configmaps, 'fg-owner', 'default'),
    );
    await waitFor('orphaning owner to go', () => gone(resources.configmaps, 'or-owner', 'default'));
    const dep = await client.get<ConfigMap & Wire>(resources.configmaps, 'or-dep', { namespace: 'default' });
    assert.equal(dep.metadata?.ownerReferences?.length ?? 0, 0);
  });

  test('deleting a namespace deletes its content and then the namespace', async () => {
    await client.create(resources.namespaces, w<Namespace>({ metadata: { name: 'doomed' } }));
    await client.create(
      resources.configmaps,
      w<ConfigMap>({ metadata: { name: 'cfg', namespace: 'doomed' } }),
    );
    // Quotas and limit ranges go with it too (the controller manager may delete them).
    await client.create(
      resources.resourcequotas,
      w({ metadata: { name: 'q', namespace: 'doomed' }, spec: { hard: { pods: '1' } } }),
    );
    await client.create(
      resources.limitranges,
      w({
        metadata: { name: 'lr', namespace: 'doomed' },
        spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] },
      }),
    );
    await client.delete(resources.namespaces, 'doomed');
    await waitFor('the namespace to go', () => gone(resources.namespaces, 'doomed'), 30_000);
  });

  test('a Deployment gets a ReplicaSet and pods (when the apiserver serves apps/v1)', async (t) => {
    if (!(await appsServed())) {
      t.skip('the apiserver does not serve apps/v1 yet');
      return;
    }
    await client.create(
      resources.deployments,
      w<Deployment>({
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'c', image: 'nginx' }] },
          },
        },
      }),
    );
    const rs = await waitFor('a ReplicaSet', async () => {
      const l = await client.list<ReplicaSet & Wire>(resources.replicasets, { namespace: 'default' });
      return l.items.find((x) => x.metadata?.name?.startsWith('web-'));
    });
    assert.equal(rs.metadata!.annotations!['deployment.kubernetes.io/revision'], '1');
    await waitFor('2 pods', async () => {
      const l = await client.list<Pod & Wire>(resources.pods, {
        namespace: 'default',
        labelSelector: 'app=web',
      });
      return l.items.length === 2;
    });
    const d = await waitFor('deployment status', async () => {
      const x = await client.get<Deployment & Wire>(resources.deployments, 'web', { namespace: 'default' });
      return x.status?.replicas === 2 ? x : undefined;
    });
    assert.equal(d.status!.updatedReplicas, 2);
  });
  test('a ReplicaSet scales up and down through /scale and replaces a deleted pod', async (t) => {
    if (!(await appsServed())) {
      t.skip('the apiserver does not serve apps/v1 yet');
      return;
    }
    await client.create(
      resources.replicasets,
      w<ReplicaSet>({
        metadata: { name: 'front', namespace: 'default' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'front' } },
          template: {
            metadata: { labels: { app: 'front' } },
            spec: { containers: [{ name: 'c', image: 'nginx' }] },
          },
        },
      }),
    );
    await waitFor('2 pods', async () => (await appPods('front')).length === 2);
    await client.patch(
      resources.replicasets,
      'front',
      { spec: { replicas: 4 } },
      { namespace: 'default', subresource: 'scale' },
    );
    await waitFor('4 pods', async () => (await appPods('front')).length === 4);
    const victim = (await appPods('front'))[0].metadata!.name!;
    await client.delete(resources.pods, victim, { namespace: 'default' });
    await waitFor('the deleted pod replaced', async () => {
      const names = (await appPods('front')).map((p) => p.metadata!.name!);
      return names.length === 4 && !names.includes(victim);
    });
    await client.patch(
      resources.replicasets,
      'front',
      { spec: { replicas: 1 } },
      { namespace: 'default', subresource: 'scale' },
    );
    await waitFor('1 pod', async () => (await appPods('front')).length === 1);
    const rs = await waitFor('status.replicas 1', async () => {
      const x = await client.get<ReplicaSet & Wire>(resources.replicasets, 'front', { namespace: 'default' });
      return x.status?.replicas === 1 && x.status.observedGeneration === x.metadata?.generation
        ? x
        : undefined;
    });
    assert.equal(rs.spec!.replicas, 1);
    const pod = (await appPods('front'))[0];
    assert.equal(pod.metadata!.ownerReferences![0].uid, rs.metadata!.uid);
  });

  test('a Deployment rolls out a new template and scales through /scale', async (t) => {
    if (!(await appsServed())) {
      t.skip('the apiserver does not serve apps/v1 yet');
      return;
    }
    const settled = (x: Deployment & Wire, replicas: number) =>
      x.status?.observedGeneration === x.metadata?.generation &&
      x.status?.updatedReplicas === replicas &&
      x.status?.replicas === replicas &&
      x.status?.availableReplicas === replicas;
    await waitFor('web available', async () => {
      await markReady('web');
      const x = await client.get<Deployment & Wire>(resources.deployments, 'web', { namespace: 'default' });
      return settled(x, 2);
    });
    await client.patch(
      resources.deployments,
      'web',
      { spec: { template: { spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } } },
      { namespace: 'default', type: 'strategic' },
    );
    // Stand in for the kubelet as the rollout brings up new pods, until it is complete.
    await waitFor(
      'the rollout to complete',
      async () => {
        await markReady('web');
        const x = await client.get<Deployment & Wire>(resources.deployments, 'web', { namespace: 'default' });
        const pods = await appPods('web');
        return (
          settled(x, 2) &&
          pods.length === 2 &&
          pods.every((p) => p.spec!.containers[0].image === 'nginx:1.27')
        );
      },
      60_000,
    );
    const sets = (
      await client.list<ReplicaSet & Wire>(resources.replicasets, { namespace: 'default' })
    ).items.filter((x) => x.metadata?.name?.startsWith('web-'));
    const byRevision = new Map(
      sets.map((x) => [x.metadata!.annotations!['deployment.kubernetes.io/revision'], x]),
    );
    assert.equal(byRevision.get('1')?.spec?.replicas, 0);
    assert.equal(byRevision.get('2')?.spec?.replicas, 2);
    assert.equal(byRevision.get('2')?.spec?.template?.spec?.containers[0].image, 'nginx:1.27');

    await client.patch(
      resources.deployments,
      'web',
      { spec: { replicas: 3 } },
      { namespace: 'default', subresource: 'scale' },
    );
    await waitFor('3 new pods', async () => {
      const pods = await appPods('web');
      return pods.length === 3 && pods.every((p) => p.spec!.containers[0].image === 'nginx:1.27');
    });
  });
});
