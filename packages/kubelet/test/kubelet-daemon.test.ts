// kubit-kubelet as a real process: it registers its Node and Lease with a real
// apiserver, runs a pod bound to it on a real containerd, reports its status
// and events, serves its logs and stats through the apiserver, streams kubectl exec,
// attach and port-forward (SPDY, through the apiserver to containerd's
// streaming server), finishes its deletion, and adopts what it ran after a
// SIGKILL.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type KubeClient, resources } from '@kubit/client';
import type { CriRuntime } from '@kubit/cri';
import { createLogger } from '@kubit/daemon';
import {
  type ControlPlane,
  runCommand,
  sleep,
  startTestKubelet,
  type TestContainerd,
  type TestKubelet,
  waitFor,
} from '@kubit/testkit';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Event, Node, Pod } from 'kubernetes-types/core/v1.js';
import { ApiPodStatusSink } from '../src/node/apiserver-sinks.js';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import type { Summary } from '../src/server/stats.js';
import { type NodeStack, startNodeStack } from './node-stack.js';

const NODE = 'node-1';
let stack: NodeStack;
let cp: ControlPlane;
let containerd: TestContainerd;
let client: KubeClient;
let runtime: CriRuntime;
let root: NodeStack['root'];
let kubelet: TestKubelet;

before(async () => {
  stack = await startNodeStack(NODE, 'kubit-kubelet-daemon-');
  ({ cp, containerd, client, runtime, root } = stack);
  kubelet = await startTestKubelet(cp, {
    node: NODE,
    containerd,
    dir: root.path,
    extraArgs: ['--node-labels=kubit.io/role=worker'],
  });
});

after(async () => {
  await kubelet?.stop();
  await stack?.stop();
});

test('the node registers Ready with its addresses, capacity, labels and a Lease', async () => {
  const node = await waitFor(
    'the node to be Ready',
    async () => {
      const n = await client.get<Node>(resources.nodes, NODE);
      return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
    },
    60_000,
    250,
  );
  assert.deepEqual(node.status?.addresses, [
    { type: 'InternalIP', address: '127.0.0.1' },
    { type: 'Hostname', address: NODE },
  ]);
  assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], NODE);
  assert.equal(node.metadata?.labels?.['kubit.io/role'], 'worker');
  assert.equal(node.status?.capacity?.pods, '110');
  assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\//);
  assert.ok((node.status?.daemonEndpoints?.kubeletEndpoint?.Port ?? 0) > 0);
  assert.equal(node.spec?.podCIDR, containerd.podCidr);
  const lease = await waitFor('the node lease', () =>
    client.get<Lease>(resources.leases, NODE, { namespace: 'kube-node-lease' }).catch(() => undefined),
  );
  assert.equal(lease.spec?.holderIdentity, NODE);
});

test('a pod bound to the node runs, reports Running with an IP, events, logs and stats; deletion finishes', async () => {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'nginx', image: 'nginx:latest', ports: [{ containerPort: 80 }] }],
    },
  };
  await client.create(resources.pods, pod, { namespace: 'default' });
  const running = await waitFor(
    'the pod to be Running with an IP',
    async () => {
      const p = await client.get<Pod>(resources.pods, 'web', { namespace: 'default' });
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    },
    90_000,
    250,
  );
  assert.equal(running.status?.hostIP, '127.0.0.1');
  // Running means started, not yet listening: nginx may need a moment to bind port 80.
  const res = await waitFor('nginx to answer on the pod IP', () =>
    fetch(`http://${running.status?.podIP}/`, { headers: { 'user-agent': 'kubit-e2e' } }).catch(
      () => undefined,
    ),
  );
  assert.equal(res.status, 200);
  const events = await waitFor('Started event', async () => {
    const list = await client.list<Event>(resources.events, { namespace: 'default' });
    const mine = list.items.filter((e) => e.involvedObject.name === 'web').map((e) => e.reason);
    return mine.includes('Started') ? mine : undefined;
  });
  assert.ok(events.includes('Pulling') && events.includes('Created'));
  // Logs through the apiserver, which proxies to this kubelet over TLS.
  const logs = await waitFor('the access log line', async () => {
    const text = await client.request<string>({
      method: 'GET',
      path: '/api/v1/namespaces/default/pods/web/log',
      accept: 'text/plain',
    });
    const s = typeof text === 'string' ? text : JSON.stringify(text);
    return s.includes('kubit-e2e') ? s : undefined;
  });
  assert.match(logs, /"GET \/ HTTP\/1.1" 200/);
  // Its stats through the apiserver's nodes/proxy, as `kubectl get --raw .../proxy/stats/summary` reads them.
  const summary = await waitFor("the pod in the node's stats summary", async () => {
    const s = await client.request<Summary>({
      method: 'GET',
      path: `/api/v1/nodes/${NODE}/proxy/stats/summary`,
    });
    const web = s.pods?.find((p) => p.podRef.uid === running.metadata?.uid);
    return web?.containers.some((c) => c.name === 'nginx') ? s : undefined;
  });
  assert.equal(summary.node.nodeName, NODE);
  assert.ok((summary.node.fs?.capacityBytes ?? 0) > 0);

  await client.delete(resources.pods, 'web', { namespace: 'default' });
  await waitFor(
    'the pod to be gone',
    async () =>
      client.get(resources.pods, 'web', { namespace: 'default' }).then(
        () => false,
        () => true,
      ),
    30_000,
    250,
  );
  const left = await runtime.listContainers({
    labelSelector: { [POD_UID_LABEL]: running.metadata?.uid ?? '' },
  });
  assert.deepEqual(left, []);
});

test('after kill -9 and a restart the kubelet adopts its pod: no second container', async () => {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'steady', namespace: 'default' },
    spec: {
      nodeName: NODE,
      containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }],
    },
  };
  const created = await client.create<Pod>(resources.pods, pod, { namespace: 'default' });
  const uid = created.metadata?.uid ?? '';
  await waitFor(
    'Running',
    async () =>
      (await client.get<Pod>(resources.pods, 'steady', { namespace: 'default' })).status?.phase === 'Running',
    60_000,
    250,
  );
  const before = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.equal(before.length, 1);
  await kubelet.process.kill();
  kubelet.restart();
  await waitFor(
    'the restarted kubelet to renew the node status',
    async () => {
      const n = await client.get<Node>(resources.nodes, NODE);
      const hb = n.status?.conditions?.find((c) => c.type === 'Ready')?.lastHeartbeatTime;
      return hb !== undefined && Date.parse(hb) > Date.now() - 3000;
    },
    60_000,
    500,
  );
  await new Promise((r) => setTimeout(r, 3000)); // several relists
  const after = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.deepEqual(
    after.map((c) => [c.id, c.state]),
    before.map((c) => [c.id, 'CONTAINER_RUNNING']),
  );
  const p = await client.get<Pod>(resources.pods, 'steady', { namespace: 'default' });
  assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0);
});

// The kubelet sends metadata.uid in its status patch; the apiserver answers a uid that is
// not the stored one with 409 (as Kubernetes does), and the kubelet drops the stale status.
test('a status for a deleted pod never lands on a new pod of the same name (uid precondition)', async () => {
  const name = 'renamed-twin';
  const body: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    // Bound to a node no kubelet runs: only this test writes its status.
    spec: { nodeName: 'no-such-node', containers: [{ name: 'c', image: 'busybox:latest' }] },
  };
  const old = await client.create<Pod>(resources.pods, body, { namespace: 'default' });
  await client.delete(resources.pods, name, { namespace: 'default', gracePeriodSeconds: 0 });
  await waitFor('the old pod to be gone', async () =>
    client.get<Pod>(resources.pods, name, { namespace: 'default' }).then(
      () => false,
      () => true,
    ),
  );
  const twin = await client.create<Pod>(resources.pods, body, { namespace: 'default' });
  assert.notEqual(twin.metadata?.uid, old.metadata?.uid);
  const sink = new ApiPodStatusSink(client, createLogger({ name: 'test', level: 'silent' }), undefined, {
    baseDelayMs: 50,
    maxDelayMs: 200,
  });
  sink.setStatus(old, { phase: 'Failed', message: 'the old pod' });
  // Dropped on the apiserver's 409 (or written, when the uid is not checked); never retried for long.
  const settled = await Promise.race([sink.settled().then(() => true), sleep(10_000).then(() => false)]);
  sink.close();
  const now = await client.get<Pod>(resources.pods, name, { namespace: 'default' });
  await client.delete(resources.pods, name, { namespace: 'default', gracePeriodSeconds: 0 });
  assert.ok(settled, 'the status was written or dropped, not retried');
  assert.notEqual(now.status?.message, 'the old pod', 'the old pod status landed on its namesake');
});

test('kubectl exec, attach and port-forward stream through the apiserver and the kubelet to containerd', async () => {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'streams', namespace: 'default' },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      containers: [
        { name: 'sh', image: 'busybox:latest', command: ['sleep', '3600'] },
        { name: 'web', image: 'nginx:latest', ports: [{ containerPort: 80 }] },
        {
          name: 'ticker',
          image: 'busybox:latest',
          command: ['sh', '-c', 'while true; do echo tick; sleep 0.2; done'],
        },
      ],
    },
  };
  await client.create(resources.pods, pod, { namespace: 'default' });
  await waitFor(
    'both containers to run',
    async () => {
      const p = await client.get<Pod>(resources.pods, 'streams', { namespace: 'default' });
      return p.status?.containerStatuses?.every((c) => c.state?.running) ? p : undefined;
    },
    90_000,
    250,
  );
  const kubectl = (args: string[], stdin?: string) =>
    runCommand('kubectl', ['--kubeconfig', cp.kubeconfigPath, ...args], { stdin, timeoutMs: 30_000 });

  // stdout and stderr arrive apart, and the command's exit code is kubectl's.
  let r = await kubectl(['exec', 'streams', '-c', 'sh', '--', 'sh', '-c', 'echo out; echo err >&2; exit 3']);
  assert.equal(r.stdout, 'out\n');
  assert.match(r.stderr, /^err\n/);
  assert.match(r.stderr, /command terminated with exit code 3/);
  assert.equal(r.code, 3);
  // stdin reaches the command.
  r = await kubectl(['exec', '-i', 'streams', '-c', 'sh', '--', 'sh', '-c', 'cat; echo done'], 'piped\n');
  assert.deepEqual([r.code, r.stdout], [0, 'piped\ndone\n'], r.stderr);
  // Bad requests get the apiserver's words.
  r = await kubectl(['exec', 'streams', '-c', 'nope', '--', 'true']);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /container nope is not valid for pod streams/);
  r = await kubectl(['exec', 'no-such-pod', '--', 'true']);
  assert.match(r.stderr, /pods "no-such-pod" not found/);
  // attach: the running process's output, until kubectl is stopped.
  r = await runCommand('kubectl', ['--kubeconfig', cp.kubeconfigPath, 'attach', 'streams', '-c', 'ticker'], {
    timeoutMs: 5_000,
  });
  assert.match(r.stdout, /tick\ntick\n/, r.stderr);

  // port-forward: a local port reaches nginx in the pod's network namespace.
  const forward = spawn(
    'kubectl',
    ['--kubeconfig', cp.kubeconfigPath, 'port-forward', 'pod/streams', ':80', '--address', '127.0.0.1'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  try {
    let printed = '';
    forward.stdout.on('data', (d: Buffer) => {
      printed += d.toString();
    });
    const port = await waitFor(
      'kubectl to pick a local port',
      async () => /Forwarding from 127\.0\.0\.1:(\d+) -> 80/.exec(printed)?.[1],
    );
    const res = await waitFor('nginx to answer through the forward', () =>
      fetch(`http://127.0.0.1:${port}/`).catch(() => undefined),
    );
    assert.equal(res.status, 200);
    assert.match(await res.text(), /nginx/i);
  } finally {
    forward.kill();
  }
  await client.delete(resources.pods, 'streams', { namespace: 'default', gracePeriodSeconds: 0 });
});
