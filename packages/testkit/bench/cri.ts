// The runtime's floor for pod startup: RunPodSandbox + CreateContainer +
// StartContainer straight through CRI on the same containerd the kubelet uses,
// with the kubelet's CRI client and nothing else of Kubit in between.
import { join } from 'node:path';
import { CriRuntime, type PodSandboxConfig } from '@kubit/cri';
import { sleeperContainerConfig } from '../src/images.js';

/** The kubelet's CRI client on `socket`, with the floor's two-minute deadline for every call. */
export function floorCriClient(socket: string): CriRuntime {
  return new CriRuntime({ endpoint: socket, timeoutMs: 120_000 });
}

/** How long each CRI call of one floor pod took, ms. */
export interface FloorSteps {
  runPodSandbox: number;
  createContainer: number;
  startContainer: number;
}

/** One sandbox with one container running `sleep`, the same shape as the benchmark's pods. */
export async function startSandboxWithContainer(
  cri: CriRuntime,
  opts: { name: string; image: string; logDirectory: string },
): Promise<{ sandboxId: string; ms: number; steps: FloorSteps }> {
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: opts.name, uid: `uid-${opts.name}`, namespace: 'cri-floor', attempt: 0 },
    hostname: opts.name,
    logDirectory: join(opts.logDirectory, opts.name),
    portMappings: [],
    labels: { 'io.kubernetes.pod.name': opts.name },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  const t0 = performance.now();
  const podSandboxId = await cri.runPodSandbox(sandboxConfig);
  const t1 = performance.now();
  const containerId = await cri.createContainer(
    podSandboxId,
    sleeperContainerConfig(opts.image),
    sandboxConfig,
  );
  const t2 = performance.now();
  await cri.startContainer(containerId);
  const t3 = performance.now();
  return {
    sandboxId: podSandboxId,
    ms: t3 - t0,
    steps: { runPodSandbox: t1 - t0, createContainer: t2 - t1, startContainer: t3 - t2 },
  };
}

export async function removeSandbox(cri: CriRuntime, sandboxId: string): Promise<void> {
  await cri.stopPodSandbox(sandboxId);
  await cri.removePodSandbox(sandboxId);
}
