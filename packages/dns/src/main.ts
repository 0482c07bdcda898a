#!/usr/bin/env node
// kubit-dns: cluster DNS. Answers for the cluster domain as the Kubernetes DNS
// specification says and forwards every other name upstream. Flag names follow
// kube-proxy's and the kubelet's where they mean the same thing
// (--hostname-override, --cluster-domain, --bind-address); the health and
// metrics ports default to CoreDNS's (8080, 9153).
import { hostname } from 'node:os';
import {
  clusterDnsIP,
  DEFAULT_CLUSTER_DOMAIN,
  DEFAULT_SERVICE_CIDR,
  formatIPv4,
  parseIPv4,
} from '@kubit/api';
import { durationArg, intArg, listArg, runMain } from '@kubit/daemon';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runDaemon } from './daemon.js';

function boolArg(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`"${value}" is not a boolean (true or false).`);
}

function ipv4Arg(value: string): string {
  const n = parseIPv4(value);
  if (n === undefined) throw new InvalidArgumentError(`"${value}" is not an IPv4 address.`);
  return formatIPv4(n);
}

function domainArg(value: string): string {
  const d = value.replace(/\.$/, '').toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(d) || d.length > 253) {
    throw new InvalidArgumentError(`"${value}" is not a DNS domain (e.g. cluster.local).`);
  }
  return d;
}

const program = new Command('kubit-dns')
  .description(
    'Kubit cluster DNS: A, SRV, PTR and CNAME records for Services and their endpoints under the cluster ' +
      'domain, as the Kubernetes DNS specification defines them; every other name is forwarded upstream.',
  )
  .option('--kubeconfig <file>', 'kubeconfig with the apiserver address and credentials')
  .option('--master <url>', 'apiserver address (overrides the kubeconfig)')
  .option(
    '--cluster-domain <domain>',
    'the cluster domain this server answers for',
    domainArg,
    DEFAULT_CLUSTER_DOMAIN,
  )
  .option(
    '--ttl <seconds>',
    'TTL of every record in the cluster domain (the kubernetes Corefile: 30)',
    intArg(0, 3600),
    30,
  )
  .option(
    '--upstream <ip[:port],...>',
    'resolvers for names outside the cluster domain (repeatable; default: the nameservers of --resolv-conf)',
    listArg,
  )
  .option(
    '--resolv-conf <file>',
    'where the upstream nameservers come from without --upstream',
    '/etc/resolv.conf',
  )
  .addOption(
    new Option('--upstream-timeout <duration>', 'how long one upstream gets before the next is asked')
      .argParser(durationArg)
      .default(2_000, '2s'),
  )
  .option('--bind-address <ip>', 'address for DNS (UDP and TCP), health and metrics', '0.0.0.0')
  .option('--port <port>', 'DNS port, UDP and TCP', intArg(1, 65535), 53)
  .option(
    '--health-port <port>',
    'HTTP port for /health, /ready (/healthz, /readyz, /livez) (0: none)',
    intArg(0, 65535),
    8080,
  )
  .option('--metrics-port <port>', 'HTTP port for Prometheus /metrics (0: none)', intArg(0, 65535), 9153)
  .option(
    '--cluster-dns-ip <ip>',
    'cluster IP of the kube-system/kube-dns Service (the tenth address of the service range)',
    ipv4Arg,
    formatIPv4(clusterDnsIP(DEFAULT_SERVICE_CIDR)),
  )
  .option(
    '--advertise-address <ip>',
    "the address proxies send DNS traffic to (default: the InternalIP of this node's Node object)",
    ipv4Arg,
  )
  .option(
    '--hostname-override <name>',
    'the name of the Node this instance runs on',
    hostname().toLowerCase(),
  )
  .option(
    '--register [bool]',
    'keep the kube-dns Service and this instance\'s EndpointSlice "kube-dns-<node>" in place',
    boolArg,
    true,
  )
  .action(async (o) => {
    await runDaemon({
      kubeconfig: o.kubeconfig,
      master: o.master,
      clusterDomain: o.clusterDomain,
      ttl: o.ttl,
      upstreams: o.upstream,
      resolvConf: o.resolvConf,
      upstreamTimeoutMs: o.upstreamTimeout,
      bindAddress: o.bindAddress,
      port: o.port,
      healthPort: o.healthPort,
      metricsPort: o.metricsPort,
      clusterDnsIP: o.clusterDnsIp,
      advertiseAddress: o.advertiseAddress,
      nodeName: o.hostnameOverride,
      register: o.register,
    });
  });

await runMain(program);
