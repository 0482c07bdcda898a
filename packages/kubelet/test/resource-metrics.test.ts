// /metrics/resource's text from a fixed Summary: Kubernetes' names, labels, values in
// seconds and bytes, and each sample's time in milliseconds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderResourceMetrics } from '../src/server/resource-metrics.js';
import type { Summary } from '../src/server/stats.js';

const time = '2026-01-01T00:00:10.000Z';
const ms = Date.parse(time);

const summary: Summary = {
  node: {
    nodeName: 'node-1',
    startTime: '2026-01-01T00:00:00Z',
    cpu: { time, usageCoreNanoSeconds: 12_500_000_000 },
    memory: { time, workingSetBytes: 1_048_576 },
  },
  pods: [
    {
      podRef: { name: 'burn', namespace: 'de"mo', uid: 'u1' },
      startTime: '2026-01-01T00:00:01Z',
      cpu: { time, usageCoreNanoSeconds: 3_000_000_000 },
      memory: { time, workingSetBytes: 4096 },
      containers: [
        {
          name: 'main',
          startTime: '2026-01-01T00:00:02.000Z',
          cpu: { time, usageCoreNanoSeconds: 3_000_000_000, usageNanoCores: 5 },
          memory: { time, workingSetBytes: 4096 },
        },
      ],
    },
  ],
};

test('the node, pod and container series with their times, label values escaped', () => {
  const text = renderResourceMetrics(summary);
  const lines = text.trimEnd().split('\n');
  const l = 'container="main",namespace="de\\"mo",pod="burn"';
  for (const want of [
    '# TYPE node_cpu_usage_seconds_total counter',
    `node_cpu_usage_seconds_total 12.5 ${ms}`,
    `node_memory_working_set_bytes 1048576 ${ms}`,
    `pod_cpu_usage_seconds_total{namespace="de\\"mo",pod="burn"} 3 ${ms}`,
    `pod_memory_working_set_bytes{namespace="de\\"mo",pod="burn"} 4096 ${ms}`,
    `container_cpu_usage_seconds_total{${l}} 3 ${ms}`,
    `container_memory_working_set_bytes{${l}} 4096 ${ms}`,
    `container_start_time_seconds{${l}} ${Date.parse('2026-01-01T00:00:02Z') / 1000} ${ms}`,
    '# TYPE container_memory_working_set_bytes gauge',
    'resource_scrape_error 0',
  ])
    assert.ok(lines.includes(want), `missing line ${want} in\n${text}`);
  // Every sample line belongs to a family announced before it.
  let family = '';
  for (const line of lines) {
    if (line.startsWith('# TYPE ')) family = line.split(' ')[2];
    else if (!line.startsWith('#'))
      assert.ok(line.startsWith(family), `${line} outside its family ${family}`);
  }
});

test('an error reading the runtime is a resource_scrape_error of 1', () => {
  assert.ok(
    renderResourceMetrics({ node: { nodeName: 'n', startTime: time }, pods: [] }, true).includes(
      '\nresource_scrape_error 1\n',
    ),
  );
});
