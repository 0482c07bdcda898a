// Pod status from what the runtime reports plus what the worker knows (why a
// container waits, what its probes say). Pure, so it can be tested alone.

import type { ContainerStatus } from '@kubit/cri';
import type {
  Container,
  ContainerState,
  ContainerStatus as K8sContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from 'kubernetes-types/core/v1.js';
import { RESTART_COUNT_ANNOTATION } from './labels.js';

export interface Waiting {
  reason: string;
  message?: string;
}

export interface StatusInput {
  pod: Pod;
  hostIP: string;
  podIP: string;
  startTime: string;
  /** e.g. "containerd", for containerIDs like containerd://<id>. */
  runtimeName: string;
  /** Instances per container name, newest first. */
  instances: Map<string, ContainerStatus[]>;
  /** Why a container waits (ErrImagePull, CrashLoopBackOff, ...), when it does. */
  waiting: Map<string, Waiting>;
  /** Readiness and startup results by container ID. */
  ready: (containerId: string) => boolean;
  started: (containerId: string) => boolean;
  /** Set when the kubelet rejected the pod at admission. */
  rejected?: { reason: string; message: string };
  previous?: PodStatus;
  now?: () => Date;
}

export const rfc3339 = (d: Date) => `${d.toISOString().slice(0, 19)}Z`;
const fromNs = (ns: number) => rfc3339(new Date(Math.floor(ns / 1_000_000)));

export function restartCountOf(s: ContainerStatus | undefined): number {
  const n = Number(s?.annotations?.[RESTART_COUNT_ANNOTATION] ?? s?.metadata.attempt ?? 0);
  return Number.isFinite(n) ? n : 0;
}

function terminatedState(s: ContainerStatus, runtimeName: string): ContainerState {
  return {
    terminated: {
      exitCode: s.exitCode,
      reason: s.reason || (s.exitCode === 0 ? 'Completed' : 'Error'),
      ...(s.message ? { message: s.message } : {}),
      ...(s.startedAt ? { startedAt: fromNs(s.startedAt) } : {}),
      finishedAt: fromNs(s.finishedAt || s.createdAt),
      containerID: `${runtimeName}://${s.id}`,
    },
  };
}

function containerStatus(
  c: Container,
  input: StatusInput,
  defaultWaiting: string,
  isInit = false,
): K8sContainerStatus & { finished: boolean } {
  const [cur, prev] = input.instances.get(c.name) ?? [];
  const override = input.waiting.get(c.name);
  let state: ContainerState;
  let lastState: ContainerState = {};
  let finished = false;
  if (cur?.state === 'CONTAINER_RUNNING') {
    state = { running: { startedAt: fromNs(cur.startedAt || cur.createdAt) } };
    if (prev?.state === 'CONTAINER_EXITED') lastState = terminatedState(prev, input.runtimeName);
  } else if (override) {
    state = {
      waiting: { reason: override.reason, ...(override.message ? { message: override.message } : {}) },
    };
    if (cur?.state === 'CONTAINER_EXITED') lastState = terminatedState(cur, input.runtimeName);
    else if (prev?.state === 'CONTAINER_EXITED') lastState = terminatedState(prev, input.runtimeName);
  } else if (cur?.state === 'CONTAINER_EXITED') {
    state = terminatedState(cur, input.runtimeName);
    // Exited for good only when the restart policy will not start it again.
    const policy = input.pod.spec?.restartPolicy ?? 'Always';
    finished = isInit
      ? cur.exitCode === 0 || policy === 'Never'
      : policy === 'Never' || (policy === 'OnFailure' && cur.exitCode === 0);
    if (prev?.state === 'CONTAINER_EXITED') lastState = terminatedState(prev, input.runtimeName);
  } else {
    state = { waiting: { reason: cur ? 'ContainerCreating' : defaultWaiting } };
  }
  const running = cur?.state === 'CONTAINER_RUNNING';
  return {
    name: c.name,
    image: c.image ?? '',
    imageID: cur?.imageRef ?? '',
    ...(cur ? { containerID: `${input.runtimeName}://${cur.id}` } : {}),
    ready: running && input.ready(cur.id),
    started: running && input.started(cur.id),
    restartCount: restartCountOf(cur),
    state,
    lastState,
    finished,
  };
}

function condition(
  type: string,
  ok: boolean,
  previous: PodStatus | undefined,
  now: Date,
  reason?: string,
  message?: string,
): PodCondition {
  const prev = previous?.conditions?.find((c) => c.type === type);
  const status = ok ? 'True' : 'False';
  return {
    type,
    status,
    lastTransitionTime:
      prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : rfc3339(now),
    ...(reason && !ok ? { reason } : {}),
    ...(message && !ok ? { message } : {}),
  };
}

function qosClass(pod: Pod): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let any = false;
  let guaranteed = true;
  for (const c of all) {
    const r = c.resources?.requests ?? {};
    const l = c.resources?.limits ?? {};
    if (Object.keys(r).length || Object.keys(l).length) any = true;
    for (const res of ['cpu', 'memory']) {
      if (!l[res] || (r[res] !== undefined && String(r[res]) !== String(l[res]))) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** The pod's status as the kubelet reports it. */
export function computePodStatus(input: StatusInput): PodStatus {
  const now = (input.now ?? (() => new Date()))();
  const { pod } = input;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (input.rejected) {
    return {
      phase: 'Failed',
      reason: input.rejected.reason,
      message: input.rejected.message,
      hostIP: input.hostIP,
      startTime: input.startTime,
    };
  }
  const inits = (pod.spec?.initContainers ?? []).map((c) =>
    containerStatus(c, input, 'PodInitializing', true),
  );
  const initDone = inits.every((s) => s.state?.terminated?.exitCode === 0);
  const initFailed = inits.some((s) => s.finished && s.state?.terminated?.exitCode !== 0);
  const mains = (pod.spec?.containers ?? []).map((c) =>
    containerStatus(c, input, initDone ? 'ContainerCreating' : 'PodInitializing'),
  );

  let phase: PodStatus['phase'];
  if (initFailed && policy === 'Never') phase = 'Failed';
  else if (!initDone) phase = 'Pending';
  else if (mains.length > 0 && mains.every((s) => s.finished)) {
    phase = mains.every((s) => s.state?.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
  } else if (mains.some((s) => s.state?.running || s.restartCount > 0 || s.finished)) phase = 'Running';
  else phase = 'Pending';

  const unready = mains.filter((s) => !s.ready).map((s) => s.name);
  const incomplete = inits.filter((s) => s.state?.terminated?.exitCode !== 0).map((s) => s.name);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const readyReason = terminal ? 'PodCompleted' : 'ContainersNotReady';
  const readyMessage = terminal ? undefined : `containers with unready status: [${unready.join(' ')}]`;
  const conditions: PodCondition[] = [
    condition(
      'Initialized',
      initDone || terminal,
      input.previous,
      now,
      'ContainersNotInitialized',
      `containers with incomplete status: [${incomplete.join(' ')}]`,
    ),
    condition('Ready', unready.length === 0 && !terminal, input.previous, now, readyReason, readyMessage),
    condition(
      'ContainersReady',
      unready.length === 0 && !terminal,
      input.previous,
      now,
      readyReason,
      readyMessage,
    ),
    condition('PodScheduled', true, input.previous, now),
  ];
  const strip = ({ finished: _f, ...rest }: K8sContainerStatus & { finished: boolean }) => rest;
  const status: PodStatus = {
    phase,
    conditions,
    hostIP: input.hostIP,
    hostIPs: input.hostIP ? [{ ip: input.hostIP }] : [],
    startTime: input.startTime,
    containerStatuses: mains.map(strip),
    qosClass: qosClass(pod),
  };
  if (input.podIP) {
    status.podIP = input.podIP;
    status.podIPs = [{ ip: input.podIP }];
  }
  if (inits.length > 0) status.initContainerStatuses = inits.map(strip);
  // Ephemeral containers never make a pod ready or finished: they are only reported.
  const ephemeral = (pod.spec?.ephemeralContainers ?? []).map((c) =>
    strip(containerStatus(c as Container, input, 'ContainerCreating')),
  );
  if (ephemeral.length > 0)
    status.ephemeralContainerStatuses = ephemeral.map((s) => ({ ...s, ready: false }));
  return status;
}
