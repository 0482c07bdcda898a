#!/usr/bin/env node
// kubit-proxy: programs this node's nftables so Services' cluster IPs, node ports
// and load-balancer IPs reach their ready endpoints. Flags follow kube-proxy's.
import { hostname } from 'node:os';
import { parseCidr } from '@kubit/api';
import { durationArg, listArg, runMain, StartupError } from '@kubit/daemon';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runCleanup, runProxyDaemon } from './daemon.js';
import { TABLE_NAME } from './ruleset.js';

function boolArg(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`"${value}" is not a boolean (true or false).`);
}

function cidrListArg(value: string, previous: string[] = []): string[] {
  const list = listArg(value, previous);
  for (const c of list) {
    try {
      parseCidr(c);
    } catch {
      throw new InvalidArgumentError(`"${c}" is not an IPv4 CIDR (example: 10.244.0.0/16).`);
    }
  }
  return list;
}

/** "host:port", as kube-proxy's bind-address flags take it; "" turns the server off. */
function bindAddressArg(value: string): { host: string; port: number } | undefined {
  if (value === '') return undefined;
  const m = /^(.*):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535)
    throw new InvalidArgumentError(`"${value}" is not host:port (example: 0.0.0.0:10256).`);
  return { host: m[1] === '' ? '0.0.0.0' : m[1], port };
}

const program = new Command('kubit-proxy')
  .description(
    "Kubit's kube-proxy: watches Services and EndpointSlices and programs the node's nftables " +
      '(table ip kubit-proxy) so cluster IPs, node ports and load-balancer IPs reach the ready endpoints.',
  )
  .option('--kubeconfig <file>', 'kubeconfig with the apiserver address and credentials')
  .option('--master <url>', 'apiserver address (overrides the kubeconfig)')
  .option(
    '--hostname-override <name>',
    "this node's name, as its Node object is named (default: the host name)",
  )
  .option(
    '--cluster-cidr <cidrs>',
    'the pods’ address ranges (comma-separated); traffic to a cluster IP from outside them is masqueraded',
    cidrListArg,
    [],
  )
  .option('--proxy-mode <mode>', 'how Services are implemented: only "nftables"', 'nftables')
  .option(
    '--nodeport-addresses <cidrs>',
    'node ports answer only on local addresses in these ranges (comma-separated; default: every local address but 127.0.0.0/8)',
    cidrListArg,
    [],
  )
  .option('--masquerade-all [bool]', 'masquerade (SNAT) every packet sent to a Service', boolArg, false)
  .addOption(
    new Option('--healthz-bind-address <host:port>', 'where /healthz is served ("" for nowhere)')
      .argParser(bindAddressArg)
      .default({ host: '0.0.0.0', port: 10256 }, '0.0.0.0:10256'),
  )
  .addOption(
    new Option('--metrics-bind-address <host:port>', 'where /metrics is served ("" for nowhere)')
      .argParser(bindAddressArg)
      .default({ host: '127.0.0.1', port: 10249 }, '127.0.0.1:10249'),
  )
  .addOption(
    new Option(
      '--min-sync-period <duration>',
      'the shortest time between two syncs: changes that arrive within it are applied together ' +
        '(kube-proxy defaults to 1s; kubit-proxy to 100ms, so a change lands well within a second)',
    )
      .argParser(durationArg)
      .default(100, '100ms'),
  )
  .addOption(
    new Option('--sync-period <duration>', 'how often the rules are re-planned and checked without a change')
      .argParser(durationArg)
      .default(30_000, '30s'),
  )
  .option(
    '--network-namespace <name>',
    'program the rules into this named network namespace (ip netns exec NAME nft -f -) instead of this ' +
      "process's own; for tests and the netns lab",
  )
  .option(
    '--nft-table <name>',
    'the name of its nftables table (family ip); several clusters sharing one network namespace each need their own',
    TABLE_NAME,
  )
  .option('--cleanup', 'remove the kubit-proxy table and exit', false)
  .action(async (o) => {
    if (!/^[A-Za-z][A-Za-z0-9_-]{0,31}$/.test(o.nftTable)) {
      throw new StartupError(
        `--nft-table "${o.nftTable}" must start with a letter and hold at most 32 letters, digits, "-" or "_"`,
      );
    }
    if (o.cleanup) {
      await runCleanup(o.networkNamespace, o.nftTable);
      return;
    }
    if (o.proxyMode !== 'nftables' && o.proxyMode !== '') {
      throw new StartupError(
        `unsupported --proxy-mode "${o.proxyMode}": kubit-proxy implements only nftables (--proxy-mode=nftables)`,
      );
    }
    if (o.minSyncPeriod <= 0 && o.minSyncPeriod !== 0)
      throw new StartupError('--min-sync-period must not be negative');
    if (o.syncPeriod <= 0) throw new StartupError('--sync-period must be positive');
    const nodeName = (o.hostnameOverride ?? hostname()).trim().toLowerCase();
    if (!nodeName) throw new StartupError('--hostname-override is empty');
    await runProxyDaemon({
      kubeconfig: o.kubeconfig,
      master: o.master,
      nodeName,
      clusterCidrs: o.clusterCidr,
      nodePortAddresses: o.nodeportAddresses,
      masqueradeAll: o.masqueradeAll,
      minSyncPeriodMs: o.minSyncPeriod,
      syncPeriodMs: o.syncPeriod,
      healthz: o.healthzBindAddress,
      metrics: o.metricsBindAddress,
      networkNamespace: o.networkNamespace,
      tableName: o.nftTable,
    });
  });

await runMain(program);
