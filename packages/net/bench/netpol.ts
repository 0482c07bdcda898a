// pnpm bench:netpol — how long a NetworkPolicy change takes to reach the kernel
// with 1,000 policies and 1,000 pods (pods as API objects only, all on this
// node, so every policy has targets and chains here). A real control plane; the
// agent runs in this process against a network namespace the script makes and
// removes. A change counts as in effect when the agent's nft transaction with
// it has returned (the ruleset it then holds as applied contains the change).
//
//   node packages/net/dist/bench/netpol.js [--policies=1000] [--pods=1000] [--samples=30]
//
// Build first: pnpm -s build
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import type { NetworkPolicy, Pod } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { createLogger } from '@kubit/daemon';
import { hashAndTruncate, NftRunner } from '@kubit/proxy';
import { startControlPlane } from '@kubit/testkit';
import {
  type NetpolRuleset,
  networkPoliciesResource,
  planPolicies,
  runNetworkPolicyAgent,
} from '../src/index.js';

const flag = (name: string, dflt: number) => {
  const f = process.argv.find((a) => a.startsWith(`--${name}=`));
  return f ? Number(f.split('=')[1]) : dflt;
};
const POLICIES = flag('policies', 1000);
const PODS = flag('pods', 1000);
const SAMPLES = flag('samples', 30);
const NAMESPACES = 10;
const NODE = `bench-netpol-${process.pid}`;

async function concurrently<T>(items: T[], n: number, fn: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const progress = (msg: string) => process.stderr.write(`bench:netpol: ${msg}\n`);
const fmt = (x: number) => `${x.toFixed(x < 10 ? 1 : 0)} ms`;

async function main() {
  const netns = `knpbench-${process.pid}`;
  execFileSync('ip', ['netns', 'add', netns]);
  const cp = await startControlPlane();
  const log = createLogger({ name: 'bench-netpol', level: process.env.BENCH_LOG_LEVEL ?? 'warn' });
  let agent: ReturnType<typeof runNetworkPolicyAgent> | undefined;
  try {
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    for (let i = 0; i < NAMESPACES; i++) {
      await client.create(resources.namespaces, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: `ns-${i}`, labels: { team: `t-${i}` } },
      });
    }
    const podIndexes = Array.from({ length: PODS }, (_, j) => j);
    await concurrently(podIndexes, 16, async (j) => {
      const ns = `ns-${j % NAMESPACES}`;
      const created = await client.create<Pod>(resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `pod-${j}`,
          namespace: ns,
          labels: { app: `app-${j % 20}`, role: `role-${j % 5}` },
        },
        spec: {
          nodeName: NODE,
          containers: [{ name: 'c', image: 'busybox', ports: [{ name: 'http', containerPort: 8080 }] }],
        },
      });
      await client.updateStatus(resources.pods, {
        ...created,
        status: { phase: 'Running', podIP: `10.50.${j >> 8}.${j & 255}` },
      });
    });
    const policy = (k: number, role: number): NetworkPolicy => ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: `np-${k}`, namespace: `ns-${k % NAMESPACES}` },
      spec: {
        podSelector: { matchLabels: { app: `app-${k % 20}` } },
        ingress: [
          {
            from: [
              { podSelector: { matchLabels: { role: `role-${role}` } } },
              { namespaceSelector: { matchLabels: { team: `t-${(k + 1) % NAMESPACES}` } } },
            ],
            ports: [{ port: 80 + (k % 10) }, { port: 'http' }],
          },
        ],
        ...(k % 4 === 0 ? { egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] } : {}),
      },
    });
    await concurrently(
      Array.from({ length: POLICIES }, (_, k) => k),
      16,
      (k) => client.create(networkPoliciesResource, policy(k, k % 5)),
    );

    // The planner alone, on the same objects.
    const [pols, pods, nss] = await Promise.all([
      client.list<NetworkPolicy>(networkPoliciesResource),
      client.list<Pod>(resources.pods),
      client.list(resources.namespaces),
    ]);
    const planTimes: number[] = [];
    let planned: NetpolRuleset | undefined;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      planned = planPolicies(pols.items, pods.items, nss.items as never, { name: NODE });
      planTimes.push(performance.now() - t0);
    }

    progress(`${PODS} pods and ${POLICIES} policies written; starting the agent`);
    const t0 = performance.now();
    agent = runNetworkPolicyAgent({
      client,
      nodeName: NODE,
      log,
      nft: new NftRunner({ netns }),
      minSyncPeriodMs: 0,
    });
    await agent.synced;
    const cold = performance.now() - t0;
    const a = agent;

    /** Waits until the applied ruleset passes `done`; returns ms since `start`. */
    const until = async (start: number, done: (r: NetpolRuleset) => boolean) => {
      for (;;) {
        const r = a.current();
        if (r && done(r)) return performance.now() - start;
        if (performance.now() - start > 60_000)
          throw new Error('a change did not reach the kernel within 60 s');
        await new Promise((res) => setTimeout(res, 1));
      }
    };
    const setText = (r: NetpolRuleset, name: string) => [...(r.sets.get(name)?.elements ?? [])].join(',');

    progress(`rules in the kernel after ${fmt(cold)}; measuring changes`);
    const policyChange: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      const k = (s * 37) % POLICIES;
      const ns = `ns-${k % NAMESPACES}`;
      const set = `in-${hashAndTruncate(`${ns}/np-${k}`)}-0`;
      const before = setText(a.current() as NetpolRuleset, set);
      const start = performance.now();
      await client.patch(
        networkPoliciesResource,
        `np-${k}`,
        { spec: { ingress: policy(k, (k + 1) % 5).spec?.ingress } },
        { namespace: ns },
      );
      policyChange.push(await until(start, (r) => setText(r, set) !== before));
    }

    const labelChange: number[] = [];
    const appOf = new Map<number, number>();
    for (let s = 0; s < SAMPLES; s++) {
      const j = (s * 53) % PODS;
      const ip = `10.50.${j >> 8}.${j & 255}`;
      const nsIndex = j % NAMESPACES;
      const ns = `ns-${nsIndex}`;
      // np-k selects app-(k % 20) in ns-(k % 10): of the two apps of this namespace's
      // policies, take the one the pod does not have, and wait until np-k targets it.
      const current = appOf.get(j) ?? j % 20;
      const k = current === nsIndex ? nsIndex + 10 : nsIndex;
      appOf.set(j, k % 20);
      const tgt = `tgt-${hashAndTruncate(`${ns}/np-${k}`)}`;
      const start = performance.now();
      await client.patch(
        resources.pods,
        `pod-${j}`,
        { metadata: { labels: { app: `app-${k % 20}` } } },
        { namespace: ns },
      );
      labelChange.push(await until(start, (r) => r.sets.get(tgt)?.elements.has(ip) === true));
    }

    const stats = planned?.stats;
    console.log(`\nbench:netpol — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores`);
    console.log(
      `${POLICIES} policies, ${PODS} pods in ${NAMESPACES} namespaces, all on this node (${stats?.isolatedIngress} pods isolated for ingress, ${stats?.isolatedEgress} for egress); ${planned?.chains.size} chains, ${planned?.sets.size} sets\n`,
    );
    const rows = [
      ['plan (pure, whole cluster)', fmt(percentile(planTimes, 50)), fmt(Math.max(...planTimes)), '5'],
      ['cold start to rules in kernel', fmt(cold), fmt(cold), '1'],
      [
        'policy change → in kernel',
        fmt(percentile(policyChange, 50)),
        fmt(percentile(policyChange, 99)),
        String(SAMPLES),
      ],
      [
        'pod label change → in kernel',
        fmt(percentile(labelChange, 50)),
        fmt(percentile(labelChange, 99)),
        String(SAMPLES),
      ],
    ];
    const header = ['what', 'p50', 'p99 / max', 'samples'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    for (const r of [header, ...rows]) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  '));
  } finally {
    await agent?.stop();
    await cp.stop();
    execFileSync('ip', ['netns', 'del', netns]);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
