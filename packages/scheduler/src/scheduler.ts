// The scheduler's loop: take the next pod from the queue, decide synchronously
// where it goes, assume it there in the cache, and bind it asynchronously while the
// next pod is already being scheduled. Informer callbacks feed the cache and the queue.
import { performance } from 'node:perf_hooks';
import { SchedulingAlgorithm } from './algorithm.js';
import { SchedulerCache } from './cache.js';
import { FitError } from './fit-error.js';
import type { Framework } from './framework/framework.js';
import { ActionType, type ClusterEventRegistration, type CycleState } from './framework/types.js';
import { noMetrics, type SchedulerMetrics } from './metrics.js';
import { type NamespaceLabels, newPodInfo, type PodInfo, podKey } from './pod-info.js';
import { preempt } from './preemption/default-preemption.js';
import type { DisruptionBudget } from './preemption/victims.js';
import { type QueuedPodInfo, SchedulingQueue } from './queue.js';
import type { Node, Pod, PodCondition } from './types.js';
import type { VolumeAccess } from './volumes.js';

/** What the scheduler needs from the apiserver. */
export interface SchedulerApi {
  /** POST pods/<name>/binding. */
  bind(pod: Pod, nodeName: string): Promise<void>;
  /**
   * Sets the PodScheduled condition through pods/<name>/status, with the node a
   * preemption nominated for the pod (status.nominatedNodeName) when there is one.
   */
  updatePodCondition(pod: Pod, condition: PodCondition, nominatedNodeName?: string): Promise<void>;
  /**
   * Preempts a victim for `preemptor` on `node`: the DisruptionTarget condition, the
   * delete, the Preempted event. Without it the scheduler does not preempt.
   */
  preemptVictim?(victim: Pod, preemptor: Pod, node: string): Promise<void>;
  /** Records an Event about the pod (fire and forget). */
  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
}

export interface SchedulerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

const silent: SchedulerLogger = { info() {}, warn() {}, error() {}, debug() {} };

export interface SchedulerOptions {
  api: SchedulerApi;
  frameworks: Framework[];
  metrics?: SchedulerMetrics;
  log?: SchedulerLogger;
  now?: () => number;
  random?: () => number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  assumedPodTtlMs?: number;
  namespaceLabels?: NamespaceLabels;
  /** Bindings in flight at once; the loop waits for a slot beyond this. */
  maxInFlightBindings?: number;
  /** Claims, volumes and classes for volume binding (absent: pods with claims stay Pending). */
  volumes?: VolumeAccess;
  /** The PodDisruptionBudgets preemption tries not to break (absent: none). */
  disruptionBudgets?: () => readonly DisruptionBudget[];
}

/** A PreBind plugin failed: the pod goes back to the queue with the plugin's reason. */
class PreBindError extends Error {}

const terminalPhases = new Set(['Succeeded', 'Failed']);

function isAssigned(pod: Pod): boolean {
  return (pod.spec?.nodeName ?? '') !== '';
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** Which node changes could make a pending pod fit, as ActionType bits (0: none). */
export function nodeUpdateActions(oldNode: Node, newNode: Node): number {
  let a = 0;
  if (!sameJson(oldNode.status?.allocatable, newNode.status?.allocatable))
    a |= ActionType.UpdateNodeAllocatable;
  if (!sameJson(oldNode.metadata?.labels, newNode.metadata?.labels)) a |= ActionType.UpdateNodeLabel;
  if (
    !sameJson(oldNode.spec?.taints, newNode.spec?.taints) ||
    (oldNode.spec?.unschedulable ?? false) !== (newNode.spec?.unschedulable ?? false)
  ) {
    a |= ActionType.UpdateNodeTaint;
  }
  if (
    !sameJson(
      oldNode.status?.conditions?.map((c) => [c.type, c.status]),
      newNode.status?.conditions?.map((c) => [c.type, c.status]),
    )
  ) {
    a |= ActionType.UpdateNodeCondition;
  }
  return a;
}

export class Scheduler {
  readonly cache: SchedulerCache;
  readonly queue: SchedulingQueue;
  private readonly algorithm: SchedulingAlgorithm;
  private readonly profiles = new Map<string, Framework>();
  private readonly api: SchedulerApi;
  private readonly metrics: SchedulerMetrics;
  private readonly log: SchedulerLogger;
  private readonly now: () => number;
  private readonly maxInFlightBindings: number;
  private bindingsInFlight = 0;
  private slotWaiters: (() => void)[] = [];
  private stopped = false;
  private loop: Promise<void> | null = null;
  private cleanupTimer: NodeJS.Timeout | null = null;
  /** Bindings started and not yet settled, so tests and shutdown can wait for them. */
  private readonly pendingBindings = new Set<Promise<void>>();
  /** Pod key → the node a preemption made room on for it (status.nominatedNodeName). */
  private readonly nominated = new Map<string, { node: string; info: PodInfo }>();
  private readonly disruptionBudgets: () => readonly DisruptionBudget[];

  constructor(opts: SchedulerOptions) {
    this.api = opts.api;
    this.metrics = opts.metrics ?? noMetrics;
    this.log = opts.log ?? silent;
    this.now = opts.now ?? Date.now;
    this.maxInFlightBindings = opts.maxInFlightBindings ?? 256;
    this.disruptionBudgets = opts.disruptionBudgets ?? (() => []);
    for (const f of opts.frameworks) {
      if (this.profiles.has(f.schedulerName)) throw new Error(`two profiles named ${f.schedulerName}`);
      this.profiles.set(f.schedulerName, f);
    }
    const registrations = new Map<string, readonly ClusterEventRegistration[]>();
    for (const f of opts.frameworks) for (const [k, v] of f.eventRegistrations()) registrations.set(k, v);
    this.cache = new SchedulerCache({ now: this.now, assumedPodTtlMs: opts.assumedPodTtlMs });
    this.queue = new SchedulingQueue({
      now: this.now,
      initialBackoffMs: opts.initialBackoffMs,
      maxBackoffMs: opts.maxBackoffMs,
      registrations,
    });
    this.algorithm = new SchedulingAlgorithm({
      random: opts.random,
      namespaceLabels: opts.namespaceLabels,
      volumes: opts.volumes,
      nominatedOn: (node, pod) => this.nominatedOn(node, pod),
    });
  }

  /** The pods nominated to `node` that come before `pod` (at least its priority), or undefined. */
  private nominatedOn(node: string, pod: PodInfo): PodInfo[] | undefined {
    if (this.nominated.size === 0) return undefined;
    const out: PodInfo[] = [];
    for (const [key, n] of this.nominated) {
      if (n.node !== node || key === pod.key || n.info.priority < pod.priority) continue;
      out.push(n.info);
    }
    return out.length > 0 ? out : undefined;
  }

  /** Whether this scheduler is responsible for the pod (its schedulerName names one of our profiles). */
  responsibleFor(pod: Pod): boolean {
    return this.profiles.has(pod.spec?.schedulerName ?? 'default-scheduler');
  }

  // ---- informer callbacks ----

  onPodAdd(pod: Pod): void {
    if (terminalPhases.has(pod.status?.phase ?? '')) return;
    if (isAssigned(pod)) {
      this.queue.delete(podKey(pod));
      this.cache.addPod(pod);
      this.queue.onEvent({ resource: 'Pod', action: ActionType.Add, label: 'AssignedPodAdd' });
    } else if (this.responsibleFor(pod)) {
      const info = this.podInfo(pod);
      if (info) this.queue.add(info);
      // A nomination from before a restart (or another replica) still holds its node's room.
      const node = pod.status?.nominatedNodeName;
      if (info && node) this.nominated.set(info.key, { node, info });
    }
  }

  /** Compiles a pending pod; a pod the scheduler cannot read (e.g. a bad quantity) is reported, not retried. */
  private podInfo(pod: Pod): PodInfo | null {
    // A pod with scheduling gates waits, outside the queue, until they are all removed.
    if ((pod.spec?.schedulingGates?.length ?? 0) > 0) return null;
    try {
      return newPodInfo(pod);
    } catch (err) {
      const message = `cannot schedule the pod: ${(err as Error).message}`;
      this.log.warn({ pod: podKey(pod), err: message }, 'invalid pod');
      this.api.event(pod, 'Warning', 'FailedScheduling', message);
      return null;
    }
  }

  onPodUpdate(oldPod: Pod, pod: Pod): void {
    if (terminalPhases.has(pod.status?.phase ?? '')) {
      this.onPodDelete(pod);
      return;
    }
    if (isAssigned(pod)) {
      const wasAssigned = isAssigned(oldPod);
      this.queue.delete(podKey(pod));
      this.nominated.delete(podKey(pod));
      this.cache.updatePod(pod);
      if (!wasAssigned)
        this.queue.onEvent({ resource: 'Pod', action: ActionType.Add, label: 'AssignedPodAdd' });
      else if (!sameJson(oldPod.metadata?.labels, pod.metadata?.labels)) {
        this.queue.onEvent({
          resource: 'Pod',
          action: ActionType.UpdatePodLabel,
          label: 'AssignedPodUpdate',
        });
      }
    } else if (this.responsibleFor(pod)) {
      // Only spec/label changes matter to scheduling; our own status writes come back here too.
      if (
        sameJson(oldPod.spec, pod.spec) &&
        sameJson(oldPod.metadata?.labels, pod.metadata?.labels) &&
        this.queue.has(podKey(pod))
      ) {
        return;
      }
      const info = this.podInfo(pod);
      if (info) this.queue.update(info);
      else this.queue.delete(podKey(pod));
    }
  }

  onPodDelete(pod: Pod): void {
    const key = podKey(pod);
    this.queue.delete(key);
    this.nominated.delete(key);
    if (isAssigned(pod) || this.cache.nodeOf(key) !== undefined) {
      this.cache.removePod(pod);
      this.queue.onEvent({ resource: 'Pod', action: ActionType.Delete, label: 'AssignedPodDelete' });
    }
  }

  onNodeAdd(node: Node): void {
    this.cache.addOrUpdateNode(node);
    this.queue.onEvent({ resource: 'Node', action: ActionType.Add, label: 'NodeAdd' });
  }

  onNodeUpdate(oldNode: Node, node: Node): void {
    this.cache.addOrUpdateNode(node);
    const actions = nodeUpdateActions(oldNode, node);
    if (actions !== 0) this.queue.onEvent({ resource: 'Node', action: actions, label: 'NodeUpdate' });
  }

  onNodeDelete(node: Node): void {
    this.cache.removeNode(node.metadata?.name ?? '');
    this.queue.onEvent({ resource: 'Node', action: ActionType.Delete, label: 'NodeDelete' });
  }

  // ---- the loop ----

  /** Starts scheduling; resolves when stop() is called. */
  start(): Promise<void> {
    if (this.loop) return this.loop;
    this.queue.start();
    this.cleanupTimer = setInterval(() => this.cleanupAssumed(), 1000);
    this.cleanupTimer.unref();
    this.loop = this.run();
    return this.loop;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.close();
    if (this.cleanupTimer) clearInterval(this.cleanupTimer);
    for (const w of this.slotWaiters) w();
    await this.loop;
    await this.waitForBindings();
  }

  async waitForBindings(): Promise<void> {
    while (this.pendingBindings.size > 0) await Promise.allSettled([...this.pendingBindings]);
  }

  private cleanupAssumed(): void {
    const expired = this.cache.cleanupExpiredAssumedPods();
    if (expired.length > 0) {
      this.log.warn({ pods: expired }, 'assumed pods expired without their binding showing up in the watch');
      this.queue.onEvent({ resource: 'Pod', action: ActionType.Delete, label: 'AssignedPodDelete' });
    }
  }

  private async run(): Promise<void> {
    let lastYield = performance.now();
    while (!this.stopped) {
      const qp = await this.queue.pop();
      if (!qp || this.stopped) break;
      this.scheduleOne(qp);
      if (this.bindingsInFlight >= this.maxInFlightBindings) {
        await new Promise<void>((res) => this.slotWaiters.push(res));
      }
      // Let informer events and binding responses in now and then, even when the queue is never empty.
      if (performance.now() - lastYield > 5) {
        await new Promise((res) => setImmediate(res));
        lastYield = performance.now();
      }
    }
  }

  /** Schedules pods until the active queue is empty, without waiting; returns how many were tried. For tests and benchmarks. */
  drainActive(): number {
    let n = 0;
    for (let qp = this.queue.tryPop(); qp; qp = this.queue.tryPop()) {
      this.scheduleOne(qp);
      n++;
    }
    return n;
  }

  /** One scheduling cycle for one pod. Synchronous up to the start of binding. */
  scheduleOne(qp: QueuedPodInfo): void {
    const pod = qp.info.pod;
    const profileName = pod.spec?.schedulerName ?? 'default-scheduler';
    const fwk = this.profiles.get(profileName);
    if (!fwk) {
      this.queue.done(qp.info.key);
      return;
    }
    const started = performance.now();
    let nodeName: string;
    let state: CycleState;
    try {
      ({ nodeName, state } = this.algorithm.schedule(fwk, this.cache.snapshot(), qp.info));
    } catch (err) {
      const seconds = (performance.now() - started) / 1000;
      this.handleFailure(qp, err, fwk, seconds);
      return;
    }
    this.cache.assumePod(qp.info, nodeName);
    this.metrics.attempt('scheduled', profileName, (performance.now() - started) / 1000);
    const p = this.bind(qp, nodeName, fwk, state);
    this.pendingBindings.add(p);
    void p.finally(() => this.pendingBindings.delete(p));
  }

  private async bind(qp: QueuedPodInfo, nodeName: string, fwk: Framework, state: CycleState): Promise<void> {
    const pod = qp.info.pod;
    const key = qp.info.key;
    this.bindingsInFlight++;
    const started = performance.now();
    try {
      let pre = fwk.runPreBind(state, qp.info, nodeName, this.algorithm.handle(this.cache.snapshot()));
      if (pre instanceof Promise) pre = await pre;
      if (pre)
        throw new PreBindError(`running PreBind plugin "${pre.plugin}": ${pre.status.reasons.join(', ')}`);
      await this.api.bind(pod, nodeName);
      this.metrics.bindingDone((performance.now() - started) / 1000, true);
      this.cache.finishBinding(key);
      this.queue.done(key);
      this.nominated.delete(key);
      if (qp.initialAttemptTimestamp !== null) {
        this.metrics.podScheduled((this.now() - qp.initialAttemptTimestamp) / 1000, qp.attempts);
      }
      this.api.event(pod, 'Normal', 'Scheduled', `Successfully assigned ${key} to ${nodeName}`);
      this.log.debug({ pod: key, node: nodeName }, 'bound');
    } catch (err) {
      this.metrics.bindingDone((performance.now() - started) / 1000, false);
      const message = (err as Error).message ?? String(err);
      this.log.warn({ pod: key, node: nodeName, err: message }, 'binding failed');
      this.cache.forgetPod(key);
      // The forgotten pod frees its node's resources: pods waiting for room may fit now.
      this.queue.onEvent({ resource: 'Pod', action: ActionType.Delete, label: 'AssignedPodDelete' });
      this.queue.requeueWithBackoff(qp);
      this.api.event(
        pod,
        'Warning',
        'FailedScheduling',
        err instanceof PreBindError ? message : `Binding rejected: ${message}`,
      );
    } finally {
      this.bindingsInFlight--;
      this.slotWaiters.shift()?.();
    }
  }

  private handleFailure(qp: QueuedPodInfo, err: unknown, fwk: Framework, seconds: number): void {
    const pod = qp.info.pod;
    const profile = fwk.schedulerName;
    let message: string;
    let reason: string;
    let nominate: string | undefined;
    if (err instanceof FitError) {
      message = err.message;
      reason = 'Unschedulable';
      this.metrics.attempt('unschedulable', profile, seconds);
      // PostFilter: preemption, before the pod waits (its victims' deletes wake it).
      const outcome = this.postFilter(qp, err, fwk);
      if (outcome?.kind === 'none') message += ` ${outcome.message}`;
      else if (outcome?.kind === 'preempt') nominate = outcome.node;
      this.queue.addUnschedulable(qp, err.unschedulablePlugins());
    } else {
      message = (err as Error)?.message ?? String(err);
      reason = 'SchedulerError';
      this.metrics.attempt('error', profile, seconds);
      this.log.error({ pod: qp.info.key, err: message }, 'error scheduling pod');
      this.queue.requeueWithBackoff(qp);
    }
    this.api.event(pod, 'Warning', 'FailedScheduling', message);
    const current = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (!nominate && current?.status === 'False' && current.reason === reason && current.message === message)
      return;
    const condition: PodCondition = {
      type: 'PodScheduled',
      status: 'False',
      reason,
      message,
      lastTransitionTime: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    this.api.updatePodCondition(pod, condition, nominate).catch((e: unknown) => {
      this.log.warn(
        { pod: qp.info.key, err: (e as Error).message },
        'could not update the PodScheduled condition',
      );
    });
  }

  /**
   * Preemption for a pod that fits nowhere: picks victims and a node, starts their
   * eviction and nominates the node for the pod. Undefined when the scheduler cannot
   * preempt (no eviction API).
   */
  private postFilter(
    qp: QueuedPodInfo,
    fit: FitError,
    fwk: Framework,
  ): { kind: 'preempt'; node: string } | { kind: 'none'; message: string } | undefined {
    const evict = this.api.preemptVictim?.bind(this.api);
    if (!evict || fit.numAllNodes === 0) return undefined;
    this.metrics.preemptionAttempt();
    const snapshot = this.cache.snapshot();
    const outcome = preempt({
      fwk,
      snapshot,
      handle: this.algorithm.handle(snapshot),
      pod: qp.info,
      fit,
      state: fit.state,
      budgets: this.disruptionBudgets(),
      nominatedNode: this.nominated.get(qp.info.key)?.node,
    });
    if (outcome.kind === 'none') return outcome;
    const { node, victims } = outcome.candidate;
    this.metrics.preempted(victims.length);
    // Lower-priority pods nominated to this node may no longer fit there: they lose the
    // nomination and look again, as Kubernetes' preemption clears theirs.
    for (const [key, n] of this.nominated) {
      if (n.node === node && n.info.priority < qp.info.priority) this.nominated.delete(key);
    }
    this.nominated.set(qp.info.key, { node, info: qp.info });
    this.log.info(
      { pod: qp.info.key, node, victims: victims.map((v) => v.key) },
      'preempting lower-priority pods',
    );
    for (const v of victims) {
      evict(v.pod, qp.info.pod, node).catch((e: unknown) => {
        this.log.warn(
          { pod: qp.info.key, victim: v.key, err: (e as Error).message },
          'could not preempt a victim; the pod will try again',
        );
      });
    }
    return { kind: 'preempt', node };
  }
}
