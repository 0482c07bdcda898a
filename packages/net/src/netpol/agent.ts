// The NetworkPolicy agent of kubit-net: informers for NetworkPolicies, Pods and
// Namespaces feed the planner; each change (batched for minSyncPeriodMs) is one
// nft transaction of only what differs from what the kernel holds. At start,
// and every resyncPeriodMs, "what the kernel holds" is read back from the
// kernel itself, so a restart (even after kill -9, which leaves the rules in
// place and traffic filtered) rewrites nothing that is still right, and a table
// someone flushed is repaired.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Namespace, NetworkPolicy, Pod } from '@kubit/api';
import { type KubeClient, type ResourceRef, resources, SharedInformerFactory } from '@kubit/client';
import type { Logger } from '@kubit/daemon';
import { NftRunner } from '@kubit/proxy';
import { netpolDiff } from './differ.js';
import { readNetpolTable } from './kernel.js';
import { planPolicies } from './planner.js';
import type { NetpolRuleset } from './ruleset.js';

const run = promisify(execFile);

export const networkPoliciesResource: ResourceRef = {
  group: 'networking.k8s.io',
  version: 'v1',
  resource: 'networkpolicies',
  kind: 'NetworkPolicy',
  namespaced: true,
};

export interface NetworkPolicyAgentOptions {
  client: KubeClient;
  /** This node: its pods (spec.nodeName) are the ones its table filters. */
  nodeName: string;
  /** This node's pod subnet; a pod in it counts as local before its nodeName is seen. */
  podCIDR?: string;
  /** Its nft table (default netpolTableName(nodeName)): --nft-table. */
  table?: string;
  log: Logger;
  /** How nft is run (default: `nft` in this network namespace). */
  nft?: NftRunner;
  /** Changes within this window are applied together (default 100 ms). */
  minSyncPeriodMs?: number;
  /** How often the kernel's table is read back and repaired (default 60 s). */
  resyncPeriodMs?: number;
  /** Turn on net.bridge.bridge-nf-call-iptables (default true): see ruleset.ts. */
  bridgeNetfilter?: boolean;
}

export interface NetworkPolicyAgent {
  /** Resolves when the first ruleset after the caches synced is in the kernel. */
  synced: Promise<void>;
  /** Stops watching; the rules stay in the kernel (pods stay protected while kubit-net restarts). */
  stop(): Promise<void>;
  /** The last ruleset applied (for tests, metrics and benchmarks). */
  current(): NetpolRuleset | undefined;
  /** Resolves after the next sync that starts after this call has finished (tests, benchmarks). */
  flush(): Promise<void>;
}

export function runNetworkPolicyAgent(o: NetworkPolicyAgentOptions): NetworkPolicyAgent {
  const log = o.log;
  const nft = o.nft ?? new NftRunner();
  const minSyncMs = o.minSyncPeriodMs ?? 100;
  const resyncMs = o.resyncPeriodMs ?? 60_000;
  const factory = new SharedInformerFactory(o.client, {
    onError: (err) => log.warn({ err: (err as Error).message }, 'netpol: list/watch failed; retrying'),
  });
  const policies = factory.forResource<NetworkPolicy & { metadata?: object }>(networkPoliciesResource);
  const pods = factory.forResource<Pod & { metadata?: object }>(resources.pods);
  const namespaces = factory.forResource<Namespace & { metadata?: object }>(resources.namespaces);

  let applied: NetpolRuleset | undefined;
  /** Whether `applied` may not be what the kernel holds (start, a failed apply, the periodic check). */
  let readKernel = true;
  let started = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let dirty = false;
  let failures = 0;
  let waiters: (() => void)[] = [];
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
        if (dirty) schedule(failures > 0 ? Math.min(30_000, 500 * 2 ** failures) : minSyncMs);
      });
    }, delayMs);
  };

  const sync = async () => {
    dirty = false;
    const done = waiters;
    waiters = [];
    try {
      const t0 = performance.now();
      const next = planPolicies(
        policies.store.list() as NetworkPolicy[],
        pods.store.list() as Pod[],
        namespaces.store.list() as Namespace[],
        { name: o.nodeName, podCIDR: o.podCIDR, table: o.table },
      );
      for (const s of next.skipped) log.warn(s, 'netpol: policy left out');
      if (readKernel) applied = await readNetpolTable(nft, next.table);
      const t1 = performance.now();
      const script = netpolDiff(applied, next);
      const t2 = performance.now();
      if (script) await nft.apply(script);
      const times = {
        planMs: Math.round(t1 - t0),
        diffMs: Math.round(t2 - t1),
        applyMs: Math.round(performance.now() - t2),
      };
      if (script || readKernel)
        log.info(
          { table: next.table, lines: script ? script.split('\n').length - 1 : 0, ...next.stats, ...times },
          'netpol: rules in step',
        );
      applied = next;
      readKernel = false;
      failures = 0;
      resolveSynced();
    } catch (err) {
      failures++;
      readKernel = true;
      dirty = true;
      log.error({ err: (err as Error).message, failures }, 'netpol: could not program nftables; retrying');
    } finally {
      for (const w of done) w();
    }
  };

  const onChange = () => schedule();
  for (const inf of [policies, pods, namespaces] as const) {
    inf.addEventHandler({ onAdd: onChange, onUpdate: onChange, onDelete: onChange });
  }

  const resync = setInterval(() => {
    readKernel = true;
    schedule();
  }, resyncMs);
  resync.unref();

  const begin = async () => {
    if (o.bridgeNetfilter ?? true) {
      const [cmd, args] = nft.command('sysctl', ['-qw', 'net.bridge.bridge-nf-call-iptables=1']);
      // Without it pods on one bridge bypass the forward hook; say so, but keep going (other rules still hold).
      await run(cmd, args).catch((err: Error) =>
        log.error(
          { err: err.message },
          'netpol: cannot turn on bridge-nf-call-iptables; same-bridge traffic is not filtered',
        ),
      );
    }
    factory.start();
    await factory.waitForCacheSync();
    if (stopped) return;
    started = true;
    schedule(0);
  };
  begin().catch((err: Error) => log.error({ err: err.message }, 'netpol: agent failed to start'));

  return {
    synced,
    current: () => applied,
    flush: () =>
      new Promise<void>((res) => {
        waiters.push(res);
        schedule(0);
      }),
    async stop() {
      stopped = true;
      clearInterval(resync);
      if (timer) clearTimeout(timer);
      await running;
      for (const w of waiters) w();
      await factory.stop();
    },
  };
}
