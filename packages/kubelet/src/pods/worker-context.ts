// What every pod worker shares (one per kubelet, built by the PodManager).

import type { ContainerRuntime } from '@kubit/cri';
import type { Logger } from '@kubit/daemon';
import type { Backoff } from './backoff.js';
import type { NodeDnsSettings } from './dns.js';
import type { ServiceSource } from './service-env.js';
import type { EventSink, ObjectSource, PodStatusSink } from './sinks.js';
import type { Tracer } from './trace.js';
import type { VolumeManager } from './volumes.js';

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
  /** Pulls under way, by image and credentials: pods starting together share one PullImage. */
  pulls: Map<string, Promise<void>>;
  /** --cluster-dns, --cluster-domain and the node's resolv.conf; absent: the runtime's default resolv.conf. */
  dns?: NodeDnsSettings;
  /** The Services pods see as environment variables; absent: none. */
  services?: ServiceSource;
  /** Notes start-up steps (see trace.ts); absent when not measuring. */
  trace?: Tracer;
}
