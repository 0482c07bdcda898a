// kubit-net as a process: the overlay agent (always) and the NetworkPolicy
// agent (--network-policy), health and metrics on --healthz-bind-address. On
// SIGTERM the watches stop and the kernel keeps its state (routes, device,
// neighbour and FDB entries, the netpol table), as kube-proxy leaves its rules:
// traffic keeps flowing while kubit-net restarts, and the next start rewrites
// only what is wrong. --cleanup removes all of it.
import type { Node } from '@kubit/api';
import { KubeClient, loadClientConfig, resources } from '@kubit/client';
import {
  createLogger,
  createRegistry,
  Gauge,
  Histogram,
  Shutdown,
  StartupError,
  startHealthServer,
} from '@kubit/daemon';
import { NftRunner } from '@kubit/proxy';
import { type NetworkPolicyAgent, runNetworkPolicyAgent } from './netpol/agent.js';
import { deleteNetpolTableScript } from './netpol/differ.js';
import { runOverlayAgent } from './overlay/agent.js';
import { cleanupScripts } from './overlay/differ.js';
import { Iproute, readOverlayKernel } from './overlay/kernel.js';
import type { OverlayConfig } from './overlay/types.js';

export interface NetDaemonOptions {
  kubeconfig: string;
  nodeName: string;
  overlay: OverlayConfig;
  underlayAddress?: string;
  networkPolicy: boolean;
  /** The NetworkPolicy table's name (--nft-table). */
  netpolTable: string;
  healthz?: { host: string; port: number };
  logLevel?: string;
}

/** The overlay's health: its last successful sync is at most this old (three resync periods). */
const HEALTHY_WITHIN_MS = 30_000;

export async function runCleanup(
  nodeName: string,
  device: string,
  table: string,
  logLevel?: string,
): Promise<void> {
  const log = createLogger({ name: 'kubit-net', level: logLevel });
  const ip = new Iproute();
  try {
    const kernel = await readOverlayKernel(ip, device);
    const scripts = cleanupScripts(kernel, device);
    await ip.batch('ip', scripts.ip);
    await new NftRunner().apply(deleteNetpolTableScript(table));
    log.info({ node: nodeName, device, routes: kernel.routes.size, netpolTable: table }, 'cleaned up');
  } catch (err) {
    throw new StartupError(`--cleanup: ${(err as Error).message}`);
  }
}

export async function runNetDaemon(o: NetDaemonOptions): Promise<void> {
  const log = createLogger({ name: 'kubit-net', level: o.logLevel });
  const ip = new Iproute();
  try {
    await ip.run('ip', ['-j', 'link', 'show', 'lo']);
    await ip.run('bridge', ['-j', 'fdb', 'show', 'dev', 'lo']);
  } catch (err) {
    throw new StartupError(
      `cannot run iproute2 (kubit-net needs Debian's iproute2 package and root): ${(err as Error).message}`,
    );
  }
  let client: KubeClient;
  try {
    client = new KubeClient(loadClientConfig({ kubeconfig: o.kubeconfig }), { userAgent: 'kubit-net' });
  } catch (err) {
    throw new StartupError(`cannot load the kubeconfig: ${(err as Error).message}`);
  }
  const registry = createRegistry();
  const peers = new Gauge({
    name: 'kubit_net_overlay_peers',
    help: 'Peers by how this node reaches their pods (host-gw, vxlan, skipped)',
    labelNames: ['backend'],
    registers: [registry],
  });
  const syncSeconds = new Histogram({
    name: 'kubit_net_overlay_sync_duration_seconds',
    help: 'Time of one overlay sync: read the kernel, plan, write the difference',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const commands = new Gauge({
    name: 'kubit_net_overlay_last_sync_commands',
    help: 'iproute2 commands the last overlay sync wrote (0 when the kernel was right)',
    registers: [registry],
  });
  const shutdown = new Shutdown(log);
  shutdown.install();

  const overlay = runOverlayAgent({
    client,
    nodeName: o.nodeName,
    config: o.overlay,
    underlayAddress: o.underlayAddress,
    log,
    ip,
    onSync: (s) => {
      syncSeconds.observe(s.durationMs / 1000);
      commands.set(s.commands);
      for (const b of ['host-gw', 'vxlan', 'skipped'])
        peers.set({ backend: b }, s.plan.peers.filter((p) => p.backend === b).length);
    },
  });
  shutdown.add(() => overlay.stop());
  let netpol: NetworkPolicyAgent | undefined;
  if (o.networkPolicy) {
    // The pod subnet lets the netpol agent count a pod as this node's before its nodeName is seen.
    const self = await client.get<Node>(resources.nodes, o.nodeName).catch((err: Error) => {
      log.warn({ err: err.message }, 'cannot read this node yet; NetworkPolicy goes by spec.nodeName only');
      return undefined;
    });
    netpol = runNetworkPolicyAgent({
      client,
      nodeName: o.nodeName,
      podCIDR: self?.spec?.podCIDR,
      table: o.netpolTable,
      log,
    });
    shutdown.add(() => netpol?.stop() ?? Promise.resolve());
  }
  if (o.healthz) {
    const healthz = o.healthz;
    const app = await startHealthServer({
      host: healthz.host,
      port: healthz.port,
      registry,
      log,
      readiness: [
        {
          name: 'overlay',
          check: () => {
            if (!overlay.healthy(HEALTHY_WITHIN_MS))
              throw new Error('the overlay has not been programmed successfully lately');
          },
        },
      ],
    }).catch((err: Error) => {
      throw new StartupError(`cannot serve health on ${healthz.host}:${healthz.port}: ${err.message}`);
    });
    shutdown.add(() => app.close());
  }
  log.info(
    { node: o.nodeName, ...o.overlay, underlay: o.underlayAddress, networkPolicy: o.networkPolicy },
    'kubit-net started',
  );
}
