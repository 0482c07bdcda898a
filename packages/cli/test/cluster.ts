// A small working cluster for the rollout tests: apiserver and etcd (testkit's
// control plane), kubit-controller-manager, kubit-scheduler and kubit-hollow
// nodes, so Deployments get pods that are scheduled and become Ready.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type ControlPlane,
  daemonCommand,
  freePort,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';

export interface Cluster {
  cp: ControlPlane;
  /** HOME and KUBECONFIG for kubit. */
  env: NodeJS.ProcessEnv;
  /** The last lines of each daemon's log (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

function daemon(cp: ControlPlane, name: string, pkg: string, entry: string, args: string[]): TestProcess {
  const cmd = daemonCommand(pkg, entry);
  return startProcess({
    name,
    command: cmd.command,
    args: [...cmd.args, ...args],
    env: { KUBIT_LOG_FORMAT: 'json' },
    logFile: join(cp.logDir, `${name}.log`),
  });
}

export async function startCluster(opts: { nodes?: number; home: string }): Promise<Cluster> {
  const cp = await startControlPlane();
  const procs: TestProcess[] = [];
  const stop = async () => {
    for (const p of procs.reverse()) await p.stop();
    await cp.stop();
  };
  try {
    const cmKubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
    const schedKubeconfig = await cp.kubeconfigFor('kube-scheduler', cp.pki.scheduler);
    procs.push(
      daemon(cp, 'controller-manager', 'controllers', 'main.ts', [
        `--kubeconfig=${cmKubeconfig}`,
        '--leader-elect=false',
        '--controllers=replicaset,deployment',
        `--secure-port=${await freePort()}`,
        '--bind-address=127.0.0.1',
      ]),
      daemon(cp, 'scheduler', 'scheduler', 'main.ts', [
        `--kubeconfig=${schedKubeconfig}`,
        '--leader-elect=false',
        `--secure-port=${await freePort()}`,
        '--bind-address=127.0.0.1',
      ]),
      daemon(cp, 'hollow', 'kubelet', 'hollow.ts', [
        `--nodes=${opts.nodes ?? 2}`,
        '--name-prefix=hollow-',
        `--kubeconfig=${cp.kubeconfigPath}`,
      ]),
    );
    const { KubeClient } = await import('@kubit/client');
    const { resources } = await import('@kubit/client');
    const client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    try {
      await waitFor(
        'the hollow nodes to be Ready',
        async () => {
          for (const p of procs) if (!p.running) throw new Error(`${p.name} exited; see ${cp.logDir}`);
          const nodes = await client.list<{
            metadata?: { name?: string };
            status?: { conditions?: { type: string; status: string }[] };
          }>(resources.nodes);
          return (
            nodes.items.length === (opts.nodes ?? 2) &&
            nodes.items.every((n) =>
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
  } catch (e) {
    await stop();
    throw e;
  }
  return {
    cp,
    env: { HOME: opts.home, KUBECONFIG: cp.kubeconfigPath },
    logs: () =>
      ['controller-manager', 'scheduler', 'hollow']
        .map((n) => {
          try {
            const lines = readFileSync(join(cp.logDir, `${n}.log`), 'utf8')
              .trim()
              .split('\n')
              .slice(-10);
            return `--- ${n}.log ---\n${lines.join('\n')}`;
          } catch {
            return `--- ${n}.log: none ---`;
          }
        })
        .join('\n'),
    stop,
  };
}
