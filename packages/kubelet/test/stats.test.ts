// The Summary API's shaping from fixed measurements, the /proc parsers, and the
// du-like walk on a real directory.
import assert from 'node:assert/strict';
import { link, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { createLogger } from '@kubit/daemon';
import { tempDir } from '@kubit/testkit';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { FakeRuntime } from '../src/runtime/fake.js';
import { buildSummary, type FsUsage } from '../src/server/stats.js';
import {
  diskUsage,
  parseMeminfo,
  parseProcStatCpu,
  StatsCollector,
  volumeTarget,
} from '../src/server/stats-sources.js';

const nodeFs: FsUsage = {
  capacityBytes: 100_000,
  availableBytes: 60_000,
  usedBytes: 40_000,
  inodes: 1000,
  inodesFree: 900,
  inodesUsed: 100,
};

const pod: Pod = {
  metadata: { name: 'web', namespace: 'shop', uid: 'u1', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: {
    containers: [{ name: 'a' }, { name: 'b' }],
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data-claim' } },
      { name: 'scratch', emptyDir: {} },
      { name: 'gen', ephemeral: { volumeClaimTemplate: { spec: {} } } },
      { name: 'host', hostPath: { path: '/tmp' } },
    ],
  },
  status: { startTime: '2026-01-01T00:00:05Z' },
};

test('the summary: node fs/cpu/memory, pods with containers, volumes with pvcRef, ephemeral storage', () => {
  const time = new Date('2026-01-01T00:01:00Z');
  const s = buildSummary({
    nodeName: 'node-1',
    time,
    nodeStartTime: new Date('2025-12-31T00:00:00Z'),
    nodeFs,
    nodeCpu: { usageCoreNanoSeconds: 5e9, usageNanoCores: 2e8 },
    nodeMemory: { totalBytes: 8000, usageBytes: 5000, workingSetBytes: 3000, rssBytes: 1000 },
    pods: [
      {
        pod,
        containers: [
          {
            name: 'a',
            startedAt: Date.parse('2026-01-01T00:00:06Z'),
            cpu: { usageCoreNanoSeconds: 100, usageNanoCores: 10 },
            memoryWorkingSetBytes: 1000,
            logs: { usedBytes: 4096, inodesUsed: 2 },
          },
          {
            name: 'b',
            startedAt: Date.parse('2026-01-01T00:00:07Z'),
            cpu: { usageCoreNanoSeconds: 50 },
            memoryWorkingSetBytes: 500,
          },
        ],
        volumes: new Map<string, FsUsage>([
          ['data', { capacityBytes: 32_000, availableBytes: 30_000, usedBytes: 2000, inodes: 10 }],
          ['scratch', { ...nodeFs, usedBytes: 8192, inodesUsed: 3 }],
          ['gen', { capacityBytes: 1000, usedBytes: 1 }],
        ]),
      },
    ],
  });
  const t = time.toISOString();
  assert.deepEqual(s.node, {
    nodeName: 'node-1',
    startTime: '2025-12-31T00:00:00.000Z',
    fs: { time: t, ...nodeFs },
    cpu: { time: t, usageCoreNanoSeconds: 5e9, usageNanoCores: 2e8 },
    memory: { time: t, availableBytes: 5000, usageBytes: 5000, workingSetBytes: 3000, rssBytes: 1000 },
  });
  assert.equal(s.pods.length, 1);
  const p = s.pods[0];
  assert.deepEqual(p.podRef, { name: 'web', namespace: 'shop', uid: 'u1' });
  assert.equal(p.startTime, '2026-01-01T00:00:05.000Z');
  assert.deepEqual(
    p.containers.map((c) => [c.name, c.startTime, c.cpu?.usageCoreNanoSeconds, c.memory?.workingSetBytes]),
    [
      ['a', '2026-01-01T00:00:06.000Z', 100, 1000],
      ['b', '2026-01-01T00:00:07.000Z', 50, 500],
    ],
  );
  assert.deepEqual(p.containers[0].logs, { time: t, usedBytes: 4096, inodesUsed: 2 });
  // A rate only when every container has one.
  assert.deepEqual(p.cpu, { time: t, usageCoreNanoSeconds: 150 });
  assert.deepEqual(p.memory, { time: t, workingSetBytes: 1500 });
  // In spec order; claim volumes (an ephemeral one's generated claim too) name their claim; hostPath has none.
  assert.deepEqual(p.volume, [
    {
      time: t,
      name: 'data',
      capacityBytes: 32_000,
      availableBytes: 30_000,
      usedBytes: 2000,
      inodes: 10,
      pvcRef: { name: 'data-claim', namespace: 'shop' },
    },
    { time: t, name: 'scratch', ...nodeFs, usedBytes: 8192, inodesUsed: 3 },
    {
      time: t,
      name: 'gen',
      capacityBytes: 1000,
      usedBytes: 1,
      pvcRef: { name: 'web-gen', namespace: 'shop' },
    },
  ]);
  // Ephemeral storage: the emptyDir and the logs, never the claims; on the node fs.
  assert.deepEqual(p['ephemeral-storage'], {
    time: t,
    availableBytes: 60_000,
    capacityBytes: 100_000,
    usedBytes: 8192 + 4096,
    inodesFree: 900,
    inodes: 1000,
    inodesUsed: 5,
  });
});

test('a pod with no running containers has no cpu or memory, and no volume list without volumes', () => {
  const s = buildSummary({
    nodeName: 'n',
    time: new Date(0),
    nodeStartTime: new Date(0),
    nodeFs,
    pods: [{ pod: { metadata: { name: 'x', uid: 'u' } }, containers: [], volumes: new Map() }],
  });
  assert.equal(s.node.cpu, undefined);
  assert.equal(s.node.memory, undefined);
  assert.equal(s.pods[0].podRef.namespace, 'default');
  assert.equal(s.pods[0].cpu, undefined);
  assert.equal(s.pods[0].volume, undefined);
  assert.equal(s.pods[0]['ephemeral-storage']?.usedBytes, 0);
});

test('only_cpu_and_memory: no filesystems, volumes, logs or ephemeral storage', () => {
  const s = buildSummary({
    nodeName: 'n',
    time: new Date(0),
    nodeStartTime: new Date(0),
    onlyCpuAndMemory: true,
    nodeFs,
    imageFs: nodeFs,
    nodeCpu: { usageCoreNanoSeconds: 1 },
    pods: [
      {
        pod,
        containers: [
          {
            name: 'a',
            startedAt: 0,
            cpu: { usageCoreNanoSeconds: 7 },
            memoryWorkingSetBytes: 3,
            logs: { usedBytes: 1 },
          },
        ],
        volumes: new Map([['scratch', nodeFs]]),
      },
    ],
  });
  assert.deepEqual(Object.keys(s.node).sort(), ['cpu', 'nodeName', 'startTime']);
  const p = s.pods[0];
  assert.deepEqual(Object.keys(p).sort(), ['containers', 'cpu', 'memory', 'podRef', 'startTime']);
  assert.deepEqual(p.containers[0], {
    name: 'a',
    startTime: new Date(0).toISOString(),
    cpu: { time: new Date(0).toISOString(), usageCoreNanoSeconds: 7 },
    memory: { time: new Date(0).toISOString(), workingSetBytes: 3 },
  });
});

test('/proc/stat and /proc/meminfo', () => {
  const stat = 'cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nbtime 1700000000\n';
  const cpu = parseProcStatCpu(stat);
  assert.equal(cpu.usageCoreNanoSeconds, (100 + 5 + 50 + 3 + 2 + 1) * 10_000_000);
  assert.equal(cpu.bootTime?.toISOString(), new Date(1_700_000_000_000).toISOString());
  const mem = parseMeminfo(
    'MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\nInactive(file):  300 kB\nAnonPages:       150 kB\n',
  );
  assert.deepEqual(mem, {
    totalBytes: 1000 * 1024,
    usageBytes: 800 * 1024,
    workingSetBytes: 500 * 1024,
    rssBytes: 150 * 1024,
  });
});

test('where each kind of volume is measured', () => {
  const dir = '/r/pods/u1/volumes';
  const byName = (n: string) => pod.spec?.volumes?.find((v) => v.name === n);
  assert.deepEqual(volumeTarget(dir, pod, byName('scratch') as never), {
    path: `${dir}/kubernetes.io~empty-dir/scratch`,
    ownFilesystem: false,
  });
  // Not a kubit-disk here (no csi mount dir): a local-path directory, walked.
  assert.deepEqual(volumeTarget(dir, pod, byName('data') as never), {
    path: `${dir}/kubernetes.io~local-volume/data`,
    ownFilesystem: false,
  });
  assert.equal(volumeTarget(dir, pod, byName('host') as never), undefined);
});

test('the walk counts allocated bytes and inodes, hard links once, and stops at its deadline', async () => {
  const dir = await tempDir('kubit-stats-du-');
  try {
    await mkdir(join(dir.path, 'sub'));
    await writeFile(join(dir.path, 'sub', 'a'), Buffer.alloc(64 * 1024, 1));
    await link(join(dir.path, 'sub', 'a'), join(dir.path, 'b'));
    const du = await diskUsage(dir.path, Date.now() + 10_000);
    assert.equal(du.complete, true);
    assert.equal(du.inodes, 3); // the dir, sub, the file (once)
    assert.ok(du.bytes >= 64 * 1024 && du.bytes < 64 * 1024 + 64 * 1024, `bytes ${du.bytes}`);
    const late = await diskUsage(dir.path, Date.now() - 1);
    assert.equal(late.complete, false);
    assert.equal(late.inodes, 0);
  } finally {
    await dir.cleanup();
  }
});

test("the collector reuses a directory's walk within walkCacheMs, and leaves a volume out past the read's walk budget", async () => {
  const root = await tempDir('kubit-stats-root-');
  try {
    const emptyDirPod: Pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'u9' },
      spec: { containers: [{ name: 'c' }], volumes: [{ name: 'scratch', emptyDir: {} }] },
    };
    const dir = join(root.path, 'pods', 'u9', 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    await mkdir(dir, { recursive: true });
    const collector = (opts: { walkCacheMs?: number; summaryWalkBudgetMs?: number }) =>
      new StatsCollector({
        nodeName: 'n',
        rootDir: root.path,
        podLogsDir: join(root.path, 'logs'),
        runtime: new FakeRuntime(),
        pods: () => [emptyDirPod],
        log: createLogger({ name: 'test', level: 'silent' }),
        ...opts,
      });
    const used = async (c: StatsCollector) =>
      (await c.summary()).pods[0].volume?.find((v) => v.name === 'scratch')?.usedBytes;
    const cached = collector({ walkCacheMs: 3_600_000 });
    const fresh = collector({ walkCacheMs: 0 });
    const before = await used(cached);
    assert.equal(await used(fresh), before);
    await writeFile(join(dir, 'f'), Buffer.alloc(256 * 1024, 1));
    assert.equal(await used(cached), before, 'the cached walk is reused');
    assert.ok(((await used(fresh)) ?? 0) >= (before ?? 0) + 256 * 1024, 'a new walk sees the file');
    // No walk time at all: the volume is left out rather than reported as empty.
    assert.equal(await used(collector({ summaryWalkBudgetMs: 0 })), undefined);
  } finally {
    await root.cleanup();
  }
});
