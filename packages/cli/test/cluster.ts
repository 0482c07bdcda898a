// A small working cluster for the rollout tests (testkit's workload cluster:
// apiserver and etcd, kubit-controller-manager, kubit-scheduler and kubit-hollow
// nodes), with the environment kubit runs in against it.
import type { ControlPlane } from '@kubit/testkit';
import { startWorkloadCluster } from '@kubit/testkit';

export interface Cluster {
  cp: ControlPlane;
  /** HOME and KUBECONFIG for kubit. */
  env: NodeJS.ProcessEnv;
  /** The last lines of each daemon's log (for failure messages). */
  logs(): string;
  stop(): Promise<void>;
}

export async function startCluster(opts: {
  nodes?: number;
  home: string;
  controllers?: string;
}): Promise<Cluster> {
  const cluster = await startWorkloadCluster({ nodes: opts.nodes, controllers: opts.controllers });
  return {
    cp: cluster.cp,
    env: { HOME: opts.home, KUBECONFIG: cluster.cp.kubeconfigPath },
    logs: () => cluster.logs(),
    stop: () => cluster.stop(),
  };
}
