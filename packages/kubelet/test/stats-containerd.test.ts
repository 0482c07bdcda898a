// /stats/summary over HTTPS on a real containerd: a pod's kubit-disk shows its own size
// and the bytes a container writes to it, an emptyDir and a local-path volume their walked
// usage on the node's filesystem, the containers their CPU and memory and the image
// filesystem from the runtime; only the apiserver may read it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { DISK_BACKING_FILE_ATTRIBUTE, DISK_CSI_DRIVER } from '@kubit/api';
import { loopDevicesOf } from '@kubit/cri/host-mounts';
import { createLogger, createRegistry } from '@kubit/daemon';
import { freePort, generatePki, type Pki, tempDir } from '@kubit/testkit';
import type { FastifyInstance } from 'fastify';
import { POD_UID_LABEL } from '../src/pods/labels.js';
import { startKubeletServer } from '../src/server/server.js';
import type { Summary } from '../src/server/stats.js';
import { StatsCollector } from '../src/server/stats-sources.js';
import { createBackingFile } from '../src/volumes/disk.js';
import { type Node, startNode } from './containerd-fixture.js';
import { makePod, waitStatus, waitUntil } from './helpers.js';

const DISK_BYTES = 32 * 1024 * 1024;
const MiB = 1024 * 1024;

let node: Node;
let server: FastifyInstance;
let port: number;
let pkiDir: Awaited<ReturnType<typeof tempDir>>;
let pki: Pki;

before(async () => {
  node = await startNode();
  pkiDir = await tempDir('kubit-kubelet-stats-pki-');
  pki = await generatePki(join(pkiDir.path, 'pki'), ['node-1'], ['127.0.0.1']);
  port = await freePort();
  const log = createLogger({ name: 'kubit-kubelet', level: 'silent' });
  server = await startKubeletServer({
    host: '127.0.0.1',
    port,
    manager: node.manager,
    runtime: node.runtime,
    registry: createRegistry(),
    log,
    tls: {
      certFile: pki.kubeletServer('node-1').cert,
      keyFile: pki.kubeletServer('node-1').key,
      clientCaFile: pki.caFile,
    },
    stats: new StatsCollector({
      nodeName: 'node-1',
      rootDir: node.manager.rootDir,
      podLogsDir: node.manager.podLogsDir,
      runtime: node.runtime,
      pods: () => node.manager.pods(),
      log,
      // Every read walks again, so the test sees a write at once (the kubelet reuses a walk for 10 s).
      walkCacheMs: 0,
    }),
  });
});
after(async () => {
  await server?.close();
  await node?.stop();
  await pkiDir?.cleanup();
});

function get(path: string, cert = pki.apiserverKubeletClient): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: readFileSync(pki.caFile),
        servername: 'node-1',
        cert: readFileSync(cert.cert),
        key: readFileSync(cert.key),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function summary(): Promise<Summary> {
  const res = await get('/stats/summary');
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body) as Summary;
}

test('a pod with a kubit-disk, an emptyDir and a local-path volume: its volumes, containers and the node in the summary', async () => {
  const storage = join(node.rootDir, 'test-storage');
  const disk = join(storage, 'pvc-stats.img');
  await mkdir(storage, { recursive: true });
  await createBackingFile(disk, DISK_BYTES);
  node.objects.putVolume({
    metadata: { name: 'pvc-stats' },
    spec: {
      csi: {
        driver: DISK_CSI_DRIVER,
        volumeHandle: 'pvc-stats',
        volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: disk },
      },
    },
  });
  // A local-path volume: a directory on the node's filesystem, bind-mounted.
  const localDir = join(storage, 'pvc-local');
  await mkdir(localDir, { recursive: true });
  node.objects.putVolume({ metadata: { name: 'pvc-local' }, spec: { local: { path: localDir } } });
  for (const [claim, volume] of [
    ['data', 'pvc-stats'],
    ['local', 'pvc-local'],
  ])
    node.objects.putClaim({
      metadata: { name: claim, namespace: 'default' },
      spec: { volumeName: volume, accessModes: ['ReadWriteOnce'] },
      status: { phase: 'Bound' },
    });
  const pod = makePod('stats-user', {
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'scratch', emptyDir: {} },
      { name: 'local', persistentVolumeClaim: { claimName: 'local' } },
    ],
    containers: [
      {
        name: 'c',
        image: 'busybox:latest',
        command: ['sh', '-c', 'sleep 3600'],
        volumeMounts: [
          { name: 'data', mountPath: '/data' },
          { name: 'scratch', mountPath: '/scratch' },
          { name: 'local', mountPath: '/local' },
        ],
      },
    ],
  });
  try {
    node.manager.upsert(pod);
    await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
    const uid = pod.metadata?.uid ?? '';
    const [container] = await node.runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
    assert.ok(container, 'the container');

    const podOf = (s: Summary) => s.pods.find((p) => p.podRef.uid === uid);
    const volumeOf = (s: Summary, name: string) => podOf(s)?.volume?.find((v) => v.name === name);
    await waitUntil('the pod with its volumes and container', async () => {
      const s = await summary();
      return (
        !!volumeOf(s, 'data') &&
        !!volumeOf(s, 'scratch') &&
        !!volumeOf(s, 'local') &&
        podOf(s)?.containers.length === 1
      );
    });
    const before = await summary();
    const data0 = volumeOf(before, 'data');
    const scratch0 = volumeOf(before, 'scratch');
    const local0 = volumeOf(before, 'local');
    assert.ok(data0 && scratch0 && local0);
    // The kubit-disk is its own ext4: its capacity is the disk's, less ext4's journal and metadata (df shows the same).
    assert.deepEqual(data0.pvcRef, { name: 'data', namespace: 'default' });
    const capacity = data0.capacityBytes ?? 0;
    assert.ok(capacity > 0.7 * DISK_BYTES && capacity <= DISK_BYTES, `capacity ${capacity}`);
    assert.ok((data0.inodes ?? 0) > 0 && (data0.inodesUsed ?? 0) > 0);
    // The emptyDir is a directory on the node fs: the node fs's capacity, no claim.
    assert.equal(scratch0.pvcRef, undefined);
    assert.equal(scratch0.capacityBytes, before.node.fs?.capacityBytes);
    // The local-path volume too is the node fs's, with its claim.
    assert.deepEqual(local0.pvcRef, { name: 'local', namespace: 'default' });
    assert.equal(local0.capacityBytes, before.node.fs?.capacityBytes);

    const write = await node.runtime.execSync(
      container.id,
      [
        'sh',
        '-c',
        'dd if=/dev/zero of=/data/big bs=1M count=8 && dd if=/dev/zero of=/scratch/big bs=1M count=2 && dd if=/dev/zero of=/local/big bs=1M count=3 && sync',
      ],
      30,
    );
    assert.equal(write.exitCode, 0, write.stderr.toString());
    const after = await summary();
    const data1 = volumeOf(after, 'data');
    const scratch1 = volumeOf(after, 'scratch');
    assert.ok(data1 && scratch1);
    const grewData = (data1.usedBytes ?? 0) - (data0.usedBytes ?? 0);
    assert.ok(grewData >= 8 * MiB, `the disk's used bytes grew by ${grewData}`);
    assert.ok((data1.availableBytes ?? 0) < (data0.availableBytes ?? 0));
    const grewScratch = (scratch1.usedBytes ?? 0) - (scratch0.usedBytes ?? 0);
    assert.ok(
      grewScratch >= 2 * MiB && grewScratch < 4 * MiB,
      `the emptyDir's used bytes grew by ${grewScratch}`,
    );
    assert.equal((scratch1.inodesUsed ?? 0) - (scratch0.inodesUsed ?? 0), 1);
    const local1 = volumeOf(after, 'local');
    const grewLocal = (local1?.usedBytes ?? 0) - (local0.usedBytes ?? 0);
    assert.ok(
      grewLocal >= 3 * MiB && grewLocal < 5 * MiB,
      `the local volume's used bytes grew by ${grewLocal}`,
    );
    // Ephemeral storage counts the emptyDir, not the claim.
    const eph = podOf(after)?.['ephemeral-storage']?.usedBytes ?? 0;
    assert.ok(
      eph >= (scratch1.usedBytes ?? 0) && eph < (scratch1.usedBytes ?? 0) + 8 * MiB,
      `ephemeral ${eph}`,
    );

    // The container's CPU and memory come from containerd; a second read gives a rate.
    const c = podOf(after)?.containers[0];
    assert.equal(c?.name, 'c');
    assert.ok((c?.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'container cpu');
    assert.ok((c?.memory?.workingSetBytes ?? 0) > 0, 'container memory');
    assert.equal(typeof c?.cpu?.usageNanoCores, 'number');
    assert.equal(podOf(after)?.podRef.name, 'stats-user');

    // metrics-server's read: CPU and memory only, no volumes.
    const light = JSON.parse((await get('/stats/summary?only_cpu_and_memory=true')).body) as Summary;
    const lightPod = podOf(light);
    assert.equal(lightPod?.volume, undefined);
    assert.equal(light.node.fs, undefined);
    assert.ok((lightPod?.containers[0]?.cpu?.usageCoreNanoSeconds ?? 0) > 0);

    // /metrics/resource: the same container's cumulative CPU and working set, by pod and namespace.
    const res = await get('/metrics/resource');
    assert.equal(res.status, 200, res.body);
    const series =
      /^container_cpu_usage_seconds_total\{container="c",namespace="default",pod="stats-user"\} ([0-9.e+-]+) \d+$/m.exec(
        res.body,
      );
    assert.ok(series && Number(series[1]) > 0, res.body);
    assert.match(
      res.body,
      /^container_memory_working_set_bytes\{container="c",namespace="default",pod="stats-user"\} [1-9]/m,
    );
    assert.match(res.body, /^node_cpu_usage_seconds_total [0-9.e+]+ \d+$/m);
    assert.match(res.body, /^resource_scrape_error 0$/m);

    // The node: its name, its fs, CPU and memory from /proc.
    assert.equal(after.node.nodeName, 'node-1');
    assert.ok((after.node.fs?.capacityBytes ?? 0) > 0);
    assert.ok((after.node.cpu?.usageCoreNanoSeconds ?? 0) > 0);
    assert.ok((after.node.memory?.workingSetBytes ?? 0) > 0);
    // The image filesystem: containerd's own account of its images (CRI ImageFsInfo) on its snapshotter's fs.
    // containerd counts its snapshots' usage in a periodic sync (every 10 s), so the first reads may say 0.
    let imageFs = after.node.runtime?.imageFs;
    await waitUntil(
      'containerd to count its images',
      async () => {
        imageFs = (await summary()).node.runtime?.imageFs;
        return (imageFs?.usedBytes ?? 0) > 0 && (imageFs?.inodesUsed ?? 0) > 0;
      },
      40_000,
    );
    assert.ok((imageFs?.capacityBytes ?? 0) >= (imageFs?.usedBytes ?? 0));
  } finally {
    node.manager.remove(pod);
    await waitUntil('the pod to be torn down', async () => loopDevicesOf(disk).length === 0, 60_000);
  }
});

test("stats are the apiserver's to read: another node's certificate is refused", async () => {
  for (const path of ['/stats/summary', '/metrics/resource']) {
    const res = await get(path, pki.kubeletClient('node-1'));
    assert.equal(res.status, 403, path);
    assert.equal((JSON.parse(res.body) as { kind: string }).kind, 'Status');
  }
});
