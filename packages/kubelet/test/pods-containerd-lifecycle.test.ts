// The pod logic on a real containerd: init containers, volumes, deletion, and a
// kubelet killed with SIGKILL and started again.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DISK_BACKING_FILE_ATTRIBUTE, DISK_CSI_DRIVER } from '@kubit/api';
import { loopDevicesOf } from '@kubit/cri/host-mounts';
import { startProcess, type TestProcess, tempDir } from '@kubit/testkit';
import type { PodStatus } from 'kubernetes-types/core/v1.js';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import { createBackingFile } from '../src/volumes/disk.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus, waitUntil } from './helpers.js';

let node: Node;
before(async () => {
  node = await startNode();
});
after(async () => {
  await node?.stop();
});

test('init containers run in order before the main container', async () => {
  const pod = makePod('init', {
    volumes: [{ name: 'work', emptyDir: {} }],
    initContainers: [
      {
        name: 'first',
        image: 'busybox:latest',
        command: ['sh', '-c', 'echo one >> /work/order'],
        volumeMounts: [{ name: 'work', mountPath: '/work' }],
      },
      {
        name: 'second',
        image: 'busybox:latest',
        command: ['sh', '-c', 'echo two >> /work/order'],
        volumeMounts: [{ name: 'work', mountPath: '/work' }],
      },
    ],
    containers: [
      {
        name: 'main',
        image: 'busybox:latest',
        command: ['sh', '-c', 'cat /work/order; sleep 3600'],
        volumeMounts: [{ name: 'work', mountPath: '/work' }],
      },
    ],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  assert.equal(containerState(s, 'first')?.state?.terminated?.reason, 'Completed');
  assert.equal(containerState(s, 'second')?.state?.terminated?.reason, 'Completed');
  await waitUntil('main to print the order', async () => (await node.logLines(pod, 'main')).length >= 2);
  assert.deepEqual(await node.logLines(pod, 'main'), ['one', 'two']);
});

test('configMap, secret, projected, memory emptyDir and env reach the container', async () => {
  node.objects.putConfigMap({
    metadata: { name: 'app', namespace: 'default' },
    data: { 'app.conf': 'color=blue' },
  });
  node.objects.putSecret({
    metadata: { name: 'creds', namespace: 'default' },
    data: { password: Buffer.from('s3cret').toString('base64') },
  });
  const pod = makePod('vols', {
    volumes: [
      { name: 'conf', configMap: { name: 'app' } },
      { name: 'creds', secret: { secretName: 'creds' } },
      { name: 'mem', emptyDir: { medium: 'Memory' } },
      {
        name: 'proj',
        projected: {
          sources: [
            { configMap: { name: 'app' } },
            { downwardAPI: { items: [{ path: 'podname', fieldRef: { fieldPath: 'metadata.name' } }] } },
          ],
        },
      },
    ],
    containers: [
      {
        name: 'c',
        image: 'busybox:latest',
        command: [
          'sh',
          '-c',
          'cat /etc/app/app.conf; echo; cat /etc/creds/password; echo; echo "$GREETING"; grep -c " /scratch tmpfs" /proc/mounts; cat /etc/proj/app.conf; echo; cat /etc/proj/podname; echo; sleep 3600',
        ],
        env: [{ name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'app', key: 'app.conf' } } }],
        volumeMounts: [
          { name: 'conf', mountPath: '/etc/app' },
          { name: 'creds', mountPath: '/etc/creds', readOnly: true },
          { name: 'mem', mountPath: '/scratch' },
          { name: 'proj', mountPath: '/etc/proj', readOnly: true },
        ],
      },
    ],
  });
  node.manager.upsert(pod);
  await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  await waitUntil('the output', async () => (await node.logLines(pod, 'c')).length >= 6);
  assert.deepEqual(await node.logLines(pod, 'c'), [
    'color=blue',
    's3cret',
    'color=blue',
    '1',
    'color=blue',
    'vols',
  ]);
});

test('persistent volumes in a real container: an ext4 kubit-disk mounted at its path, a Block one as a raw device', async () => {
  const storage = join(node.rootDir, 'test-storage');
  const fsDisk = join(storage, 'pvc-fs.img');
  const rawDisk = join(storage, 'pvc-raw.img');
  await mkdir(storage, { recursive: true });
  await createBackingFile(fsDisk, 32 * 1024 * 1024);
  await createBackingFile(rawDisk, 16 * 1024 * 1024);
  const diskPV = (name: string, file: string, block: boolean) =>
    node.objects.putVolume({
      metadata: { name },
      spec: {
        ...(block ? { volumeMode: 'Block' } : {}),
        csi: {
          driver: DISK_CSI_DRIVER,
          volumeHandle: name,
          volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: file },
        },
      },
    });
  diskPV('pvc-fs', fsDisk, false);
  diskPV('pvc-raw', rawDisk, true);
  for (const [claim, volume] of [
    ['data', 'pvc-fs'],
    ['raw', 'pvc-raw'],
  ])
    node.objects.putClaim({
      metadata: { name: claim, namespace: 'default' },
      spec: { volumeName: volume, accessModes: ['ReadWriteOnce'] },
      status: { phase: 'Bound' },
    });
  const pod = makePod('pv-user', {
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'raw', persistentVolumeClaim: { claimName: 'raw' } },
    ],
    containers: [
      {
        name: 'c',
        image: 'busybox:latest',
        command: [
          'sh',
          '-c',
          'grep " /data " /proc/mounts | cut -d" " -f3; echo kept > /data/f; cat /data/f; ' +
            'echo rawbytes | dd of=/dev/xvda bs=512 conv=sync 2>/dev/null; dd if=/dev/xvda bs=8 count=1 2>/dev/null; echo; sleep 3600',
        ],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
        volumeDevices: [{ name: 'raw', devicePath: '/dev/xvda' }],
      },
    ],
  });
  try {
    node.manager.upsert(pod);
    await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
    await waitUntil('the output', async () => (await node.logLines(pod, 'c')).length >= 3);
    assert.deepEqual(await node.logLines(pod, 'c'), ['ext4', 'kept', 'rawbytes']);
  } finally {
    node.manager.remove(pod);
    await waitUntil(
      'the pod to be torn down',
      async () => loopDevicesOf(fsDisk).length + loopDevicesOf(rawDisk).length === 0,
      60_000,
    );
  }
});

test('deleting a pod stops it within the grace period and frees its IP', async () => {
  const pod = makePod('del', {
    terminationGracePeriodSeconds: 30,
    containers: [{ name: 'nginx', image: 'nginx:latest' }],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  await waitUntil(
    'HTTP on the pod IP',
    async () => (await fetch(`http://${s.podIP}/`).catch(() => undefined))?.status === 200,
  );
  node.manager.upsert({
    ...pod,
    metadata: { ...pod.metadata, deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 5 },
  });
  await waitUntil('podTerminated', () => node.sink.terminated.includes('default/del'), 15_000);
  assert.deepEqual(
    await node.runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' } }),
    [],
  );
  assert.deepEqual(
    await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' } }),
    [],
  );
  assert.ok(node.sink.reasons('default/del').includes('Killing'));
});

test('a container that ignores SIGTERM is killed once the grace period is over', async () => {
  // sleep as PID 1 has no SIGTERM handler, so the signal does nothing: only SIGKILL ends it.
  const pod = makePod('stubborn', {
    terminationGracePeriodSeconds: 30,
    containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }],
  });
  node.manager.upsert(pod);
  await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  const deletedAt = Date.now();
  node.manager.upsert({
    ...pod,
    metadata: { ...pod.metadata, deletionTimestamp: new Date().toISOString(), deletionGracePeriodSeconds: 2 },
  });
  await waitUntil('podTerminated', () => node.sink.terminated.includes('default/stubborn'), 20_000);
  const took = Date.now() - deletedAt;
  assert.ok(took >= 2000, `the kubelet waited out the 2 s grace period before SIGKILL (took ${took} ms)`);
  assert.deepEqual(
    await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' } }),
    [],
  );
});

test('a kubelet killed with SIGKILL and started again adopts its pod: no duplicate container', async () => {
  // One kubelet per runtime: the in-process one would remove the runner's pod as an orphan.
  // (This test therefore runs last in this file.)
  node.manager.stop();
  const dir = await tempDir('kubit-runner-');
  const runners: TestProcess[] = [];
  try {
    const pod = makePod('survivor', { containers: [{ name: 'nginx', image: 'nginx:latest' }] });
    const podsFile = join(dir.path, 'pods.json');
    const statusFile = join(dir.path, 'status.jsonl');
    writeFileSync(podsFile, JSON.stringify([pod]));
    writeFileSync(statusFile, '');
    const start = () => {
      const p = startProcess({
        command: process.execPath,
        args: [
          '--conditions=kubit-source',
          '--import',
          'tsx',
          fileURLToPath(new URL('./fixtures/pod-runner.ts', import.meta.url)),
        ],
        env: {
          KUBIT_PODS: podsFile,
          KUBIT_STATUS_FILE: statusFile,
          KUBIT_ENDPOINT: node.containerd.endpoint,
          KUBIT_ROOT_DIR: join(dir.path, 'root'),
        },
        logFile: join(dir.path, 'runner.log'),
        name: 'pod-runner',
      });
      runners.push(p);
      return p;
    };
    const runningFrom = (pid: number) =>
      readFileSync(statusFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { pid: number; status: PodStatus })
        .find((l) => l.pid === pid && l.status?.phase === 'Running');
    const first = start();
    await waitUntil('the first kubelet to run the pod', () => !!runningFrom(first.pid), 60_000);
    const before = await node.runtime.listContainers({
      labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' },
    });
    assert.equal(before.length, 1);
    await first.kill();
    const second = start();
    await waitUntil('the second kubelet to report the pod Running', () => !!runningFrom(second.pid), 60_000);
    await new Promise((r) => setTimeout(r, 1500)); // a few relists
    const sandboxes = await node.runtime.listPodSandbox({
      labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' },
    });
    const containers = await node.runtime.listContainers({
      labelSelector: { [POD_UID_LABEL]: pod.metadata?.uid ?? '' },
    });
    if (process.env.KUBIT_DEBUG) process.stderr.write(readFileSync(statusFile, 'utf8'));
    assert.equal(sandboxes.length, 1);
    assert.deepEqual(
      containers.map((c) => c.id),
      before.map((c) => c.id),
    );
    const status = runningFrom(second.pid)?.status;
    assert.equal(containerState(status ?? {}, 'nginx')?.restartCount, 0);
  } finally {
    for (const r of runners) await r.stop();
    await dir.cleanup();
  }
});
