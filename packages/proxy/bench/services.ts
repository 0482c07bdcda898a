// kubit-proxy's benchmark (the proxy half of `pnpm bench:services`):
//   1. network programming latency: with S Services of E endpoints each (default
//      1,000 × 10) programmed, one EndpointSlice change at a time (an endpoint
//      replaced by a new address) from the apiserver write until its rule is in
//      the kernel, seen from outside the proxy by polling `nft list chain`
//      (the poll's own cost is printed: it bounds the resolution); p50 and p99,
//      beside kube-proxy's SLO (p99 ≤ 30 s) and our target (p99 ≤ 1 s);
//   2. the time to program C Services (default 10,000, one endpoint each) from
//      cold: kubit-proxy started against a populated apiserver, until the whole
//      table is in the kernel (and the full sync's own duration from its metrics).
// A real control plane and kubit-proxy processes; the rules go into a network
// namespace this script makes and removes.
//
//   node --conditions=kubit-source --import tsx packages/proxy/bench/services.ts [S] [E] [samples] [C]
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { EndpointSlice, Service } from '@kubit/api';
import { formatIPv4, SERVICE_NAME_LABEL } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { freePort, startControlPlane, startDaemon, type TestProcess } from '@kubit/testkit';
import { endpointSlicesResource, LAST_CHANGE_TRIGGER_TIME } from '../src/daemon.js';
import { serviceChain } from '../src/names.js';
import { TABLE_FAMILY, TABLE_NAME } from '../src/ruleset.js';
import { createAll, metric, waitSynced } from './bench-kit.js';

const run = promisify(execFile);
const S = Number(process.argv[2] ?? 1_000);
const E = Number(process.argv[3] ?? 10);
const SAMPLES = Number(process.argv[4] ?? 200);
const C = Number(process.argv[5] ?? 10_000);

const ns = `kpb-${process.pid.toString(36)}`;
const cleanupNs = () => {
  try {
    execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
  } catch {}
};
process.once('exit', cleanupNs);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** 10.(96 + i / 65536).x.y: the i-th cluster IP; endpoints in 10.200.0.0/13. */
const clusterIP = (i: number) => formatIPv4((10 << 24) + (96 << 16) + 1000 + i);
const endpointIP = (n: number) => formatIPv4(((10 << 24) + (200 << 16) + n) >>> 0);

function svc(name: string, i: number): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default' },
    spec: { clusterIP: clusterIP(i), ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  };
}

function slice(name: string, ips: string[], trigger?: string): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${name}-1`,
      namespace: 'default',
      labels: { [SERVICE_NAME_LABEL]: name },
      ...(trigger ? { annotations: { [LAST_CHANGE_TRIGGER_TIME]: trigger } } : {}),
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: ips.map((ip) => ({ addresses: [ip], nodeName: 'bench-node', conditions: { ready: true } })),
  };
}

async function startProxy(
  kubeconfig: string,
  logDir: string,
): Promise<{ p: TestProcess; metricsPort: number }> {
  const metricsPort = await freePort();
  const p = startDaemon({
    name: `kubit-proxy-${Date.now()}`,
    pkg: 'proxy',
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--hostname-override=bench-node',
      `--network-namespace=${ns}`,
      '--cluster-cidr=10.200.0.0/13',
      '--healthz-bind-address=',
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    ],
    logDir,
  });
  return { p, metricsPort };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the benchmark needs root (ip netns, nft)');
  execFileSync('ip', ['netns', 'add', ns]);
  const cp = await startControlPlane();
  const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  const rows: string[][] = [];
  try {
    // --- 1. programming latency at S × E ---------------------------------------
    let nextIp = 1;
    const names = Array.from({ length: S }, (_, i) => `lat-${i}`);
    const ips = names.map(() => Array.from({ length: E }, () => endpointIP(nextIp++)));
    await createAll(names, 32, (n) =>
      client.create(resources.services, svc(n, names.indexOf(n)), { namespace: 'default' }),
    );
    await createAll(names, 32, (n) =>
      client.create(endpointSlicesResource, slice(n, ips[names.indexOf(n)]), { namespace: 'default' }),
    );
    const { p: proxy, metricsPort } = await startProxy(cp.kubeconfigPath, cp.logDir);
    await waitSynced(metricsPort, 300_000);
    const latencies: number[] = [];
    const pollCosts: number[] = [];
    for (let k = 0; k < SAMPLES; k++) {
      const i = Math.floor(Math.random() * S);
      const name = names[i];
      const fresh = endpointIP(nextIp++);
      ips[i] = [...ips[i].slice(1), fresh];
      const chain = serviceChain({ namespace: 'default', name, protocol: 'tcp', port: 'http' });
      const cur = await client.get<EndpointSlice>(endpointSlicesResource, `${name}-1`, {
        namespace: 'default',
      });
      const t0 = performance.now();
      const body = slice(name, ips[i], new Date().toISOString());
      await client.update(
        endpointSlicesResource,
        { ...body, metadata: { ...body.metadata, resourceVersion: cur.metadata?.resourceVersion } },
        { namespace: 'default' },
      );
      for (;;) {
        const p0 = performance.now();
        const { stdout } = await run('ip', [
          'netns',
          'exec',
          ns,
          'nft',
          'list',
          'chain',
          TABLE_FAMILY,
          TABLE_NAME,
          chain,
        ]);
        pollCosts.push(performance.now() - p0);
        if (stdout.includes(`dnat to ${fresh}:8080`)) break;
        if (performance.now() - t0 > 60_000)
          throw new Error(`the change to ${name} never reached the kernel`);
      }
      latencies.push(performance.now() - t0);
    }
    const internal = await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_sum');
    const internalCount = await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_count');
    rows.push([
      `programming latency, ${S} Services × ${E} endpoints (${SAMPLES} changes)`,
      `p50 ${pct(latencies, 50).toFixed(0)} ms`,
      `p99 ${pct(latencies, 99).toFixed(0)} ms`,
      `kube-proxy SLO p99 ≤ 30 s; target ≤ 1 s; poll cost p50 ${pct(pollCosts, 50).toFixed(0)} ms; ` +
        `proxy's own mean ${internal && internalCount ? ((internal / internalCount) * 1000).toFixed(0) : '?'} ms`,
    ]);
    await proxy.stop();

    // --- 2. C Services from cold ---------------------------------------------------
    const extra = Array.from({ length: Math.max(0, C - S) }, (_, i) => `cold-${i}`);
    await createAll(extra, 32, (n) =>
      client.create(resources.services, svc(n, S + extra.indexOf(n)), { namespace: 'default' }),
    );
    await createAll(extra, 32, (n) =>
      client.create(endpointSlicesResource, slice(n, [endpointIP(nextIp++)]), { namespace: 'default' }),
    );
    execFileSync('ip', ['netns', 'exec', ns, 'nft', 'flush', 'ruleset']);
    const t0 = performance.now();
    const cold = await startProxy(cp.kubeconfigPath, cp.logDir);
    await waitSynced(cold.metricsPort, 600_000);
    const total = performance.now() - t0;
    const fullSync = await metric(cold.metricsPort, 'kubeproxy_sync_full_proxy_rules_duration_seconds_sum');
    const programmed = await metric(cold.metricsPort, 'kubeproxy_programmed_service_ports');
    rows.push([
      `${programmed} Services from cold (${S}×${E} + ${extra.length}×1 endpoints)`,
      `${(total / 1000).toFixed(2)} s start → in kernel`,
      `full sync ${fullSync?.toFixed(2)} s`,
      'process start, list+watch, plan, one nft transaction',
    ]);
    await cold.p.stop();
  } finally {
    await cp.stop();
    cleanupNs();
  }
  const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c].length), 8));
  const line = (r: string[]) => `| ${r.map((x, c) => x.padEnd(widths[c])).join(' | ')} |`;
  process.stdout.write(`${line(['kubit-proxy', 'result', '', 'notes'])}\n`);
  process.stdout.write(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n`);
  for (const r of rows) process.stdout.write(`${line(r)}\n`);
}

await main();
