// The stack the controller benchmarks run on: kubit-scheduler,
// kubit-controller-manager and a hollow-node process beside a bench control
// plane, started from source and waited on until every hollow node is Ready.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Node } from '@kubit/api';
import { type KubeClient, resources } from '@kubit/client';
import type { ControlPlane } from '../src/controlplane.js';
import { freePort, startDaemon, type TestProcess } from '../src/process.js';
import { type Cleanup, now, progress, sleep } from './common.js';

export interface HollowStack {
  scheduler: TestProcess;
  controllerManager: TestProcess;
  hollow: TestProcess;
  /** All three, for `assertRunning`. */
  procs: TestProcess[];
}

/** The error for a daemon that exited, with the end of its log (the log directory goes away at clean-up). */
export function exitedError(cp: ControlPlane, p: TestProcess): Error {
  let tail = '';
  try {
    tail = readFileSync(join(cp.logDir, `${p.name}.log`), 'utf8')
      .trim()
      .split('\n')
      .slice(-5)
      .join('\n');
  } catch {
    tail = '(no log)';
  }
  return new Error(`${p.name} exited during the run; its log ends:\n${tail}`);
}

/** Throws (with its log's end) if one of the stack's daemons has exited: a bench must not wait on a dead one. */
export function assertRunning(cp: ControlPlane, procs: TestProcess[]): void {
  for (const p of procs) if (!p.running) throw exitedError(cp, p);
}

/** Starts the scheduler, the controller manager and `nodes` hollow nodes, each stopped by `cleanup`. */
export async function startHollowStack(
  cp: ControlPlane,
  client: KubeClient,
  cleanup: Cleanup,
  opts: { nodes: number; maxPods: number },
): Promise<HollowStack> {
  const cmKubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
  const schedKubeconfig = await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler);
  const daemon = (name: string, pkg: string, entry: string, args: string[]) =>
    startDaemon({ name, pkg, entry, args, logDir: cp.logDir });
  progress(`starting kubit-scheduler, kubit-controller-manager and ${opts.nodes} hollow nodes`);
  const scheduler = daemon('scheduler', 'scheduler', 'main.ts', [
    `--kubeconfig=${schedKubeconfig}`,
    '--leader-elect=false',
    `--secure-port=${await freePort()}`,
    '--bind-address=127.0.0.1',
  ]);
  cleanup.add('scheduler', () => scheduler.stop());
  const controllerManager = daemon('controller-manager', 'controllers', 'main.ts', [
    `--kubeconfig=${cmKubeconfig}`,
    '--leader-elect=false',
    `--secure-port=${await freePort()}`,
    '--bind-address=127.0.0.1',
  ]);
  cleanup.add('controller manager', () => controllerManager.stop());
  const hollow = daemon('hollow', 'kubelet', 'hollow.ts', [
    `--nodes=${opts.nodes}`,
    '--name-prefix=hollow-',
    `--max-pods=${opts.maxPods}`,
    `--kubeconfig=${cp.kubeconfigPath}`,
  ]);
  cleanup.add('hollow nodes', () => hollow.stop());
  const procs = [scheduler, controllerManager, hollow];

  const readyDeadline = now() + 300_000;
  for (;;) {
    assertRunning(cp, procs);
    const nodes = await client.list<Node>(resources.nodes);
    const ready = nodes.items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
    if (ready === opts.nodes) break;
    if (now() > readyDeadline)
      throw new Error(`only ${ready} of ${opts.nodes} hollow nodes Ready after 300 s`);
    await sleep(500);
  }
  return { scheduler, controllerManager, hollow, procs };
}
