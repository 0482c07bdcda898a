#!/usr/bin/env node
// kubit-scheduler: assigns pending pods to nodes. Flags follow kube-scheduler's.
import { durationArg, intArg, runMain } from '@kubit/daemon';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runDaemon } from './daemon.js';

function boolArg(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError(`"${value}" is not a boolean (true or false).`);
}

const program = new Command('kubit-scheduler')
  .description('Kubit scheduler: watches pods without a node and binds each to the node that fits it best.')
  .option('--kubeconfig <file>', 'kubeconfig with the apiserver address and credentials')
  .option('--master <url>', 'apiserver address (overrides the kubeconfig)')
  .option('--config <file>', 'a KubeSchedulerConfiguration file (profiles, plugins, score weights)')
  .option(
    '--leader-elect [bool]',
    'elect a leader through a Lease before scheduling (for replicas)',
    boolArg,
    true,
  )
  .addOption(
    new Option('--leader-elect-lease-duration <duration>', 'how long non-leaders wait before taking over')
      .argParser(durationArg)
      .default(15_000, '15s'),
  )
  .addOption(
    new Option(
      '--leader-elect-renew-deadline <duration>',
      'how long the leader tries to renew before giving up',
    )
      .argParser(durationArg)
      .default(10_000, '10s'),
  )
  .addOption(
    new Option('--leader-elect-retry-period <duration>', 'how often candidates try to acquire or renew')
      .argParser(durationArg)
      .default(2_000, '2s'),
  )
  .option('--leader-elect-resource-name <name>', 'the Lease name', 'kube-scheduler')
  .option('--leader-elect-resource-namespace <ns>', 'the Lease namespace', 'kube-system')
  .option(
    '--secure-port <port>',
    'HTTPS port for /healthz, /readyz, /livez and /metrics (0: none)',
    intArg(0, 65535),
    10259,
  )
  .option('--bind-address <ip>', 'address for the health and metrics server', '0.0.0.0')
  .option('--tls-cert-file <file>', 'serving certificate for --secure-port (self-signed when absent)')
  .option('--tls-private-key-file <file>', 'key for --tls-cert-file')
  .option(
    '--percentage-of-nodes-to-score <percent>',
    "nodes to find feasible before scoring, as a percentage of all nodes (overrides --config's top-level value; " +
      '0: adaptive, as Kubernetes: 50% less 1% per 125 nodes, at least 5%; never fewer than 100 nodes)',
    intArg(0, 100),
  )
  .action(async (o) => {
    await runDaemon({
      kubeconfig: o.kubeconfig,
      master: o.master,
      config: o.config,
      leaderElect: o.leaderElect,
      leaseDurationMs: o.leaderElectLeaseDuration,
      renewDeadlineMs: o.leaderElectRenewDeadline,
      retryPeriodMs: o.leaderElectRetryPeriod,
      lockName: o.leaderElectResourceName,
      lockNamespace: o.leaderElectResourceNamespace,
      securePort: o.securePort,
      bindAddress: o.bindAddress,
      tlsCertFile: o.tlsCertFile,
      tlsPrivateKeyFile: o.tlsPrivateKeyFile,
      percentageOfNodesToScore: o.percentageOfNodesToScore,
    });
  });

await runMain(program);
