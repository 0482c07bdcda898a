// How many CRI calls the pod logic makes, counted on the in-memory runtime (so
// the count does not depend on how loaded the machine is): for N pods started
// at once until all report Running, then per second of steady state with
// nothing changing. Pass another copy of the kubelet's src/ to compare:
//   node --conditions=kubit-source --import tsx packages/kubelet/bench/cri-calls.ts [pods] [src-dir] [slow]
// "slow" gives the calls containerd's latencies on an idle 2-core machine (RunPodSandbox
// 300 ms, StartContainer 100 ms, CreateContainer 40 ms, the rest 2 ms), so that relists
// happen while pods start, as they do on a real node.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Pod } from 'kubernetes-types/core/v1.js';

const pods = Number(process.argv[2] ?? 20);
const src = resolve(process.argv[3] ?? fileURLToPath(new URL('../src', import.meta.url)));
const STEADY_MS = 10_000;
const slow = process.argv[4] === 'slow';
const LATENCY_MS: Record<string, number> = { runPodSandbox: 300, startContainer: 100, createContainer: 40 };

interface Runtime {
  close(): void;
}
interface Sink {
  status(key: string): { phase?: string } | undefined;
}
interface Manager {
  start(pods: Pod[]): Promise<void>;
  upsert(pod: Pod): void;
  stop(): void;
}

const { PodManager } = (await import(join(src, 'pods', 'manager.ts'))) as {
  PodManager: new (opts: object) => Manager;
};
const { FakeRuntime } = (await import(join(src, 'runtime', 'fake.ts'))) as { FakeRuntime: new () => Runtime };
const { MemoryObjectSource, RecordingSink } = (await import(join(src, 'pods', 'sinks.ts'))) as {
  MemoryObjectSource: new () => object;
  RecordingSink: new () => Sink;
};

/** Every method call on the runtime, by name, in order. */
const calls: string[] = [];
function counted(target: Runtime): Runtime {
  return new Proxy(target, {
    get(t, prop, receiver) {
      const v: unknown = Reflect.get(t, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      const call = (args: unknown[]) => (v as (...a: unknown[]) => unknown).apply(t, args);
      if (!slow || prop === 'close')
        return (...args: unknown[]) => {
          calls.push(prop);
          return call(args);
        };
      return async (...args: unknown[]) => {
        calls.push(prop);
        await new Promise((r) => setTimeout(r, LATENCY_MS[prop] ?? 2));
        return call(args);
      };
    },
  });
}

function count(list: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of list) out.set(m, (out.get(m) ?? 0) + 1);
  return out;
}

const root = await mkdtemp(join(tmpdir(), 'kubit-cri-calls-'));
const fake = new FakeRuntime();
const runtime = counted(fake);
const sink = new RecordingSink();
const manager = new PodManager({
  runtime,
  objects: new MemoryObjectSource(),
  statusSink: sink,
  events: sink,
  hostIP: '127.0.0.1',
  rootDir: root,
  relistIntervalMs: 1000,
  retryMs: 1000,
});
try {
  await manager.start([]);
  const startCalls = calls.length;
  const t0 = performance.now();
  for (let i = 0; i < pods; i++) {
    manager.upsert({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `p${i}`,
        namespace: 'default',
        uid: `uid-${i}`,
        creationTimestamp: new Date().toISOString(),
      },
      spec: { nodeName: 'n', containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'] }] },
    });
  }
  while (
    Array.from({ length: pods }, (_, i) => sink.status(`default/p${i}`)?.phase).some((p) => p !== 'Running')
  )
    await new Promise((r) => setTimeout(r, 1));
  const toRunningMs = performance.now() - t0;
  const toRunning = count(calls.slice(startCalls));
  const steadyFrom = calls.length;
  await new Promise((r) => setTimeout(r, STEADY_MS));
  const steady = count(calls.slice(steadyFrom));
  const methods = [...new Set([...toRunning.keys(), ...steady.keys()])].sort();
  const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(
    `kubelet sources: ${src}\n${pods} pods at once on the in-memory runtime${slow ? ' with containerd-like latencies' : ''}\n\n`,
  );
  process.stdout.write(
    '| CRI method | calls until all Running | calls per second, steady |\n| --- | --- | --- |\n',
  );
  for (const m of methods)
    process.stdout.write(
      `| ${m} | ${toRunning.get(m) ?? 0} | ${((steady.get(m) ?? 0) / (STEADY_MS / 1000)).toFixed(1)} |\n`,
    );
  process.stdout.write(
    `| **total** | ${total(toRunning)} | ${(total(steady) / (STEADY_MS / 1000)).toFixed(1)} |\n\nall Running after ${toRunningMs.toFixed(0)} ms\n`,
  );
} finally {
  manager.stop();
  fake.close();
  await rm(root, { recursive: true, force: true });
}
