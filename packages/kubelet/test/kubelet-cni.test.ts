// The kubelet owns its node's CNI config (--cni-conf-dir): with no pod CIDR the
// node is NotReady and a bound pod waits in ContainerCreating with no sandbox;
// once node IPAM (here: the admin) sets spec.podCIDR the kubelet writes the
// conflist from deploy/containerd's template, containerd loads it, the node
// turns Ready at once and the pod runs with an IP from that subnet.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type KubeClient, resources } from '@kubit/client';
import type { CriRuntime } from '@kubit/cri';
import {
  type ControlPlane,
  daemonCommand,
  startProcess,
  startTestKubelet,
  type TestContainerd,
  type TestKubelet,
  waitFor,
} from '@kubit/testkit';
import type { Event, Node, Pod } from 'kubernetes-types/core/v1.js';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import { type NodeStack, startNodeStack } from './node-stack.js';

const NODE = 'cni-node';
let stack: NodeStack;
let cp: ControlPlane;
let containerd: TestContainerd;
let client: KubeClient;
let runtime: CriRuntime;
let root: NodeStack['root'];
let kubelet: TestKubelet | undefined;
let confDir: string;

const readyOf = (n: Node | undefined) => n?.status?.conditions?.find((c) => c.type === 'Ready');

before(async () => {
  stack = await startNodeStack(NODE, 'kubit-kubelet-cni-');
  ({ cp, containerd, client, runtime, root } = stack);
  // The harness wrote a conflist; this node starts without one, as a fresh host does.
  confDir = join(containerd.dir, 'cni');
  await rm(join(confDir, '10-kubit.conflist'));
  await waitFor('containerd to report NetworkReady=false', async () => {
    const conds = await runtime.status();
    return conds.find((c) => c.type === 'NetworkReady')?.status === false;
  });
});

after(async () => {
  await kubelet?.stop();
  await stack?.stop();
});

test('pods wait for the pod CIDR; then the kubelet writes the conflist and the pod runs', async () => {
  // No TLS and no --pod-cidr: a fresh node that waits for node IPAM and writes its own conflist.
  kubelet = await startTestKubelet(cp, {
    node: NODE,
    containerd,
    dir: root.path,
    tls: false,
    podCidr: false,
    cniConfDir: confDir,
  });

  const notReady = await waitFor(
    'the node to register, NotReady',
    async () => readyOf(await client.get<Node>(resources.nodes, NODE).catch(() => undefined)),
    60_000,
    250,
  );
  assert.equal(notReady.status, 'False');
  assert.match(notReady.message ?? '', /pod CIDR/);

  await client.create<Pod>(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'waiter', namespace: 'default' },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }],
      },
    },
    { namespace: 'default' },
  );
  const waiting = await waitFor(
    'the NetworkNotReady event',
    async () => {
      const list = await client.list<Event>(resources.events, { namespace: 'default' });
      return list.items.find((e) => e.involvedObject.name === 'waiter' && e.reason === 'NetworkNotReady');
    },
    60_000,
    250,
  );
  assert.match(waiting.message ?? '', /pod CIDR/);
  const pending = await client.get<Pod>(resources.pods, 'waiter', { namespace: 'default' });
  assert.equal(pending.status?.phase ?? 'Pending', 'Pending');
  const uid = pending.metadata?.uid ?? '';
  assert.deepEqual(await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } }), []);
  assert.equal(existsSync(join(confDir, '10-kubit.conflist')), false);

  // What node IPAM does: give the node its subnet.
  await client.patch<Node>(resources.nodes, NODE, {
    spec: { podCIDR: containerd.podCidr, podCIDRs: [containerd.podCidr] },
  });
  await waitFor(
    'the node to turn Ready',
    async () => readyOf(await client.get<Node>(resources.nodes, NODE))?.status === 'True',
    60_000,
    250,
  );
  const conflist = JSON.parse(await readFile(join(confDir, '10-kubit.conflist'), 'utf8')) as {
    name: string;
    plugins: { bridge?: string; ipam?: { ranges?: { subnet: string }[][] } }[];
  };
  assert.equal(conflist.name, containerd.networkName);
  assert.equal(conflist.plugins[0]?.bridge, containerd.bridge);
  assert.equal(conflist.plugins[0]?.ipam?.ranges?.[0]?.[0]?.subnet, containerd.podCidr);

  const running = await waitFor(
    'the pod to run with an IP from the node subnet',
    async () => {
      const p = await client.get<Pod>(resources.pods, 'waiter', { namespace: 'default' });
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    },
    90_000,
    250,
  );
  const prefix = containerd.podCidr.split('.').slice(0, 3).join('.');
  assert.ok(
    running.status?.podIP?.startsWith(`${prefix}.`),
    `${running.status?.podIP} in ${containerd.podCidr}`,
  );
  await client.delete(resources.pods, 'waiter', { namespace: 'default' });
  await waitFor(
    'the pod to be gone',
    async () =>
      (await client.get<Pod>(resources.pods, 'waiter', { namespace: 'default' }).catch(() => undefined)) ===
      undefined,
    60_000,
    250,
  );
});

test('kubit-net’s pod MTU on the Node goes into the conflist, and the next pod gets it', async () => {
  assert.ok(kubelet, 'the first test started the kubelet');
  // What kubit-net does in vxlan mode: publish underlay − 50 on its own Node.
  await client.patch<Node>(resources.nodes, NODE, {
    metadata: { annotations: { 'net.kubit.dev/pod-mtu': '1450' } },
  });
  await waitFor(
    'the conflist to carry the MTU',
    async () => {
      const c = JSON.parse(await readFile(join(confDir, '10-kubit.conflist'), 'utf8')) as {
        plugins: { type: string; mtu?: number }[];
      };
      return c.plugins.find((p) => p.type === 'bridge')?.mtu === 1450;
    },
    30_000,
    100,
  );
  await client.create<Pod>(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'mtu', namespace: 'default' },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }],
      },
    },
    { namespace: 'default' },
  );
  await waitFor(
    'the pod to run',
    async () =>
      (await client.get<Pod>(resources.pods, 'mtu', { namespace: 'default' })).status?.phase === 'Running',
    90_000,
    250,
  );
  // The bridge plugin set the MTU on both ends of the pod's veth; the host end is on the node's bridge.
  const ports = JSON.parse(
    execFileSync('ip', ['-j', 'link', 'show', 'master', containerd.bridge], { encoding: 'utf8' }) || '[]',
  ) as { ifname: string; mtu: number }[];
  assert.ok(ports.length > 0, `no veth on ${containerd.bridge}`);
  assert.deepEqual(
    ports.map((p) => p.mtu),
    ports.map(() => 1450),
    JSON.stringify(ports),
  );
  await client.delete(resources.pods, 'mtu', { namespace: 'default' });
});

test('bad CNI flags stop the kubelet with one clear line', async () => {
  const cmd = daemonCommand('kubelet', 'main.ts');
  const bad = startProcess({
    command: cmd.command,
    args: [
      ...cmd.args,
      '--container-runtime-endpoint=fake://',
      `--cni-conf-dir=${join(root.path, 'cni')}`,
      '--cni-bridge-name=this-name-is-far-too-long',
    ],
    logFile: join(root.path, 'bad.log'),
    name: 'kubit-kubelet-bad',
  });
  const { code } = await bad.exited;
  assert.notEqual(code, 0);
  assert.match(await readFile(join(root.path, 'bad.log'), 'utf8'), /--cni-bridge-name/);
});
