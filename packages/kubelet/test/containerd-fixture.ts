// A real containerd (private instance, own CNI bridge and subnet) pulling from a
// real local registry, plus a PodManager on it whose statuses and events are recorded.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CriRuntime } from '@kubit/cri';
import {
  type ContainerdOptions,
  pushTestImages,
  startContainerd,
  startRegistry,
  type TestContainerd,
  type TestRegistry,
  tempDir,
} from '@kubit/testkit';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { PodManager, type PodManagerOptions } from '../src/pods/manager.js';
import { MemoryObjectSource, RecordingSink } from '../src/pods/sinks.js';
import { VolumeManager } from '../src/pods/volumes.js';
import { FAST_BACKOFF } from './helpers.js';

export interface Node {
  registry: TestRegistry;
  containerd: TestContainerd;
  runtime: CriRuntime;
  sink: RecordingSink;
  objects: MemoryObjectSource;
  manager: PodManager;
  rootDir: string;
  stop(): Promise<void>;
  /** The CRI log lines (content only) of a container's instance. */
  logLines(pod: Pod, container: string, restartCount?: number): Promise<string[]>;
}

export async function startNode(
  opts: Partial<PodManagerOptions> = {},
  containerdOpts: Omit<ContainerdOptions, 'mirror'> = {},
  registryOpts: Parameters<typeof startRegistry>[0] = {},
): Promise<Node> {
  const registry = await startRegistry(registryOpts);
  await pushTestImages(registry.host);
  const containerd = await startContainerd({ ...containerdOpts, mirror: registry.host });
  const runtime = new CriRuntime({ endpoint: containerd.endpoint });
  const root = await tempDir('kubit-kubelet-root-');
  const sink = new RecordingSink();
  const objects = new MemoryObjectSource();
  const manager = new PodManager({
    runtime,
    objects,
    statusSink: sink,
    events: sink,
    hostIP: '127.0.0.1',
    rootDir: root.path,
    relistIntervalMs: 500,
    retryMs: 500,
    crashBackoff: FAST_BACKOFF,
    imageBackoff: FAST_BACKOFF,
    ...opts,
  });
  await manager.start([]);
  const logLines = async (pod: Pod, container: string, restartCount?: number) => {
    const dir = join(
      manager.podLogsDir,
      `${pod.metadata?.namespace}_${pod.metadata?.name}_${pod.metadata?.uid}`,
      container,
    );
    const files = (await readdir(dir)).filter((f) => f.endsWith('.log'));
    const file =
      restartCount === undefined
        ? files.sort((a, b) => Number.parseInt(b, 10) - Number.parseInt(a, 10))[0]
        : `${restartCount}.log`;
    const text = await readFile(join(dir, file), 'utf8');
    return text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => l.split(' ').slice(3).join(' '));
  };
  return {
    registry,
    containerd,
    runtime,
    sink,
    objects,
    manager,
    rootDir: root.path,
    logLines,
    stop: async () => {
      manager.stop();
      runtime.close();
      await containerd.stop();
      await registry.stop();
      // Pods still there at the end leave tmpfs volumes mounted under the root dir.
      const volumes = new VolumeManager(root.path, objects);
      for (const uid of await volumes.knownPodUids()) await volumes.tearDown(uid);
      await root.cleanup();
    },
  };
}
