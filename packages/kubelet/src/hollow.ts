#!/usr/bin/env node
// kubit-hollow: N hollow kubelets in one process, for load tests and benchmarks.
// Each registers a Ready Node, renews its Lease every 10 s and reports the pods
// bound to it as Running; no container runs (see hollow/hollow-nodes.ts).
import { parseQuantity } from '@kubit/api';
import { createLogger, intArg, listArg, runMain, Shutdown, StartupError } from '@kubit/daemon';
import { Command } from 'commander';
import { startHollowNodes } from './hollow/hollow-nodes.js';
import { parseNodeLabels, parseTaints } from './node/flags.js';

interface Flags {
  nodes: number;
  namePrefix: string;
  firstIndex: number;
  kubeconfig?: string;
  nodeKubeconfigTemplate?: string;
  nodeLabels: string[];
  registerWithTaints: string[];
  cpu: string;
  memory: string;
  maxPods: number;
  nodeIp: string;
  concurrency: number;
}

function quantityFlag(flag: string, value: string): string {
  try {
    parseQuantity(value);
    return value;
  } catch {
    throw new StartupError(`${flag}: "${value}" is not a quantity (e.g. 4, 500m, 16Gi)`);
  }
}

const program = new Command('kubit-hollow')
  .description('Runs many hollow kubelets in one process: Ready nodes whose pods "run" without containers.')
  .option('--nodes <n>', 'how many hollow nodes', intArg(1, 100_000), 1)
  .option('--name-prefix <prefix>', 'node names are <prefix><index>', 'hollow-')
  .option('--first-index <n>', 'index of the first node (to split nodes over processes)', intArg(0), 0)
  .option('--kubeconfig <path>', 'kubeconfig allowed to watch all pods and write the nodes (admin)')
  .option(
    '--node-kubeconfig-template <path>',
    'per-node kubeconfig for its own writes; "{name}" is replaced by the node name (system:node:<name> identities)',
  )
  .option('--node-labels <k=v,...>', 'labels every hollow node registers with', listArg, [])
  .option(
    '--register-with-taints <key=value:Effect,...>',
    'taints every hollow node registers with',
    listArg,
    [],
  )
  .option('--cpu <quantity>', 'CPU capacity of each node', '4')
  .option('--memory <quantity>', 'memory capacity of each node', '16Gi')
  .option('--max-pods <n>', 'pod capacity of each node', intArg(1, 10_000), 110)
  .option('--node-ip <ip>', 'the address every hollow node reports', '127.0.0.1')
  .option('--concurrency <n>', 'most apiserver writes in flight', intArg(1, 1000), 16)
  .action(async (flags: Flags) => {
    const log = createLogger({ name: 'kubit-hollow' });
    const template = flags.nodeKubeconfigTemplate;
    if (template !== undefined && !template.includes('{name}')) {
      throw new StartupError('--node-kubeconfig-template must contain "{name}"');
    }
    const hollow = await startHollowNodes({
      nodes: flags.nodes,
      namePrefix: flags.namePrefix,
      firstIndex: flags.firstIndex,
      kubeconfig: flags.kubeconfig,
      nodeKubeconfig: template ? (name) => template.replaceAll('{name}', name) : undefined,
      labels: parseNodeLabels(flags.nodeLabels),
      taints: parseTaints(flags.registerWithTaints),
      cpu: quantityFlag('--cpu', flags.cpu),
      memory: quantityFlag('--memory', flags.memory),
      maxPods: flags.maxPods,
      nodeIP: flags.nodeIp,
      concurrency: flags.concurrency,
      log,
    });
    const shutdown = new Shutdown(log);
    shutdown.install();
    shutdown.add(() => hollow.stop());
    const report = setInterval(() => log.info(hollow.stats(), 'hollow nodes'), 30_000);
    report.unref();
    shutdown.add(() => clearInterval(report));
  });

await runMain(program);
