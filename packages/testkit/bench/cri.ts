// The runtime's floor for pod startup: RunPodSandbox + CreateContainer +
// StartContainer straight through CRI on the same containerd the kubelet uses,
// with the kubelet's proto file and nothing of Kubit in between.
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { sleeperContainerConfig } from '../src/images.js';
import { repoRoot } from '../src/process.js';

type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: Error | null, res: unknown) => void,
) => void;

export class CriClient {
  private readonly client: grpc.Client;

  constructor(socket: string) {
    const def = protoLoader.loadSync(join(repoRoot, 'packages', 'kubelet', 'proto', 'runtime.proto'), {
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      runtime: { v1: { RuntimeService: grpc.ServiceClientConstructor } };
    };
    this.client = new pkg.runtime.v1.RuntimeService(`unix:${socket}`, grpc.credentials.createInsecure());
  }

  call<T>(method: string, req: unknown, timeoutMs = 120_000): Promise<T> {
    const fn = (this.client as unknown as Record<string, Unary>)[method];
    if (typeof fn !== 'function') throw new Error(`CRI RuntimeService has no method ${method}`);
    return new Promise((resolve, reject) => {
      fn.call(this.client, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) =>
        err ? reject(err) : resolve(res as T),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

/** How long each CRI call of one floor pod took, ms. */
export interface FloorSteps {
  runPodSandbox: number;
  createContainer: number;
  startContainer: number;
}

/** One sandbox with one container running `sleep`, the same shape as the benchmark's pods. */
export async function startSandboxWithContainer(
  cri: CriClient,
  opts: { name: string; image: string; logDirectory: string },
): Promise<{ sandboxId: string; ms: number; steps: FloorSteps }> {
  const sandboxConfig = {
    metadata: { name: opts.name, uid: `uid-${opts.name}`, namespace: 'cri-floor', attempt: 0 },
    hostname: opts.name,
    logDirectory: join(opts.logDirectory, opts.name),
    portMappings: [],
    labels: { 'io.kubernetes.pod.name': opts.name },
    annotations: {},
    linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
  };
  const t0 = performance.now();
  const { podSandboxId } = await cri.call<{ podSandboxId: string }>('RunPodSandbox', {
    config: sandboxConfig,
    runtimeHandler: '',
  });
  const t1 = performance.now();
  const { containerId } = await cri.call<{ containerId: string }>('CreateContainer', {
    podSandboxId,
    config: sleeperContainerConfig(opts.image),
    sandboxConfig,
  });
  const t2 = performance.now();
  await cri.call('StartContainer', { containerId });
  const t3 = performance.now();
  return {
    sandboxId: podSandboxId,
    ms: t3 - t0,
    steps: { runPodSandbox: t1 - t0, createContainer: t2 - t1, startContainer: t3 - t2 },
  };
}

export async function removeSandbox(cri: CriClient, sandboxId: string): Promise<void> {
  await cri.call('StopPodSandbox', { podSandboxId: sandboxId });
  await cri.call('RemovePodSandbox', { podSandboxId: sandboxId });
}
