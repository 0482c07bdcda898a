// The pod worker's decisions, apart from carrying them out: given the pod and
// what the runtime runs for it, which sandbox to kill or create and which
// containers to start, kill or leave, each with the reason. Pure: no runtime, no
// I/O, no clock but the one inside the backoff passed in. The executor
// (executor.ts) carries the actions out. Kubernetes splits its kubelet the
// same way (kuberuntime's computePodActions and SyncPod).

import type { ContainerStatus } from '@kubit/cri';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import { CONTAINER_HASH_ANNOTATION } from './labels.js';
import { containerName, type Observed, type PodListing } from './observed.js';
import { containerHash, DEFAULT_GRACE_SECONDS } from './runtime-config.js';
import { restartCountOf } from './status.js';

/** What the planner reads of the crash backoff (backoff.ts's Backoff has it). */
export interface CrashBackoffView {
  inBackoff(key: string, sinceMs: number): boolean;
  delayMs(key: string): number;
  remainingMs(key: string, sinceMs: number): number;
  readonly resetAfterMs: number;
}

export interface PlanInput {
  pod: Pod;
  observed: Observed;
  /** The kubelet refused the pod at admission: it only reports that. */
  rejected: boolean;
  /** The pod has finished (Succeeded or Failed): nothing of it starts again. */
  finished: boolean;
  /** Why the node cannot give a new sandbox a pod network now (no CNI config yet), if so. */
  nodeNetworkProblem?: string;
  /** Containers stopped because their spec changed: started again at once, whatever the policy. */
  respecified: ReadonlySet<string>;
  /** Restart counts carried over from an earlier sandbox, by container name. */
  carriedRestarts: ReadonlyMap<string, number>;
  /** The probe kind ('Liveness', 'Startup') that failed, by running container id. */
  failedProbes: ReadonlyMap<string, string>;
  crashBackoff: CrashBackoffView;
}

/** One step for one container; the executor runs them in this order (init containers, then the pod's). */
export type ContainerAction =
  | {
      kind: 'start';
      container: Container;
      isInit: boolean;
      /** The restart count the new instance carries (0 for a first start). */
      restartCount: number;
      /** Counts as a restart of a crashed container: arms or doubles the crash backoff. */
      countsAsCrash: boolean;
      /** The last instance ran long enough that its backoff starts over. */
      resetBackoff: boolean;
      /** An ephemeral container's targetContainerName, running: it joins that container's PID namespace. */
      targetContainerId?: string;
      reason: string;
    }
  | { kind: 'start-created'; container: Container; id: string; reason: string }
  | {
      kind: 'kill';
      container: Container;
      id: string;
      /** Its spec changed: it is started again at once, whatever the restart policy. */
      respecify: boolean;
      reason: string;
    }
  | { kind: 'back-off'; container: Container; delayMs: number; remainingMs: number; reason: string }
  | { kind: 'leave-exited'; container: Container; reason: string };

export interface RunActions {
  kind: 'run';
  /** The current sandbox is dead: stop its running containers, then the sandbox itself. */
  killSandbox?: { id: string; containerIds: string[]; reason: string };
  createSandbox?: { attempt: number; reason: string };
  /** Restart counts the new sandbox's containers continue from (those the killed sandbox ran). */
  carryRestarts?: Map<string, number>;
  /** Sandboxes to stop and remove once the current one is ready. */
  sandboxesToRemove: string[];
  containers: ContainerAction[];
}

export type PodActions =
  | { kind: 'report-rejection' }
  | { kind: 'finished'; stopSandboxId?: string; reason: string }
  | { kind: 'wait-for-network'; message: string }
  /** restartPolicy Never and a dead sandbox: stop what is left; the pod fails, nothing runs again. */
  | { kind: 'kill-remains'; containerIdsToKill: string[]; reason: string }
  | RunActions;

export function shouldRestart(policy: string, exitCode: number): boolean {
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

const restartPolicyOf = (pod: Pod) => pod.spec?.restartPolicy ?? 'Always';

const runningIds = (instances: Map<string, ContainerStatus[]>) =>
  [...instances.values()].flatMap((list) =>
    list.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id),
  );

export function computePodActions(input: PlanInput): PodActions {
  const { pod, observed: obs } = input;
  if (input.rejected) return { kind: 'report-rejection' };
  if (input.finished) {
    // A finished pod keeps its containers (for logs and status) but not its sandbox.
    const ready = obs.sandbox?.state === 'SANDBOX_READY';
    return {
      kind: 'finished',
      stopSandboxId: ready ? obs.sandbox?.id : undefined,
      reason: 'the pod finished',
    };
  }
  const sandbox = obs.sandbox;
  if (sandbox?.state === 'SANDBOX_READY') {
    return {
      kind: 'run',
      sandboxesToRemove: obs.staleSandboxIds,
      containers: [
        ...planContainers(input, obs.instances, input.carriedRestarts),
        ...planEphemeralContainers(pod, obs.instances),
      ],
    };
  }
  // Without the node's CNI config a sandbox would fail (or get no IP): wait in ContainerCreating.
  const networkProblem = pod.spec?.hostNetwork ? undefined : input.nodeNetworkProblem;
  if (networkProblem) return { kind: 'wait-for-network', message: networkProblem };
  if (sandbox && restartPolicyOf(pod) === 'Never' && obs.instances.size > 0) {
    // As in Kubernetes, a pod with restartPolicy Never whose containers ran is never run
    // again in a new sandbox. It does not matter whether containerd reports the
    // container's exit before or after the sandbox's.
    return {
      kind: 'kill-remains',
      containerIdsToKill: runningIds(obs.instances),
      reason: 'the sandbox died and restartPolicy is Never',
    };
  }
  // The sandbox died (a reboot, a killed pause process): kill what is left of the pod,
  // free its network (CNI DEL on stop), and run it again in a new sandbox, with the
  // containers' restart counts going on from the old one.
  const carryRestarts = new Map<string, number>();
  for (const [name, list] of obs.instances) if (list[0]) carryRestarts.set(name, restartCountOf(list[0]) + 1);
  const restarts = new Map([...input.carriedRestarts, ...carryRestarts]);
  return {
    kind: 'run',
    killSandbox: sandbox && {
      id: sandbox.id,
      containerIds: runningIds(obs.instances),
      reason: 'the sandbox is not ready',
    },
    createSandbox: {
      attempt: (sandbox?.metadata.attempt ?? -1) + 1,
      reason: sandbox ? 'the sandbox is not ready' : 'the pod has no sandbox',
    },
    carryRestarts,
    sandboxesToRemove: sandbox ? [...obs.staleSandboxIds, sandbox.id] : obs.staleSandboxIds,
    // The containers of the old sandbox are gone with its network: all start over.
    containers: planContainers(input, new Map(), restarts),
  };
}

/** Init containers in order, each to success before the next; then the pod's containers. */
function planContainers(
  input: PlanInput,
  instances: Map<string, ContainerStatus[]>,
  carried: ReadonlyMap<string, number>,
): ContainerAction[] {
  const { pod } = input;
  const policy = restartPolicyOf(pod);
  const actions: ContainerAction[] = [];
  for (const c of pod.spec?.initContainers ?? []) {
    const [cur] = instances.get(c.name) ?? [];
    if (cur?.state === 'CONTAINER_EXITED' && cur.exitCode === 0) continue;
    // This init container is the one the pod waits for.
    if (cur?.state === 'CONTAINER_RUNNING') return actions;
    if (cur?.state === 'CONTAINER_CREATED') {
      actions.push({ kind: 'start-created', container: c, id: cur.id, reason: 'created but not started' });
    } else if (!(cur?.state === 'CONTAINER_EXITED' && policy === 'Never')) {
      actions.push(startOrBackOff(input, c, cur, carried, true));
    } // else the init container failed under restartPolicy Never: the pod failed.
    return actions;
  }
  for (const c of pod.spec?.containers ?? []) {
    const [cur] = instances.get(c.name) ?? [];
    if (cur?.state === 'CONTAINER_RUNNING') {
      const kill = killIfUnhealthy(input, c, cur);
      if (kill) actions.push(kill);
    } else if (cur?.state === 'CONTAINER_CREATED') {
      actions.push({ kind: 'start-created', container: c, id: cur.id, reason: 'created but not started' });
    } else if (
      cur?.state === 'CONTAINER_EXITED' &&
      !shouldRestart(policy, cur.exitCode) &&
      !input.respecified.has(c.name)
    ) {
      actions.push({
        kind: 'leave-exited',
        container: c,
        reason: `exited with code ${cur.exitCode}; restartPolicy ${policy} does not restart it`,
      });
    } else {
      actions.push(startOrBackOff(input, c, cur, carried, false));
    }
  }
  return actions;
}

/**
 * Ephemeral containers (kubectl debug) start once, in the running sandbox, and are never
 * started again: not after they exit, not in a new sandbox (Kubernetes' rule). One whose
 * targetContainerName runs shares that container's PID namespace.
 */
function planEphemeralContainers(pod: Pod, instances: Map<string, ContainerStatus[]>): ContainerAction[] {
  const actions: ContainerAction[] = [];
  for (const ec of pod.spec?.ephemeralContainers ?? []) {
    const c = ec as Container;
    const [cur] = instances.get(c.name) ?? [];
    if (cur?.state === 'CONTAINER_CREATED') {
      actions.push({ kind: 'start-created', container: c, id: cur.id, reason: 'created but not started' });
      continue;
    }
    if (cur) continue;
    const [target] = ec.targetContainerName ? (instances.get(ec.targetContainerName) ?? []) : [];
    actions.push({
      kind: 'start',
      container: c,
      isInit: false,
      restartCount: 0,
      countsAsCrash: false,
      resetBackoff: false,
      ...(target?.state === 'CONTAINER_RUNNING' ? { targetContainerId: target.id } : {}),
      reason: 'ephemeral container not started yet',
    });
  }
  return actions;
}

/** A running container is killed when its spec changed or its liveness or startup probe failed. */
function killIfUnhealthy(input: PlanInput, c: Container, cur: ContainerStatus): ContainerAction | undefined {
  const hash = cur.annotations[CONTAINER_HASH_ANNOTATION];
  if (hash && hash !== containerHash(c)) {
    return { kind: 'kill', container: c, id: cur.id, respecify: true, reason: 'definition changed' };
  }
  const failed = input.failedProbes.get(cur.id);
  if (!failed) return undefined;
  return {
    kind: 'kill',
    container: c,
    id: cur.id,
    respecify: false,
    reason: `failed ${failed.toLowerCase()} probe`,
  };
}

/** Starts `c`, whose newest instance is `cur`; a crashed one waits out its backoff first. */
function startOrBackOff(
  input: PlanInput,
  c: Container,
  cur: ContainerStatus | undefined,
  carried: ReadonlyMap<string, number>,
  isInit: boolean,
): ContainerAction {
  const start = { kind: 'start', container: c, isInit } as const;
  if (!cur) {
    const restartCount = carried.get(c.name) ?? 0;
    const reason = restartCount > 0 ? 'starts over in a new sandbox' : 'not started yet';
    return { ...start, restartCount, countsAsCrash: false, resetBackoff: false, reason };
  }
  const respecified = input.respecified.has(c.name);
  const { crashBackoff } = input;
  const key = `${podUid(input.pod)}/${c.name}`;
  const ranMs = cur.startedAt && cur.finishedAt ? (cur.finishedAt - cur.startedAt) / 1e6 : 0;
  const resetBackoff = ranMs >= crashBackoff.resetAfterMs;
  const finishedMs = cur.finishedAt / 1e6;
  const exited =
    cur.state === 'CONTAINER_EXITED' ? `exited with code ${cur.exitCode}` : `is ${cur.state.toLowerCase()}`;
  if (!respecified && !resetBackoff && crashBackoff.inBackoff(key, finishedMs)) {
    return {
      kind: 'back-off',
      container: c,
      delayMs: crashBackoff.delayMs(key),
      remainingMs: crashBackoff.remainingMs(key, finishedMs),
      reason: `${exited}; waiting out its crash backoff`,
    };
  }
  return {
    ...start,
    restartCount: restartCountOf(cur) + 1,
    countsAsCrash: !respecified,
    resetBackoff,
    reason: respecified ? 'its spec changed' : `${exited}; restartPolicy ${restartPolicyOf(input.pod)}`,
  };
}

const podUid = (pod: Pod) => pod.metadata?.uid ?? '';

/** What deleting the pod stops: every running container (with the grace period), then every sandbox. */
export interface TerminationActions {
  gracePeriodSeconds: number;
  containersToKill: { id: string; name: string }[];
  sandboxesToRemove: string[];
  reason: string;
}

export function computeTerminationActions(pod: Pod, listing: PodListing): TerminationActions {
  return {
    gracePeriodSeconds:
      pod.metadata?.deletionGracePeriodSeconds ??
      pod.spec?.terminationGracePeriodSeconds ??
      DEFAULT_GRACE_SECONDS,
    containersToKill: listing.containers
      .filter((c) => c.state === 'CONTAINER_RUNNING')
      .map((c) => ({ id: c.id, name: containerName(c) })),
    sandboxesToRemove: listing.sandboxes.map((s) => s.id),
    reason: 'the pod is being deleted',
  };
}

/** What to do about a container's image, once ImageStatus said whether it is present. */
export type ImageStep = 'use-present' | 'never-pull' | 'pull-back-off' | 'pull';

export function imageStep(policy: string, present: boolean, inPullBackoff: boolean): ImageStep {
  if (present && policy !== 'Always') return 'use-present';
  if (policy === 'Never') return 'never-pull';
  return inPullBackoff ? 'pull-back-off' : 'pull';
}
