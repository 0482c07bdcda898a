// A container's image, made present as its imagePullPolicy says: ImageStatus
// (asked ahead, alongside RunPodSandbox, for a new pod), PullImage shared with
// other pods pulling the same image with the same credentials, the pod's
// imagePullSecrets as CRI AuthConfig (pull-credentials.ts), and the pull backoff.

import type { AuthConfig, Image, PodSandboxConfig } from '@kubit/cri';
import type { Container, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { logFailure } from './failures.js';
import { type PodRef, podKey } from './labels.js';
import { imageStep } from './plan.js';
import type { PodEvents } from './pod-events.js';
import { keyringOf, lookupCredentials } from './pull-credentials.js';
import { imagePullPolicy } from './runtime-config.js';
import type { Waiting } from './status.js';
import type { TraceStep } from './trace.js';
import type { WorkerContext } from './worker-context.js';

export interface ImageStepsHost {
  pod(): Pod;
  /** Why a container waits, by name (the pod status shows it). */
  waiting: Map<string, Waiting>;
  events: PodEvents;
  wake(ms: number): void;
  trace(step: TraceStep, detail?: string): void;
  /** The pod's sandbox config, which PullImage takes. */
  sandboxConfig(): PodSandboxConfig;
}

export class ImageSteps {
  /** When a pull of an image for this pod last failed, by backoff key. */
  private readonly failedAt = new Map<string, number>();
  /** ImageStatus calls started alongside RunPodSandbox, by image; valid for one sync. */
  private readonly checks = new Map<string, Promise<Image | undefined>>();
  /** Images ImageStatus found present during this sync. */
  private readonly found = new Map<string, Image>();
  /** Reports the pod as ContainerCreating before its first pull, when it has reported nothing yet. */
  private beforePull: (() => Promise<void>) | undefined;

  constructor(
    private readonly ctx: WorkerContext,
    private readonly ref: PodRef,
    private readonly host: ImageStepsHost,
  ) {}

  beginSync(): void {
    this.checks.clear();
    this.found.clear();
  }

  /** The image as ImageStatus reported it during this sync, if present. */
  present(image: string): Image | undefined {
    return this.found.get(image);
  }

  /** What to do once just before the first pull of this sync (undefined: nothing). */
  reportCreatingFirst(report: (() => Promise<void>) | undefined): void {
    this.beforePull = report;
  }

  /** Starts ImageStatus for every image of the pod whose policy may use what is present. */
  checkAhead(): void {
    const pod = this.host.pod();
    for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      const image = c.image ?? '';
      if (!image || imagePullPolicy(c) === 'Always' || this.checks.has(image)) continue;
      const check = this.ctx.runtime.imageStatus(image);
      // ensure() awaits it and handles its error; a sync that stops before never reads it.
      check.catch(
        logFailure(this.ctx.log, { pod: podKey(this.ref), call: `ImageStatus ${image}`, level: 'debug' }),
      );
      this.checks.set(image, check);
    }
  }

  /** Pulls per imagePullPolicy; false (with the waiting reason set) when the image is not there. */
  async ensure(c: Container): Promise<boolean> {
    const { waiting, events } = this.host;
    const image = c.image ?? '';
    const policy = imagePullPolicy(c);
    const ahead = this.checks.get(image);
    this.checks.delete(image);
    let present = policy === 'Always' ? undefined : await (ahead ?? this.ctx.runtime.imageStatus(image));
    // Absent when asked ahead, but maybe pulled since by another pod: ask again before pulling.
    if (ahead && !present) present = await this.ctx.runtime.imageStatus(image);
    const key = `${this.ref.uid}/${image}`;
    const failedAt = this.failedAt.get(key);
    const inBackoff = failedAt !== undefined && this.ctx.imageBackoff.inBackoff(key, failedAt);
    switch (imageStep(policy, !!present, inBackoff)) {
      case 'use-present':
        if (present) this.found.set(image, present);
        this.host.trace('image-checked', 'present');
        return true;
      case 'never-pull': {
        const message = `Container image "${image}" is not present with pull policy of Never`;
        waiting.set(c.name, { reason: 'ErrImageNeverPull', message });
        events.once(c.name, 'Warning', 'ErrImageNeverPull', message);
        this.host.wake(this.ctx.retryMs);
        return false;
      }
      case 'pull-back-off':
        waiting.set(c.name, { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` });
        events.once(c.name, 'Normal', 'BackOff', `Back-off pulling image "${image}"`);
        this.host.wake(this.ctx.imageBackoff.remainingMs(key, failedAt ?? 0) + 10);
        return false;
      case 'pull':
        return this.pullNow(c, image, key);
    }
  }

  private async pullNow(c: Container, image: string, key: string): Promise<boolean> {
    const { waiting, events } = this.host;
    events.event('Normal', 'Pulling', `Pulling image "${image}"`);
    const report = this.beforePull;
    this.beforePull = undefined;
    await report?.();
    const started = Date.now();
    try {
      await this.pull(image);
    } catch (err) {
      this.ctx.imageBackoff.next(key);
      this.failedAt.set(key, Date.now());
      const message = `Failed to pull image "${image}": ${(err as Error).message}`;
      waiting.set(c.name, { reason: 'ErrImagePull', message });
      events.note(c.name, 'ErrImagePull');
      events.event('Warning', 'Failed', message);
      events.event('Warning', 'Failed', 'Error: ErrImagePull');
      this.host.wake(this.ctx.imageBackoff.remainingMs(key, Date.now()) + 10);
      return false;
    }
    this.ctx.imageBackoff.reset(key);
    this.failedAt.delete(key);
    const secs = ((Date.now() - started) / 1000).toFixed(3);
    events.event('Normal', 'Pulled', `Successfully pulled image "${image}" in ${secs}s`);
    this.host.trace('image-checked', 'pulled');
    return true;
  }

  /**
   * The pod's imagePullSecrets as the daemon can read them. A secret that
   * cannot be read is left out with a warning event, as Kubernetes' kubelet
   * does: the pull may still work anonymously.
   */
  private async pullSecrets(): Promise<Secret[]> {
    const pod = this.host.pod();
    const ns = pod.metadata?.namespace ?? 'default';
    const secrets: Secret[] = [];
    const failed: string[] = [];
    for (const ref of pod.spec?.imagePullSecrets ?? []) {
      if (!ref.name) continue;
      let secret: Secret | undefined;
      try {
        secret = await this.ctx.objects.secret(ns, ref.name);
      } catch (err) {
        this.ctx.log.info(
          { pod: podKey(this.ref), secret: `${ns}/${ref.name}`, err: (err as Error).message },
          'unable to retrieve pull secret, the image pull may not succeed',
        );
      }
      if (secret) secrets.push(secret);
      else failed.push(ref.name);
    }
    if (failed.length > 0) {
      this.host.events.once(
        'pull-secrets',
        'Warning',
        'FailedToRetrieveImagePullSecret',
        `Unable to retrieve some image pull secrets (${failed.join(', ')}); attempting to pull the image may not succeed.`,
      );
    } else this.host.events.clear('pull-secrets');
    return secrets;
  }

  /**
   * PullImage with each matching credential in turn until one works (none
   * matching: anonymously), as Kubernetes' kubelet tries them; the errors of
   * all the tries when none does.
   */
  private async pull(image: string): Promise<void> {
    const auths = lookupCredentials(keyringOf(await this.pullSecrets()), image);
    if (auths.length === 0) return this.pullWith(image, undefined);
    const errors: string[] = [];
    for (const auth of auths) {
      try {
        return await this.pullWith(image, auth);
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new Error(errors.length === 1 ? (errors[0] ?? '') : `[${errors.join(', ')}]`);
  }

  /** PullImage, joined with a pull of the same image with the same credentials another pod started. */
  private pullWith(image: string, auth: AuthConfig | undefined): Promise<void> {
    const { pulls } = this.ctx;
    const key = auth ? `${image}\u0000${JSON.stringify(auth)}` : image;
    let p = pulls.get(key);
    if (!p) {
      p = this.ctx.runtime.pullImage(image, this.host.sandboxConfig(), auth).then(
        () => {
          pulls.delete(key);
        },
        (err: unknown) => {
          pulls.delete(key);
          throw err;
        },
      );
      pulls.set(key, p);
    }
    return p;
  }
}
