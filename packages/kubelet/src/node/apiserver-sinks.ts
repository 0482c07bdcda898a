// The pod logic's sinks, backed by the apiserver through @kubit/client.
import { isConflict, isInvalid, isNotFound, type KubeObject } from '@kubit/api';
import { backoff, EventRecorder, type KubeClient, type ResourceRef, resources } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import type {
  ConfigMap,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PodStatus,
  Secret,
} from 'kubernetes-types/core/v1.js';
import type { EventSink, EventType, ObjectSource, PodStatusSink } from '../pods/sinks.js';
import type { IssuedToken, TokenIssuer, TokenRequestSpec } from '../pods/tokens.js';
import type { Tracer } from '../pods/trace.js';

/**
 * The apiserver refused the uid in the patch: a 409 for the uid precondition
 * (Kubernetes' storage message), not one for a write race (worth retrying); or a
 * 422 saying metadata.uid may not change, for an apiserver that checks it as an
 * immutable field instead. Either way the pod is another one now.
 */
export function isUidMismatch(err: unknown): boolean {
  const message = (err as Error | undefined)?.message ?? '';
  if (isConflict(err)) return /Precondition failed: UID in precondition/.test(message);
  return isInvalid(err) && /metadata\.uid/.test(message);
}

/**
 * Writes pods/{name}/status with one merge PATCH per change (latest status wins),
 * and DELETEs the pod once it terminated. A write that fails (the apiserver is
 * away, say) is retried with backoff until it lands or a newer status replaces
 * it: what changed during an outage is reported when the apiserver is back.
 */
export class ApiPodStatusSink implements PodStatusSink {
  /** Latest status per pod uid, written by one loop per pod so a slow write never piles up. */
  private readonly pending = new Map<string, { pod: Pod; status: PodStatus }>();
  /** The write loop of each pod that has one. */
  private readonly writing = new Map<string, Promise<void>>();
  /** The status last written per uid: keys it had that the next one lacks are sent as null. */
  private readonly written = new Map<string, PodStatus>();
  private closed = false;

  constructor(
    private readonly client: KubeClient,
    private readonly log: Logger,
    private readonly trace?: Tracer,
    private readonly retry = { baseDelayMs: 250, maxDelayMs: 5000 },
  ) {}

  setStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata?.uid ?? '';
    this.pending.set(uid, { pod, status });
    if (!this.writing.has(uid)) this.writing.set(uid, this.drain(uid));
  }

  /** Resolves when every status given so far has been written or dropped. */
  async settled(): Promise<void> {
    while (this.writing.size > 0) await Promise.all(this.writing.values());
  }

  /** Stops retrying (kubelet shutdown). */
  close(): void {
    this.closed = true;
  }

  private async drain(uid: string): Promise<void> {
    // Started from setStatus, which records this loop: begin on the next tick so it is recorded first.
    await Promise.resolve();
    try {
      let failures = 0;
      for (let next = this.pending.get(uid); next && !this.closed; next = this.pending.get(uid)) {
        this.pending.delete(uid);
        if (await this.write(next.pod, next.status)) {
          failures = 0;
          continue;
        }
        // Keep it unless a newer status came in meanwhile; that one is written instead.
        if (!this.pending.has(uid)) this.pending.set(uid, next);
        await new Promise((r) => setTimeout(r, backoff(failures++, this.retry)));
      }
    } finally {
      this.writing.delete(uid);
    }
  }

  /** true when done with this status (written, or the pod is gone); false to retry. */
  private async write(pod: Pod, status: PodStatus): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    const body: Record<string, unknown> = { ...status };
    // A merge patch keeps keys it does not mention: clear those the new status dropped.
    for (const key of Object.keys(this.written.get(uid) ?? pod.status ?? {}))
      if (!(key in body)) body[key] = null;
    try {
      // metadata.uid is a precondition: a pod deleted and created again under the same
      // name has another uid, and the apiserver refuses (409) the old pod's status for it.
      await this.client.patch<Pod>(
        resources.pods,
        name,
        { metadata: { uid }, status: body },
        {
          namespace,
          subresource: 'status',
          timeoutMs: 10_000,
        },
      );
      this.written.set(uid, status);
      this.trace?.(uid, 'status-written', status.phase);
      return true;
    } catch (err) {
      if (isNotFound(err) || isUidMismatch(err)) {
        // The pod this status is about is gone (or replaced): nothing to report it to.
        this.written.delete(uid);
        this.pending.delete(uid);
        return true;
      }
      this.log.warn({ pod: `${namespace}/${name}`, err: (err as Error).message }, 'pod status update failed');
      return false;
    }
  }

  async podTerminated(pod: Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? 'default';
    try {
      // Everything the pod ran is gone: finish the deletion the user started.
      await this.client.delete(resources.pods, name, {
        namespace,
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata?.uid },
      });
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err))
        this.log.warn({ pod: `${namespace}/${name}`, err }, 'final pod delete failed');
    }
    this.written.delete(pod.metadata?.uid ?? '');
  }
}

/** Longest an event waits behind pod syncs: a long pull must not hide its Pulling event. */
const MAX_EVENT_HOLD_MS = 1000;

/**
 * Events through the client's recorder. While pods sync, their events wait (at
 * most MAX_EVENT_HOLD_MS, in order): measured on two cores, each event write
 * (apiserver, three store members' fsyncs) made the sandbox and container calls
 * it overlapped slower, about 80 ms per pod start in all; written once the sync
 * is done they cost the pod nothing.
 */
export class ApiEventSink implements EventSink {
  private readonly recorder: EventRecorder;
  private holds = 0;
  private held: (() => void)[] = [];
  private holdTimer: NodeJS.Timeout | undefined;

  constructor(client: KubeClient, nodeName: string, log: Logger) {
    this.recorder = new EventRecorder(client, {
      component: 'kubelet',
      host: nodeName,
      onError: (err) => log.debug({ err }, 'event write failed'),
    });
  }

  event(pod: Pod, type: EventType, reason: string, message: string): void {
    const record = () =>
      this.recorder.event({ apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata }, type, reason, message);
    if (this.holds === 0) {
      record();
      return;
    }
    this.held.push(record);
    this.holdTimer ??= setTimeout(() => this.release(), MAX_EVENT_HOLD_MS);
  }

  hold(): () => void {
    this.holds++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.holds--;
      if (this.holds === 0) this.release();
    };
  }

  flush(): Promise<void> {
    this.release();
    return this.recorder.flush();
  }

  /** Records every held event, in the order they came. */
  private release(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    const held = this.held;
    this.held = [];
    for (const record of held) record();
  }
}

export class ApiObjectSource implements ObjectSource, TokenIssuer {
  constructor(private readonly client: KubeClient) {}

  /** POST serviceaccounts/<name>/token, bound to the pod (the Node authorizer allows it for our pods). */
  async requestToken(spec: TokenRequestSpec): Promise<IssuedToken> {
    const res = await this.client.request<{ status?: { token?: string; expirationTimestamp?: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(spec.namespace)}/serviceaccounts/${encodeURIComponent(spec.serviceAccount)}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: spec.audiences,
          expirationSeconds: spec.expirationSeconds,
          boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: spec.pod.name, uid: spec.pod.uid },
        },
      },
    });
    const token = res.status?.token;
    if (!token) throw new Error('the apiserver answered the token request without a token');
    return {
      token,
      expiresAt:
        Date.parse(res.status?.expirationTimestamp ?? '') || Date.now() + spec.expirationSeconds * 1000,
    };
  }

  configMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.getIfExists<ConfigMap>(resources.configmaps, name, namespace);
  }

  secret(namespace: string, name: string): Promise<Secret | undefined> {
    return this.getIfExists<Secret>(resources.secrets, name, namespace);
  }

  persistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    return this.getIfExists<PersistentVolumeClaim>(resources.persistentvolumeclaims, name, namespace);
  }

  persistentVolume(name: string): Promise<PersistentVolume | undefined> {
    return this.getIfExists<PersistentVolume>(resources.persistentvolumes, name);
  }

  /** The object, or undefined when the apiserver says it does not exist (a pod may name one not made yet). */
  private async getIfExists<T extends KubeObject>(
    resource: ResourceRef,
    name: string,
    namespace?: string,
  ): Promise<T | undefined> {
    try {
      return await this.client.get<T>(resource, name, namespace === undefined ? {} : { namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
