// kubit-hollow's engine: 20 hollow kubelets in this process against a real
// control plane (store + apiserver): Nodes Ready, Leases renewed, a bound pod
// reported Running with an IP and container statuses, a deleted pod finished off.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import { type ControlPlane, daemonCommand, startControlPlane, startProcess, waitFor } from '@kubit/testkit';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import {
  HOLLOW_EXIT_CODE_ANNOTATION,
  HOLLOW_RUN_MS_ANNOTATION,
  type HollowNodes,
  hollowPodIP,
  isReportedRunning,
  startHollowNodes,
} from '../src/index.js';

const NODES = 20;
let cp: ControlPlane;
let client: KubeClient;
let hollow: HollowNodes | undefined;

before(async () => {
  cp = await startControlPlane({ nodes: ['proc-0', 'proc-1'] });
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
});

after(async () => {
  await hollow?.stop();
  client?.close();
  await cp?.stop();
});

const ready = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

test('hollow pod IPs are unique per node and slot', () => {
  assert.equal(hollowPodIP(0, 0), '10.128.0.1');
  assert.equal(hollowPodIP(257, 3), '10.129.1.4');
  assert.notEqual(hollowPodIP(1, 0), hollowPodIP(0, 0));
});

test('20 hollow nodes register Ready, renew their Leases and run bound pods', async () => {
  hollow = await startHollowNodes({
    nodes: NODES,
    namePrefix: 'hollow-',
    kubeconfig: cp.kubeconfigPath,
    cpu: '8',
    memory: '32Gi',
    maxPods: 50,
    labels: { 'kubit.dev/pool': 'hollow' },
    leaseIntervalMs: 1000,
  });
  assert.equal(hollow.names.length, NODES);

  const nodes = await waitFor(
    'all hollow nodes Ready',
    async () => {
      const list = await client.list<Node>(resources.nodes, { labelSelector: 'kubit.dev/pool=hollow' });
      return list.items.length === NODES && list.items.every(ready) ? list.items : undefined;
    },
    60_000,
    250,
  );
  const n0 = nodes.find((n) => n.metadata?.name === 'hollow-0');
  assert.ok(n0, 'hollow-0 registered');
  assert.equal(n0.status?.capacity?.cpu, '8');
  assert.equal(n0.status?.capacity?.memory, '32Gi');
  assert.equal(n0.status?.capacity?.pods, '50');
  assert.equal(n0.metadata?.labels?.['kubernetes.io/hostname'], 'hollow-0');

  // Leases: each exists and its renewTime moves on.
  const first = await waitFor(
    'the leases of all hollow nodes',
    async () => {
      const list = await client.list<Lease>(resources.leases, { namespace: 'kube-node-lease' });
      const mine = list.items.filter((l) => l.metadata?.name?.startsWith('hollow-'));
      return mine.length === NODES ? mine : undefined;
    },
    60_000,
    250,
  );
  const before19 = first.find((l) => l.metadata?.name === 'hollow-19')?.spec?.renewTime;
  assert.ok(before19);
  await waitFor(
    'hollow-19 to renew its lease',
    async () => {
      const l = await client.get<Lease>(resources.leases, 'hollow-19', { namespace: 'kube-node-lease' });
      return l.spec?.renewTime !== before19 && l.spec?.holderIdentity === 'hollow-19';
    },
    30_000,
    250,
  );

  // A pod bound to a hollow node (no scheduler here: nodeName set directly) runs.
  await client.create<Pod>(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'ghost', namespace: 'default' },
      spec: {
        nodeName: 'hollow-7',
        initContainers: [{ name: 'init', image: 'busybox:latest' }],
        containers: [
          { name: 'a', image: 'nginx:latest' },
          { name: 'b', image: 'busybox:latest' },
        ],
      },
    },
    { namespace: 'default' },
  );
  const pod = await waitFor(
    'the pod on hollow-7 to be Running',
    async () => {
      const p = await client.get<Pod>(resources.pods, 'ghost', { namespace: 'default' });
      return p.status?.phase === 'Running' ? p : undefined;
    },
    60_000,
    250,
  );
  assert.ok(isReportedRunning(pod));
  assert.match(pod.status?.podIP ?? '', /^10\.128\.7\.\d+$/);
  assert.equal(pod.status?.hostIP, '127.0.0.1');
  assert.deepEqual(
    pod.status?.containerStatuses?.map((c) => [c.name, c.ready, c.restartCount, Boolean(c.state?.running)]),
    [
      ['a', true, 0, true],
      ['b', true, 0, true],
    ],
  );
  assert.equal(pod.status?.initContainerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
  assert.equal(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

  // A pod annotated to exit ends Failed with its exit code after its run time.
  await client.create<Pod>(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'quitter',
        namespace: 'default',
        annotations: { [HOLLOW_EXIT_CODE_ANNOTATION]: '3', [HOLLOW_RUN_MS_ANNOTATION]: '300' },
      },
      spec: {
        nodeName: 'hollow-3',
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: 'busybox:latest' }],
      },
    },
    { namespace: 'default' },
  );
  const quit = await waitFor(
    'the annotated pod to fail',
    async () => {
      const p = await client.get<Pod>(resources.pods, 'quitter', { namespace: 'default' });
      return p.status?.phase === 'Failed' ? p : undefined;
    },
    60_000,
    100,
  );
  assert.equal(quit.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);
  assert.ok(quit.status?.podIP, 'it ran first');

  // A graceful delete completes: the hollow node confirms it like a kubelet whose containers stopped.
  await client.delete(resources.pods, 'ghost', { namespace: 'default', gracePeriodSeconds: 30 });
  await waitFor(
    'the deleted pod to be gone',
    async () => {
      try {
        await client.get<Pod>(resources.pods, 'ghost', { namespace: 'default' });
        return false;
      } catch {
        return true;
      }
    },
    60_000,
    250,
  );
  const stats = hollow.stats();
  assert.equal(stats.registered, NODES);
  assert.ok(stats.leaseRenewals > NODES);
});

test('kubit-hollow as a process, each node writing as its own system:node identity', async () => {
  for (const n of ['proc-0', 'proc-1']) await cp.kubeconfigForNode(n);
  const cmd = daemonCommand('kubelet', 'hollow.ts');
  const proc = startProcess({
    command: cmd.command,
    args: [
      ...cmd.args,
      '--nodes=2',
      '--name-prefix=proc-',
      `--kubeconfig=${cp.kubeconfigPath}`,
      `--node-kubeconfig-template=${join(cp.dir, 'kubelet-{name}.kubeconfig')}`,
      '--node-labels=kubit.dev/pool=proc',
      '--register-with-taints=dedicated=hollow:NoSchedule',
      '--max-pods=7',
    ],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, 'kubit-hollow.log'),
    name: 'kubit-hollow',
  });
  try {
    const nodes = await waitFor(
      'both process hollow nodes Ready',
      async () => {
        const list = await client.list<Node>(resources.nodes, { labelSelector: 'kubit.dev/pool=proc' });
        return list.items.length === 2 && list.items.every(ready) ? list.items : undefined;
      },
      60_000,
      250,
    );
    assert.equal(nodes[0]?.status?.capacity?.pods, '7');
    assert.deepEqual(
      nodes[0]?.spec?.taints?.map((t) => t.key),
      ['dedicated'],
    );
    await client.create<Pod>(
      resources.pods,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'proc-ghost', namespace: 'default' },
        spec: { nodeName: 'proc-1', containers: [{ name: 'c', image: 'nginx:latest' }] },
      },
      { namespace: 'default' },
    );
    await waitFor(
      'the pod on proc-1 to be Running',
      async () =>
        (await client.get<Pod>(resources.pods, 'proc-ghost', { namespace: 'default' })).status?.phase ===
        'Running',
      60_000,
      250,
    );
  } finally {
    await proc.stop();
  }
});

test('kubit-hollow refuses bad flags with one clear line', async () => {
  const cmd = daemonCommand('kubelet', 'hollow.ts');
  const proc = startProcess({
    command: cmd.command,
    args: [...cmd.args, '--nodes=2', `--kubeconfig=${cp.kubeconfigPath}`, '--memory=lots'],
    logFile: join(cp.logDir, 'kubit-hollow-bad.log'),
    name: 'kubit-hollow-bad',
  });
  const { code } = await proc.exited;
  assert.notEqual(code, 0);
});
