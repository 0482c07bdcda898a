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
