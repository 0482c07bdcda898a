// Gathers resource metrics the way metrics-server does: every `resolutionMs` it scrapes
// each node's kubelet (`/metrics/resource`, HTTPS with the apiserver's kubelet client
// certificate), keeps the last two scrapes of each node and answers usages from them. A
// node whose last scrape failed (or is too old) has no usage, only the reason why, and is
// tried again after a back-off that doubles up to 5 minutes.
import { request } from 'node:https';
import type { Logger } from '@kubit/daemon';
import { obj, str } from '../kinds/types.js';
import type { KubeletClientTls } from '../logs.js';
import { kubeletAddress } from '../logs.js';
import type { WatchCache } from '../watchcache.js';
import { parsePrometheusText } from './prometheus-text.js';
import {
  type NodeScrape,
  type PodUsage,
  podUsageBetween,
  scrapeFromSamples,
  type Usage,
  usageBetween,
} from './samples.js';

const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Scrapes at once: a cluster of many (hollow) nodes is not a burst of handshakes. */
const CONCURRENT_SCRAPES = 16;
/** The longest a failing node waits between tries. */
const MAX_BACKOFF_MS = 5 * 60_000;

interface NodeState {
  prev?: NodeScrape;
  last?: NodeScrape;
  lastAtMs?: number;
  /** Why the node has no metrics now (its last scrape failed). */
  error?: string;
  /** Failures in a row, and when to try it again: a node that does not answer is tried less often. */
  failures: number;
  nextTryMs: number;
}

export interface ScraperOptions {
  nodes: WatchCache;
  kubeletTls: KubeletClientTls;
  log: Logger;
  /** Time between scrapes (metrics-server's --metric-resolution, 15 s by default). */
  resolutionMs?: number;
}

export type NodeUsageResult = { usage: Usage } | { unavailable: string } | undefined;

export class ResourceMetricsScraper {
  private readonly state = new Map<string, NodeState>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  readonly resolutionMs: number;

  constructor(private readonly opts: ScraperOptions) {
    this.resolutionMs = opts.resolutionMs ?? 15_000;
  }

  start(): void {
    const tick = () => {
      this.running = this.scrapeAll()
        .catch((err: unknown) => this.opts.log.warn({ err: (err as Error).message }, 'metrics scrape failed'))
        .finally(() => {
          this.running = undefined;
          if (this.timer !== undefined) this.timer = setTimeout(tick, this.resolutionMs);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round over the nodes the cache holds that are due, a few at a time; nodes gone are forgotten. */
  async scrapeAll(): Promise<void> {
    const nodes = new Map<string, Record<string, unknown>>();
    for (const n of this.opts.nodes.objects.values()) nodes.set(str(obj(n.metadata).name), n);
    for (const name of this.state.keys()) if (!nodes.has(name)) this.state.delete(name);
    const now = Date.now();
    const due: [string, Record<string, unknown>, NodeState][] = [];
    for (const [name, node] of nodes) {
      const st = this.state.get(name) ?? { failures: 0, nextTryMs: 0 };
      this.state.set(name, st);
      if (st.nextTryMs <= now) due.push([name, node, st]);
    }
    const work = async () => {
      for (let next = due.shift(); next; next = due.shift()) await this.scrapeOne(...next);
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENT_SCRAPES, due.length) }, work));
  }

  private async scrapeOne(name: string, node: Record<string, unknown>, st: NodeState): Promise<void> {
    try {
      const text = await this.fetch(name, node);
      const now = Date.now();
      st.prev = st.last;
      st.last = scrapeFromSamples(parsePrometheusText(text), now);
      st.lastAtMs = now;
      st.error = undefined;
      st.failures = 0;
      st.nextTryMs = 0;
    } catch (err) {
      const message = `unable to fetch metrics from node ${name}: ${(err as Error).message}`;
      if (st.error !== message)
        this.opts.log.warn({ node: name, err: (err as Error).message }, 'metrics scrape of a node failed');
      st.prev = undefined;
      st.last = undefined;
      st.error = message;
      st.failures++;
      st.nextTryMs = Date.now() + Math.min(MAX_BACKOFF_MS, this.resolutionMs * 2 ** (st.failures - 1));
    }
  }

  private fetch(name: string, node: Record<string, unknown>): Promise<string> {
    const addr = kubeletAddress(node);
    if (!addr) return Promise.reject(new Error('the node has no address'));
    const host = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
    const tls = this.opts.kubeletTls;
    const timeoutMs = Math.min(10_000, Math.max(1000, this.resolutionMs));
    return new Promise((resolve, reject) => {
      const req = request(
        `https://${host}:${addr.port}/metrics/resource`,
        {
          cert: tls.cert,
          key: tls.key,
          ca: tls.ca,
          rejectUnauthorized: tls.ca !== undefined,
          servername: name,
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY_BYTES) req.destroy(new Error(`answer larger than ${MAX_BODY_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on('end', () => {
            const body = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200)
              reject(new Error(`the kubelet answered ${res.statusCode}: ${body.slice(0, 200)}`));
            else resolve(body);
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }

  /** A scrape older than three resolutions is stale: the scrape loop is stuck on that node. */
  private fresh(st: NodeState | undefined): st is NodeState & { prev: NodeScrape; last: NodeScrape } {
    return !!st?.prev && !!st.last && Date.now() - (st.lastAtMs ?? 0) < 3 * this.resolutionMs + 10_000;
  }

  /** The node's usage; `unavailable` when its kubelet could not be scraped; undefined when not known (yet). */
  nodeUsage(name: string): NodeUsageResult {
    const st = this.state.get(name);
    if (st?.error) return { unavailable: st.error };
    if (!this.fresh(st)) return undefined;
    const usage = usageBetween(st.prev.node, st.last.node);
    return usage ? { usage } : undefined;
  }

  /** Every pod with a usage, by `<namespace>/<pod>`, with the node it was measured on. */
  podUsages(): Map<string, { node: string; usage: PodUsage }> {
    const out = new Map<string, { node: string; usage: PodUsage }>();
    for (const [node, st] of this.state) {
      if (!this.fresh(st)) continue;
      for (const [key, last] of st.last.pods) {
        const usage = podUsageBetween(st.prev.pods.get(key), last);
        if (usage) out.set(key, { node, usage });
      }
    }
    return out;
  }

  /** Why the node has no metrics, when its last scrape failed. */
  nodeError(name: string): string | undefined {
    return this.state.get(name)?.error;
  }
}
