// The JavaScript half of one sync, in process (no nft, no apiserver): S Services × E
// endpoints planned, then one EndpointSlice changed (an endpoint replaced), `samples`
// times, synced both ways: a full re-plan plus a full diff (planRuleset + diffScript,
// what every sync did before the incremental plan) and an incremental one
// (IncrementalPlan.update of the one Service + deltaScript). Also the cold plan.
//
//   node --conditions=kubit-source --import tsx packages/proxy/bench/plan.ts [S=10000] [E=10] [samples=20]
import type { EndpointSlice, Service } from '@kubit/api';
import { formatIPv4, SERVICE_NAME_LABEL } from '@kubit/api';
import { deltaScript, diffScript } from '../src/differ.js';
import { IncrementalPlan } from '../src/incremental.js';
import { type PlannerOptions, planRuleset } from '../src/planner.js';
import { fullScript } from '../src/ruleset.js';

const S = Number(process.argv[2] ?? 10_000);
const E = Number(process.argv[3] ?? 10);
const SAMPLES = Number(process.argv[4] ?? 20);
const o: PlannerOptions = {
  nodeName: 'bench-node',
  clusterCidrs: ['10.200.0.0/13'],
  nodePortAddresses: [],
  masqueradeAll: false,
};

let n = 1;
const endpointIP = () => formatIPv4(((10 << 24) + (200 << 16) + n++) >>> 0);
const services = new Map<string, Service>();
const slices = new Map<string, EndpointSlice>();
const slice = (name: string, ips: string[]): EndpointSlice => ({
  metadata: { name: `${name}-1`, namespace: 'default', labels: { [SERVICE_NAME_LABEL]: name } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  endpoints: ips.map((ip) => ({ addresses: [ip], nodeName: 'bench-node', conditions: { ready: true } })),
});
for (let i = 0; i < S; i++) {
  const name = `svc-${i}`;
  services.set(`default/${name}`, {
    metadata: { name, namespace: 'default' },
    spec: { clusterIP: formatIPv4((10 << 24) + (96 << 16) + 1000 + i), ports: [{ name: 'http', port: 80 }] },
  });
  slices.set(
    `default/${name}`,
    slice(
      name,
      Array.from({ length: E }, () => endpointIP()),
    ),
  );
}

const ms = (t0: number) => performance.now() - t0;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.ceil((p / 100) * xs.length) - 1];
const row = (what: string, xs: number[]) =>
  process.stdout.write(
    `${what.padEnd(52)} p50 ${pct(xs, 50).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms\n`,
  );

let t0 = performance.now();
let full = planRuleset([...services.values()], [...slices.values()], o);
const planMs = ms(t0);
t0 = performance.now();
fullScript(full);
process.stdout.write(
  `${S} Services × ${E} endpoints: planRuleset ${planMs.toFixed(0)} ms, fullScript ${ms(t0).toFixed(0)} ms\n`,
);
t0 = performance.now();
const inc = IncrementalPlan.full([...services.values()], [...slices.values()], o);
process.stdout.write(`IncrementalPlan.full ${ms(t0).toFixed(0)} ms\n`);

const change = () => {
  const key = `default/svc-${Math.floor(Math.random() * S)}`;
  const cur = slices.get(key) as EndpointSlice;
  const ips = (cur.endpoints ?? []).map((e) => e.addresses[0]);
  slices.set(key, slice(key.split('/')[1], [...ips.slice(1), endpointIP()]));
  return key;
};
const fullTimes: number[] = [];
const incTimes: number[] = [];
for (let k = 0; k < SAMPLES; k++) {
  const key = change();
  t0 = performance.now();
  const next = planRuleset([...services.values()], [...slices.values()], o);
  const a = diffScript(full, next);
  fullTimes.push(ms(t0));
  full = next;
  t0 = performance.now();
  const c = inc.update(
    [key],
    (k) => services.get(k),
    (k) => [slices.get(k) as EndpointSlice],
  );
  const b = deltaScript(c.delta, inc.ruleset);
  incTimes.push(ms(t0));
  if (a.split('\n').sort().join() !== b.split('\n').sort().join())
    throw new Error(`scripts differ:\n${a}\n---\n${b}`);
}
row('one changed slice: full re-plan + full diff', fullTimes);
row('one changed slice: incremental re-plan + its diff', incTimes);
