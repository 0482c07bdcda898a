// The disruption controller on a real stack (testkit's workload cluster: etcd,
// kubit-apiserver, kubit-controller-manager with replicaset, deployment and
// disruption, kubit-scheduler, kubit-hollow nodes whose pods become Ready): the
// status math of PodDisruptionBudgets over Deployments (minAvailable as a count,
// maxUnavailable as a percentage of the Deployment's scale, a budget with no pods),
// the expiry of status.disruptedPods, and the real `kubectl drain`, which evicts a
// Deployment's pods one at a time under a budget, retrying its 429s, and finishes once
// their replacements are Ready on other nodes; then `kubectl uncordon`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { Deployment, Node, Pod, PodDisruptionBudget } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { startWorkloadCluster, type WorkloadCluster, waitFor } from '@kubit/testkit';
import { pdbResource } from '../src/disruption/budget.js';
import { w } from './cm-process.js';

const exec = promisify(execFile);
const NS = 'default';

let cluster: WorkloadCluster;
let client: KubeClient;

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 3, controllers: 'replicaset,deployment,disruption' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await cluster?.stop();
});

async function kubectl(args: string[], timeoutMs = 120_000): Promise<{ stdout: string; stderr: string }> {
  const cp = cluster.cp;
  const full = ['--kubeconfig', cp.kubeconfigPath, '--cache-dir', join(cp.dir, 'kubectl-cache'), ...args];
  try {
    return await exec('kubectl', full, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `kubectl ${args.join(' ')} failed: ${e.message}\n${e.stdout}\n${e.stderr}\n${cluster.logs(15)}`,
    );
  }
}

function deployment(name: string, replicas: number): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }], terminationGracePeriodSeconds: 0 },
      },
    },
  };
}

function budget(name: string, app: string, spec: Record<string, unknown>): PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name, namespace: NS },
    spec: { selector: { matchLabels: { app } }, ...spec },
  };
}

const getBudget = (name: string) => client.get<PodDisruptionBudget>(pdbResource, name, { namespace: NS });

/** Waits until the budget's status has these fields (and has observed its generation). */
async function statusBecomes(name: string, want: Record<string, unknown>): Promise<PodDisruptionBudget> {
  let last: PodDisruptionBudget | undefined;
  try {
    await waitFor(
      `${name}'s status to be ${JSON.stringify(want)}`,
      async () => {
        last = await getBudget(name);
        const s = (last.status ?? {}) as Record<string, unknown>;
        return (
          s.observedGeneration === last.metadata?.generation &&
          Object.entries(want).every(([k, v]) => JSON.stringify(s[k]) === JSON.stringify(v))
        );
      },
      60_000,
      200,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last?.status)}\n${cluster.logs(10)}`);
  }
  return last!;
}

const condition = (b: PodDisruptionBudget) =>
  b.status?.conditions?.find((c) => c.type === 'DisruptionAllowed');

const readyPods = async (app: string) =>
  (await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` })).items.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );

describe('disruption controller status', () => {
  test('minAvailable as a count, maxUnavailable as a percentage of the scale, and no pods', async () => {
    await client.create(resources.deployments, w(deployment('calc', 3)), { namespace: NS });
    await client.create(pdbResource, w(budget('calc-min', 'calc', { minAvailable: 2 })), { namespace: NS });
    const b = await statusBecomes('calc-min', {
      expectedPods: 3,
      desiredHealthy: 2,
      currentHealthy: 3,
      disruptionsAllowed: 1,
    });
    assert.equal(condition(b)?.status, 'True');
    assert.equal(condition(b)?.reason, 'SufficientPods');

    await client.create(resources.deployments, w(deployment('pct', 2)), { namespace: NS });
    await client.create(pdbResource, w(budget('pct', 'pct', { maxUnavailable: '50%' })), { namespace: NS });
    await statusBecomes('pct', {
      expectedPods: 2,
      desiredHealthy: 1,
      currentHealthy: 2,
      disruptionsAllowed: 1,
    });
    // The Deployment's scale is the budget's expectedPods.
    await client.patch(resources.deployments, 'pct', { spec: { replicas: 4 } }, { namespace: NS });
    await statusBecomes('pct', {
      expectedPods: 4,
      desiredHealthy: 2,
      currentHealthy: 4,
      disruptionsAllowed: 2,
    });

    await client.create(pdbResource, w(budget('empty', 'nothing-here', { minAvailable: 1 })), {
      namespace: NS,
    });
    const e = await statusBecomes('empty', {
      expectedPods: 0,
      desiredHealthy: 1,
      currentHealthy: 0,
      disruptionsAllowed: 0,
    });
    assert.equal(condition(e)?.status, 'False');
    assert.equal(condition(e)?.reason, 'InsufficientPods');

    // A spec change is observed: minAvailable 3 of 3 allows no disruption.
    await client.patch(pdbResource, 'calc-min', { spec: { minAvailable: 3 } }, { namespace: NS });
    const c = await statusBecomes('calc-min', {
      desiredHealthy: 3,
      currentHealthy: 3,
      disruptionsAllowed: 0,
    });
    assert.equal(c.metadata?.generation, 2);
    assert.equal(condition(c)?.reason, 'InsufficientPods');
  });

  test('a recorded eviction counts the pod out until it expires after two minutes', async () => {
    const pods = await readyPods('pct');
    assert.ok(pods.length >= 2);
    const b = await getBudget('pct');
    const recent = new Date(Date.now() - 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    const stale = new Date(Date.now() - 3 * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
    // What two evictions would have written, one long ago: the pods were never deleted.
    await client.update(
      pdbResource,
      w({
        ...b,
        status: {
          ...b.status,
          disruptedPods: { [pods[0].metadata!.name!]: recent, [pods[1].metadata!.name!]: stale },
        },
      }),
      { namespace: NS, subresource: 'status' },
    );
    await statusBecomes('pct', {
      disruptedPods: { [pods[0].metadata!.name!]: recent },
      currentHealthy: 3,
      disruptionsAllowed: 1,
    });
  });
});

describe('kubectl drain', () => {
  test('evicts one pod at a time under minAvailable 2 of 3 and waits for replacements', async () => {
    // The budgets of the tests above would hold their pods on hollow-1 for ever.
    for (const name of ['calc-min', 'pct', 'empty'])
      await client.delete(pdbResource, name, { namespace: NS });
    // All three replicas on hollow-1: the other nodes are cordoned while they start.
    await kubectl(['cordon', 'hollow-0', 'hollow-2']);
    await client.create(resources.deployments, w(deployment('web', 3)), { namespace: NS });
    await waitFor(
      'three Ready web pods on hollow-1',
      async () => {
        const ready = await readyPods('web');
        return ready.length === 3 && ready.every((p) => p.spec?.nodeName === 'hollow-1');
      },
      60_000,
      200,
    );
    await kubectl(['uncordon', 'hollow-0', 'hollow-2']);
    await client.create(pdbResource, w(budget('web', 'web', { minAvailable: 2 })), { namespace: NS });
    await statusBecomes('web', {
      expectedPods: 3,
      currentHealthy: 3,
      desiredHealthy: 2,
      disruptionsAllowed: 1,
    });

    // Watch the floor: at no time may fewer than 2 web pods be Ready and not terminating.
    let lowest = Number.POSITIVE_INFINITY;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        lowest = Math.min(lowest, (await readyPods('web')).length);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const started = Date.now();
    let out: { stdout: string; stderr: string };
    try {
      out = await kubectl(
        ['drain', 'hollow-1', '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=100s'],
        110_000,
      );
    } finally {
      polling = false;
      await poller;
    }
    const took = Date.now() - started;
    const text = `${out.stdout}\n${out.stderr}`;
    assert.match(out.stdout, /node\/hollow-1 drained/, text);
    assert.equal((out.stdout.match(/pod\/web-\S+ evicted/g) ?? []).length, 3, text);
    // The budget refused at least one eviction, which kubectl retried.
    assert.match(text, /Cannot evict pod as it would violate the pod's disruption budget/, text);
    assert.ok(lowest >= 2, `only ${lowest} web pods were Ready during the drain`);
    assert.ok(took > 4000, `the drain took ${took} ms: it did not wait for replacements`);

    // drain returns once the last pod is gone; its replacement may still be starting.
    let ready = await readyPods('web');
    await waitFor(
      'three Ready web pods off hollow-1',
      async () => {
        ready = await readyPods('web');
        return ready.length === 3 && ready.every((p) => p.spec?.nodeName !== 'hollow-1');
      },
      60_000,
      200,
    ).catch(() => {
      throw new Error(`web pods after the drain: ${JSON.stringify(ready.map((p) => p.spec?.nodeName))}`);
    });
    const node = await client.get<Node>(resources.nodes, 'hollow-1');
    assert.equal(node.spec?.unschedulable, true);

    await kubectl(['uncordon', 'hollow-1']);
    const back = await client.get<Node>(resources.nodes, 'hollow-1');
    assert.notEqual(back.spec?.unschedulable, true);
  });
});
