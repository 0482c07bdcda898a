// One pod's worker: it reconciles what the pod asks for with what the runtime
// runs, one sync at a time, and never waits on any other pod. Syncs are
// triggered by pod updates, by the relist loop (~1 s), by probe results and by
// backoff timers.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Logger } from '@kubit/daemon';
import type { Container, Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import type {
  ContainerConfig,
  ContainerRuntime,
  ContainerStatus,
  Image,
  Mount,
  PodSandboxConfig,
  PodSandboxStatus,
} from '../runtime/types.js';
import { isNotFound } from '../runtime/types.js';
import type { Backoff } from './backoff.js';
import { ContainerConfigError, containerEnv, expandReferences } from './env.js';
import {
  CONTAINER_HASH_ANNOTATION,
  CONTAINER_NAME_LABEL,
  INIT_CONTAINER_ANNOTATION,
  POD_UID_LABEL,
  type PodRef,
  podLabels,
  podRef,
  RESTART_COUNT_ANNOTATION,
} from './labels.js';
import { ContainerProbes } from './probes.js';
import { linuxResources } from './resources.js';
import type { EventSink, EventType, ObjectSource, PodStatusSink } from './sinks.js';
import { computePodStatus, restartCountOf, rfc3339, type Waiting } from './status.js';
import type { Tracer, TraceStep } from './trace.js';
import { MountError, type VolumeManager } from './volumes.js';

/** What every pod worker shares. */
export interface WorkerContext {
  runtime: ContainerRuntime;
  runtimeName: string;
  volumes: VolumeManager;
  objects: ObjectSource;
  statusSink: PodStatusSink;
  events: EventSink;
  log: Logger;
  crashBackoff: Backoff;
  imageBackoff: Backoff;
  hostIP: string;
  /** Where container logs go: <podLogsDir>/<ns>_<name>_<uid>/<container>/<restartCount>.log */
  podLogsDir: string;
  /** How often a worker looks again while something is pending (image pull retry, mount retry). */
  retryMs: number;
  /** Why no pod-network sandbox may be created yet (the node has no CNI config), or undefined. */
  networkNotReady?: () => string | undefined;
  /** Pulls under way, by image: pods starting together share one PullImage. */
  pulls: Map<string, Promise<void>>;
  /** Notes start-up steps (see trace.ts); absent when not measuring. */
  trace?: Tracer;
}

const DEFAULT_GRACE_SECONDS = 30;
/** How often the contents of configMap and secret volumes are refreshed from the apiserver. */
const VOLUME_REFRESH_MS = 10_000;

export function podLogDirectory(podLogsDir: string, ref: PodRef): string {
  return join(podLogsDir, `${ref.namespace}_${ref.name}_${ref.uid}`);
}

function imagePullPolicy(c: Container): string {
  if (c.imagePullPolicy) return c.imagePullPolicy;
  const image = c.image ?? '';
  const tag = /:([^/:@]+)$/.exec(image)?.[1];
  return !image.includes('@') && (!tag || tag === 'latest') ? 'Always' : 'IfNotPresent';
}

/** The pod's spec and metadata as JSON, without what every write changes (resourceVersion, managedFields). */
function specAndMetadataOf(pod: Pod): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = pod.metadata ?? {};
  return JSON.stringify({ spec: pod.spec, metadata });
}

function gracePeriodSeconds(pod: Pod): number {
  return (
    pod.metadata?.deletionGracePeriodSeconds ??
    pod.spec?.terminationGracePeriodSeconds ??
    DEFAULT_GRACE_SECONDS
  );
}

/** A digest of what a running container was created from, to notice spec changes. */
export function containerHash(c: Container): string {
  const { resources: _r, livenessProbe: _l, readinessProbe: _rp, startupProbe: _s, ...rest } = c;
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex').slice(0, 16);
}

function shouldRestart(policy: string, exitCode: number): boolean {
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

interface Observed {
  sandbox?: PodSandboxStatus;
  staleSandboxIds: string[];
  /** Instances of each container name in the current sandbox, newest first. */
  instances: Map<string, ContainerStatus[]>;
}

/**
 * What a pod runs, as `<id>=<state>` of its sandboxes and containers, sorted and
 * comma-joined: the same text the manager's relist builds from its node-wide
 * lists, so it can tell a change the worker has not seen from one it made itself.
 */
export function runtimeSignature(entries: Iterable<{ id: string; state: string }>): string {
  return [...entries]
    .map((e) => `${e.id}=${e.state}`)
    .sort()
    .join(',');
}

function observedSignature(obs: Observed): string {
  const entries: { id: string; state: string }[] = [];
  if (obs.sandbox) entries.push(obs.sandbox);
  for (const list of obs.instances.values()) entries.push(...list);
  return runtimeSignature(entries);
}

/**
 * A container is reported Running before ContainerStatus confirms it only when
 * StartContainer took at most this long (ns): status times are whole seconds, so
 * a guess within ±100 ms of the real start names the right second more than 90
 * times in 100, while on a loaded runtime (StartContainer taking seconds) it
 * would mostly be wrong, and each wrong guess costs a second PATCH.
 */
const EARLY_STATUS_MAX_START_NS = 200_000_000;

const nowNs = () => Math.round((performance.timeOrigin + performance.now()) * 1e6);

/**
 * The status a runtime reports for a container it just started: running since
 * `startedAt`, with the image reference a CRI runtime gives (the image's repo
 * digest, else its id).
 */
function startedStatus(
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

/** What of a container status ends up in the pod's status (for noticing a wrong guess). */
const statusSignatureOf = (s: ContainerStatus) =>
  `${s.state} ${s.imageRef} ${Math.floor(s.startedAt / 1e9)} ${s.exitCode}`;

/** `obs` with `statuses` in place of the instances of the same id, in `instances`. */
function withStatuses(
  obs: Observed,
  statuses: ContainerStatus[],
  instances: Map<string, ContainerStatus[]>,
): Observed {
  for (const s of statuses) {
    const name = s.labels[CONTAINER_NAME_LABEL] ?? s.metadata.name;
    const list = (instances.get(name) ?? []).filter((c) => c.id !== s.id);
    list.push(s);
    list.sort((a, b) => restartCountOf(b) - restartCountOf(a) || b.createdAt - a.createdAt);
    instances.set(name, list);
  }
  return { ...obs, instances };
}

/** Nothing of the pod in the runtime. */
const nothingRuns = (): Observed => ({ staleSandboxIds: [], instances: new Map() });

export class PodWorker {
  readonly ref: PodRef;
  private pod: Pod;
  private deleting = false;
  private finished = false;
  private running = false;
  private dirty = false;
  private wakeTimer: NodeJS.Timeout | undefined;
  private readonly startTime = rfc3339(new Date());
  private readonly waiting = new Map<string, Waiting>();
  private readonly probes = new Map<string, ContainerProbes>();
  /** The last (reason, message) an event was sent for, per container, to not repeat it every sync. */
  private readonly lastEvent = new Map<string, string>();
  private readonly imageFailedAt = new Map<string, number>();
  private lastStatus: PodStatus | undefined;
  private lastStatusJson = '';
  private podIP = '';
  private terminal = false;
  private rejected: { reason: string; message: string } | undefined;
  /** Resolves when the worker has nothing left to do (after termination). */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  /**
   * The manager knows nothing of this pod runs (it came after the first
   * node-wide relist and was in none since): the first sync acts at once
   * instead of listing the pod's sandboxes first.
   */
  private knownEmpty: boolean;
  /** What the runtime ran for the pod when this worker last looked (see runtimeSignature). */
  private seenSignature: string | undefined;
  /** ImageStatus calls started alongside RunPodSandbox, by image; valid for one sync. */
  private readonly imageChecks = new Map<string, Promise<Image | undefined>>();
  /** Images ImageStatus found present during this sync. */
  private readonly presentImages = new Map<string, Image>();
  /**
   * Containers this sync created and started, with the status the runtime is
   * bound to report for them: published at once, before ContainerStatus confirms it.
   */
  private readonly assumed = new Map<string, ContainerStatus>();
  /**
   * The first sync's observation (sandbox and IP, no container yet) while the
   * pod has reported nothing: published as ContainerCreating before a pull.
   */
  private creating: Observed | undefined;

  constructor(
    pod: Pod,
    private readonly ctx: WorkerContext,
    opts: { knownEmpty?: boolean } = {},
  ) {
    this.knownEmpty = !!opts.knownEmpty;
    this.pod = pod;
    this.ref = podRef(pod);
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
  }

  get currentPod(): Pod {
    return this.pod;
  }

  get isFinished(): boolean {
    return this.finished;
  }

  get isTerminating(): boolean {
    return this.deleting;
  }

  /** Whether a sync is under way or asked for. */
  get isBusy(): boolean {
    return this.running || this.dirty;
  }

  /** What the runtime ran for the pod when the worker last looked, or undefined before it looked. */
  get observed(): string | undefined {
    return this.seenSignature;
  }

  update(pod: Pod): void {
    const ownEcho = this.isOwnStatusEcho(pod);
    this.pod = pod;
    if (pod.metadata?.deletionTimestamp) this.deleting = true;
    // The watch hands back every status this kubelet writes: nothing to do about those.
    // Each used to cost a whole sync (four CRI calls) while the next pods were starting.
    if (!ownEcho) this.trigger();
  }

  /**
   * Whether `pod` differs from the pod this worker has only by its status (and
   * resourceVersion), with a phase that is either unchanged or the one this
   * worker last published: the apiserver echoing our own status write. A phase
   * set by anyone else, or any change to the spec or metadata, is not an echo.
   */
  private isOwnStatusEcho(pod: Pod): boolean {
    const prev = this.pod;
    if (pod.metadata?.deletionTimestamp) return false;
    const phase = pod.status?.phase;
    if (phase !== prev.status?.phase && phase !== this.lastStatus?.phase) return false;
    return specAndMetadataOf(pod) === specAndMetadataOf(prev);
  }

  /** The pod is gone from the apiserver (or its deletion began): stop everything it runs. */
  delete(pod?: Pod): void {
    if (pod) this.pod = pod;
    this.deleting = true;
    this.trigger();
  }

  reject(reason: string, message: string): void {
    this.rejected = { reason, message };
    this.trigger();
  }

  /** Asks for a sync; if one is under way, another follows it. Never waits. */
  trigger(): void {
    if (this.finished) return;
    this.dirty = true;
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      while (this.dirty && !this.finished) {
        this.dirty = false;
        try {
          await this.sync();
        } catch (err) {
          this.ctx.log.warn({ pod: `${this.ref.namespace}/${this.ref.name}`, err }, 'pod sync failed');
          this.wake(this.ctx.retryMs);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private wake(ms: number): void {
    if (this.finished) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.trigger();
    }, ms);
    this.wakeTimer.unref();
  }

  /** Start-up steps are traced until the pod first reports Running. */
  private tracing = true;

  private trace(step: TraceStep, detail?: string): void {
    if (this.tracing) this.ctx.trace?.(this.ref.uid, step, detail);
  }

  private event(type: EventType, reason: string, message: string): void {
    this.ctx.events.event(this.pod, type, reason, message);
  }

  /** Sends an event only when (reason, message) differs from the last one for `key`. */
  private eventOnce(key: string, type: EventType, reason: string, message: string): void {
    const sig = `${reason}\u0000${message}`;
    if (this.lastEvent.get(key) === sig) return;
    this.lastEvent.set(key, sig);
    this.event(type, reason, message);
  }

  private async observe(): Promise<Observed> {
    const { runtime } = this.ctx;
    const sandboxes = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: this.ref.uid } });
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
        } catch (err) {
          if (isNotFound(err)) continue;
          throw err;
        }
        const name = c.labels[CONTAINER_NAME_LABEL] ?? c.metadata.name;
        const list = instances.get(name) ?? [];
        list.push(s);
        instances.set(name, list);
      }
      for (const list of instances.values()) {
        list.sort((a, b) => restartCountOf(b) - restartCountOf(a) || b.createdAt - a.createdAt);
      }
    }
    return { sandbox, staleSandboxIds: stale, instances };
  }

  private async sync(): Promise<void> {
    if (this.deleting) {
      await this.terminate();
      return;
    }
    const release = this.ctx.events.hold?.();
    try {
      await this.syncPod();
    } finally {
      release?.();
    }
  }

  private async syncPod(): Promise<void> {
    this.trace('sync-start');
    this.touched.clear();
    this.stoppedSome = false;
    this.imageChecks.clear();
    this.presentImages.clear();
    this.assumed.clear();
    // A pod nothing of which can exist yet needs no look first (one ListPodSandbox
    // less before its sandbox); any later sync, a retry included, looks.
    const obs = this.knownEmpty ? nothingRuns() : await this.observe();
    this.knownEmpty = false;
    if (this.rejected) {
      await this.publish(obs);
      return;
    }
    if (!this.terminal && this.looksFinished(obs)) this.terminal = true;
    if (this.terminal) {
      // A finished pod keeps its containers (for logs and status) but not its sandbox.
      if (obs.sandbox?.state === 'SANDBOX_READY') await this.ctx.runtime.stopPodSandbox(obs.sandbox.id);
      await this.publish(obs);
      return;
    }

    let volumePaths: Map<string, string>;
    try {
      volumePaths = await this.setUpVolumes();
      this.lastEvent.delete('volumes');
      this.trace('volumes-ready');
    } catch (err) {
      if (!(err instanceof MountError)) throw err;
      this.eventOnce('volumes', 'Warning', 'FailedMount', err.message);
      await this.publish(obs);
      this.wake(this.ctx.retryMs);
      return;
    }

    let sandbox = obs.sandbox;
    if (sandbox?.state !== 'SANDBOX_READY') {
      // Without the node's CNI config a sandbox would fail (or get no IP): wait in ContainerCreating.
      const networkProblem = this.pod.spec?.hostNetwork ? undefined : this.ctx.networkNotReady?.();
      if (networkProblem) {
        this.eventOnce('sandbox', 'Warning', 'NetworkNotReady', networkProblem);
        await this.publish(obs);
        this.wake(this.ctx.retryMs);
        return;
      }
      if (sandbox && (this.pod.spec?.restartPolicy ?? 'Always') === 'Never' && obs.instances.size > 0) {
        // A pod with restartPolicy Never whose containers ran is never run again in a new
        // sandbox (as in Kubernetes): what is left of it is killed and the pod fails. Whether
        // containerd reports the container's exit before or after the sandbox's does not matter.
        for (const list of obs.instances.values()) {
          for (const c of list) {
            if (c.state === 'CONTAINER_RUNNING')
              await this.ctx.runtime.stopContainer(c.id, 0).catch(() => {});
          }
        }
        await this.publish(await this.observe());
        this.wake(this.ctx.retryMs);
        return;
      }
      if (sandbox) {
        // The sandbox died (a reboot, a killed pause process): kill what is left of the pod,
        // free its network (CNI DEL on stop), and run it again in a new sandbox.
        this.eventOnce(
          'sandbox-changed',
          'Normal',
          'SandboxChanged',
          'Pod sandbox changed, it will be killed and re-created.',
        );
        for (const list of obs.instances.values()) {
          for (const c of list) {
            if (c.state === 'CONTAINER_RUNNING')
              await this.ctx.runtime.stopContainer(c.id, 0).catch(() => {});
          }
        }
        await this.ctx.runtime
          .stopPodSandbox(sandbox.id)
          .catch((err) =>
            this.ctx.log.warn(
              { pod: `${this.ref.namespace}/${this.ref.name}`, err: (err as Error).message },
              'stopping the dead sandbox failed',
            ),
          );
      }
      const sandboxConfig = this.sandboxConfig((sandbox?.metadata.attempt ?? -1) + 1);
      // The sandbox does not need the images: ask whether they are present meanwhile.
      this.checkImagesAhead();
      try {
        this.trace('sandbox-requested');
        const id = await this.ctx.runtime.runPodSandbox(sandboxConfig);
        sandbox = await this.ctx.runtime.podSandboxStatus(id);
        this.trace('sandbox-started');
        this.lastEvent.delete('sandbox');
        this.lastEvent.delete('sandbox-changed');
      } catch (err) {
        this.eventOnce(
          'sandbox',
          'Warning',
          'FailedCreatePodSandBox',
          `Failed to create pod sandbox: ${(err as Error).message}`,
        );
        await this.publish(obs);
        this.wake(this.ctx.retryMs);
        return;
      }
      // Containers of an earlier sandbox are gone with its network: start over in the new one,
      // keeping their restart counts.
      if (obs.sandbox) obs.staleSandboxIds.push(obs.sandbox.id);
      const carried = obs.instances;
      obs.instances = new Map();
      for (const [name, list] of carried)
        if (list[0]) this.carriedRestarts.set(name, restartCountOf(list[0]) + 1);
      obs.sandbox = sandbox;
    }
    this.podIP = sandbox.network.ip || (this.pod.spec?.hostNetwork ? this.ctx.hostIP : '');
    for (const id of obs.staleSandboxIds) {
      await this.ctx.runtime.stopPodSandbox(id).catch(() => {});
      await this.ctx.runtime.removePodSandbox(id).catch(() => {});
    }
    const sandboxConfig = this.sandboxConfig(sandbox.metadata.attempt);
    // A pod that never reported yet says ContainerCreating (with its IP) before a pull,
    // which can take a while; with its images present it goes straight to Running in this
    // sync, and a status written in between (apiserver, store, every watcher) would only
    // compete for the CPU with its CreateContainer and StartContainer.
    this.creating = this.lastStatus ? undefined : obs;
    const policy = this.pod.spec?.restartPolicy ?? 'Always';

    // Init containers, in order: each must succeed before the next starts.
    let initDone = true;
    for (const c of this.pod.spec?.initContainers ?? []) {
      const [cur] = obs.instances.get(c.name) ?? [];
      if (cur?.state === 'CONTAINER_EXITED' && cur.exitCode === 0) continue;
      initDone = false;
      if (cur?.state === 'CONTAINER_RUNNING') break;
      if (cur?.state === 'CONTAINER_CREATED') {
        await this.startCreated(c, cur.id);
        break;
      }
      if (cur?.state === 'CONTAINER_EXITED' && policy === 'Never') break; // the pod failed
      await this.ensureStarted(c, cur, sandbox.id, sandboxConfig, volumePaths, true);
      break;
    }

    if (initDone) {
      for (const c of this.pod.spec?.containers ?? []) {
        const [cur] = obs.instances.get(c.name) ?? [];
        if (cur?.state === 'CONTAINER_RUNNING') {
          await this.checkHealth(c, cur);
          continue;
        }
        if (cur?.state === 'CONTAINER_CREATED') {
          await this.startCreated(c, cur.id);
          continue;
        }
        if (
          cur?.state === 'CONTAINER_EXITED' &&
          !shouldRestart(policy, cur.exitCode) &&
          !this.respecified.has(c.name)
        ) {
          this.waiting.delete(c.name);
          continue;
        }
        await this.ensureStarted(c, cur, sandbox.id, sandboxConfig, volumePaths, false);
      }
    }

    this.creating = undefined;
    await this.publishAssumed(obs);
    const after = await this.refreshed(obs);
    await this.removeOldInstances(after);
    this.syncProbes(after);
    await this.publish(after);
  }

  private volumePaths: Map<string, string> | undefined;
  private volumesAt = 0;
  private volumesFor: Pod | undefined;

  /**
   * Sets up the pod's volumes the first time, and again when the pod changed or
   * VOLUME_REFRESH_MS passed (configMap and secret contents follow their
   * objects). A refresh that cannot reach the apiserver keeps what is mounted:
   * running pods must not depend on the control plane being there.
   */
  private async setUpVolumes(): Promise<Map<string, string>> {
    const fresh = this.volumesFor === this.pod && Date.now() - this.volumesAt < VOLUME_REFRESH_MS;
    if (this.volumePaths && fresh) return this.volumePaths;
    try {
      this.volumePaths = await this.ctx.volumes.setUp(this.pod);
    } catch (err) {
      if (err instanceof MountError || !this.volumePaths) throw err;
      this.ctx.log.debug(
        { pod: `${this.ref.namespace}/${this.ref.name}`, err: (err as Error).message },
        'volume refresh failed; keeping the mounted contents',
      );
    }
    this.volumesAt = Date.now();
    this.volumesFor = this.pod;
    return this.volumePaths;
  }

  /** Containers this sync created, started or stopped: their state is no longer what obs says. */
  private readonly touched = new Set<string>();
  /** A container was stopped during this sync: only a full observation tells what is left. */
  private stoppedSome = false;

  /**
   * What the runtime runs after this sync's actions. Nothing done: `obs` holds.
   * Only creations and starts: the status of those containers alone (one CRI
   * call each) instead of listing everything again, so the status goes out
   * the moment a container started.
   */
  private async refreshed(obs: Observed): Promise<Observed> {
    const touched = [...this.touched];
    this.touched.clear();
    const stopped = this.stoppedSome;
    this.stoppedSome = false;
    if (stopped) return this.observe();
    if (touched.length === 0) return obs;
    const fresh = await Promise.all(
      touched.map((id) =>
        this.ctx.runtime.containerStatus(id).catch((err) => {
          if (isNotFound(err)) return undefined;
          throw err;
        }),
      ),
    );
    if (fresh.some((s) => s === undefined)) return this.observe();
    const confirmed = fresh.filter((s) => s !== undefined);
    for (const s of confirmed) {
      const guess = this.assumed.get(s.id);
      const [was, is] = guess ? [statusSignatureOf(guess), statusSignatureOf(s)] : [];
      if (was !== is) this.ctx.trace?.(this.ref.uid, 'status-corrected', `${was} → ${is}`);
    }
    return withStatuses(obs, confirmed, obs.instances);
  }

  /**
   * When every container this sync touched was created and started by it (nothing
   * stopped) quickly enough to know when (EARLY_STATUS_MAX_START_NS), reports the
   * status the runtime will confirm without waiting for ContainerStatus: the pod
   * shows Running the moment StartContainer returns. The confirmed status follows
   * (refreshed) and is written only if it differs.
   */
  private async publishAssumed(obs: Observed): Promise<void> {
    if (this.assumed.size === 0 || this.stoppedSome) return;
    if (![...this.touched].every((id) => this.assumed.has(id))) return;
    await this.publish(withStatuses(obs, [...this.assumed.values()], new Map(obs.instances)));
  }

  /**
   * A pod that already finished (per the apiserver, or per the containers a
   * previous kubelet left behind) must never be started again.
   */
  private looksFinished(obs: Observed): boolean {
    const phase = this.pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return true;
    if (!obs.sandbox || obs.sandbox.state === 'SANDBOX_READY') return false;
    const status = this.statusOf(obs);
    return status.phase === 'Succeeded' || status.phase === 'Failed';
  }

  private readonly carriedRestarts = new Map<string, number>();
  /** Containers stopped because their spec changed: restarted at once, whatever the policy. */
  private readonly respecified = new Set<string>();

  /** Starts (or restarts, honoring backoff) container `c` whose latest instance is `cur`. */
  private async ensureStarted(
    c: Container,
    cur: ContainerStatus | undefined,
    sandboxId: string,
    sandboxConfig: PodSandboxConfig,
    volumePaths: Map<string, string>,
    isInit: boolean,
  ): Promise<void> {
    const key = `${this.ref.uid}/${c.name}`;
    let restartCount = this.carriedRestarts.get(c.name) ?? 0;
    const respecified = this.respecified.delete(c.name);
    if (cur) {
      restartCount = restartCountOf(cur) + 1;
      const ranMs = cur.startedAt && cur.finishedAt ? (cur.finishedAt - cur.startedAt) / 1e6 : 0;
      if (ranMs >= this.ctx.crashBackoff.resetAfterMs) this.ctx.crashBackoff.reset(key);
      const finishedMs = cur.finishedAt / 1e6;
      if (!respecified && this.ctx.crashBackoff.inBackoff(key, finishedMs)) {
        const delay = this.ctx.crashBackoff.delayMs(key);
        const message = `back-off ${Math.round(delay / 1000)}s restarting failed container=${c.name} pod=${this.ref.name}_${this.ref.namespace}(${this.ref.uid})`;
        this.waiting.set(c.name, { reason: 'CrashLoopBackOff', message });
        this.eventOnce(
          c.name,
          'Warning',
          'BackOff',
          `Back-off restarting failed container ${c.name} in pod ${this.ref.name}_${this.ref.namespace}(${this.ref.uid})`,
        );
        this.wake(this.ctx.crashBackoff.remainingMs(key, finishedMs) + 10);
        return;
      }
    }
    if (!(await this.ensureImage(c))) return;
    let config: ContainerConfig;
    try {
      config = await this.containerConfig(c, restartCount, volumePaths, isInit);
    } catch (err) {
      if (!(err instanceof ContainerConfigError || err instanceof MountError)) throw err;
      this.waiting.set(c.name, { reason: 'CreateContainerConfigError', message: err.message });
      this.eventOnce(c.name, 'Warning', 'Failed', `Error: ${err.message}`);
      this.wake(this.ctx.retryMs);
      return;
    }
    if (cur && !respecified) this.ctx.crashBackoff.next(key);
    let id: string;
    try {
      this.trace('container-requested');
      id = await this.ctx.runtime.createContainer(sandboxId, config, sandboxConfig);
    } catch (err) {
      this.waiting.set(c.name, { reason: 'CreateContainerError', message: (err as Error).message });
      this.eventOnce(c.name, 'Warning', 'Failed', `Error: ${(err as Error).message}`);
      this.wake(this.ctx.retryMs);
      return;
    }
    this.carriedRestarts.delete(c.name);
    this.touched.add(id);
    const createdAt = nowNs();
    this.trace('container-created');
    this.event('Normal', 'Created', `Created container ${c.name}`);
    await this.startCreated(c, id, { config, createdAt });
  }

  private async startCreated(
    c: Container,
    id: string,
    created?: { config: ContainerConfig; createdAt: number },
  ): Promise<void> {
    try {
      this.touched.add(id);
      this.trace('start-requested');
      const requestedAt = nowNs();
      await this.ctx.runtime.startContainer(id);
      this.trace('container-started');
      const returnedAt = nowNs();
      const image = created && this.presentImages.get(created.config.image.image);
      // The container started somewhere between the call and its return; only when that is
      // a short span is the guess (its middle) almost always the second the runtime reports.
      if (created && image && returnedAt - requestedAt <= EARLY_STATUS_MAX_START_NS) {
        const startedAt = Math.round((requestedAt + returnedAt) / 2);
        this.assumed.set(id, startedStatus(id, created.config, created.createdAt, startedAt, image));
      }
      this.waiting.delete(c.name);
      this.lastEvent.delete(c.name);
      this.event('Normal', 'Started', `Started container ${c.name}`);
    } catch (err) {
      this.waiting.delete(c.name);
      this.event('Warning', 'Failed', `Error: ${(err as Error).message}`);
    }
  }

  /** Pulls per imagePullPolicy; false (with the waiting reason set) when the image is not there. */
  private async ensureImage(c: Container): Promise<boolean> {
    const image = c.image ?? '';
    const policy = imagePullPolicy(c);
    const ahead = this.imageChecks.get(image);
    this.imageChecks.delete(image);
    let present = policy === 'Always' ? undefined : await (ahead ?? this.ctx.runtime.imageStatus(image));
    // Absent when asked ahead, maybe pulled since by another pod: ask again before pulling.
    if (ahead && !present) present = await this.ctx.runtime.imageStatus(image);
    if (present) {
      this.presentImages.set(image, present);
      this.trace('image-checked', 'present');
      return true;
    }
    if (policy === 'Never') {
      const message = `Container image "${image}" is not present with pull policy of Never`;
      this.waiting.set(c.name, { reason: 'ErrImageNeverPull', message });
      this.eventOnce(c.name, 'Warning', 'ErrImageNeverPull', message);
      this.wake(this.ctx.retryMs);
      return false;
    }
    const key = `${this.ref.uid}/${image}`;
    const failedAt = this.imageFailedAt.get(key);
    if (failedAt !== undefined && this.ctx.imageBackoff.inBackoff(key, failedAt)) {
      this.waiting.set(c.name, { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` });
      this.eventOnce(c.name, 'Normal', 'BackOff', `Back-off pulling image "${image}"`);
      this.wake(this.ctx.imageBackoff.remainingMs(key, failedAt) + 10);
      return false;
    }
    this.event('Normal', 'Pulling', `Pulling image "${image}"`);
    await this.publishCreating();
    const started = Date.now();
    try {
      await this.pull(image);
    } catch (err) {
      this.ctx.imageBackoff.next(key);
      this.imageFailedAt.set(key, Date.now());
      const message = `Failed to pull image "${image}": ${(err as Error).message}`;
      this.waiting.set(c.name, { reason: 'ErrImagePull', message });
      this.lastEvent.set(c.name, 'ErrImagePull');
      this.event('Warning', 'Failed', message);
      this.event('Warning', 'Failed', 'Error: ErrImagePull');
      this.wake(this.ctx.imageBackoff.remainingMs(key, Date.now()) + 10);
      return false;
    }
    this.ctx.imageBackoff.reset(key);
    this.imageFailedAt.delete(key);
    const secs = ((Date.now() - started) / 1000).toFixed(3);
    this.event('Normal', 'Pulled', `Successfully pulled image "${image}" in ${secs}s`);
    this.trace('image-checked', 'pulled');
    return true;
  }

  /** Reports ContainerCreating once, if this sync still has it to say (see syncPod). */
  private async publishCreating(): Promise<void> {
    const obs = this.creating;
    this.creating = undefined;
    if (obs && !this.lastStatus) await this.publish(obs);
  }

  /** Starts ImageStatus for every image of the pod whose policy may use what is present. */
  private checkImagesAhead(): void {
    for (const c of [...(this.pod.spec?.initContainers ?? []), ...(this.pod.spec?.containers ?? [])]) {
      const image = c.image ?? '';
      if (!image || imagePullPolicy(c) === 'Always' || this.imageChecks.has(image)) continue;
      const check = this.ctx.runtime.imageStatus(image);
      // Awaited (and its error seen) in ensureImage; a sync that stops before never reads it.
      check.catch(() => {});
      this.imageChecks.set(image, check);
    }
  }

  /** PullImage, joined with a pull of the same image another pod already started. */
  private pull(image: string): Promise<void> {
    const { pulls } = this.ctx;
    let p = pulls.get(image);
    if (!p) {
      p = this.ctx.runtime.pullImage(image, this.sandboxConfig(0)).then(
        () => {
          pulls.delete(image);
        },
        (err: unknown) => {
          pulls.delete(image);
          throw err;
        },
      );
      pulls.set(image, p);
    }
    return p;
  }

  /** Restarts a running container whose liveness or startup probe failed. */
  private async checkHealth(c: Container, cur: ContainerStatus): Promise<void> {
    const hash = cur.annotations[CONTAINER_HASH_ANNOTATION];
    if (hash && hash !== containerHash(c)) {
      // The pod's spec for this container changed (e.g. its image): run the new one.
      this.probes.get(cur.id)?.stop();
      this.probes.delete(cur.id);
      this.respecified.add(c.name);
      // Not finished, whatever its exit code: it is about to run again.
      this.waiting.set(c.name, { reason: 'ContainerCreating' });
      this.event('Normal', 'Killing', `Container ${c.name} definition changed, will be restarted`);
      this.stoppedSome = true;
      await this.ctx.runtime.stopContainer(
        cur.id,
        this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS,
      );
      this.trigger();
      return;
    }
    const probes = this.probes.get(cur.id);
    if (!probes?.unhealthy) return;
    const kind = probes.unhealthy.toLowerCase();
    probes.stop();
    this.probes.delete(cur.id);
    this.event('Normal', 'Killing', `Container ${c.name} failed ${kind} probe, will be restarted`);
    this.stoppedSome = true;
    await this.ctx.runtime.stopContainer(
      cur.id,
      this.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS,
    );
    this.trigger();
  }

  /** Probes run for the newest running instance of each container; others stop. */
  private syncProbes(obs: Observed): void {
    const wanted = new Set<string>();
    for (const c of this.pod.spec?.containers ?? []) {
      const [cur] = obs.instances.get(c.name) ?? [];
      if (cur?.state !== 'CONTAINER_RUNNING') continue;
      if (!c.livenessProbe && !c.readinessProbe && !c.startupProbe) continue;
      wanted.add(cur.id);
      if (this.probes.has(cur.id)) continue;
      const runningFor = cur.startedAt ? Date.now() - cur.startedAt / 1e6 : 0;
      this.probes.set(
        cur.id,
        new ContainerProbes(
          c,
          cur.id,
          this.podIP,
          this.ctx.runtime,
          {
            changed: () => this.trigger(),
            failed: (kind, message) => this.event('Warning', 'Unhealthy', `${kind} probe failed: ${message}`),
          },
          runningFor,
        ),
      );
    }
    for (const [id, p] of this.probes) {
      if (!wanted.has(id)) {
        p.stop();
        this.probes.delete(id);
      }
    }
  }

  /** Keeps the newest two instances of each container (current and previous, for logs --previous). */
  private async removeOldInstances(obs: Observed): Promise<void> {
    for (const [name, list] of obs.instances) {
      const keep: ContainerStatus[] = [];
      for (const [i, s] of list.entries()) {
        if (i >= 2 && s.state === 'CONTAINER_EXITED')
          await this.ctx.runtime.removeContainer(s.id).catch(() => {});
        else keep.push(s);
      }
      obs.instances.set(name, keep);
    }
  }

  private statusOf(obs: Observed): PodStatus {
    return computePodStatus({
      pod: this.pod,
      hostIP: this.ctx.hostIP,
      podIP: this.podIP,
      startTime: this.pod.status?.startTime ?? this.startTime,
      runtimeName: this.ctx.runtimeName,
      instances: obs.instances,
      waiting: this.waiting,
      ready: (id) => this.probes.get(id)?.ready ?? !this.hasReadinessGate(id, obs),
      // Without a prober yet (a container reported the moment it started), as its prober starts.
      started: (id) => this.probes.get(id)?.started ?? !this.specOf(id, obs)?.startupProbe,
      rejected: this.rejected,
      previous: this.lastStatus,
    });
  }

  private async publish(obs: Observed): Promise<void> {
    this.seenSignature = observedSignature(obs);
    const status = this.statusOf(obs);
    if (status.phase === 'Succeeded' || status.phase === 'Failed') {
      if (!this.terminal) {
        this.terminal = true;
        this.trigger(); // stop the sandbox of the finished pod
      }
    }
    const json = JSON.stringify(status);
    if (json === this.lastStatusJson) return;
    this.lastStatusJson = json;
    this.lastStatus = status;
    this.trace('status-set', status.phase);
    if (status.phase !== 'Pending') this.tracing = false;
    await this.ctx.statusSink.setStatus(this.pod, status);
  }

  /** A running container with a readiness or startup probe but no prober yet is not ready. */
  private hasReadinessGate(id: string, obs: Observed): boolean {
    const c = this.specOf(id, obs);
    return !!(c?.readinessProbe || c?.startupProbe);
  }

  /** The spec of the container whose newest instance is `id`. */
  private specOf(id: string, obs: Observed): Container | undefined {
    for (const c of this.pod.spec?.containers ?? []) {
      const [cur] = obs.instances.get(c.name) ?? [];
      if (cur?.id === id) return c;
    }
    return undefined;
  }

  /** Stops every container (SIGTERM, then SIGKILL after the grace period), then the sandbox, then volumes. */
  private async terminate(): Promise<void> {
    const grace = gracePeriodSeconds(this.pod);
    for (const p of this.probes.values()) p.stop();
    this.probes.clear();
    const { runtime } = this.ctx;
    const sandboxes = await runtime.listPodSandbox({ labelSelector: { [POD_UID_LABEL]: this.ref.uid } });
    const containers = await runtime.listContainers({ labelSelector: { [POD_UID_LABEL]: this.ref.uid } });
    await Promise.all(
      containers
        .filter((c) => c.state === 'CONTAINER_RUNNING')
        .map(async (c) => {
          this.event(
            'Normal',
            'Killing',
            `Stopping container ${c.labels[CONTAINER_NAME_LABEL] ?? c.metadata.name}`,
          );
          await runtime.stopContainer(c.id, grace).catch(() => {});
        }),
    );
    for (const s of sandboxes) {
      await runtime.stopPodSandbox(s.id);
      await runtime.removePodSandbox(s.id);
    }
    await this.ctx.volumes.tearDown(this.ref.uid);
    this.ctx.crashBackoff.forgetPrefix(`${this.ref.uid}/`);
    this.ctx.imageBackoff.forgetPrefix(`${this.ref.uid}/`);
    this.finished = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    await this.ctx.statusSink.podTerminated(this.pod);
    this.resolveDone();
  }

  /** Stops timers and probes without touching the runtime (kubelet shutdown). */
  stop(): void {
    this.finished = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    for (const p of this.probes.values()) p.stop();
    this.probes.clear();
    this.resolveDone();
  }

  sandboxConfig(attempt: number): PodSandboxConfig {
    const spec = this.pod.spec ?? { containers: [] };
    const labels: Record<string, string> = { ...(this.pod.metadata?.labels ?? {}), ...podLabels(this.ref) };
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
      metadata: { name: this.ref.name, uid: this.ref.uid, namespace: this.ref.namespace, attempt },
      hostname: (spec.hostname ?? this.ref.name).slice(0, 63),
      logDirectory: podLogDirectory(this.ctx.podLogsDir, this.ref),
      portMappings,
      labels,
      annotations: { ...(this.pod.metadata?.annotations ?? {}) },
      linux: {
        securityContext: {
          namespaceOptions: {
            network: spec.hostNetwork ? 'NODE' : 'POD',
            pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
            ipc: spec.hostIPC ? 'NODE' : 'POD',
          },
          ...(spec.securityContext?.runAsUser !== undefined
            ? { runAsUser: { value: spec.securityContext.runAsUser } }
            : {}),
        },
      },
    };
  }

  private async containerConfig(
    c: Container,
    restartCount: number,
    volumePaths: Map<string, string>,
    isInit: boolean,
  ): Promise<ContainerConfig> {
    const env = await containerEnv(this.pod, c, this.ctx.objects, {
      podIP: this.podIP,
      hostIP: this.ctx.hostIP,
    });
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
    const podSc = this.pod.spec?.securityContext ?? {};
    const sc = c.securityContext ?? {};
    const runAsUser = sc.runAsUser ?? podSc.runAsUser;
    const runAsGroup = sc.runAsGroup ?? podSc.runAsGroup;
    const spec = this.pod.spec;
    return {
      metadata: { name: c.name, attempt: restartCount },
      image: { image: c.image ?? '' },
      command: (c.command ?? []).map((s) => expandReferences(s, vars)),
      args: (c.args ?? []).map((s) => expandReferences(s, vars)),
      workingDir: c.workingDir ?? '',
      envs: env,
      mounts,
      labels: { ...podLabels(this.ref), [CONTAINER_NAME_LABEL]: c.name },
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
          namespaceOptions: {
            network: spec?.hostNetwork ? 'NODE' : 'POD',
            pid: spec?.hostPID ? 'NODE' : spec?.shareProcessNamespace ? 'POD' : 'CONTAINER',
            ipc: spec?.hostIPC ? 'NODE' : 'POD',
          },
        },
      },
    };
  }
}
