// Micro-benchmark of the scheduling core: 10,000 pods onto 1,000 in-memory nodes,
// bindings answered at once by an in-memory API. Not a test: it prints pods/s.
//
//   node --conditions=kubit-source --import tsx packages/scheduler/bench/schedule.ts [pods] [nodes]
//   (add --cpu-prof to profile)
import { performance } from 'node:perf_hooks';
import { buildFramework } from '../src/framework/profile.js';
import { Scheduler, type SchedulerApi } from '../src/scheduler.js';
import type { Node, Pod } from '../src/types.js';

const podCount = Number(process.argv[2] ?? 10_000);
const nodeCount = Number(process.argv[3] ?? 1_000);

function makeNode(i: number): Node {
  const alloc = { cpu: '32', memory: '128Gi', pods: '110' };
  return {
    metadata: {
      name: `node-${i}`,
      labels: { 'kubernetes.io/hostname': `node-${i}`, 'topology.kubernetes.io/zone': `zone-${i % 3}` },
    },
    spec: {},
    status: { allocatable: alloc, capacity: alloc },
  };
}

type Kind = 'plain' | 'anti-affinity' | 'spread';

function makePod(i: number, kind: Kind): Pod {
  const app = `app-${i % 50}`;
  const spec: Pod['spec'] = {
    containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '100m', memory: '128Mi' } } }],
  };
  if (kind === 'anti-affinity') {
    spec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    };
  } else if (kind === 'spread') {
    spec.topologySpreadConstraints = [
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { app } },
      },
    ];
  }
  return { metadata: { name: `pod-${i}`, namespace: 'default', labels: { app }, uid: `u${i}` }, spec };
}

async function run(
  kind: Kind,
): Promise<{ kind: Kind; podsPerSec: number; podsPerCpuSec: number; bound: number }> {
  let bound = 0;
  let scheduler: Scheduler | null = null;
  const api: SchedulerApi = {
    async bind(pod, nodeName) {
      bound++;
      // Echo the binding back like the watch would, confirming the assumption.
      scheduler?.onPodUpdate(pod, { ...pod, spec: { ...pod.spec!, nodeName } });
    },
    async updatePodCondition() {},
    event() {},
  };
  scheduler = new Scheduler({ api, frameworks: [buildFramework()] });
  for (let i = 0; i < nodeCount; i++) scheduler.onNodeAdd(makeNode(i));
  const pods = Array.from({ length: podCount }, (_, i) => makePod(i, kind));
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (const p of pods) scheduler.onPodAdd(p);
  const loop = scheduler.start();
  while (bound < podCount && scheduler.queue.sizes().active + bound > 0) {
    await new Promise((r) => setTimeout(r, 5));
    const s = scheduler.queue.sizes();
    if (s.active === 0 && bound + s.unschedulable + s.backoff >= podCount) break;
  }
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSecs = (cpu.user + cpu.system) / 1e6;
  await scheduler.stop();
  await loop;
  return { kind, podsPerSec: Math.round(bound / secs), podsPerCpuSec: Math.round(bound / cpuSecs), bound };
}

const rows = [];
for (const kind of (process.argv[4] ? [process.argv[4]] : ['plain', 'spread', 'anti-affinity']) as Kind[])
  rows.push(await run(kind));
console.log(
  `scheduler core: ${podCount} pods onto ${nodeCount} nodes (in-memory API), node ${process.version}`,
);
// pods per CPU-second says what one core can do even when the machine is busy.
console.log('| workload | pods bound | pods/s (wall) | pods per CPU-second |');
console.log('| --- | ---: | ---: | ---: |');
for (const r of rows) console.log(`| ${r.kind} | ${r.bound} | ${r.podsPerSec} | ${r.podsPerCpuSec} |`);
