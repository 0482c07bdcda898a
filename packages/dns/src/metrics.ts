// kubit-dns's Prometheus metrics, named after CoreDNS's (coredns_dns_*) under kubit_dns_*.
import { Counter, Gauge, Histogram, type Registry } from '@kubit/daemon';

export interface DnsMetrics {
  requests: Counter<'proto' | 'type'>;
  responses: Counter<'rcode' | 'source'>;
  duration: Histogram<'source'>;
  truncated: Counter<'proto'>;
  forwardRequests: Counter<'to'>;
  forwardFailures: Counter<string>;
  names: Gauge<string>;
}

export function createDnsMetrics(registry: Registry, names: () => number): DnsMetrics {
  return {
    requests: new Counter({
      name: 'kubit_dns_requests_total',
      help: 'DNS queries received, by transport and query type.',
      labelNames: ['proto', 'type'],
      registers: [registry],
    }),
    responses: new Counter({
      name: 'kubit_dns_responses_total',
      help: 'DNS responses sent, by rcode and by who answered (cluster: the zone; forward: an upstream).',
      labelNames: ['rcode', 'source'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'kubit_dns_request_duration_seconds',
      help: 'Time from a query to its answer being sent.',
      labelNames: ['source'],
      buckets: [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    truncated: new Counter({
      name: 'kubit_dns_truncated_responses_total',
      help: 'Answers sent with the TC bit because they did not fit the client’s UDP size.',
      labelNames: ['proto'],
      registers: [registry],
    }),
    forwardRequests: new Counter({
      name: 'kubit_dns_forward_requests_total',
      help: 'Queries forwarded to the upstream resolvers, by transport.',
      labelNames: ['to'],
      registers: [registry],
    }),
    forwardFailures: new Counter({
      name: 'kubit_dns_forward_failures_total',
      help: 'Forwarded queries no upstream answered in time (answered SERVFAIL).',
      registers: [registry],
    }),
    names: new Gauge({
      name: 'kubit_dns_cluster_names',
      help: 'Owner names the cluster zone holds records for.',
      registers: [registry],
      collect() {
        this.set(names());
      },
    }),
  };
}
