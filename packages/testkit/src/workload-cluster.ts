// A small working cluster for tests of workloads: testkit's control plane (etcd and
// kubit-apiserver), kubit-controller-manager, kubit-scheduler and kubit-hollow
// nodes, so Deployments and ReplicaSets get pods that are scheduled and become
// Ready without containers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Node } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import { type ControlPlane, startControlPlane } from './controlplane.js';
import { freePort, startDaemon, type TestProcess, waitFor } from './process.js';

export interface WorkloadClusterOptions {
  /** Hollow nodes to register (named hollow-0, hollow-1, ...). Default 2. */
  nodes?: number;
  /** The controller manager's --controllers. Default "replicaset,deployment". */
  controllers?: string;
}

export interface WorkloadCluster {
  cp: ControlPlane;
  /** The last lines of each daemon's log, for a failure message. */
  logs(lines?: number): string;
  stop(): Promise<void>;
}

const DAEMONS = ['controller-manager', 'scheduler', 'hollow'] as const;

/** Starts the cluster and resolves once every hollow node is Ready. */
export async function startWorkloadCluster(opts: WorkloadClusterOptions = {}): Promise<WorkloadCluster> {
  const nodes = opts.nodes ?? 2;
  const cp = await startControlPlane();
  const procs: TestProcess[] = [];
  const daemon = (name: (typeof DAEMONS)[number], pkg: string, entry: string, args: string[]) => {
    procs.push(startDaemon({ name, pkg, entry, args, logDir: cp.logDir }));
  };
  const stop = async () => {
    for (const p of procs.reverse()) await p.stop();
    await cp.stop();
  };
  try {
    daemon('controller-manager', 'controllers', 'main.ts', [
      `--kubeconfig=${await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager)}`,
      '--leader-elect=false',
      `--controllers=${opts.controllers ?? 'replicaset,deployment'}`,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ]);
    daemon('scheduler', 'scheduler', 'main.ts', [
      `--kubeconfig=${await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler)}`,
      '--leader-elect=false',
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ]);
    daemon('hollow', 'kubelet', 'hollow.ts', [
      `--nodes=${nodes}`,
      '--name-prefix=hollow-',
      `--kubeconfig=${cp.kubeconfigPath}`,
    ]);
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    try {
      await waitFor(
        'the hollow nodes to be Ready',
        async () => {
          for (const p of procs) if (!p.running) throw new Error(`${p.name} exited; see ${cp.logDir}`);
          const list = await client.list<Node>(resources.nodes);
          return (
            list.items.length === nodes &&
            list.items.every((n) =>
              n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            )
          );
        },
        90_000,
        250,
      );
    } finally {
      client.close();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const logs = (lines = 10) =>
    DAEMONS.map((name) => {
      try {
        const tail = readFileSync(join(cp.logDir, `${name}.log`), 'utf8')
          .trim()
          .split('\n')
          .slice(-lines);
        return `--- ${name}.log ---\n${tail.join('\n')}`;
      } catch {
        return `--- ${name}.log: none ---`;
      }
    }).join('\n');
  return { cp, logs, stop };
}
