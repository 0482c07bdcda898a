// One pod's worker: it reconciles what the pod asks for with what the runtime
// runs, one sync at a time, and never waits on any other pod. Syncs are
// triggered by pod updates, by the relist loop (~1 s), by probe results and by
// backoff timers. Each sync looks at the runtime (observed.ts), decides what to
// do (plan.ts) and has the executor do it (executor.ts); the worker keeps the
// loop, the probes and the status it reports.
import type { Container, Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import { PodExecutor } from './executor.js';
import { type PodRef, podKey, podRef } from './labels.js';
import { listPod, nothingRuns, type Observed, observedSignature, observePod } from './observed.js';
import { computePodActions, computeTerminationActions } from './plan.js';
import { ContainerProbes } from './probes.js';
import { computePodStatus, rfc3339 } from './status.js';
import type { TraceStep } from './trace.js';
import type { WorkerContext } from './worker-context.js';

/** The pod's spec and metadata as JSON, without what every write changes (resourceVersion, managedFields). */
function specAndMetadataOf(pod: Pod): string {
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = pod.metadata ?? {};
  return JSON.stringify({ spec: pod.spec, metadata });
}

const isFinishedPhase = (phase: string | undefined) => phase === 'Succeeded' || phase === 'Failed';

export class PodWorker {
  readonly ref: PodRef;
  /** Resolves when the worker has nothing left to do (after termination). */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private pod: Pod;
  private readonly executor: PodExecutor;
  private readonly probes = new Map<string, ContainerProbes>();

  // The sync loop.
  private running = false;
  private dirty = false;
  private finished = false;
  private wakeTimer: NodeJS.Timeout | undefined;

  // What the pod's state asks of the worker.
  private deleting = false;
  /** The pod finished (Succeeded or Failed): nothing of it starts again. */
  private terminal = false;
  private rejected: { reason: string; message: string } | undefined;
  /**
   * The runtime has nothing of this pod yet: it appeared after the manager's
   * first node-wide relist and has been in no relist since. The first sync
   * then creates the sandbox at once, without listing the pod's sandboxes first.
   */
  private knownEmpty: boolean;

  // What the worker reported and saw.
  private readonly startTime = rfc3339(new Date());
  private lastStatus: PodStatus | undefined;
  private lastStatusJson = '';
  /** What the runtime ran for the pod when this worker last looked (see runtimeSignature). */
  private seenSignature: string | undefined;
  /** Start-up steps are traced until the pod first reports Running. */
  private tracing = true;

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
    this.executor = new PodExecutor(ctx, this.ref, {
      pod: () => this.pod,
      hasReported: () => this.lastStatus !== undefined,
      publish: (obs) => this.publish(obs),
      syncProbes: (obs) => this.syncProbes(obs),
      stopProbes: (id) => {
        this.probes.get(id)?.stop();
        this.probes.delete(id);
      },
      trigger: () => this.trigger(),
      wake: (ms) => this.wake(ms),
      trace: (step, detail) => this.trace(step, detail),
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
          this.ctx.log.warn({ pod: podKey(this.ref), err }, 'pod sync failed');
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

  private trace(step: TraceStep, detail?: string): void {
    if (this.tracing) this.ctx.trace?.(this.ref.uid, step, detail);
  }

  private async sync(): Promise<void> {
    if (this.deleting) {
      await this.terminate();
      return;
    }
    // Events wait while pods sync (see EventSink.hold), so their writes do not compete with the starts.
    const release = this.ctx.events.hold?.();
    try {
      await this.syncPod();
    } finally {
      release?.();
    }
  }

  private async syncPod(): Promise<void> {
    this.trace('sync-start');
    // When the runtime cannot have anything of the pod yet (knownEmpty), the first sync
    // does not list it: one ListPodSandbox less before its sandbox. Every later sync,
    // a retry included, lists.
    const obs = this.knownEmpty ? nothingRuns() : await observePod(this.ctx.runtime, this.ref.uid);
    this.knownEmpty = false;
    if (!this.rejected && !this.terminal && this.looksFinished(obs)) this.terminal = true;
    const plan = computePodActions({
      pod: this.pod,
      observed: obs,
      rejected: this.rejected !== undefined,
      finished: this.terminal,
      nodeNetworkProblem: this.ctx.networkNotReady?.(),
      respecified: this.executor.respecified,
      carriedRestarts: this.executor.carriedRestarts,
      failedProbes: this.failedProbes(),
      crashBackoff: this.ctx.crashBackoff,
    });
    await this.executor.execute(plan, obs);
  }

  /**
   * A pod that already finished (per the apiserver, or per the containers a
   * previous kubelet left behind) must never be started again.
   */
  private looksFinished(obs: Observed): boolean {
    if (isFinishedPhase(this.pod.status?.phase)) return true;
    if (!obs.sandbox || obs.sandbox.state === 'SANDBOX_READY') return false;
    return isFinishedPhase(this.statusOf(obs).phase);
  }

  /** The kind of probe ('Liveness', 'Startup') that failed, by running container id. */
  private failedProbes(): Map<string, string> {
    const failed = new Map<string, string>();
    for (const [id, p] of this.probes) if (p.unhealthy) failed.set(id, p.unhealthy);
    return failed;
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
          this.executor.podIP,
          this.ctx.runtime,
          {
            changed: () => this.trigger(),
            failed: (kind, message) =>
              this.executor.events.event('Warning', 'Unhealthy', `${kind} probe failed: ${message}`),
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

  private stopAllProbes(): void {
    for (const p of this.probes.values()) p.stop();
    this.probes.clear();
  }

  private statusOf(obs: Observed): PodStatus {
    return computePodStatus({
      pod: this.pod,
      hostIP: this.ctx.hostIP,
      podIP: this.executor.podIP,
      startTime: this.pod.status?.startTime ?? this.startTime,
      runtimeName: this.ctx.runtimeName,
      instances: obs.instances,
      waiting: this.executor.waiting,
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
    if (isFinishedPhase(status.phase) && !this.terminal) {
      this.terminal = true;
      this.trigger(); // stop the sandbox of the finished pod
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

  /** Stops everything the pod runs (see TerminationActions), then reports it terminated. */
  private async terminate(): Promise<void> {
    this.stopAllProbes();
    const listing = await listPod(this.ctx.runtime, this.ref.uid);
    await this.executor.terminate(computeTerminationActions(this.pod, listing));
    this.finished = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    await this.ctx.statusSink.podTerminated(this.pod);
    this.resolveDone();
  }

  /** Stops timers and probes without touching the runtime (kubelet shutdown). */
  stop(): void {
    this.finished = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.stopAllProbes();
    this.resolveDone();
  }
}
