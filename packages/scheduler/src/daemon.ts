// kubit-scheduler as a process: informers for nodes and pods feed the Scheduler;
// with --leader-elect only the holder of the kube-system/kube-scheduler Lease
// schedules, and a replica that loses the lease exits (as kube-scheduler does),
// so it can never bind a pod on stale beliefs.
import { hostname } from 'node:os';
import {
  EventRecorder,
  HttpTransport,
  type Informer,
  KubeClient,
  LeaderElector,
  loadClientConfig,
  type ResourceRef,
  resources,
  SharedInformerFactory,
} from '@kubit/client';
import {
  Counter,
  createLogger,
  createRegistry,
  type Logger,
  type Registry,
  Shutdown,
  StartupError,
  serveOperations,
} from '@kubit/daemon';
import { EventSink } from './event-sink.js';
import {
  buildFramework,
  defaultConfig,
  loadSchedulerConfig,
  type SchedulerConfig,
} from './framework/profile.js';
import { ActionType, type EventResource } from './framework/types.js';
import { KubeSchedulerApi } from './kube-api.js';
import { createSchedulerMetrics } from './metrics.js';
import { podKey } from './pod-info.js';
import type { DisruptionBudget } from './preemption/victims.js';
import { Scheduler } from './scheduler.js';
import type { Node, Pod, PodDisruptionBudget } from './types.js';
import { InformerVolumeAccess } from './volume-access.js';

/** Bindings the scheduler keeps in flight (the loop waits for a slot beyond this). */
const BINDINGS_IN_FLIGHT = 256;

/** "Scheduled" events written at once (each is a store write: they compete with bindings). */
const EVENT_WRITERS = 4;

export interface DaemonOptions {
  kubeconfig?: string;
  master?: string;
  config?: string;
  leaderElect: boolean;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  lockName: string;
  lockNamespace: string;
  securePort: number;
  bindAddress: string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  /** Replaces the config's top-level percentageOfNodesToScore (profiles that set their own keep it). */
  percentageOfNodesToScore?: number;
}

export async function runDaemon(o: DaemonOptions): Promise<void> {
  const log = createLogger({ name: 'kubit-scheduler' });
  const { cfg, frameworks } = loadProfiles(o);
  const clients = schedulerClients(o);
  const registry = createRegistry();
  const wired = wireScheduler(cfg, frameworks, clients, registry, log);
  const shutdown = new Shutdown(log);
  shutdown.install();
  if (Boolean(o.tlsCertFile) !== Boolean(o.tlsPrivateKeyFile)) {
    throw new StartupError('--tls-cert-file and --tls-private-key-file go together');
  }
  await serveOperations({
    component: 'kubit-scheduler',
    bindAddress: o.bindAddress,
    securePort: o.securePort,
    tlsCertFile: o.tlsCertFile,
    tlsPrivateKeyFile: o.tlsPrivateKeyFile,
    registry,
    log,
    shutdown,
    readiness: [
      {
        name: 'informer-sync',
        check: () => {
          if (!wired.podInformer.hasSynced() || !wired.nodeInformer.hasSynced())
            throw new Error('informers not synced yet');
        },
      },
    ],
  });
  await syncCaches(wired, shutdown, frameworks, log);
  if (o.leaderElect) await scheduleWhileLeading(o, clients.client, wired, shutdown, log);
  else await scheduleUntilShutdown(wired, shutdown, log);
}

/** The scheduler configuration file (or the default one) and a framework per profile. */
function loadProfiles(o: DaemonOptions): {
  cfg: SchedulerConfig;
  frameworks: ReturnType<typeof buildFramework>[];
} {
  let cfg: SchedulerConfig;
  try {
    cfg = o.config ? loadSchedulerConfig(o.config) : defaultConfig();
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
  const percentage = o.percentageOfNodesToScore ?? cfg.percentageOfNodesToScore;
  return { cfg, frameworks: cfg.profiles.map((p) => buildFramework(p, percentage)) };
}

interface SchedulerClients {
  client: KubeClient;
  eventClient: KubeClient;
}

function schedulerClients(o: DaemonOptions): SchedulerClients {
  try {
    const config = loadClientConfig({ kubeconfig: o.kubeconfig, server: o.master });
    const userAgent = 'kubit-scheduler';
    // One connection per binding in flight (HTTP/1.1 carries one request at a time):
    // the store commits the writes that arrive together with one fsync and one raft
    // round, so many outstanding bindings make each cheaper. Measured at 3,000 pods
    // (store CPU per pod, 3 members): 64 connections 1.55 ms, 256 connections 1.10 ms.
    // The informers' watches and lists and the lease need a few more.
    const client = new KubeClient(config, {
      userAgent,
      transport: new HttpTransport(config, { userAgent, maxSockets: BINDINGS_IN_FLIGHT + 8 }),
    });
    // Events get connections of their own: in the shared pool they would queue behind
    // hundreds of bindings and mostly be dropped during a burst.
    const eventClient = new KubeClient(config, {
      userAgent,
      transport: new HttpTransport(config, { userAgent, maxSockets: EVENT_WRITERS }),
    });
    return { client, eventClient };
  } catch (err) {
    throw new StartupError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
}

const PDB_RESOURCE: ResourceRef = {
  group: 'policy',
  version: 'v1',
  resource: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

/** What preemption reads of a budget. */
function disruptionBudgetOf(pdb: PodDisruptionBudget): DisruptionBudget {
  return {
    namespace: pdb.metadata?.namespace ?? 'default',
    selector: pdb.spec?.selector,
    disruptionsAllowed: pdb.status?.disruptionsAllowed ?? 0,
    disruptedPods: new Set(Object.keys(pdb.status?.disruptedPods ?? {})),
  };
}

/** The scheduler, fed by informers, with its event writers. Nothing runs yet. */
interface WiredScheduler {
  scheduler: Scheduler;
  factory: SharedInformerFactory;
  podInformer: Informer<Pod & { metadata?: object }>;
  nodeInformer: Informer<Node & { metadata?: object }>;
  recorder: EventRecorder;
  sink: EventSink;
}

function wireScheduler(
  cfg: SchedulerConfig,
  frameworks: ReturnType<typeof buildFramework>[],
  { client, eventClient }: SchedulerClients,
  registry: Registry,
  log: Logger,
): WiredScheduler {
  const recorder = new EventRecorder(client, {
    component: 'default-scheduler',
    host: hostname(),
    onError: (err) => log.debug({ err: (err as Error).message }, 'event not recorded'),
  });
  const factory = new SharedInformerFactory(client, {
    onError: (err) => log.warn({ err: (err as Error).message }, 'list/watch failed; retrying'),
  });
  const podInformer = factory.forResource<Pod & { metadata?: object }>(resources.pods);
  const nodeInformer = factory.forResource<Node & { metadata?: object }>(resources.nodes);
  // Namespace labels, for pod (anti-)affinity terms with a namespaceSelector.
  const nsInformer = factory.forResource(resources.namespaces);
  // Claims, volumes, classes and capacities, for VolumeBinding.
  const volumes = new InformerVolumeAccess(factory, client);
  // PodDisruptionBudgets, which preemption tries not to break.
  const pdbInformer = factory.forResource<PodDisruptionBudget>(PDB_RESOURCE);
  const eventsDropped = new Counter({
    name: 'scheduler_events_dropped_total',
    help: 'Scheduled events not written because the event queue was full (events are best effort).',
    registers: [registry],
  });
  const sink = new EventSink({
    component: 'default-scheduler',
    host: hostname(),
    concurrency: EVENT_WRITERS,
    write: (namespace, event) => eventClient.create(resources.events, event, { namespace }),
    onDrop: () => eventsDropped.inc(),
    onError: (err) => log.debug({ err: (err as Error).message }, 'event not recorded'),
  });
  const api = new KubeSchedulerApi(
    client,
    recorder,
    (pod) => podInformer.store.getByKey(podKey(pod)) as Pod | undefined,
    sink,
  );

  let scheduler: Scheduler | null = null;
  const metrics = createSchedulerMetrics(
    registry,
    () => scheduler?.queue.sizes() ?? { active: 0, backoff: 0, unschedulable: 0 },
  );
  scheduler = new Scheduler({
    api,
    frameworks,
    metrics,
    log,
    initialBackoffMs: cfg.podInitialBackoffSeconds * 1000,
    maxBackoffMs: cfg.podMaxBackoffSeconds * 1000,
    namespaceLabels: (ns) => nsInformer.store.get(ns)?.metadata?.labels,
    maxInFlightBindings: BINDINGS_IN_FLIGHT,
    volumes,
    disruptionBudgets: () => pdbInformer.store.list().map(disruptionBudgetOf),
  });
  const s = scheduler;
  wakeOnVolumeEvents(s, volumes);
  nodeInformer.addEventHandler({
    onAdd: (n) => s.onNodeAdd(n),
    onUpdate: (a, b) => s.onNodeUpdate(a, b),
    onDelete: (n) => s.onNodeDelete(n),
  });
  podInformer.addEventHandler({
    onAdd: (p) => s.onPodAdd(p),
    onUpdate: (a, b) => s.onPodUpdate(a, b),
    onDelete: (p) => s.onPodDelete(p),
  });
  return { scheduler: s, factory, podInformer, nodeInformer, recorder, sink };
}

/** Pods VolumeBinding turned away may fit once a claim, volume, class or capacity changes. */
function wakeOnVolumeEvents(s: Scheduler, v: InformerVolumeAccess): void {
  const on = (resource: EventResource, i: Pick<Informer<object>, 'addEventHandler'>) =>
    i.addEventHandler({
      onAdd: () => s.queue.onEvent({ resource, action: ActionType.Add, label: `${resource}Add` }),
      onUpdate: () => s.queue.onEvent({ resource, action: ActionType.Update, label: `${resource}Update` }),
    });
  on('PersistentVolumeClaim', v.claims);
  on('PersistentVolume', v.pvs);
  on('StorageClass', v.classes);
  on('CSIStorageCapacity', v.capacityInformer);
}

async function syncCaches(
  w: WiredScheduler,
  shutdown: Shutdown,
  frameworks: ReturnType<typeof buildFramework>[],
  log: Logger,
): Promise<void> {
  w.factory.start();
  shutdown.add(() => w.factory.stop());
  await w.factory.waitForCacheSync();
  log.info(
    { nodes: w.nodeInformer.store.list().length, profiles: frameworks.map((f) => f.schedulerName) },
    'caches synced',
  );
}

/** Schedules until `signal` aborts, then lets the bindings in flight finish. */
async function schedule(
  w: WiredScheduler,
  signal: AbortSignal,
  identity: string,
  log: Logger,
): Promise<void> {
  log.info({ identity }, 'scheduling');
  const loop = w.scheduler.start();
  await new Promise<void>((res) => signal.addEventListener('abort', () => res(), { once: true }));
  await w.scheduler.stop();
  await loop;
}

function newIdentity(): string {
  return `${hostname()}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
}

async function scheduleUntilShutdown(w: WiredScheduler, shutdown: Shutdown, log: Logger): Promise<void> {
  const ac = new AbortController();
  shutdown.add(async () => {
    ac.abort();
    await Promise.all([w.recorder.flush(), w.sink.flush()]);
  });
  await schedule(w, ac.signal, newIdentity(), log);
}

/** --leader-elect: schedules only while holding the Lease; losing it ends the process. */
async function scheduleWhileLeading(
  o: DaemonOptions,
  client: KubeClient,
  w: WiredScheduler,
  shutdown: Shutdown,
  log: Logger,
): Promise<void> {
  const identity = newIdentity();
  const stopElection = new AbortController();
  let stopping = false;
  const elector = new LeaderElector(client, {
    lockName: o.lockName,
    lockNamespace: o.lockNamespace,
    identity,
    leaseDurationMs: o.leaseDurationMs,
    renewDeadlineMs: o.renewDeadlineMs,
    retryPeriodMs: o.retryPeriodMs,
    onStartedLeading: (signal) => schedule(w, signal, identity, log),
    onNewLeader: (who) => log.info({ leader: who }, 'new leader elected'),
    onStoppedLeading: () => {
      if (stopping) return;
      // Our cache may now be behind the new leader's bindings: start over as a fresh process would.
      log.error({ identity }, 'leader election lost');
      process.exit(1);
    },
    onError: (err) => log.warn({ err: (err as Error).message }, 'leader election'),
  });
  const election = elector.run(stopElection.signal);
  shutdown.add(async () => {
    stopping = true;
    stopElection.abort();
    await election;
    await Promise.all([w.recorder.flush(), w.sink.flush()]);
  });
  await election;
}
