import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import {
  type AuthConfig,
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerRuntime,
  type ContainerStats,
  type ContainerStatus,
  type ExecSyncResult,
  type FilesystemUsage,
  type Image,
  NOT_FOUND,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxStatus,
  type RuntimeCondition,
  RuntimeError,
  type SandboxFilter,
  type StreamChoice,
  type VersionInfo,
} from './types.js';

/**
 * This package's proto/runtime.proto. Found through the package's own name,
 * not by walking up from import.meta.url: the kubelet's esbuild bundle inlines
 * this code, so there import.meta.url is the bundle in packages/kubelet, while
 * the file stays beside @kubit/cri's package.json (a dependency of whoever
 * bundles it, so resolvable from there). From src/ and dist/src/ the name
 * resolves to this package itself.
 */
function protoPath(): string {
  let pkgJson: string;
  try {
    pkgJson = createRequire(import.meta.url).resolve('@kubit/cri/package.json');
  } catch (err) {
    throw new Error(`runtime.proto: cannot find the @kubit/cri package: ${(err as Error).message}`);
  }
  const path = join(dirname(pkgJson), 'proto', 'runtime.proto');
  if (!existsSync(path)) throw new Error(`runtime.proto not found at ${path}`);
  return path;
}

type Unary = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: grpc.requestCallback<unknown>,
) => void;
type ServiceClient = grpc.Client & Record<string, Unary>;

let cachedDefinition: grpc.GrpcObject | undefined;
function definition(): grpc.GrpcObject {
  if (!cachedDefinition) {
    const pkg = protoLoader.loadSync(protoPath(), {
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
      arrays: true,
      objects: true,
    });
    cachedDefinition = grpc.loadPackageDefinition(pkg);
  }
  return cachedDefinition;
}

export interface CriRuntimeOptions {
  /** "unix:///run/containerd/containerd.sock" or a plain socket path. */
  endpoint: string;
  /** Deadline for ordinary calls; pulls get `pullTimeoutMs`. */
  timeoutMs?: number;
  pullTimeoutMs?: number;
}

function normalizeEndpoint(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return `unix:${endpoint.slice('unix://'.length)}`;
  if (endpoint.startsWith('unix:')) return endpoint;
  if (endpoint.startsWith('/')) return `unix:${endpoint}`;
  throw new Error(`container runtime endpoint "${endpoint}" is not a unix socket (use unix:///path/to.sock)`);
}

/** The CRI runtime.v1 client over a unix socket. */
/** ContainerStats as the proto loader decodes it. */
interface WireContainerStats {
  attributes?: { id?: string };
  cpu?: { usageCoreNanoSeconds?: { value: number } };
  memory?: { workingSetBytes?: { value: number } };
}

function containerStatsOf(id: string, s: WireContainerStats | undefined): ContainerStats {
  return {
    id,
    cpuUsageCoreNanoSeconds: s?.cpu?.usageCoreNanoSeconds?.value ?? 0,
    memoryWorkingSetBytes: s?.memory?.workingSetBytes?.value ?? 0,
  };
}

export class CriRuntime implements ContainerRuntime {
  private readonly runtime: ServiceClient;
  private readonly images: ServiceClient;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(opts: CriRuntimeOptions) {
    const address = normalizeEndpoint(opts.endpoint);
    const v1 = (definition().runtime as grpc.GrpcObject).v1 as grpc.GrpcObject;
    const RuntimeService = v1.RuntimeService as grpc.ServiceClientConstructor;
    const ImageService = v1.ImageService as grpc.ServiceClientConstructor;
    const channelOpts = { 'grpc.max_receive_message_length': 16 * 1024 * 1024 };
    this.runtime = new RuntimeService(
      address,
      grpc.credentials.createInsecure(),
      channelOpts,
    ) as ServiceClient;
    this.images = new ImageService(address, grpc.credentials.createInsecure(), channelOpts) as ServiceClient;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.pullTimeoutMs = opts.pullTimeoutMs ?? 5 * 60_000;
  }

  private call<T>(
    client: ServiceClient,
    method: string,
    req: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<T> {
    return new Promise((resolve, reject) => {
      const fn = client[method];
      if (typeof fn !== 'function') {
        reject(new RuntimeError(`CRI method ${method} is not in runtime.proto`));
        return;
      }
      fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) {
          const e = err as grpc.ServiceError;
          reject(new RuntimeError(`${method}: ${e.details || e.message}`, e.code));
        } else resolve(res as T);
      });
    });
  }

  private rt<T>(method: string, req: unknown, timeoutMs?: number): Promise<T> {
    return this.call<T>(this.runtime, method, req, timeoutMs);
  }

  async version(): Promise<VersionInfo> {
    return this.rt<VersionInfo>('Version', { version: 'v1' });
  }

  async status(): Promise<RuntimeCondition[]> {
    const res = await this.rt<{ status?: { conditions: RuntimeCondition[] } }>('Status', {});
    return res.status?.conditions ?? [];
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const res = await this.rt<{ podSandboxId: string }>(
      'RunPodSandbox',
      { config, runtimeHandler },
      4 * 60_000,
    );
    return res.podSandboxId;
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.rt('StopPodSandbox', { podSandboxId: id });
  }

  async removePodSandbox(id: string): Promise<void> {
    await this.rt('RemovePodSandbox', { podSandboxId: id });
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    const res = await this.rt<{ status?: PodSandboxStatus }>('PodSandboxStatus', { podSandboxId: id });
    if (!res.status) throw new RuntimeError(`PodSandboxStatus: no status for ${id}`, NOT_FOUND);
    const s = res.status;
    return { ...s, network: { ip: s.network?.ip ?? '', additionalIps: s.network?.additionalIps ?? [] } };
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]> {
    const f = filter
      ? {
          id: filter.id ?? '',
          state: filter.state ? { state: filter.state } : undefined,
          labelSelector: filter.labelSelector ?? {},
        }
      : undefined;
    const res = await this.rt<{ items: PodSandbox[] }>('ListPodSandbox', { filter: f });
    return res.items;
  }

  async createContainer(
    sandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string> {
    const res = await this.rt<{ containerId: string }>('CreateContainer', {
      podSandboxId: sandboxId,
      config,
      sandboxConfig,
    });
    return res.containerId;
  }

  async startContainer(id: string): Promise<void> {
    await this.rt('StartContainer', { containerId: id });
  }

  async stopContainer(id: string, timeoutSeconds: number): Promise<void> {
    // The call lasts as long as the grace period: give the deadline room beyond it.
    await this.rt(
      'StopContainer',
      { containerId: id, timeout: timeoutSeconds },
      timeoutSeconds * 1000 + this.timeoutMs,
    );
  }

  async removeContainer(id: string): Promise<void> {
    await this.rt('RemoveContainer', { containerId: id });
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    const res = await this.rt<{ status?: ContainerStatus }>('ContainerStatus', { containerId: id });
    if (!res.status) throw new RuntimeError(`ContainerStatus: no status for ${id}`, NOT_FOUND);
    return { ...res.status, image: res.status.image ?? { image: '' } };
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    const f = filter
      ? {
          id: filter.id ?? '',
          state: filter.state ? { state: filter.state } : undefined,
          podSandboxId: filter.podSandboxId ?? '',
          labelSelector: filter.labelSelector ?? {},
        }
      : undefined;
    const res = await this.rt<{ containers: Container[] }>('ListContainers', { filter: f });
    return res.containers.map((c) => ({ ...c, image: c.image ?? { image: '' } }));
  }

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult> {
    const res = await this.rt<ExecSyncResult>(
      'ExecSync',
      { containerId: id, cmd, timeout: timeoutSeconds },
      timeoutSeconds > 0 ? timeoutSeconds * 1000 + this.timeoutMs : this.timeoutMs,
    );
    return { stdout: Buffer.from(res.stdout), stderr: Buffer.from(res.stderr), exitCode: res.exitCode };
  }

  async exec(id: string, cmd: string[], streams: StreamChoice): Promise<string> {
    return (await this.rt<{ url: string }>('Exec', { containerId: id, cmd, ...streams })).url;
  }

  async attach(id: string, streams: StreamChoice): Promise<string> {
    return (await this.rt<{ url: string }>('Attach', { containerId: id, ...streams })).url;
  }

  async portForward(sandboxId: string, ports: number[]): Promise<string> {
    return (await this.rt<{ url: string }>('PortForward', { podSandboxId: sandboxId, port: ports })).url;
  }

  async containerStats(id: string): Promise<ContainerStats> {
    const res = await this.rt<{ stats?: WireContainerStats }>('ContainerStats', { containerId: id });
    return containerStatsOf(id, res.stats);
  }

  async listContainerStats(filter?: Omit<ContainerFilter, 'state'>): Promise<ContainerStats[]> {
    const f = filter
      ? {
          id: filter.id ?? '',
          podSandboxId: filter.podSandboxId ?? '',
          labelSelector: filter.labelSelector ?? {},
        }
      : undefined;
    const res = await this.rt<{ stats: WireContainerStats[] }>('ListContainerStats', { filter: f });
    return res.stats.map((s) => containerStatsOf(s.attributes?.id ?? '', s));
  }

  async imageFsInfo(): Promise<FilesystemUsage[]> {
    type Usage = {
      fsId?: { mountpoint?: string };
      usedBytes?: { value: number };
      inodesUsed?: { value: number };
    };
    const res = await this.call<{ imageFilesystems?: Usage[] }>(this.images, 'ImageFsInfo', {});
    return (res.imageFilesystems ?? []).map((u) => ({
      mountpoint: u.fsId?.mountpoint ?? '',
      usedBytes: u.usedBytes?.value ?? 0,
      inodesUsed: u.inodesUsed?.value ?? 0,
    }));
  }

  async imageStatus(image: string): Promise<Image | undefined> {
    const res = await this.call<{ image?: Image | null }>(this.images, 'ImageStatus', { image: { image } });
    return res.image ?? undefined;
  }

  async pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string> {
    const res = await this.call<{ imageRef: string }>(
      this.images,
      'PullImage',
      { image: { image }, sandboxConfig, ...(auth ? { auth } : {}) },
      this.pullTimeoutMs,
    );
    return res.imageRef;
  }

  async listImages(): Promise<Image[]> {
    const res = await this.call<{ images: Image[] }>(this.images, 'ListImages', {});
    return res.images;
  }

  async removeImage(image: string): Promise<void> {
    await this.call(this.images, 'RemoveImage', { image: { image } });
  }

  close(): void {
    this.runtime.close();
    this.images.close();
  }
}
