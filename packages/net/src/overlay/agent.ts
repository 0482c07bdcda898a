// The overlay agent of kubit-net: a Node informer feeds the planner; each
// change (batched for minSyncPeriodMs) reads the kernel back, plans, and writes
// only the difference (one ip batch, one bridge batch). Reading the kernel on
// every sync is what makes a restart after kill -9 rewrite nothing that is
// right, and repairs entries someone removed; it costs two processes.
// The agent also publishes this node's tunnel endpoint and pod MTU as
// annotations on its own Node, and reports peers it must leave out as Warning
// Events on those Nodes (once per problem, again when it comes back).
import type { Node } from '@kubit/api';
import { EventRecorder, type KubeClient, resources, SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { overlayDiff } from './differ.js';
import { Iproute, readOverlayKernel } from './kernel.js';
import { type OverlayPlan, planOverlay } from './planner.js';
import { ANNOTATION_PREFIX, type OverlayConfig } from './types.js';

export interface OverlayAgentOptions {
  client: KubeClient;
  nodeName: string;
  config: OverlayConfig;
  /** --underlay-address (default: this Node's InternalIP). */
  underlayAddress?: string;
  log: Logger;
  ip?: Iproute;
  /** Changes within this window are applied together (default 50 ms). */
  minSyncPeriodMs?: number;
  /** How often the kernel is checked without a change (default 10 s). */
  resyncPeriodMs?: number;
  /** Called after each sync that reached the kernel (metrics). */
  onSync?: (s: OverlaySyncResult) => void;
}

export interface OverlaySyncResult {
  plan: OverlayPlan;
  /** Commands written (0 when the kernel was right). */
  commands: number;
  durationMs: number;
}

export interface OverlayAgent {
  /** Resolves after the first sync that programmed (or found right) the kernel. */
  synced: Promise<void>;
  /** The last sync's result. */
  last(): OverlaySyncResult | undefined;
  /** Whether the last sync succeeded and came within `ms`. */
  healthy(ms: number): boolean;
  /** Stops watching; the kernel keeps its state (traffic keeps flowing). */
  stop(): Promise<void>;
}

/** The fields of a Node the overlay depends on: other updates (status heartbeats) cause no sync. */
function relevant(n: Node): string {
  const ann = Object.entries(n.metadata?.annotations ?? {})
    .filter(([k]) => k.startsWith(ANNOTATION_PREFIX))
    .sort();
  const addrs = (n.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address);
  return JSON.stringify([n.spec?.podCIDR, addrs, ann, n.metadata?.creationTimestamp]);
}

export function runOverlayAgent(o: OverlayAgentOptions): OverlayAgent {
  const log = o.log;
  const ip = o.ip ?? new Iproute();
  const minSyncMs = o.minSyncPeriodMs ?? 50;
  const factory = new SharedInformerFactory(o.client, {
    onError: (err) => log.warn({ err: (err as Error).message }, 'overlay: node list/watch failed; retrying'),
  });
  const nodes = factory.forResource<Node & { metadata?: object }>(resources.nodes);
  const recorder = new EventRecorder(o.client, {
    component: 'kubit-net',
    host: o.nodeName,
    onError: (err) => log.warn({ err: (err as Error).message }, 'overlay: could not write an Event'),
  });
  /** Problems already reported (node/reason/message): each is said once while it lasts. */
  let reported = new Set<string>();
  let lastResult: OverlaySyncResult | undefined;
  let lastOkAt = 0;
  let lastNotReady = '';
  let started = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let dirty = false;
  let failures = 0;
  let resolveSynced: () => void = () => undefined;
  const synced = new Promise<void>((res) => {
    resolveSynced = res;
  });

  const schedule = (delayMs = minSyncMs) => {
    dirty = true;
    if (!started || stopped || timer || running) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = sync().finally(() => {
        running = undefined;
        if (dirty) schedule(failures > 0 ? Math.min(30_000, 250 * 2 ** failures) : minSyncMs);
      });
    }, delayMs);
  };

  const publish = async (self: Node, want: Record<string, string>) => {
    const have = self.metadata?.annotations ?? {};
    const changed = Object.entries(want).filter(([k, v]) => have[k] !== v);
    if (changed.length === 0) return;
    await o.client.patch(resources.nodes, o.nodeName, {
      metadata: { annotations: Object.fromEntries(changed) },
    });
    log.info({ annotations: Object.fromEntries(changed) }, 'overlay: published this node’s tunnel endpoint');
  };

  const report = (plan: OverlayPlan, all: Node[]) => {
    const now = new Set<string>();
    for (const p of plan.problems) {
      const key = `${p.node}\0${p.reason}\0${p.message}`;
      now.add(key);
      if (reported.has(key)) continue;
      log.warn({ node: p.node, reason: p.reason }, `overlay: ${p.message}`);
      const n = all.find((x) => x.metadata?.name === p.node);
      if (n) recorder.event({ ...n, apiVersion: 'v1', kind: 'Node' }, 'Warning', p.reason, p.message);
    }
    reported = now;
  };

  const sync = async () => {
    dirty = false;
    const t0 = performance.now();
    try {
      const all = nodes.store.list() as Node[];
      const kernel = await readOverlayKernel(ip, o.config.device);
      const plan = planOverlay({
        config: o.config,
        nodeName: o.nodeName,
        underlayAddress: o.underlayAddress,
        nodes: all,
        hostRoutes: kernel.hostRoutes,
        hostAddresses: kernel.hostAddresses,
      });
      if (!plan.state) {
        // Nothing is touched until this node can be planned: whatever works keeps working.
        if (plan.notReady !== lastNotReady) log.warn(`overlay: waiting: ${plan.notReady}`);
        lastNotReady = plan.notReady ?? '';
        return;
      }
      lastNotReady = '';
      const scripts = overlayDiff(kernel, plan.state, o.config.device);
      await ip.batch('ip', scripts.ip);
      await ip.batch('bridge', scripts.bridge);
      const self = all.find((n) => n.metadata?.name === o.nodeName);
      if (self && plan.annotations) await publish(self, plan.annotations);
      report(plan, all);
      const commands = scripts.ip.length + scripts.bridge.length;
      lastResult = { plan, commands, durationMs: Math.round(performance.now() - t0) };
      if (commands > 0 || failures > 0 || lastOkAt === 0)
        log.info(
          {
            commands,
            ip: scripts.ip,
            bridge: scripts.bridge,
            peers: plan.peers,
            durationMs: lastResult.durationMs,
          },
          'overlay: kernel in step',
        );
      o.onSync?.(lastResult);
      failures = 0;
      lastOkAt = Date.now();
      resolveSynced();
    } catch (err) {
      failures++;
      dirty = true;
      log.error({ err: (err as Error).message, failures }, 'overlay: could not program the kernel; retrying');
    }
  };

  nodes.addEventHandler({
    onAdd: () => schedule(),
    onUpdate: (old, n) => {
      if (relevant(old as Node) !== relevant(n as Node)) schedule();
    },
    onDelete: () => schedule(),
  });
  const resync = setInterval(() => schedule(), o.resyncPeriodMs ?? 10_000);
  resync.unref();

  const begin = async () => {
    factory.start();
    await factory.waitForCacheSync();
    if (stopped) return;
    started = true;
    schedule(0);
  };
  begin().catch((err: Error) => log.error({ err: err.message }, 'overlay: agent failed to start'));

  return {
    synced,
    last: () => lastResult,
    healthy: (ms) => lastOkAt > 0 && failures === 0 && Date.now() - lastOkAt <= ms,
    async stop() {
      stopped = true;
      clearInterval(resync);
      if (timer) clearTimeout(timer);
      await running;
      await factory.stop();
      await recorder.flush();
    },
  };
}
