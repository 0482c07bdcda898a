// The apiserver's request metrics and request log: one count and one latency
// observation per request (watches: count only), and a log line for every
// write and every failure.
import type { IncomingMessage } from 'node:http';
import { Counter, Gauge, Histogram, type Logger, type Registry } from '@kubit/daemon';

/** What is known of a request while it is served. */
export interface RequestMeta {
  verb: string;
  resource: string;
  /** process.hrtime of its start; 0 once finished (a request is counted once). */
  start: bigint;
  user?: string;
}

interface Children {
  count: { inc(): void };
  latency: { observe(v: number): void };
}

export class RequestMetrics {
  readonly openWatches: Gauge;
  private readonly requests: Counter;
  private readonly latency: Histogram;
  private readonly metas = new WeakMap<IncomingMessage, RequestMeta>();
  // The metric children of each verb/resource/code, looked up once: prom-client hashes
  // the label object on every inc/observe otherwise.
  private readonly children = new Map<string, Children>();

  constructor(
    registry: Registry,
    private readonly log: Logger,
  ) {
    this.requests = new Counter({
      name: 'apiserver_request_total',
      help: 'Requests by verb, group, resource, subresource and HTTP code.',
      labelNames: ['verb', 'resource', 'code'],
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'apiserver_request_duration_seconds',
      help: 'Request latency by verb and resource (watches excluded).',
      labelNames: ['verb', 'resource'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.openWatches = new Gauge({
      name: 'apiserver_open_watches',
      help: 'Watches being served, by resource.',
      labelNames: ['resource'],
      registers: [registry],
    });
  }

  /** Starts the clock of a request; its verb and resource are filled in once parsed. */
  begin(raw: IncomingMessage, method: string): RequestMeta {
    const meta: RequestMeta = { verb: method.toLowerCase(), resource: '', start: process.hrtime.bigint() };
    this.metas.set(raw, meta);
    return meta;
  }

  meta(raw: IncomingMessage): RequestMeta | undefined {
    return this.metas.get(raw);
  }

  /** Counts and logs a request once, with the code it was answered with. */
  finish(raw: IncomingMessage, code: number): void {
    const m = this.metas.get(raw);
    if (!m || m.start === 0n) return;
    const seconds = Number(process.hrtime.bigint() - m.start) / 1e9;
    m.start = 0n;
    const c = this.childrenFor(m.verb, m.resource, code);
    c.count.inc();
    if (m.verb !== 'watch') c.latency.observe(seconds);
    // Every write and every failure at info; successful reads (the bulk of the traffic,
    // and what watch-heavy clients repeat all day) only at debug.
    const quiet = code < 400 && (m.verb === 'get' || m.verb === 'list' || m.verb === 'watch');
    if (quiet && !this.log.isLevelEnabled('debug')) return;
    this.log[quiet ? 'debug' : 'info'](
      {
        verb: m.verb,
        resource: m.resource || undefined,
        path: raw.url,
        code,
        user: m.user,
        ms: Math.round(seconds * 1000),
      },
      'request',
    );
  }

  private childrenFor(verb: string, resource: string, code: number): Children {
    const k = `${verb} ${resource} ${code}`;
    let c = this.children.get(k);
    if (!c) {
      c = {
        count: this.requests.labels({ verb, resource, code: String(code) }),
        latency: this.latency.labels({ verb, resource }),
      };
      this.children.set(k, c);
    }
    return c;
  }
}
