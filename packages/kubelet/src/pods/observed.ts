// What the runtime runs for one pod, as the worker sees it: reading it from the
// runtime, and the small pure helpers around that view.
import type {
  ContainerConfig,
  ContainerRuntime,
  ContainerStatus,
  Image,
  PodSandbox,
  PodSandboxStatus,
  Container as RuntimeContainer,
} from '@kubit/cri';
import { isNotFound } from '@kubit/cri';
import { CONTAINER_NAME_LABEL, POD_UID_LABEL } from './labels.js';
import { restartCountOf } from './status.js';

export interface Observed {
  /** The pod's current sandbox: its newest ready one, else its newest one. */
  sandbox?: PodSandboxStatus;
  /** The pod's other sandboxes, to be removed. */
  staleSandboxIds: string[];
  /** Instances of each container name in the current sandbox, newest first. */
  instances: Map<string, ContainerStatus[]>;
}

/** The runtime has nothing of the pod. */
export const nothingRuns = (): Observed => ({ staleSandboxIds: [], instances: new Map() });

const newestFirst = (a: ContainerStatus, b: ContainerStatus) =>
  restartCountOf(b) - restartCountOf(a) || b.createdAt - a.createdAt;

/** The container name a runtime container was created for. */
export const containerName = (c: { labels: Record<string, string>; metadata: { name: string } }) =>
  c.labels[CONTAINER_NAME_LABEL] ?? c.metadata.name;

/** Reads the pod's sandboxes and the status of every container in its current sandbox. */
/** How long a just-killed container's status gets to learn it was OOM-killed. */
const OOM_SETTLE_MS = 250;

/**
 * A container killed by SIGKILL (137) a moment ago whose reason is still the generic
 * "Error": containerd learns of an OOM kill from a separate event that can arrive just
 * after the exit, and a reason reported once is final for a pod that does not restart.
 * Such a status is read again after a short wait, so OOMKilled is not lost to the race.
 */
function mayStillBeOomKilled(s: ContainerStatus, now = Date.now()): boolean {
  if (s.state !== 'CONTAINER_EXITED' || s.exitCode !== 137) return false;
  if (s.reason && s.reason !== 'Error') return false;
  return now - s.finishedAt / 1_000_000 < 1_000;
}

export async function observePod(runtime: ContainerRuntime, uid: string): Promise<Observed> {
  const sandboxes = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  sandboxes.sort((a, b) => b.metadata.attempt - a.metadata.attempt || b.createdAt - a.createdAt);
  const ready = sandboxes.find((s) => s.state === 'SANDBOX_READY');
  const current = ready ?? sandboxes[0];
  const stale = sandboxes.filter((s) => s !== current).map((s) => s.id);
  const instances = new Map<string, ContainerStatus[]>();
  let sandbox: PodSandboxStatus | undefined;
  if (current) {
    try {
      sandbox = await runtime.podSandboxStatus(current.id);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  if (sandbox) {
    const containers = await runtime.listContainers({ podSandboxId: sandbox.id });
    for (const c of containers) {
      let s: ContainerStatus;
      try {
        s = await runtime.containerStatus(c.id);
        if (mayStillBeOomKilled(s)) {
          await new Promise((r) => setTimeout(r, OOM_SETTLE_MS));
          s = await runtime.containerStatus(c.id);
        }
      } catch (err) {
        if (isNotFound(err)) continue;
        throw err;
      }
      const name = containerName(c);
      const list = instances.get(name) ?? [];
      list.push(s);
      instances.set(name, list);
    }
    for (const list of instances.values()) list.sort(newestFirst);
  }
  return { sandbox, staleSandboxIds: stale, instances };
}

/** Everything the runtime has of the pod, in any sandbox (what a deletion must stop). */
export interface PodListing {
  sandboxes: PodSandbox[];
  containers: RuntimeContainer[];
}

export async function listPod(runtime: ContainerRuntime, uid: string): Promise<PodListing> {
  const sandboxes = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: uid } });
  const containers = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: uid } });
  return { sandboxes, containers };
}

/**
 * What a pod runs, as `<id>=<state>` of its sandboxes and containers, sorted and
 * comma-joined. The manager's relist builds the same text from its node-wide
 * lists; comparing the two tells a change the worker has not seen yet from one
 * the worker made itself.
 */
export function runtimeSignature(entries: Iterable<{ id: string; state: string }>): string {
  return [...entries]
    .map((e) => `${e.id}=${e.state}`)
    .sort()
    .join(',');
}

export function observedSignature(obs: Observed): string {
  const entries: { id: string; state: string }[] = [];
  if (obs.sandbox) entries.push(obs.sandbox);
  for (const list of obs.instances.values()) entries.push(...list);
  return runtimeSignature(entries);
}

/** `obs` with `statuses` in place of the instances of the same id, in `instances`. */
export function withStatuses(
  obs: Observed,
  statuses: ContainerStatus[],
  instances: Map<string, ContainerStatus[]>,
): Observed {
  for (const s of statuses) {
    const name = containerName(s);
    const list = (instances.get(name) ?? []).filter((c) => c.id !== s.id);
    list.push(s);
    list.sort(newestFirst);
    instances.set(name, list);
  }
  return { ...obs, instances };
}

/**
 * The status a runtime reports for a container it just started: running since
 * `startedAt`, with the image reference a CRI runtime gives (the image's repo
 * digest, else its id).
 */
export function startedStatus(
  id: string,
  config: ContainerConfig,
  createdAt: number,
  startedAt: number,
  image: Image,
): ContainerStatus {
  return {
    id,
    metadata: config.metadata,
    state: 'CONTAINER_RUNNING',
    createdAt,
    startedAt,
    finishedAt: 0,
    exitCode: 0,
    image: config.image,
    imageRef: image.repoDigests[0] || image.id,
    reason: '',
    message: '',
    labels: config.labels,
    annotations: config.annotations,
    logPath: config.logPath,
  };
}

/** The parts of a container status that end up in the pod's status (to notice a wrong guess). */
export const statusSignatureOf = (s: ContainerStatus) =>
  `${s.state} ${s.imageRef} ${Math.floor(s.startedAt / 1e9)} ${s.exitCode}`;
