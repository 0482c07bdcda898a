// The small interfaces through which the pod logic meets the rest of the
// cluster. The daemon plugs in apiserver-backed ones (@kubit/client); tests
// plug in recording ones.
import type {
  ConfigMap,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PodStatus,
  Secret,
} from 'kubernetes-types/core/v1.js';

export type EventType = 'Normal' | 'Warning';

/** Where computed pod statuses go (the daemon: PUT pods/{name}/status). */
export interface PodStatusSink {
  /** Called whenever a pod's status changes; the latest call wins. */
  setStatus(pod: Pod, status: PodStatus): void | Promise<void>;
  /** The pod was deleted and everything it ran is gone: it may now be removed for good. */
  podTerminated(pod: Pod): void | Promise<void>;
}

/** Where events about pods go (the daemon: the event recorder). */
export interface EventSink {
  event(pod: Pod, type: EventType, reason: string, message: string): void;
  /**
   * Holds events back while a pod is being synced, so their writes do not compete
   * with the runtime's work (sandbox, containers) and the pod's own status write on
   * a small machine; the returned function lets them go. Optional.
   */
  hold?(): () => void;
}

/** ConfigMaps and Secrets for volumes and env (the daemon: GETs or informers). undefined = not found. */
export interface ObjectSource {
  configMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<Secret | undefined>;
  persistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined>;
  persistentVolume(name: string): Promise<PersistentVolume | undefined>;
}

/** A sink that keeps everything, for tests and for looking at what happened. */
export class RecordingSink implements PodStatusSink, EventSink {
  readonly statuses = new Map<string, PodStatus>();
  readonly events: { pod: string; type: EventType; reason: string; message: string }[] = [];
  readonly terminated: string[] = [];
  private listeners: (() => void)[] = [];

  setStatus(pod: Pod, status: PodStatus): void {
    this.statuses.set(`${pod.metadata?.namespace}/${pod.metadata?.name}`, structuredClone(status));
    this.notify();
  }

  podTerminated(pod: Pod): void {
    this.terminated.push(`${pod.metadata?.namespace}/${pod.metadata?.name}`);
    this.notify();
  }

  event(pod: Pod, type: EventType, reason: string, message: string): void {
    this.events.push({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, type, reason, message });
    this.notify();
  }

  status(key: string): PodStatus | undefined {
    return this.statuses.get(key);
  }

  reasons(key: string): string[] {
    return this.events.filter((e) => e.pod === key).map((e) => e.reason);
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  private notify(): void {
    for (const fn of this.listeners) fn();
  }
}

/** ConfigMaps and Secrets held in memory. */
export class MemoryObjectSource implements ObjectSource {
  readonly configMaps = new Map<string, ConfigMap>();
  readonly secrets = new Map<string, Secret>();
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly volumes = new Map<string, PersistentVolume>();

  async persistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined> {
    return this.claims.get(`${namespace}/${name}`);
  }

  async persistentVolume(name: string): Promise<PersistentVolume | undefined> {
    return this.volumes.get(name);
  }

  putClaim(c: PersistentVolumeClaim): void {
    this.claims.set(`${c.metadata?.namespace ?? 'default'}/${c.metadata?.name}`, c);
  }

  putVolume(v: PersistentVolume): void {
    this.volumes.set(v.metadata?.name ?? '', v);
  }

  async configMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    return this.configMaps.get(`${namespace}/${name}`);
  }

  async secret(namespace: string, name: string): Promise<Secret | undefined> {
    return this.secrets.get(`${namespace}/${name}`);
  }

  putConfigMap(cm: ConfigMap): void {
    this.configMaps.set(`${cm.metadata?.namespace ?? 'default'}/${cm.metadata?.name}`, cm);
  }

  putSecret(s: Secret): void {
    this.secrets.set(`${s.metadata?.namespace ?? 'default'}/${s.metadata?.name}`, s);
  }
}
