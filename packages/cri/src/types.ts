// The kubelet's view of a container runtime: shaped like CRI runtime.v1
// (RuntimeService + ImageService), with camelCase fields as @grpc/proto-loader
// produces them and int64 nanosecond timestamps as numbers. Two implementations:
// `CriRuntime` here (containerd over gRPC) and the kubelet's `FakeRuntime` (in memory).

export type Labels = Record<string, string>;

export type SandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState =
  | 'CONTAINER_CREATED'
  | 'CONTAINER_RUNNING'
  | 'CONTAINER_EXITED'
  | 'CONTAINER_UNKNOWN';
export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

export interface VersionInfo {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PortMapping {
  protocol: Protocol;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  targetId?: string;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname: string;
  logDirectory: string;
  dnsConfig?: { servers: string[]; searches: string[]; options: string[] };
  portMappings: PortMapping[];
  labels: Labels;
  annotations: Labels;
  linux?: {
    cgroupParent?: string;
    securityContext?: {
      namespaceOptions?: NamespaceOption;
      runAsUser?: { value: number };
      runAsGroup?: { value: number };
      readonlyRootfs?: boolean;
      supplementalGroups?: number[];
      privileged?: boolean;
    };
    sysctls?: Labels;
  };
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: SandboxState;
  /** Nanoseconds since the epoch. */
  createdAt: number;
  labels: Labels;
  annotations: Labels;
}

export interface PodSandboxStatus extends PodSandbox {
  network: { ip: string; additionalIps: string[] };
}

export interface SandboxFilter {
  id?: string;
  state?: SandboxState;
  labelSelector?: Labels;
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

/** A host device node given to the container (a Block volume). */
export interface Device {
  containerPath: string;
  hostPath: string;
  /** cgroup device permissions: "rwm" (read, write, mknod). */
  permissions: string;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
}

export interface LinuxContainerSecurityContext {
  capabilities?: { addCapabilities: string[]; dropCapabilities: string[] };
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: { image: string };
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: Mount[];
  devices?: Device[];
  labels: Labels;
  annotations: Labels;
  /** Relative to the sandbox's logDirectory. */
  logPath: string;
  stdin?: boolean;
  tty?: boolean;
  linux?: { resources?: LinuxContainerResources; securityContext?: LinuxContainerSecurityContext };
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: { image: string };
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Labels;
  annotations: Labels;
}

export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata;
  state: ContainerState;
  createdAt: number;
  /** 0 when not started. */
  startedAt: number;
  /** 0 when not finished. */
  finishedAt: number;
  exitCode: number;
  image: { image: string };
  imageRef: string;
  /** CamelCase reason, "OOMKilled" for the cgroup OOM killer. */
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  logPath: string;
}

export interface ContainerFilter {
  id?: string;
  state?: ContainerState;
  podSandboxId?: string;
  labelSelector?: Labels;
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface ContainerStats {
  id: string;
  cpuUsageCoreNanoSeconds: number;
  memoryWorkingSetBytes: number;
}

/** What the runtime's images (or containers' writable layers) take on one filesystem (CRI ImageFsInfo). */
export interface FilesystemUsage {
  /** Where that filesystem is mounted on the node. */
  mountpoint: string;
  usedBytes: number;
  inodesUsed: number;
}

/**
 * Registry credentials for one pull (CRI AuthConfig). containerd offers them
 * to whichever of the image's registry hosts asks (a mirror or the upstream).
 */
export interface AuthConfig {
  username?: string;
  password?: string;
  /** base64 of "username:password". */
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
}

/** Which of a streaming session's streams the client asked for. */
export interface StreamChoice {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** Everything the kubelet asks of a container runtime. Errors reject the promise. */
export interface ContainerRuntime {
  version(): Promise<VersionInfo>;
  status(): Promise<RuntimeCondition[]>;

  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  podSandboxStatus(id: string): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: SandboxFilter): Promise<PodSandbox[]>;

  createContainer(
    sandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** Sends SIGTERM (or the image's stop signal), then SIGKILL after `timeoutSeconds`. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  removeContainer(id: string): Promise<void>;
  containerStatus(id: string): Promise<ContainerStatus>;
  listContainers(filter?: ContainerFilter): Promise<Container[]>;
  execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult>;
  /**
   * A URL on the runtime's streaming server that runs `cmd` in the container
   * once a client upgrades a request to it (SPDY or WebSocket): kubectl exec.
   */
  exec(id: string, cmd: string[], streams: StreamChoice): Promise<string>;
  /** The same for attaching to the container's own process: kubectl attach. */
  attach(id: string, streams: StreamChoice): Promise<string>;
  /** The same for forwarding ports of the pod's network namespace: kubectl port-forward. */
  portForward(sandboxId: string, ports: number[]): Promise<string>;
  containerStats(id: string): Promise<ContainerStats>;
  /** The stats of every running container the filter selects, in one call (CRI ListContainerStats). */
  listContainerStats(filter?: Omit<ContainerFilter, 'state'>): Promise<ContainerStats[]>;

  /** undefined when the image is not present. */
  imageStatus(image: string): Promise<Image | undefined>;
  /** Returns the image reference (its ID) the runtime now has. */
  pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string>;
  listImages(): Promise<Image[]>;
  removeImage(image: string): Promise<void>;
  /** The filesystems holding the images (CRI ImageFsInfo); the kubelet's stats report them as imageFs. */
  imageFsInfo(): Promise<FilesystemUsage[]>;

  close(): void;
}

/** An error the runtime answered with; `code` is the gRPC status code when there is one. */
export class RuntimeError extends Error {
  override name = 'RuntimeError';
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

/** gRPC NOT_FOUND, as a runtime reports a sandbox/container that no longer exists. */
export const NOT_FOUND = 5;

export function isNotFound(err: unknown): boolean {
  return err instanceof RuntimeError && err.code === NOT_FOUND;
}
