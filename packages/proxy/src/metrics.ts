// kubit-proxy's metrics, named as kube-proxy names its own.
import { Counter, Gauge, Histogram, type Registry } from '@kubit/daemon';

export interface ProxyMetrics {
  syncDuration: Histogram;
  fullSyncDuration: Histogram;
  partialSyncDuration: Histogram;
  networkProgramming: Histogram;
  syncFailures: Counter;
  lastSync: Gauge;
  servicePorts: Gauge;
  endpoints: Gauge;
  udpFlowsCleared: Counter;
}

const syncBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createProxyMetrics(registry: Registry): ProxyMetrics {
  const registers = [registry];
  return {
    syncDuration: new Histogram({
      name: 'kubeproxy_sync_proxy_rules_duration_seconds',
      help: 'How long a sync of the proxy rules took (plan, diff and the nft transaction).',
      buckets: syncBuckets,
      registers,
    }),
    fullSyncDuration: new Histogram({
      name: 'kubeproxy_sync_full_proxy_rules_duration_seconds',
      help: 'How long a sync that replaced the whole table took.',
      buckets: syncBuckets,
      registers,
    }),
    partialSyncDuration: new Histogram({
      name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds',
      help: 'How long an incremental sync took.',
      buckets: syncBuckets,
      registers,
    }),
    networkProgramming: new Histogram({
      name: 'kubeproxy_network_programming_duration_seconds',
      help:
        'From an EndpointSlice change (its endpoints.kubernetes.io/last-change-trigger-time, or when it was seen) ' +
        'to the rules being in the kernel.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    syncFailures: new Counter({
      name: 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total',
      help: 'Syncs whose nft transaction failed (the next sync replaces the whole table).',
      registers,
    }),
    lastSync: new Gauge({
      name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
      help: 'When the rules were last synced successfully (unix seconds).',
      registers,
    }),
    servicePorts: new Gauge({
      name: 'kubeproxy_programmed_service_ports',
      help: 'Service ports with rules in the kernel after the last sync.',
      registers,
    }),
    endpoints: new Gauge({
      name: 'kubeproxy_programmed_endpoints',
      help: 'Endpoints traffic is sent to after the last sync (counted per service port).',
      registers,
    }),
    udpFlowsCleared: new Counter({
      name: 'kubeproxy_stale_udp_conntrack_clears_total',
      help: 'conntrack deletions run for UDP endpoints that went away.',
      registers,
    }),
  };
}
