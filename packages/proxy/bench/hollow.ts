// Network programming latency as issue 18 asks for it: S Services (default 1,000)
// of E pods each (default 10) on H hollow nodes (default 100), the EndpointSlices
// made by kubit-controller-manager's endpointslice controller from the pods the
// hollow nodes report Running and Ready, and one real kubit-proxy (the "real
// node", --hostname-override=bench-node, programming a scratch network namespace)
// measuring. One change at a time: a new pod for a random Service, from its create
// until the proxy's rule DNATing to the pod's IP is in the kernel (seen from outside
// by polling `nft list chain`), so it covers the hollow node reporting the pod,
// the endpointslice controller and the proxy. The proxy's own figure (from the
// slice's trigger-time annotation to the rule applied) is printed beside it.
//
//   node --conditions=kubit-source --import tsx packages/proxy/bench/hollow.ts [S] [E] [samples] [H]
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { EndpointSlice, Node, Pod, Service } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { freePort, startControlPlane, startDaemon, type TestProcess, waitFor } from '@kubit/testkit';
import { endpointSlicesResource } from '../src/daemon.js';
import { serviceChain } from '../src/names.js';
import { TABLE_FAMILY, TABLE_NAME } from '../src/ruleset.js';
import { createAll, metric, waitSynced } from './bench-kit.js';

const run = promisify(execFile);
const S = Number(process.argv[2] ?? 1_000);
const E = Number(process.argv[3] ?? 10);
const SAMPLES = Number(process.argv[4] ?? 100);
const H = Number(process.argv[5] ?? 100);
const NS = 'default';

const netns = `kph-${process.pid.toString(36)}`;
const cleanupNs = () => {
  try {
    execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
  } catch {}
};
process.once('exit', cleanupNs);

const progress = (s: string) => process.stderr.write(`[bench:services hollow] ${s}\n`);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

function service(i: number): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `svc-${i}`, namespace: NS },
    spec: { selector: { app: `svc-${i}` }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  };
}

let podSeq = 0;
/** A pod of Service i, bound to a hollow node directly (no scheduler: it is not what is measured). */
function pod(i: number): Pod {
  const n = podSeq++;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `svc-${i}-${n}`, namespace: NS, labels: { app: `svc-${i}` } },
    spec: {
      nodeName: `hollow-${n % H}`,
      containers: [
        { name: 'web', image: 'registry.k8s.io/pause:3.9', ports: [{ name: 'http', containerPort: 8080 }] },
      ],
    },
  };
}

/** Ready endpoints over all EndpointSlices of the namespace. */
async function readyEndpoints(client: KubeClient): Promise<number> {
  const list = await client.list<EndpointSlice>(endpointSlicesResource, { namespace: NS });
  let n = 0;
  for (const s of list.items) for (const e of s.endpoints ?? []) if (e.conditions?.ready !== false) n++;
  return n;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the benchmark needs root (ip netns, nft)');
  execFileSync('ip', ['netns', 'add', netns]);
  const cp = await startControlPlane();
  const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  const procs: TestProcess[] = [];
  const daemon = (name: string, pkg: string, entry: string, args: string[]) => {
    const p = startDaemon({ name, pkg, entry, args, logDir: cp.logDir });
    procs.push(p);
    return p;
  };
  const alive = () => {
    for (const p of procs) if (!p.running) throw new Error(`${p.name} exited; see its log in ${cp.logDir}`);
  };
  try {
    progress(`controller manager and ${H} hollow nodes`);
    daemon('controller-manager', 'controllers', 'main.ts', [
      `--kubeconfig=${await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager)}`,
      '--leader-elect=false',
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ]);
    daemon('hollow', 'kubelet', 'hollow.ts', [
      `--nodes=${H}`,
      '--name-prefix=hollow-',
      `--max-pods=${Math.ceil((S * E + SAMPLES) / H) + 20}`,
      `--kubeconfig=${cp.kubeconfigPath}`,
    ]);
    await waitFor(
      `${H} hollow nodes Ready`,
      async () => {
        alive();
        const nodes = await client.list<Node>(resources.nodes);
        return (
          nodes.items.filter((n) =>
            n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          ).length === H
        );
      },
      300_000,
      500,
    );

    progress(`${S} Services, ${S * E} pods`);
    await createAll(
      Array.from({ length: S }, (_, i) => i),
      32,
      (i) => client.create(resources.services, service(i), { namespace: NS }),
    );
    const pods = Array.from({ length: S * E }, (_, k) => pod(k % S));
    await createAll(pods, 32, (p) => client.create(resources.pods, p, { namespace: NS }));
    // Every pod Running and Ready on its hollow node, and in its Service's slice.
    const setupStart = performance.now();
    await waitFor(
      `${S * E} ready endpoints in the EndpointSlices`,
      async () => {
        alive();
        return (await readyEndpoints(client)) >= S * E;
      },
      900_000,
      2000,
    );
    progress(
      `endpoints ready ${((performance.now() - setupStart) / 1000).toFixed(1)} s after the last pod create`,
    );

    const metricsPort = await freePort();
    daemon('kubit-proxy', 'proxy', 'main.ts', [
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--hostname-override=bench-node',
      `--network-namespace=${netns}`,
      '--cluster-cidr=10.128.0.0/9',
      '--healthz-bind-address=',
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    ]);
    const coldStart = performance.now();
    await waitSynced(metricsPort, 300_000);
    const coldMs = performance.now() - coldStart;

    // The proxy's histogram also holds the cold start's slices: count the samples' part only.
    const sum0 = (await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_sum')) ?? 0;
    const count0 = (await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_count')) ?? 0;
    progress(`${SAMPLES} changes`);
    const latencies: number[] = [];
    const pollCosts: number[] = [];
    for (let k = 0; k < SAMPLES; k++) {
      alive();
      const i = Math.floor(Math.random() * S);
      const chain = serviceChain({ namespace: NS, name: `svc-${i}`, protocol: 'tcp', port: 'http' });
      const body = pod(i);
      const t0 = performance.now();
      await client.create(resources.pods, body, { namespace: NS });
      let ip: string | undefined;
      for (;;) {
        if (!ip) {
          const cur = await client.get<Pod>(resources.pods, body.metadata?.name as string, { namespace: NS });
          ip = cur.status?.podIP || undefined;
        }
        if (ip) {
          const p0 = performance.now();
          const { stdout } = await run('ip', [
            'netns',
            'exec',
            netns,
            'nft',
            'list',
            'chain',
            TABLE_FAMILY,
            TABLE_NAME,
            chain,
          ]);
          pollCosts.push(performance.now() - p0);
          if (stdout.includes(`dnat to ${ip}:8080`)) break;
        }
        if (performance.now() - t0 > 120_000)
          throw new Error(`pod ${body.metadata?.name} never reached the kernel`);
        if (!ip) await new Promise((r) => setTimeout(r, 10));
      }
      latencies.push(performance.now() - t0);
    }
    const sum =
      ((await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_sum')) ?? 0) - sum0;
    const count =
      ((await metric(metricsPort, 'kubeproxy_network_programming_duration_seconds_count')) ?? 0) - count0;
    const programmed = await metric(metricsPort, 'kubeproxy_programmed_service_ports');
    const rows = [
      [
        `pod create → rule in kernel, ${S} Services × ${E} pods on ${H} hollow nodes (${SAMPLES} new pods)`,
        `p50 ${pct(latencies, 50).toFixed(0)} ms`,
        `p99 ${pct(latencies, 99).toFixed(0)} ms`,
        `SLO p99 ≤ 30 s; target ≤ 1 s; poll cost p50 ${pct(pollCosts, 50).toFixed(0)} ms; proxy's own mean ` +
          `${sum && count ? ((sum / count) * 1000).toFixed(0) : '?'} ms (from the slice's trigger time: a pod condition's time, whole seconds as in Kubernetes)`,
      ],
      [
        `kubit-proxy cold start on that cluster (${programmed} service ports)`,
        `${(coldMs / 1000).toFixed(2)} s`,
        '',
        'process start, list+watch, plan, one nft transaction',
      ],
    ];
    const widths = [0, 1, 2, 3].map((c) => Math.max(...rows.map((r) => r[c].length), 8));
    const line = (r: string[]) => `| ${r.map((x, c) => x.padEnd(widths[c])).join(' | ')} |`;
    process.stdout.write(`${line(['kubit-proxy on hollow nodes', 'result', '', 'notes'])}\n`);
    process.stdout.write(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n`);
    for (const r of rows) process.stdout.write(`${line(r)}\n`);
  } finally {
    for (const p of [...procs].reverse()) await p.stop().catch(() => {});
    await cp.stop();
    cleanupNs();
  }
}

await main();
