// kubit-dns: cluster DNS as the Kubernetes DNS specification defines it.
export { type DaemonOptions, runDaemon } from './daemon.js';
export { Forwarder, parseUpstream, resolvConfNameservers, type Upstream } from './forwarder.js';
export { kubeDnsService, kubeDnsSlice, sliceName } from './kube-dns.js';
export { canonicalName, reverseName } from './names.js';
export { serviceName, serviceRecords } from './records.js';
export { DnsServer } from './server.js';
export { ClusterZone, DNS_SCHEMA_VERSION, type LookupResult } from './zone.js';
