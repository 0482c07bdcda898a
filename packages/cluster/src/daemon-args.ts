// The scheduler's and the controller manager's command lines, for both ways a
// cluster is run: the launcher on one machine (`up`) and the installer's units
// on many. Leader election is on in both (two replicas may run), and the
// controller manager allocates each node a /24 of the cluster CIDR.

export interface ControlPlaneDaemonArgs {
  kubeconfig: string;
  bindAddress: string;
  securePort: number;
}

export function schedulerArgs(o: ControlPlaneDaemonArgs): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--leader-elect=true',
    `--bind-address=${o.bindAddress}`,
    `--secure-port=${o.securePort}`,
  ];
}

export function controllerManagerArgs(o: ControlPlaneDaemonArgs & { clusterCidr: string }): string[] {
  return [
    `--kubeconfig=${o.kubeconfig}`,
    '--leader-elect=true',
    `--bind-address=${o.bindAddress}`,
    `--secure-port=${o.securePort}`,
    '--allocate-node-cidrs=true',
    `--cluster-cidr=${o.clusterCidr}`,
    '--node-cidr-mask-size=24',
  ];
}
