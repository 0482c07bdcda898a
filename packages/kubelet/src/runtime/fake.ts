import {
  type Container,
  type ContainerConfig,
  type ContainerFilter,
  type ContainerRuntime,
  type ContainerStats,
  type ContainerStatus,
  type ExecSyncResult,
  type FilesystemUsage,
  type Image,
  type Labels,
  NOT_FOUND,
  type PodSandbox,
  type PodSandboxConfig,
  type PodSandboxStatus,
  type RuntimeCondition,
  RuntimeError,
  type SandboxFilter,
  type VersionInfo,
} from '@kubit/cri';

/** What a fake container does once started. */
export interface FakeBehavior {
  /** Exit this long after starting; never when undefined. */
  exitAfterMs?: number;
  exitCode?: number;
  /** e.g. "OOMKilled"; defaults to "Completed"/"Error" from the exit code. */
  reason?: string;
  /** StartContainer fails with this message. */
  startError?: string;
}

export interface FakeRuntimeOptions {
  /** Images a pull succeeds for (normalized or as written). By default every image can be pulled. */
  pullable?: (image: string) => boolean;
  /** How a started container behaves; by default it runs until stopped. */
  behavior?: (config: ContainerConfig) => FakeBehavior;
  /** Answers ExecSync; by default every command exits 0. */
  exec?: (container: ContainerConfig, cmd: string[]) => { exitCode: number; stdout?: string };
  /** The first three octets of the pod IPs handed out, e.g. "10.88.0". */
  ipPrefix?: string;
}

interface FakeSandbox {
  status: PodSandboxStatus;
  config: PodSandboxConfig;
}

interface FakeContainer {
  status: ContainerStatus;
  sandboxId: string;
  config: ContainerConfig;
  timer?: NodeJS.Timeout;
}

const nowNs = () => Date.now() * 1_000_000;

function matches(labels: Labels, selector: Labels | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Docker-style normalization, so the fake stores images under the names containerd would. */
export function normalizeImageName(image: string): string {
  let name = image;
  if (!name.includes('@') && !/:[^/]+$/.test(name)) name = `${name}:latest`;
  const first = name.split('/')[0];
  const hasRegistry =
    name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return name;
  if (!name.includes('/')) return `docker.io/library/${name}`;
  return `docker.io/${name}`;
}

/**
 * An in-memory container runtime for unit tests and hollow nodes: sandboxes get
 * IPs, containers run (on timers) as their behavior says. It keeps the CRI's
 * contracts that the kubelet relies on: NOT_FOUND for unknown IDs, idempotent
 * stop/remove, exited containers keep their exit code until removed.
 */
export class FakeRuntime implements ContainerRuntime {
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Map<string, Image>();
  /** Every call, in order, as "Method id-or-name" (for assertions). */
  readonly calls: string[] = [];
  private nextId = 1;
  private nextIp = 2;

  constructor(private readonly opts: FakeRuntimeOptions = {}) {}

  private id(kind: string): string {
    return `${kind}${(this.nextId++).toString(16).padStart(12, '0')}`;
  }

  async version(): Promise<VersionInfo> {
    return { version: '0.1.0', runtimeName: 'fake', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async status(): Promise<RuntimeCondition[]> {
    return [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ];
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const id = this.id('sb');
    this.calls.push(`RunPodSandbox ${config.metadata.namespace}/${config.metadata.name}`);
    const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    const ip = hostNetwork ? '' : this.allocateIp();
    this.sandboxes.set(id, {
      config,
      status: {
        id,
        metadata: { ...config.metadata },
        state: 'SANDBOX_READY',
        createdAt: nowNs(),
        labels: { ...config.labels },
        annotations: { ...config.annotations },
        network: { ip, additionalIps: [] },
      },
    });
    return id;
  }

  /** The next address after ipPrefix.1, carrying into the third octet past .254. */
  private allocateIp(): string {
    const [a, b, c] = (this.opts.ipPrefix ?? '10.88.0').split('.').map(Number);
    const n = this.nextIp++ - 2;
    return `${a}.${b}.${(c + Math.floor(n / 253)) % 256}.${2 + (n % 253)}`;
  }

  async stopPodSandbox(id: string): Promise<void> {
    this.calls.push(`StopPodSandbox ${id}`);
    const sb = this.sandboxes.get(id);
    if (!sb) return;
    for (const c of this.containers.values()) {
      if (c.sandboxId === id) this.exit(c, 137, 'Error');
    }
    sb.status.state = 'SANDBOX_NOTREADY';
  }

  async removePodSandbox(id: string): Promise<void> {
    this.calls.push(`RemovePodSandbox ${id}`);
    await this.stopPodSandbox(id);
    for (const [cid, c] of this.containers) if (c.sandboxId === id) this.containers.delete(cid);
    this.sandboxes.delete(id);
  }

  async podSandboxStatus(id: string): Promise<PodSandboxStatus> {
    const sb = this.sandboxes.get(id);
    if (!sb) throw new RuntimeError(`sandbox ${id} not found`, NOT_FOUND);
    return structuredClone(sb.status);
  }

  async listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]> {
    return [...this.sandboxes.values()]
      .map((s) => s.status)
      .filter(
        (s) =>
          (!filter?.id || s.id === filter.id) &&
          (!filter?.state || s.state === filter.state) &&
          matches(s.labels, filter?.labelSelector),
      )
      .map(({ network: _network, ...rest }) => structuredClone(rest));
  }

  async createContainer(sandboxId: string, config: ContainerConfig): Promise<string> {
    const sb = this.sandboxes.get(sandboxId);
    if (!sb) throw new RuntimeError(`sandbox ${sandboxId} not found`, NOT_FOUND);
    if (sb.status.state !== 'SANDBOX_READY') throw new RuntimeError(`sandbox ${sandboxId} is not ready`);
    const image =
      this.images.get(normalizeImageName(config.image.image)) ?? this.findImageById(config.image.image);
    if (!image) throw new RuntimeError(`image "${config.image.image}" not present`);
    const id = this.id('ct');
    this.calls.push(`CreateContainer ${config.metadata.name}`);
    this.containers.set(id, {
      sandboxId,
      config,
      status: {
        id,
        metadata: { ...config.metadata },
        state: 'CONTAINER_CREATED',
        createdAt: nowNs(),
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        image: { image: config.image.image },
        imageRef: image.id,
        reason: '',
        message: '',
        labels: { ...config.labels },
        annotations: { ...config.annotations },
        logPath: `${sb.config.logDirectory}/${config.logPath}`,
      },
    });
    return id;
  }

  private findImageById(id: string): Image | undefined {
    return [...this.images.values()].find((i) => i.id === id);
  }

  async startContainer(id: string): Promise<void> {
    const c = this.mustContainer(id);
    this.calls.push(`StartContainer ${c.config.metadata.name}`);
    if (c.status.state !== 'CONTAINER_CREATED')
      throw new RuntimeError(`container ${id} is not in created state`);
    const behavior = this.opts.behavior?.(c.config) ?? {};
    if (behavior.startError) {
      this.exit(c, 128, 'StartError', behavior.startError);
      throw new RuntimeError(`failed to start container: ${behavior.startError}`);
    }
    c.status.state = 'CONTAINER_RUNNING';
    c.status.startedAt = nowNs();
    if (behavior.exitAfterMs !== undefined) {
      const code = behavior.exitCode ?? 0;
      c.timer = setTimeout(
        () => this.exit(c, code, behavior.reason ?? (code === 0 ? 'Completed' : 'Error')),
        behavior.exitAfterMs,
      );
      c.timer.unref();
    }
  }

  private exit(c: FakeContainer, code: number, reason: string, message = ''): void {
    if (c.timer) clearTimeout(c.timer);
    if (c.status.state === 'CONTAINER_EXITED') return;
    c.status.state = 'CONTAINER_EXITED';
    c.status.finishedAt = nowNs();
    c.status.exitCode = code;
    c.status.reason = reason;
    c.status.message = message;
  }

  private mustContainer(id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c) throw new RuntimeError(`container ${id} not found`, NOT_FOUND);
    return c;
  }

  async stopContainer(id: string, _timeoutSeconds: number): Promise<void> {
    const c = this.containers.get(id);
    if (!c) return;
    this.calls.push(`StopContainer ${c.config.metadata.name}`);
    if (c.status.state === 'CONTAINER_RUNNING') this.exit(c, 0, 'Completed');
    else if (c.status.state === 'CONTAINER_CREATED') this.exit(c, 0, 'Completed');
  }

  async removeContainer(id: string): Promise<void> {
    const c = this.containers.get(id);
    if (!c) return;
    this.calls.push(`RemoveContainer ${c.config.metadata.name}`);
    if (c.timer) clearTimeout(c.timer);
    this.containers.delete(id);
  }

  async containerStatus(id: string): Promise<ContainerStatus> {
    return structuredClone(this.mustContainer(id).status);
  }

  async listContainers(filter?: ContainerFilter): Promise<Container[]> {
    return [...this.containers.values()]
      .filter(
        (c) =>
          (!filter?.id || c.status.id === filter.id) &&
          (!filter?.state || c.status.state === filter.state) &&
          (!filter?.podSandboxId || c.sandboxId === filter.podSandboxId) &&
          matches(c.status.labels, filter?.labelSelector),
      )
      .map((c) => ({
        id: c.status.id,
        podSandboxId: c.sandboxId,
        metadata: { ...c.status.metadata },
        image: { ...c.status.image },
        imageRef: c.status.imageRef,
        state: c.status.state,
        createdAt: c.status.createdAt,
        labels: { ...c.status.labels },
        annotations: { ...c.status.annotations },
      }));
  }

  async execSync(id: string, cmd: string[]): Promise<ExecSyncResult> {
    const c = this.mustContainer(id);
    if (c.status.state !== 'CONTAINER_RUNNING') throw new RuntimeError(`container ${id} is not running`);
    const r = this.opts.exec?.(c.config, cmd) ?? { exitCode: 0 };
    return { stdout: Buffer.from(r.stdout ?? ''), stderr: Buffer.alloc(0), exitCode: r.exitCode };
  }

  async exec(): Promise<string> {
    throw new RuntimeError('the fake runtime has no streaming server (exec, attach, port-forward)');
  }

  async attach(): Promise<string> {
    return this.exec();
  }

  async portForward(): Promise<string> {
    return this.exec();
  }

  async containerStats(id: string): Promise<ContainerStats> {
    this.mustContainer(id);
    return { id, cpuUsageCoreNanoSeconds: 0, memoryWorkingSetBytes: 0 };
  }

  async listContainerStats(filter?: Omit<ContainerFilter, 'state'>): Promise<ContainerStats[]> {
    const running = await this.listContainers({ ...filter, state: 'CONTAINER_RUNNING' });
    return running.map((c) => ({ id: c.id, cpuUsageCoreNanoSeconds: 0, memoryWorkingSetBytes: 0 }));
  }

  async imageStatus(image: string): Promise<Image | undefined> {
    const found = this.images.get(normalizeImageName(image)) ?? this.findImageById(image);
    return found ? structuredClone(found) : undefined;
  }

  async pullImage(image: string): Promise<string> {
    this.calls.push(`PullImage ${image}`);
    const name = normalizeImageName(image);
    if (this.opts.pullable && !this.opts.pullable(image) && !this.opts.pullable(name)) {
      throw new RuntimeError(`failed to pull and unpack image "${name}": ${name}: not found`);
    }
    const existing = this.images.get(name);
    if (existing) return existing.id;
    const id = `sha256:${Buffer.from(name).toString('hex').padEnd(64, '0').slice(0, 64)}`;
    this.images.set(name, { id, repoTags: [name], repoDigests: [], size: 1024 });
    return id;
  }

  /** Makes an image present without a pull (as if preloaded). */
  addImage(image: string): void {
    const name = normalizeImageName(image);
    const id = `sha256:${Buffer.from(name).toString('hex').padEnd(64, '0').slice(0, 64)}`;
    this.images.set(name, { id, repoTags: [name], repoDigests: [], size: 1024 });
  }

  async listImages(): Promise<Image[]> {
    return [...this.images.values()].map((i) => structuredClone(i));
  }

  async removeImage(image: string): Promise<void> {
    this.images.delete(normalizeImageName(image));
  }

  /** An in-memory runtime keeps its images on no filesystem. */
  async imageFsInfo(): Promise<FilesystemUsage[]> {
    return [];
  }

  close(): void {
    for (const c of this.containers.values()) if (c.timer) clearTimeout(c.timer);
  }
}
