// The kubelet's resource metrics endpoint (`GET /metrics/resource`), what metrics-server
// scrapes: cumulative CPU seconds and working-set bytes of the node, each pod and each
// running container, in Prometheus' text format with the sample's time, under Kubernetes'
// names and labels (node_*, pod_{pod,namespace}, container_{container,pod,namespace}).
// Rendered from the same Summary /stats/summary answers with; no I/O here.
import type { Summary } from './stats.js';

export const RESOURCE_METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const FAMILIES = {
  container_cpu_usage_seconds_total: [
    'counter',
    'Cumulative cpu time consumed by the container in core-seconds',
  ],
  container_memory_working_set_bytes: ['gauge', 'Current working set of the container in bytes'],
  container_start_time_seconds: ['gauge', 'Start time of the container since unix epoch in seconds'],
  node_cpu_usage_seconds_total: ['counter', 'Cumulative cpu time consumed by the node in core-seconds'],
  node_memory_working_set_bytes: ['gauge', 'Current working set of the node in bytes'],
  pod_cpu_usage_seconds_total: ['counter', 'Cumulative cpu time consumed by the pod in core-seconds'],
  pod_memory_working_set_bytes: ['gauge', 'Current working set of the pod in bytes'],
  resource_scrape_error: ['gauge', '1 if there was an error while getting container metrics, 0 otherwise'],
} as const;

type Family = keyof typeof FAMILIES;

/** A label value as the text format wants it: backslash, double quote and newline escaped. */
function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: [string, string][]): string {
  return pairs.length ? `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}` : '';
}

const seconds = (nanos: number) => nanos / 1e9;
const millis = (iso: string) => new Date(iso).getTime();

export function renderResourceMetrics(summary: Summary, scrapeError = false): string {
  const lines = new Map<Family, string[]>();
  const add = (f: Family, l: [string, string][], value: number, at?: string) => {
    const list = lines.get(f) ?? [];
    list.push(`${f}${labels(l)} ${value}${at ? ` ${millis(at)}` : ''}`);
    lines.set(f, list);
  };
  const { node } = summary;
  if (node.cpu?.usageCoreNanoSeconds !== undefined)
    add('node_cpu_usage_seconds_total', [], seconds(node.cpu.usageCoreNanoSeconds), node.cpu.time);
  if (node.memory?.workingSetBytes !== undefined)
    add('node_memory_working_set_bytes', [], node.memory.workingSetBytes, node.memory.time);
  for (const pod of summary.pods) {
    const podLabels: [string, string][] = [
      ['namespace', pod.podRef.namespace],
      ['pod', pod.podRef.name],
    ];
    if (pod.cpu?.usageCoreNanoSeconds !== undefined)
      add('pod_cpu_usage_seconds_total', podLabels, seconds(pod.cpu.usageCoreNanoSeconds), pod.cpu.time);
    if (pod.memory?.workingSetBytes !== undefined)
      add('pod_memory_working_set_bytes', podLabels, pod.memory.workingSetBytes, pod.memory.time);
    for (const c of pod.containers) {
      const l: [string, string][] = [['container', c.name], ...podLabels];
      if (c.cpu?.usageCoreNanoSeconds !== undefined)
        add('container_cpu_usage_seconds_total', l, seconds(c.cpu.usageCoreNanoSeconds), c.cpu.time);
      if (c.memory?.workingSetBytes !== undefined)
        add('container_memory_working_set_bytes', l, c.memory.workingSetBytes, c.memory.time);
      add('container_start_time_seconds', l, millis(c.startTime) / 1000, c.cpu?.time);
    }
  }
  add('resource_scrape_error', [], scrapeError ? 1 : 0);
  const out: string[] = [];
  for (const [name, [type, help]] of Object.entries(FAMILIES) as [Family, readonly [string, string]][]) {
    out.push(`# HELP ${name} [STABLE] ${help}`, `# TYPE ${name} ${type}`, ...(lines.get(name) ?? []));
  }
  return `${out.join('\n')}\n`;
}
