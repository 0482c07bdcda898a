// Carries out a pod's planned actions (plan.ts) against the runtime: sandbox,
// images, container creation and starts, kills, clean-up, deletion. It keeps
// what a pod's syncs remember about its containers (why one waits, the last
// event sent, restart counts carried to a new sandbox) and reports status
// through its host, the pod worker.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerConfig, ContainerStatus, PodSandboxConfig } from '@kubit/cri';
import type { Container, Pod } from 'kubernetes-types/core/v1.js';
import { podDnsConfig, podHostsFile } from './dns.js';
import { ContainerConfigError, containerEnv } from './env.js';
import { logFailure } from './failures.js';
import { ImageSteps } from './image-steps.js';
import { type PodRef, podKey } from './labels.js';
import { MountedVolumes } from './mounted-volumes.js';
import { type Observed, observePod } from './observed.js';
import type { ContainerAction, PodActions, RunActions, TerminationActions } from './plan.js';
import { PodEvents } from './pod-events.js';
import { containerConfig, restartGraceSeconds, sandboxConfig } from './runtime-config.js';
import { serviceEnv, visibleServices } from './service-env.js';
import type { Waiting } from './status.js';
import { nowNs, SyncChanges } from './sync-changes.js';
import type { TraceStep } from './trace.js';
import { MountError } from './volumes.js';
import type { WorkerContext } from './worker-context.js';

/** What the executor needs of the pod worker it acts for. */
export interface ExecutorHost {
  pod(): Pod;
  /** Whether the pod has reported any status yet. */
  hasReported(): boolean;
  publish(obs: Observed): Promise<void>;
  /** Starts probes for what runs now and stops those of what no longer does. */
  syncProbes(obs: Observed): void;
  stopProbes(containerId: string): void;
  /** Asks for another sync after this one. */
  trigger(): void;
  /** Asks for a sync in `ms`. */
  wake(ms: number): void;
  trace(step: TraceStep, detail?: string): void;
}

export class PodExecutor {
  /** Why a container waits (ErrImagePull, CrashLoopBackOff, ...), by name: part of the pod's status. */
  readonly waiting = new Map<string, Waiting>();
  /** Restart counts carried over from an earlier sandbox, by container name. */
  readonly carriedRestarts = new Map<string, number>();
  /** Containers stopped because their spec changed: started again at once, whatever the policy. */
  readonly respecified = new Set<string>();
  /** The pod's IP (its sandbox's, or the node's for hostNetwork), once it has a sandbox. */
  podIP = '';
  /** The pod's managed /etc/hosts, once written. */
  private etcHostsPath: string | undefined;
  readonly events: PodEvents;
  private readonly volumes: MountedVolumes;
  private readonly images: ImageSteps;
  /** What this sync did to the pod's containers. */
  private readonly changes: SyncChanges;

  constructor(
    private readonly ctx: WorkerContext,
    private readonly ref: PodRef,
    private readonly host: ExecutorHost,
  ) {
    this.events = new PodEvents(ctx.events, () => host.pod());
    this.changes = new SyncChanges(ctx.runtime, ref.uid, ctx.trace);
    this.volumes = new MountedVolumes(ctx, ref);
    this.images = new ImageSteps(ctx, ref, {
      pod: () => host.pod(),
      waiting: this.waiting,
      events: this.events,
      wake: (ms) => host.wake(ms),
      trace: (step, detail) => host.trace(step, detail),
      sandboxConfig: () => this.sandboxConfig(0),
    });
  }

  private get pod(): Pod {
    return this.host.pod();
  }

  /** Logs a failed best-effort call (see failures.ts) instead of failing the sync. */
  private failed(call: string) {
    return logFailure(this.ctx.log, { pod: podKey(this.ref), call });
  }

  private sandboxConfig(attempt: number): PodSandboxConfig {
    const dns = this.ctx.dns ? podDnsConfig(this.pod, this.ctx.dns) : undefined;
    for (const warning of dns?.warnings ?? [])
      this.events.once('dns', 'Warning', 'DNSConfigForming', warning);
    return sandboxConfig(this.pod, this.ref, this.ctx.podLogsDir, attempt, dns?.config);
  }

  /** The hosts file last written, so an unchanged one is not written again each sync. */
  private hostsWritten = '';

  /** Writes the pod's managed /etc/hosts (dns.ts) once its IP is known; returns its path. */
  private async writeHostsFile(): Promise<string | undefined> {
    if (!this.ctx.dns || this.pod.spec?.hostNetwork) return undefined;
    const path = join(this.ctx.volumes.podDir(this.ref.uid), 'etc-hosts');
    const content = podHostsFile(this.pod, this.podIP, this.ctx.dns.clusterDomain);
    if (content !== this.hostsWritten) {
      await mkdir(join(path, '..'), { recursive: true });
      await writeFile(path, content);
      this.hostsWritten = content;
    }
    return path;
  }

  /** Reports what runs now and syncs again in a while (something the pod needs is not there yet). */
  private async retryLater(obs: Observed): Promise<void> {
    await this.host.publish(obs);
    this.host.wake(this.ctx.retryMs);
  }

  /** Carries out one sync's actions for a pod that is not being deleted; reports the status after. */
  async execute(plan: PodActions, obs: Observed): Promise<void> {
    this.changes.clear();
    this.images.beginSync();
    if (plan.kind === 'report-rejection') return this.host.publish(obs);
    if (plan.kind === 'finished') {
      if (plan.stopSandboxId) await this.ctx.runtime.stopPodSandbox(plan.stopSandboxId);
      return this.host.publish(obs);
    }
    let volumePaths: Map<string, string>;
    try {
      volumePaths = await this.volumes.setUp(this.pod);
      this.events.clear('volumes');
      this.host.trace('volumes-ready');
    } catch (err) {
      if (!(err instanceof MountError)) throw err;
      this.events.once('volumes', 'Warning', 'FailedMount', err.message);
      return this.retryLater(obs);
    }
    if (plan.kind === 'wait-for-network') {
      this.events.once('sandbox', 'Warning', 'NetworkNotReady', plan.message);
      return this.retryLater(obs);
    }
    if (plan.kind === 'kill-remains') {
      for (const id of plan.containerIdsToKill) {
        await this.ctx.runtime.stopContainer(id, 0).catch(this.failed(`StopContainer ${id}`));
      }
      return this.retryLater(await observePod(this.ctx.runtime, this.ref.uid));
    }
    await this.run(plan, obs, volumePaths);
  }

  private async run(plan: RunActions, obs: Observed, volumePaths: Map<string, string>): Promise<void> {
    const { runtime } = this.ctx;
    if (plan.killSandbox) {
      this.events.once(
        'sandbox-changed',
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
      for (const id of plan.killSandbox.containerIds) {
        await runtime.stopContainer(id, 0).catch(this.failed(`StopContainer ${id}`));
      }
      const id = plan.killSandbox.id;
      await runtime.stopPodSandbox(id).catch(this.failed(`StopPodSandbox ${id} (the dead sandbox)`));
    }
    let sandbox = obs.sandbox;
    if (plan.createSandbox) {
      const config = this.sandboxConfig(plan.createSandbox.attempt);
      // The sandbox does not need the images: ask whether they are present meanwhile.
      this.images.checkAhead();
      try {
        this.host.trace('sandbox-requested');
        const id = await runtime.runPodSandbox(config);
        sandbox = await runtime.podSandboxStatus(id);
        this.host.trace('sandbox-started');
        this.events.clear('sandbox');
        this.events.clear('sandbox-changed');
      } catch (err) {
        this.events.once(
          'sandbox',
          'Warning',
          'FailedCreatePodSandBox',
          `Failed to create pod sandbox: ${(err as Error).message}`,
        );
        return this.retryLater(obs);
      }
      for (const [name, count] of plan.carryRestarts ?? []) this.carriedRestarts.set(name, count);
      obs.instances = new Map();
      obs.sandbox = sandbox;
    }
    // A run plan has a ready sandbox or creates one; this only guards against a planner bug.
    if (!sandbox) throw new Error('no sandbox to run the containers in');
    this.podIP = sandbox.network.ip || (this.pod.spec?.hostNetwork ? this.ctx.hostIP : '');
    this.etcHostsPath = await this.writeHostsFile();
    for (const id of plan.sandboxesToRemove) {
      await runtime.stopPodSandbox(id).catch(this.failed(`StopPodSandbox ${id} (stale)`));
      await runtime.removePodSandbox(id).catch(this.failed(`RemovePodSandbox ${id} (stale)`));
    }
    const config = this.sandboxConfig(sandbox.metadata.attempt);
    // A pod that never reported yet says ContainerCreating (with its IP) before a pull,
    // which can take a while. With its images present it goes straight to Running in this
    // sync: a status written in between (apiserver, store, every watcher) would only
    // compete for the CPU with its CreateContainer and StartContainer.
    this.images.reportCreatingFirst(
      this.host.hasReported()
        ? undefined
        : async () => (this.host.hasReported() ? undefined : this.host.publish(obs)),
    );
    for (const action of plan.containers) await this.containerStep(action, sandbox.id, config, volumePaths);
    this.images.reportCreatingFirst(undefined);
    const early = this.changes.early(obs);
    if (early) await this.host.publish(early);
    const after = await this.changes.refreshed(obs);
    await this.removeOldInstances(after);
    this.host.syncProbes(after);
    await this.host.publish(after);
  }

  private async containerStep(
    action: ContainerAction,
    sandboxId: string,
    sandboxConfig: PodSandboxConfig,
    volumePaths: Map<string, string>,
  ): Promise<void> {
    const c = action.container;
    switch (action.kind) {
      case 'start':
        return this.start(action, sandboxId, sandboxConfig, volumePaths);
      case 'start-created':
        return this.startCreated(c, action.id);
      case 'leave-exited':
        this.waiting.delete(c.name);
        return;
      case 'back-off': {
        const { name } = c;
        const { namespace, name: podName, uid } = this.ref;
        const message = `back-off ${Math.round(action.delayMs / 1000)}s restarting failed container=${name} pod=${podName}_${namespace}(${uid})`;
        this.waiting.set(name, { reason: 'CrashLoopBackOff', message });
        this.events.once(
          name,
          'Warning',
          'BackOff',
          `Back-off restarting failed container ${name} in pod ${podName}_${namespace}(${uid})`,
        );
        this.host.wake(action.remainingMs + 10);
        return;
      }
      case 'kill':
        this.host.stopProbes(action.id);
        if (action.respecify) {
          this.respecified.add(c.name);
          // Not finished, whatever its exit code: it is about to run again.
          this.waiting.set(c.name, { reason: 'ContainerCreating' });
        }
        this.events.event('Normal', 'Killing', `Container ${c.name} ${action.reason}, will be restarted`);
        this.changes.stopped();
        await this.ctx.runtime.stopContainer(action.id, restartGraceSeconds(this.pod));
        this.host.trigger();
        return;
    }
  }

  /** Creates and starts a container, once its image is there and its config can be built. */
  private async start(
    action: Extract<ContainerAction, { kind: 'start' }>,
    sandboxId: string,
    sandboxConfig: PodSandboxConfig,
    volumePaths: Map<string, string>,
  ): Promise<void> {
    const c = action.container;
    const key = `${this.ref.uid}/${c.name}`;
    this.respecified.delete(c.name);
    if (action.resetBackoff) this.ctx.crashBackoff.reset(key);
    if (!(await this.images.ensure(c))) return;
    let config: ContainerConfig;
    try {
      config = await this.buildConfig(
        c,
        action.restartCount,
        volumePaths,
        action.isInit,
        action.targetContainerId,
      );
    } catch (err) {
      if (!(err instanceof ContainerConfigError || err instanceof MountError)) throw err;
      this.waiting.set(c.name, { reason: 'CreateContainerConfigError', message: err.message });
      this.events.once(c.name, 'Warning', 'Failed', `Error: ${err.message}`);
      this.host.wake(this.ctx.retryMs);
      return;
    }
    if (action.countsAsCrash) this.ctx.crashBackoff.next(key);
    let id: string;
    try {
      this.host.trace('container-requested');
      id = await this.ctx.runtime.createContainer(sandboxId, config, sandboxConfig);
    } catch (err) {
      this.waiting.set(c.name, { reason: 'CreateContainerError', message: (err as Error).message });
      this.events.once(c.name, 'Warning', 'Failed', `Error: ${(err as Error).message}`);
      this.host.wake(this.ctx.retryMs);
      return;
    }
    this.carriedRestarts.delete(c.name);
    this.changes.touch(id);
    const createdAt = nowNs();
    this.host.trace('container-created');
    this.events.event('Normal', 'Created', `Created container ${c.name}`);
    await this.startCreated(c, id, { config, createdAt });
  }

  private async buildConfig(
    c: Container,
    restartCount: number,
    volumePaths: Map<string, string>,
    isInit: boolean,
    targetContainerId?: string,
  ): Promise<ContainerConfig> {
    const services = this.ctx.services ? serviceEnv(visibleServices(this.pod, this.ctx.services)) : undefined;
    const env = await containerEnv(
      this.pod,
      c,
      this.ctx.objects,
      { podIP: this.podIP, hostIP: this.ctx.hostIP },
      services,
    );
    return containerConfig({
      pod: this.pod,
      ref: this.ref,
      container: c,
      env,
      restartCount,
      volumePaths,
      isInit,
      etcHostsPath: this.etcHostsPath,
      ...(targetContainerId ? { targetContainerId } : {}),
    });
  }

  private async startCreated(
    c: Container,
    id: string,
    created?: { config: ContainerConfig; createdAt: number },
  ): Promise<void> {
    try {
      this.changes.touch(id);
      this.host.trace('start-requested');
      const requestedAt = nowNs();
      await this.ctx.runtime.startContainer(id);
      this.host.trace('container-started');
      const returnedAt = nowNs();
      const image = created && this.images.present(created.config.image.image);
      if (created && image) this.changes.started(id, created, image, [requestedAt, returnedAt]);
      this.waiting.delete(c.name);
      this.events.clear(c.name);
      this.events.event('Normal', 'Started', `Started container ${c.name}`);
    } catch (err) {
      this.waiting.delete(c.name);
      this.events.event('Warning', 'Failed', `Error: ${(err as Error).message}`);
    }
  }

  /** Keeps the newest two instances of each container (current and previous, for logs --previous). */
  private async removeOldInstances(obs: Observed): Promise<void> {
    for (const [name, list] of obs.instances) {
      const keep: ContainerStatus[] = [];
      for (const [i, s] of list.entries()) {
        if (i >= 2 && s.state === 'CONTAINER_EXITED')
          await this.ctx.runtime.removeContainer(s.id).catch(this.failed(`RemoveContainer ${s.id}`));
        else keep.push(s);
      }
      obs.instances.set(name, keep);
    }
  }

  /** Stops every container (SIGTERM, then SIGKILL after the grace period), then the sandboxes, then volumes. */
  async terminate(actions: TerminationActions): Promise<void> {
    const { runtime } = this.ctx;
    await Promise.all(
      actions.containersToKill.map(async (c) => {
        this.events.event('Normal', 'Killing', `Stopping container ${c.name}`);
        await runtime
          .stopContainer(c.id, actions.gracePeriodSeconds)
          .catch(this.failed(`StopContainer ${c.id} (${actions.reason})`));
      }),
    );
    for (const id of actions.sandboxesToRemove) {
      await runtime.stopPodSandbox(id);
      await runtime.removePodSandbox(id);
    }
    await this.ctx.volumes.tearDown(this.ref.uid);
    this.ctx.crashBackoff.forgetPrefix(`${this.ref.uid}/`);
    this.ctx.imageBackoff.forgetPrefix(`${this.ref.uid}/`);
  }
}
