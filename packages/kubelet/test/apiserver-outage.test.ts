// kubit-kubelet without its apiserver for more than a minute: the pod it runs
// keeps running (checked through CRI and over HTTP on the pod IP), nothing is
// killed or restarted, the kubelet stays up; a readiness change during the
// outage is reported once the apiserver is back (same port, same store), and
// the node's Lease is renewed again.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type KubeClient, resources } from '@kubit/client';
import type { CriRuntime } from '@kubit/cri';
import {
  type ControlPlane,
  sleep,
  startTestKubelet,
  type TestContainerd,
  type TestKubelet,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from '../src/pods/labels.js';
import { startApiserverAgain } from './apiserver-process.js';
import { type NodeStack, startNodeStack } from './node-stack.js';

const NODE = 'node-1';
/** Longer than a minute, as the issue asks. */
const OUTAGE_MS = 61_000;
let stack: NodeStack;
let cp: ControlPlane;
let containerd: TestContainerd;
let client: KubeClient;
let runtime: CriRuntime;
let root: NodeStack['root'];
let kubelet: TestKubelet;
let apiserver: TestProcess | undefined;
const t0 = Date.now();
/** With KUBIT_DEBUG, where the file's time goes. */
const mark = (what: string) => {
  if (process.env.KUBIT_DEBUG) process.stderr.write(`[outage test +${Date.now() - t0} ms] ${what}\n`);
};

before(async () => {
  stack = await startNodeStack(NODE, 'kubit-kubelet-outage-');
  ({ cp, containerd, client, runtime, root } = stack);
  kubelet = await startTestKubelet(cp, { node: NODE, containerd, dir: root.path });
  // A kubelet started from sources on a loaded machine can take a while to come up.
  await kubelet.waitReady(client, 180_000, 250);
  mark('set up');
});

after(async () => {
  await kubelet?.stop();
  if (process.env.KUBIT_DEBUG && kubelet) {
    const { readFileSync } = await import('node:fs');
    process.stderr.write(readFileSync(kubelet.logFile, 'utf8').split('\n').slice(-80).join('\n'));
  }
  // The restarted apiserver is this test's own; the original is the stack's.
  await apiserver?.stop();
  await stack?.stop();
});

const getPod = () => client.get<Pod>(resources.pods, 'outlast', { namespace: 'default' });

async function answersHttp(ip: string): Promise<boolean> {
  const res = await fetch(`http://${ip}/`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
  return res?.status === 200 && (await res.text()).includes('still here');
}

test('a minute without the apiserver leaves the running pod running; status catches up after', async () => {
  await client.create<Pod>(
    resources.pods,
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'outlast', namespace: 'default' },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'web',
            image: 'busybox:latest',
            command: [
              'sh',
              '-c',
              'mkdir -p /www && echo still here > /www/index.html && touch /tmp/ready && exec httpd -f -p 80 -h /www',
            ],
            readinessProbe: { exec: { command: ['cat', '/tmp/ready'] }, periodSeconds: 1 },
          },
        ],
      },
    },
    { namespace: 'default' },
  );
  const ready = await waitFor(
    'the pod to be Running and Ready',
    async () => {
      const p = await getPod();
      const isReady = p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      return p.status?.phase === 'Running' && isReady && p.status.podIP ? p : undefined;
    },
    90_000,
    250,
  );
  mark('pod ready');
  const uid = ready.metadata?.uid ?? '';
  const podIP = ready.status?.podIP ?? '';
  assert.ok(await answersHttp(podIP));
  const sandboxesBefore = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  const containersBefore = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.equal(sandboxesBefore.length, 1);
  assert.equal(containersBefore.length, 1);
  const web = containersBefore[0];
  assert.equal(web?.labels[CONTAINER_NAME_LABEL], 'web');

  // The outage: the apiserver process is stopped by its PID.
  await cp.apiserver.stop();
  const outageStarted = Date.now();
  let flipped = false;
  let checks = 0;
  while (Date.now() - outageStarted < OUTAGE_MS) {
    // The same sandbox and container, running; the pod IP still serves.
    const sandboxes = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
    const containers = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
    assert.deepEqual(
      sandboxes.map((s) => [s.id, s.state]),
      sandboxesBefore.map((s) => [s.id, 'SANDBOX_READY']),
    );
    assert.deepEqual(
      containers.map((c) => [c.id, c.state]),
      containersBefore.map((c) => [c.id, 'CONTAINER_RUNNING']),
    );
    assert.ok(await answersHttp(podIP), `HTTP on ${podIP} during the outage`);
    assert.ok(kubelet.process.running, 'the kubelet stays up');
    checks++;
    if (!flipped && Date.now() - outageStarted > 10_000) {
      // Something the kubelet must report later: the container stops being ready.
      const r = await runtime.execSync(web?.id ?? '', ['rm', '/tmp/ready'], 5);
      assert.equal(r.exitCode, 0);
      flipped = true;
    }
    await sleep(3000);
  }
  assert.ok(flipped && checks >= 10);

  mark('outage over');
  const restartedAt = Date.now();
  apiserver = await startApiserverAgain(cp);
  mark('apiserver back');
  const reported = await waitFor(
    'the readiness change to be reported',
    async () => {
      const p = await getPod();
      const c = p.status?.containerStatuses?.find((s) => s.name === 'web');
      const podReady = p.status?.conditions?.find((x) => x.type === 'Ready')?.status;
      return c?.ready === false && podReady === 'False' ? p : undefined;
    },
    30_000,
    250,
  );
  assert.equal(reported.status?.phase, 'Running');
  const status = reported.status?.containerStatuses?.[0];
  assert.equal(status?.restartCount, 0);
  assert.equal(status?.containerID, `containerd://${web?.id}`);
  assert.ok(status?.state?.running, 'still running, only not ready');
  await waitFor(
    'the node Lease to be renewed after the restart',
    async () => {
      const lease = await client
        .get<Lease>(resources.leases, NODE, { namespace: 'kube-node-lease' })
        .catch(() => undefined);
      const renewed = Date.parse(String(lease?.spec?.renewTime ?? ''));
      return renewed >= restartedAt - 1000;
    },
    30_000,
    500,
  );
  mark('status and lease caught up');
  const after = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  assert.deepEqual(
    after.map((c) => [c.id, c.state]),
    containersBefore.map((c) => [c.id, 'CONTAINER_RUNNING']),
  );
  assert.ok(kubelet.process.running);
});
