// metrics.k8s.io's arithmetic: reading a kubelet's /metrics/resource text, and the usage
// between two scrapes (CPU rate over the samples' own times, restarts, partial pods).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePrometheusText } from '../src/metrics/prometheus-text.js';
import {
  cpuQuantity,
  memoryQuantity,
  podUsageBetween,
  scrapeFromSamples,
  usageBetween,
  windowText,
} from '../src/metrics/samples.js';

const scrape = (t: number, cpu: number, start = 100) =>
  scrapeFromSamples(
    parsePrometheusText(`# HELP node_cpu_usage_seconds_total [STABLE] x
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total ${cpu * 2} ${t}
node_memory_working_set_bytes 2.097152e+06 ${t}
container_cpu_usage_seconds_total{container="main",namespace="de\\"mo",pod="burn"} ${cpu} ${t}
container_memory_working_set_bytes{container="main",namespace="de\\"mo",pod="burn"} 8192 ${t}
container_start_time_seconds{container="main",namespace="de\\"mo",pod="burn"} ${start} ${t}
container_cpu_usage_seconds_total{container="side",namespace="de\\"mo",pod="burn"} 1 ${t}
container_memory_working_set_bytes{container="side",namespace="de\\"mo",pod="burn"} 4096 ${t}
resource_scrape_error 0
`),
    t,
  );

test('the text format: labels with escapes, exponents, timestamps; garbage is an error', () => {
  const [s] = parsePrometheusText('a_b{x="1\\"2",y="z"} 1.5e+03 1700000000000\n');
  assert.deepEqual(s, { name: 'a_b', labels: { x: '1"2', y: 'z' }, value: 1500, timestampMs: 1700000000000 });
  assert.throws(() => parsePrometheusText('not a sample line here'), /line 1/);
  assert.throws(() => parsePrometheusText('m{x=1} 2'), /malformed labels/);
});

test('CPU is the growth of the counter over the time between the two samples', () => {
  const a = scrape(10_000, 5);
  const b = scrape(12_000, 6);
  const node = usageBetween(a.node, b.node);
  assert.deepEqual(node, { cpuCores: 1, memoryBytes: 2_097_152, timeMs: 12_000, windowMs: 2000 });
  const pod = podUsageBetween(a.pods.get('de"mo/burn'), b.pods.get('de"mo/burn'));
  assert.deepEqual(
    pod?.containers.map((c) => [c.name, c.usage.cpuCores, c.usage.memoryBytes]),
    [
      ['main', 0.5, 8192],
      ['side', 0, 4096],
    ],
  );
  assert.equal(cpuQuantity(0.5), '500000000n');
  assert.equal(memoryQuantity(8192), '8Ki');
  assert.equal(windowText(2000), '2s');
  assert.equal(windowText(15_002), '15.002s');
});

test('no usage across a restart, a counter that went back, or without a second sample', () => {
  const a = scrape(10_000, 5);
  assert.equal(
    podUsageBetween(a.pods.get('de"mo/burn'), scrape(12_000, 6, 200).pods.get('de"mo/burn')),
    undefined,
  );
  assert.equal(usageBetween(a.node, scrape(12_000, 4).node), undefined);
  assert.equal(usageBetween(a.node, scrape(10_000, 6).node), undefined);
  assert.equal(podUsageBetween(undefined, a.pods.get('de"mo/burn')), undefined);
});

test('a pod with a container that has no rate yet is left out whole', () => {
  const a = scrape(10_000, 5);
  const b = scrape(12_000, 6);
  a.pods.get('de"mo/burn')?.delete('side');
  assert.equal(podUsageBetween(a.pods.get('de"mo/burn'), b.pods.get('de"mo/burn')), undefined);
});
