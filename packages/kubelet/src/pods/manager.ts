// The kubelet's pod side: one worker per pod, a relist loop that nudges them
// all and removes what no pod owns any more, and admission.
import { join } from 'node:path';
import type { ContainerRuntime } from '@kubit/cri';
import { createLogger, type Logger } from '@kubit/daemon';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { Backoff, type BackoffConfig, DEFAULT_BACKOFF } from './backoff.js';
import type { NodeDnsSettings } from './dns.js';
import { logFailure } from './failures.js';
import { MANAGED_LABEL, POD_UID_LABEL } from './labels.js';
import { runtimeSignature } from './observed.js';
import { podRequests } from './resources.js';
import type { ServiceSource } from './service-env.js';
import type { EventSink, ObjectSource, PodStatusSink } from './sinks.js';
import { type TokenIssuer, TokenManager } from './tokens.js';
import type { Tracer } from './trace.js';
import { VolumeManager } from './volumes.js';
import { PodWorker } from './worker.js';
import type { WorkerContext } from './worker-context.js';

export interface PodManagerOptions {
  runtime: ContainerRuntime;
  objects: ObjectSource;
  statusSink: PodStatusSink;
  events: EventSink;
  log?: Logger;
  hostIP: string;
  /** --root-dir: volumes live under <rootDir>/pods/<uid>. */
  rootDir: string;
  /** Default <rootDir>/logs/pods (Kubernetes uses /var/log/pods). */
  podLogsDir?: string;
  relistIntervalMs?: number;
  crashBackoff?: BackoffConfig;
  imageBackoff?: BackoffConfig;
  retryMs?: number;
  maxPods?: number;
  /** Why no pod-network sandbox may be created yet (see WorkerContext), or undefined. */
  networkNotReady?: () => string | undefined;
  /** What pods may request in total; unlimited when absent. */
  allocatable?: { milliCpu: number; memoryBytes: number };
  /** Every pod is synced at least this often, changed or not (default 10 s). */
  resyncIntervalMs?: number;
  /** Notes start-up steps (see trace.ts). */
  trace?: Tracer;
  /** Pods' resolv.conf and /etc/hosts (see WorkerContext). */
  dns?: NodeDnsSettings;
  /** Services for pods' environment variables (see WorkerContext). */
  services?: ServiceSource;
  /** ServiceAccount tokens for projected volumes (the kube-api-access volume). */
  tokenIssuer?: TokenIssuer;
}

const isTerminalPhase = (p: Pod) => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

export class PodManager {
  private readonly workers = new Map<string, PodWorker>();
  private readonly ctx: WorkerContext;
  private relistTimer: NodeJS.Timeout | undefined;
  private relisting = false;
  private stopped = false;

  constructor(private readonly opts: PodManagerOptions) {
    const log = opts.log ?? createLogger({ name: 'kubit-kubelet', level: 'silent' });
    this.ctx = {
      runtime: opts.runtime,
      runtimeName: 'containerd',
      volumes: new VolumeManager(
        opts.rootDir,
        opts.objects,
        log,
        opts.tokenIssuer ? new TokenManager(opts.tokenIssuer) : undefined,
      ),
      objects: opts.objects,
      statusSink: opts.statusSink,
      events: opts.events,
      log,
      crashBackoff: new Backoff(opts.crashBackoff ?? DEFAULT_BACKOFF),
      imageBackoff: new Backoff(opts.imageBackoff ?? DEFAULT_BACKOFF),
      hostIP: opts.hostIP,
      podLogsDir: opts.podLogsDir ?? join(opts.rootDir, 'logs', 'pods'),
      retryMs: opts.retryMs ?? 2000,
      networkNotReady: opts.networkNotReady,
      pulls: new Map(),
      trace: opts.trace,
      dns: opts.dns,
      services: opts.services,
    };
  }

  /** --root-dir: pods' volumes are under <rootDir>/pods/<uid>/volumes. */
  get rootDir(): string {
    return this.opts.rootDir;
  }

  get podLogsDir(): string {
    return this.ctx.podLogsDir;
  }

  /**
   * Starts with the full set of pods bound to this node (so that whatever the
   * runtime runs for other pods can be recognized as orphaned), then relists.
   */
  async start(pods: Pod[]): Promise<void> {
    this.ctx.runtimeName = (await this.opts.runtime.version()).runtimeName || 'containerd';
    const sorted = [...pods].sort((a, b) =>
      String(a.metadata?.creationTimestamp ?? '').localeCompare(String(b.metadata?.creationTimestamp ?? '')),
    );
    for (const p of sorted) this.upsert(p);
    await this.relist();
    this.relisted = true;
    this.scheduleRelist();
  }

  private scheduleRelist(): void {
    if (this.stopped) return;
    this.relistTimer = setTimeout(async () => {
      await this.relist().catch((err) => this.ctx.log.warn({ err }, 'relist failed'));
      this.scheduleRelist();
    }, this.opts.relistIntervalMs ?? 1000);
    this.relistTimer.unref();
  }

  /** A pod was added or changed. */
  upsert(pod: Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid || this.stopped) return;
    const existing = this.workers.get(uid);
    if (existing) {
      existing.update(pod);
      return;
    }
    this.ctx.trace?.(uid, 'watch-delivered');
    // Only this kubelet creates sandboxes for its pods, and the node-wide relist at
    // start-up saw whatever an earlier kubelet left behind. So a pod that no relist
    // has seen since has nothing in the runtime yet, and its worker need not look.
    const knownEmpty = this.relisted && !this.inRuntime.has(uid);
    const worker = new PodWorker(pod, this.ctx, { knownEmpty });
    this.workers.set(uid, worker);
    void worker.done.then(() => {
      if (this.workers.get(uid) === worker) this.workers.delete(uid);
    });
    if (pod.metadata?.deletionTimestamp) {
      worker.delete(pod);
      return;
    }
    const rejection = isTerminalPhase(pod) ? undefined : this.admit(pod);
    if (rejection) worker.reject(rejection.reason, rejection.message);
    else worker.trigger();
  }

  /** Asks every worker to sync now (the node's network just became ready, say). */
  syncAll(): void {
    for (const w of this.workers.values()) w.trigger();
  }

  /** The pod is gone from the apiserver: stop what it runs. */
  remove(pod: Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    this.workers.get(uid)?.delete(pod);
  }

  /** Replaces the whole set (after a relist of the apiserver). */
  setPods(pods: Pod[]): void {
    const uids = new Set(pods.map((p) => p.metadata?.uid));
    for (const [uid, w] of this.workers) if (!uids.has(uid)) w.delete();
    for (const p of pods) this.upsert(p);
  }

  /** The pods this kubelet is responsible for (for /pods). */
  pods(): Pod[] {
    return [...this.workers.values()].map((w) => w.currentPod);
  }

  worker(uid: string): PodWorker | undefined {
    return this.workers.get(uid);
  }

  /** Whether the pod fits: pod count, then CPU and memory requests against what is allocatable. */
  private admit(pod: Pod): { reason: string; message: string } | undefined {
    const active = [...this.workers.values()].filter(
      (w) => w.currentPod !== pod && !w.isTerminating && !isTerminalPhase(w.currentPod),
    );
    const maxPods = this.opts.maxPods ?? 110;
    if (active.length + 1 > maxPods) {
      return {
        reason: 'OutOfpods',
        message: `Node didn't have enough resource: pods, requested: 1, used: ${active.length}, capacity: ${maxPods}`,
      };
    }
    const alloc = this.opts.allocatable;
    if (!alloc) return undefined;
    const want = podRequests(pod);
    let cpu = 0;
    let mem = 0;
    for (const w of active) {
      const r = podRequests(w.currentPod);
      cpu += r.milliCpu;
      mem += r.memoryBytes;
    }
    if (want.milliCpu > 0 && cpu + want.milliCpu > alloc.milliCpu) {
      return {
        reason: 'OutOfcpu',
        message: `Node didn't have enough resource: cpu, requested: ${want.milliCpu}, used: ${cpu}, capacity: ${alloc.milliCpu}`,
      };
    }
    if (want.memoryBytes > 0 && mem + want.memoryBytes > alloc.memoryBytes) {
      return {
        reason: 'OutOfmemory',
        message: `Node didn't have enough resource: memory, requested: ${want.memoryBytes}, used: ${mem}, capacity: ${alloc.memoryBytes}`,
      };
    }
    return undefined;
  }

  /** What the runtime ran per pod uid at the last relist: sandbox and container ids with their states. */
  private lastSeen = new Map<string, string>();
  private lastResync = 0;
  /** The first node-wide relist is done: from then on, inRuntime knows every pod the runtime has. */
  private relisted = false;
  /** Pod uids with sandboxes or containers at the last relist. */
  private inRuntime = new Set<string>();

  /**
   * Lists the sandboxes and containers of all pods at once (two CRI calls, not
   * several per pod), syncs the pods whose sandboxes or containers changed
   * state since the last relist (and every pod every resyncIntervalMs), and
   * removes sandboxes and volumes that belong to no known pod.
   */
  async relist(): Promise<void> {
    if (this.relisting || this.stopped) return;
    this.relisting = true;
    try {
      const selector = { labelSelector: { [MANAGED_LABEL]: 'true' } };
      const [sandboxes, containers] = await Promise.all([
        this.opts.runtime.listPodSandbox(selector),
        this.opts.runtime.listContainers(selector),
      ]);
      const seen = new Map<string, { id: string; state: string }[]>();
      const note = (uid: string | undefined, what: { id: string; state: string }) => {
        if (!uid) return;
        const list = seen.get(uid) ?? [];
        list.push(what);
        seen.set(uid, list);
      };
      for (const sb of sandboxes) note(sb.labels[POD_UID_LABEL], sb);
      for (const c of containers) note(c.labels[POD_UID_LABEL], c);
      this.inRuntime = new Set(seen.keys());
      const now = Date.now();
      const resyncAll = now - this.lastResync >= (this.opts.resyncIntervalMs ?? 10_000);
      if (resyncAll) this.lastResync = now;
      const current = new Map<string, string>();
      for (const [uid, worker] of this.workers) {
        const sig = runtimeSignature(seen.get(uid) ?? []);
        const last = this.lastSeen.get(uid);
        if (resyncAll) worker.trigger();
        else if (last !== sig) {
          // A worker in the middle of a sync will see these changes itself (most are its
          // own). Leave the new signature unrecorded, so the next relist compares again,
          // rather than making the worker sync twice.
          if (worker.isBusy) {
            if (last !== undefined) current.set(uid, last);
            continue;
          }
          if (worker.observed !== sig) worker.trigger();
        }
        current.set(uid, sig);
      }
      this.lastSeen = current;
      for (const sb of sandboxes) {
        const uid = sb.labels[POD_UID_LABEL];
        if (!uid || this.workers.has(uid)) continue;
        const pod = `${sb.metadata.namespace}/${sb.metadata.name}`;
        this.ctx.log.info({ sandbox: sb.id, pod }, 'removing orphaned sandbox');
        const failed = (call: string) => logFailure(this.ctx.log, { pod, call: `${call} (orphan clean-up)` });
        const containers = await this.opts.runtime.listContainers({ podSandboxId: sb.id });
        await Promise.all(
          containers
            .filter((c) => c.state === 'CONTAINER_RUNNING')
            .map((c) => this.opts.runtime.stopContainer(c.id, 2).catch(failed(`StopContainer ${c.id}`))),
        );
        await this.opts.runtime.stopPodSandbox(sb.id).catch(failed(`StopPodSandbox ${sb.id}`));
        await this.opts.runtime.removePodSandbox(sb.id).catch(failed(`RemovePodSandbox ${sb.id}`));
      }
      for (const uid of await this.ctx.volumes.knownPodUids()) {
        if (!this.workers.has(uid)) await this.ctx.volumes.tearDown(uid);
      }
    } finally {
      this.relisting = false;
    }
  }

  /** Stops the loops; what runs in the runtime keeps running (a restarted kubelet adopts it). */
  stop(): void {
    this.stopped = true;
    if (this.relistTimer) clearTimeout(this.relistTimer);
    for (const w of this.workers.values()) w.stop();
    this.workers.clear();
  }
}
