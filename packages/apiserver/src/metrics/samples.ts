// What one scrape of a kubelet's /metrics/resource says (cumulative CPU seconds and
// working sets, each with its time), and the usage between two scrapes, as metrics-server
// computes it: CPU is the counter's growth over the time between the two samples; memory
// is the newer working set. Pure: the scraper (scraper.ts) does the I/O.
import type { PromSample } from './prometheus-text.js';

export interface Point {
  cpuSeconds?: number;
  memoryBytes?: number;
  /** ms since the epoch: the kubelet's time of the CPU sample. */
  timeMs: number;
  /** Containers only: when it started (a restart resets its counter). */
  startSeconds?: number;
}

export interface NodeScrape {
  node?: Point;
  /** By `<namespace>/<pod>`, then container name. */
  pods: Map<string, Map<string, Point>>;
}

export function scrapeFromSamples(samples: PromSample[], scrapedAtMs: number): NodeScrape {
  const out: NodeScrape = { pods: new Map() };
  const point = (ns: string, pod: string, container: string): Point => {
    const key = `${ns}/${pod}`;
    const containers = out.pods.get(key) ?? new Map<string, Point>();
    out.pods.set(key, containers);
    let p = containers.get(container);
    if (!p) {
      p = { timeMs: scrapedAtMs };
      containers.set(container, p);
    }
    return p;
  };
  for (const s of samples) {
    const at = s.timestampMs ?? scrapedAtMs;
    switch (s.name) {
      case 'node_cpu_usage_seconds_total':
        out.node = { ...out.node, cpuSeconds: s.value, timeMs: at };
        break;
      case 'node_memory_working_set_bytes':
        out.node = { timeMs: at, ...out.node, memoryBytes: s.value };
        break;
      case 'container_cpu_usage_seconds_total': {
        const p = point(s.labels.namespace ?? '', s.labels.pod ?? '', s.labels.container ?? '');
        p.cpuSeconds = s.value;
        p.timeMs = at;
        break;
      }
      case 'container_memory_working_set_bytes':
        point(s.labels.namespace ?? '', s.labels.pod ?? '', s.labels.container ?? '').memoryBytes = s.value;
        break;
      case 'container_start_time_seconds':
        point(s.labels.namespace ?? '', s.labels.pod ?? '', s.labels.container ?? '').startSeconds = s.value;
        break;
    }
  }
  return out;
}

export interface Usage {
  /** Cores (1 = one core busy all the time). */
  cpuCores: number;
  memoryBytes: number;
  /** The newer sample's time and the time between the two (ms). */
  timeMs: number;
  windowMs: number;
}

/** The usage between two samples of one series, or undefined when they give no rate. */
export function usageBetween(prev: Point | undefined, last: Point | undefined): Usage | undefined {
  if (!prev || !last || prev.cpuSeconds === undefined || last.cpuSeconds === undefined) return undefined;
  if (last.memoryBytes === undefined) return undefined;
  const windowMs = last.timeMs - prev.timeMs;
  // A restarted container starts its counter again: no rate across the restart.
  if (windowMs <= 0 || last.cpuSeconds < prev.cpuSeconds) return undefined;
  if (prev.startSeconds !== undefined && last.startSeconds !== prev.startSeconds) return undefined;
  return {
    cpuCores: (last.cpuSeconds - prev.cpuSeconds) / (windowMs / 1000),
    memoryBytes: last.memoryBytes,
    timeMs: last.timeMs,
    windowMs,
  };
}

export interface PodUsage {
  containers: { name: string; usage: Usage }[];
  timeMs: number;
  windowMs: number;
}

/**
 * A pod's usage: every container it reported in the newer scrape must have a rate, or the
 * pod is left out (metrics-server reports no partial pods, an HPA would undercount them).
 */
export function podUsageBetween(
  prev: Map<string, Point> | undefined,
  last: Map<string, Point> | undefined,
): PodUsage | undefined {
  if (!prev || !last || last.size === 0) return undefined;
  const containers: { name: string; usage: Usage }[] = [];
  for (const [name, p] of last) {
    const usage = usageBetween(prev.get(name), p);
    if (!usage) return undefined;
    containers.push({ name, usage });
  }
  containers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    containers,
    timeMs: Math.max(...containers.map((c) => c.usage.timeMs)),
    windowMs: Math.max(...containers.map((c) => c.usage.windowMs)),
  };
}

/** CPU in nanocores and memory in Ki, as metrics-server writes its quantities. */
export function cpuQuantity(cores: number): string {
  return `${Math.max(0, Math.round(cores * 1e9))}n`;
}

export function memoryQuantity(bytes: number): string {
  return `${Math.max(0, Math.round(bytes / 1024))}Ki`;
}

/** A window as Go prints a time.Duration of seconds ("15.002s"). */
export function windowText(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
