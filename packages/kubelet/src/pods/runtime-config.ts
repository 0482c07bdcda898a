// What the kubelet hands the runtime for a pod: the sandbox config and each
// container's config, built from the pod spec alone. Pure: the caller resolves
// the environment (which reads configMaps and secrets) and the volume paths.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ContainerConfig, Device, Mount, NamespaceOption, PodSandboxConfig } from '@kubit/cri';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import type { ResolvConf } from './dns.js';
import { ContainerConfigError, expandReferences } from './env.js';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_NAME_LABEL,
  INIT_CONTAINER_ANNOTATION,
  type PodRef,
  podLabels,
  RESTART_COUNT_ANNOTATION,
} from './labels.js';
import { linuxResources } from './resources.js';

export const DEFAULT_GRACE_SECONDS = 30;

export function podLogDirectory(podLogsDir: string, ref: PodRef): string {
  return join(podLogsDir, `${ref.namespace}_${ref.name}_${ref.uid}`);
}

/** The container's imagePullPolicy, or Kubernetes' default: Always for an untagged or :latest image. */
export function imagePullPolicy(c: Container): string {
  if (c.imagePullPolicy) return c.imagePullPolicy;
  const image = c.image ?? '';
  const tag = /:([^/:@]+)$/.exec(image)?.[1];
  return !image.includes('@') && (!tag || tag === 'latest') ? 'Always' : 'IfNotPresent';
}

/** A digest of what a running container was created from, to notice spec changes. */
export function containerHash(c: Container): string {
  const { resources: _r, livenessProbe: _l, readinessProbe: _rp, startupProbe: _s, ...rest } = c;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16);
}

/** How long a container stopped for a restart (not a deletion) gets between SIGTERM and SIGKILL. */
export function restartGraceSeconds(pod: Pod): number {
  return pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
}

/** Which Linux namespaces the pod shares with the node, with its own containers, or keeps private. */
function namespaceOptions(pod: Pod): NamespaceOption {
  const spec = pod.spec;
  return {
    network: spec?.hostNetwork ? 'NODE' : 'POD',
    pid: spec?.hostPID ? 'NODE' : spec?.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: spec?.hostIPC ? 'NODE' : 'POD',
  };
}

/** The sandbox config; `dns` is the pod's resolv.conf (dns.ts), written by the runtime. */
export function sandboxConfig(
  pod: Pod,
  ref: PodRef,
  podLogsDir: string,
  attempt: number,
  dns?: ResolvConf,
): PodSandboxConfig {
  const spec = pod.spec ?? { containers: [] };
  const labels: Record<string, string> = { ...(pod.metadata?.labels ?? {}), ...podLabels(ref) };
  const portMappings = (spec.containers ?? []).flatMap((c) =>
    (c.ports ?? [])
      .filter((p) => p.hostPort)
      .map((p) => ({
        protocol: (p.protocol ?? 'TCP') as 'TCP' | 'UDP' | 'SCTP',
        containerPort: p.containerPort,
        hostPort: p.hostPort ?? 0,
        hostIp: p.hostIP ?? '',
      })),
  );
  return {
    metadata: { name: ref.name, uid: ref.uid, namespace: ref.namespace, attempt },
    // A pod on the host's network shares the host's UTS namespace too: it keeps the node's
    // hostname (runc refuses to set one there), as Kubernetes' kubelet leaves it unset.
    hostname: spec.hostNetwork ? '' : (spec.hostname ?? ref.name).slice(0, 63),
    logDirectory: podLogDirectory(podLogsDir, ref),
    portMappings,
    ...(dns ? { dnsConfig: dns } : {}),
    labels,
    annotations: { ...(pod.metadata?.annotations ?? {}) },
    linux: {
      securityContext: {
        namespaceOptions: namespaceOptions(pod),
        ...(spec.securityContext?.runAsUser !== undefined
          ? { runAsUser: { value: spec.securityContext.runAsUser } }
          : {}),
      },
    },
  };
}

export interface ContainerConfigInput {
  pod: Pod;
  ref: PodRef;
  container: Container;
  /** The container's environment, already resolved (see env.ts). */
  env: { key: string; value: string }[];
  restartCount: number;
  /** Host path of each of the pod's volumes, by volume name. */
  volumePaths: Map<string, string>;
  isInit: boolean;
  /** The pod's managed /etc/hosts (dns.ts), mounted unless the container mounts its own. */
  etcHostsPath?: string;
  /** An ephemeral container's target: the running container whose PID namespace it joins. */
  targetContainerId?: string;
}

/** Throws ContainerConfigError when the container mounts a volume the pod does not define. */
export function containerConfig(input: ContainerConfigInput): ContainerConfig {
  const {
    pod,
    ref,
    container: c,
    env,
    restartCount,
    volumePaths,
    isInit,
    etcHostsPath,
    targetContainerId,
  } = input;
  const vars = new Map(env.map((e) => [e.key, e.value]));
  const mounts: Mount[] = [];
  for (const vm of c.volumeMounts ?? []) {
    const host = volumePaths.get(vm.name);
    if (!host) throw new ContainerConfigError(`volume "${vm.name}" is mounted but not defined in the pod`);
    mounts.push({
      containerPath: vm.mountPath,
      hostPath: vm.subPath ? join(host, vm.subPath) : host,
      readonly: !!vm.readOnly,
    });
  }
  // A Block volume's "path" is its device (see volumes/persistent.ts).
  const devices: Device[] = [];
  for (const vd of c.volumeDevices ?? []) {
    const host = volumePaths.get(vd.name);
    if (!host) throw new ContainerConfigError(`volume "${vd.name}" is a device but not defined in the pod`);
    devices.push({ containerPath: vd.devicePath, hostPath: host, permissions: 'rwm' });
  }
  if (etcHostsPath && !pod.spec?.hostNetwork && !mounts.some((m) => m.containerPath === '/etc/hosts')) {
    mounts.push({ containerPath: '/etc/hosts', hostPath: etcHostsPath, readonly: false });
  }
  const podSc = pod.spec?.securityContext ?? {};
  const sc = c.securityContext ?? {};
  const runAsUser = sc.runAsUser ?? podSc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? podSc.runAsGroup;
  return {
    metadata: { name: c.name, attempt: restartCount },
    image: { image: c.image ?? '' },
    command: (c.command ?? []).map((s) => expandReferences(s, vars)),
    args: (c.args ?? []).map((s) => expandReferences(s, vars)),
    workingDir: c.workingDir ?? '',
    envs: env,
    mounts,
    ...(devices.length > 0 ? { devices } : {}),
    labels: { ...podLabels(ref), [CONTAINER_NAME_LABEL]: c.name },
    annotations: {
      [RESTART_COUNT_ANNOTATION]: String(restartCount),
      [CONTAINER_HASH_ANNOTATION]: containerHash(c),
      ...(isInit ? { [INIT_CONTAINER_ANNOTATION]: 'true' } : {}),
    },
    logPath: `${c.name}/${restartCount}.log`,
    stdin: !!c.stdin,
    tty: !!c.tty,
    linux: {
      resources: linuxResources(c),
      securityContext: {
        privileged: !!sc.privileged,
        ...(runAsUser !== undefined ? { runAsUser: { value: runAsUser } } : {}),
        ...(runAsGroup !== undefined ? { runAsGroup: { value: runAsGroup } } : {}),
        readonlyRootfs: !!sc.readOnlyRootFilesystem,
        noNewPrivs: sc.allowPrivilegeEscalation === false,
        supplementalGroups: podSc.supplementalGroups ?? [],
        ...(sc.capabilities
          ? {
              capabilities: {
                addCapabilities: sc.capabilities.add ?? [],
                dropCapabilities: sc.capabilities.drop ?? [],
              },
            }
          : {}),
        namespaceOptions: targetContainerId
          ? { ...namespaceOptions(pod), pid: 'TARGET', targetId: targetContainerId }
          : namespaceOptions(pod),
      },
    },
  };
}
