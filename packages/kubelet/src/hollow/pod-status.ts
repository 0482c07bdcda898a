// What a hollow node reports for a pod it "runs": Running, Ready, a fake pod IP
// and one running status per container. Pure functions, so they are unit-testable.
import type { ContainerStatus, Pod, PodCondition, PodStatus } from 'kubernetes-types/core/v1.js';

const rfc3339 = (d: Date) => `${d.toISOString().slice(0, 19)}Z`;

/**
 * A pod IP unique per (node index, pod slot) inside 10.128.0.0/9: node i owns
 * 10.(128 + i/256).(i%256).0/24, as if node IPAM had handed out /24s.
 */
export function hollowPodIP(nodeIndex: number, slot: number): string {
  return `10.${128 + ((nodeIndex >> 8) & 127)}.${nodeIndex & 255}.${(slot % 254) + 1}`;
}

/** True once the pod shows what hollowPodStatus would report (so it is not written again). */
export function isReportedRunning(pod: Pod): boolean {
  const s = pod.status;
  if (s?.phase !== 'Running' || !s.podIP) return false;
  const want = pod.spec?.containers?.length ?? 0;
  return (s.containerStatuses ?? []).filter((c) => c.ready).length === want;
}

/** The status a hollow node posts for a pod bound to it. */
export function hollowPodStatus(pod: Pod, hostIP: string, podIP: string, now = new Date()): PodStatus {
  const ts = rfc3339(now);
  const startTime = pod.status?.startTime ?? ts;
  const uid = pod.metadata?.uid ?? '';
  const fakeId = (name: string) => `fake://${uid}-${name}`;
  const imageID = (image: string) => `${image}@sha256:${'0'.repeat(64)}`;
  const running = (name: string, image: string): ContainerStatus => ({
    name,
    image,
    imageID: imageID(image),
    containerID: fakeId(name),
    ready: true,
    started: true,
    restartCount: 0,
    state: { running: { startedAt: startTime } },
  });
  const completed = (name: string, image: string): ContainerStatus => ({
    name,
    image,
    imageID: imageID(image),
    containerID: fakeId(name),
    ready: true,
    restartCount: 0,
    state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: startTime, finishedAt: startTime } },
  });
  const cond = (type: string): PodCondition => {
    const prev = pod.status?.conditions?.find((c) => c.type === type);
    return {
      type,
      status: 'True',
      lastTransitionTime: prev?.status === 'True' && prev.lastTransitionTime ? prev.lastTransitionTime : ts,
    };
  };
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  return {
    phase: 'Running',
    conditions: [
      cond('PodReadyToStartContainers'),
      cond('Initialized'),
      cond('ContainersReady'),
      cond('Ready'),
      scheduled ?? cond('PodScheduled'),
    ],
    hostIP,
    hostIPs: [{ ip: hostIP }],
    podIP,
    podIPs: [{ ip: podIP }],
    startTime,
    qosClass: pod.status?.qosClass,
    initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) => completed(c.name, c.image ?? '')),
    containerStatuses: (pod.spec?.containers ?? []).map((c) => running(c.name, c.image ?? '')),
  };
}

/**
 * Pod annotations that make a hollow node play a container that exits: after
 * `kubit.dev/hollow-run-ms` (default 0) of running, the pod ends with
 * `kubit.dev/hollow-exit-code` (0: Succeeded, else Failed), as a pod of a Job
 * with restartPolicy Never would. Without them a hollow pod runs for ever.
 */
export const HOLLOW_EXIT_CODE_ANNOTATION = 'kubit.dev/hollow-exit-code';
export const HOLLOW_RUN_MS_ANNOTATION = 'kubit.dev/hollow-run-ms';

/** The exit a pod asks its hollow node to play; undefined when it runs for ever (or the values are bad). */
export function hollowExit(pod: Pod): { exitCode: number; runMs: number } | undefined {
  const a = pod.metadata?.annotations;
  const code = a?.[HOLLOW_EXIT_CODE_ANNOTATION];
  if (code === undefined || !/^\d{1,3}$/.test(code) || Number(code) > 255) return undefined;
  const run = a?.[HOLLOW_RUN_MS_ANNOTATION] ?? '0';
  if (!/^\d{1,10}$/.test(run)) return undefined;
  return { exitCode: Number(code), runMs: Number(run) };
}

/** The status a hollow node posts when the pod's containers exit with `exitCode`. */
export function hollowFinishedStatus(pod: Pod, exitCode: number, now = new Date()): PodStatus {
  const finishedAt = rfc3339(now);
  const prev = pod.status ?? {};
  const notReady = (type: string): PodCondition => ({
    type,
    status: 'False',
    reason: 'PodCompleted',
    lastTransitionTime: finishedAt,
  });
  return {
    ...prev,
    phase: exitCode === 0 ? 'Succeeded' : 'Failed',
    conditions: [
      ...(prev.conditions ?? []).filter((c) => c.type !== 'Ready' && c.type !== 'ContainersReady'),
      notReady('ContainersReady'),
      notReady('Ready'),
    ],
    containerStatuses: (prev.containerStatuses ?? []).map((c) => ({
      ...c,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode,
          reason: exitCode === 0 ? 'Completed' : 'Error',
          startedAt: c.state?.running?.startedAt ?? prev.startTime ?? finishedAt,
          finishedAt,
          containerID: c.containerID,
        },
      },
    })),
  };
}
