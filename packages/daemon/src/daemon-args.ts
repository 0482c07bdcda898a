// How each control-plane daemon is started: the command lines the launcher on
// one machine (`up`), the installer's units on many and the test harness pass
// to kubit-apiserver, kubit-scheduler and kubit-controller-manager. One module
// below all of them (the cluster and the testkit import it, and neither depends
// on the daemons themselves), so a flag renamed in a daemon's main.ts is
// renamed for every way it is started. The apiserver's tests prove its main.ts
// parses what apiserverArgs builds.

/**
 * The kubit-apiserver options that have a flag, named as startApiServer's
 * options are (its own type stays in the apiserver, which this package cannot
 * import; the apiserver's flags test checks the two agree). Those left out (or
 * empty) are not passed, so the daemon's default holds.
 */
export interface ApiServerFlags {
  bindAddress?: string;
  /** A number, or a placeholder such as ${PORT} in a unit file. */
  securePort?: number | string;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  clientCaFile?: string;
  tokenAuthFile?: string;
  etcdServers?: string[];
  etcdCaFile?: string;
  etcdCertFile?: string;
  etcdKeyFile?: string;
  authorizationModes?: string[];
  kubeletClientCertificate?: string;
  kubeletClientKey?: string;
  kubeletCertificateAuthority?: string;
  watchCacheHistory?: number;
  minRequestTimeoutSeconds?: number;
  /** Seconds, as --watch-bookmark-interval takes them. */
  watchBookmarkIntervalSeconds?: number;
  serviceAccountSigningKeyFile?: string;
  /** Each one a --service-account-key-file of its own. */
  serviceAccountKeyFiles?: string[];
  serviceAccountIssuer?: string;
  apiAudiences?: string[];
  serviceAccountMaxTokenExpirationSeconds?: number;
  serviceClusterIpRange?: string;
  serviceNodePortRange?: string;
  advertiseAddress?: string;
  /** A duration ("15s"): how often kubelets are scraped for metrics.k8s.io. */
  metricResolution?: string;
}

/** `--flag=value` for each option given, in the apiserver's main.ts order. */
export function apiserverArgs(o: ApiServerFlags): string[] {
  const flags: [string, string | number | undefined][] = [
    ['bind-address', o.bindAddress],
    ['secure-port', o.securePort],
    ['tls-cert-file', o.tlsCertFile],
    ['tls-private-key-file', o.tlsPrivateKeyFile],
    ['client-ca-file', o.clientCaFile],
    ['token-auth-file', o.tokenAuthFile],
    ['etcd-servers', o.etcdServers?.length ? o.etcdServers.join(',') : undefined],
    ['etcd-cafile', o.etcdCaFile],
    ['etcd-certfile', o.etcdCertFile],
    ['etcd-keyfile', o.etcdKeyFile],
    ['authorization-mode', o.authorizationModes?.length ? o.authorizationModes.join(',') : undefined],
    ['kubelet-client-certificate', o.kubeletClientCertificate],
    ['kubelet-client-key', o.kubeletClientKey],
    ['kubelet-certificate-authority', o.kubeletCertificateAuthority],
    ['watch-cache-history', o.watchCacheHistory],
    ['min-request-timeout', o.minRequestTimeoutSeconds],
    ['watch-bookmark-interval', o.watchBookmarkIntervalSeconds],
    ['service-cluster-ip-range', o.serviceClusterIpRange],
    ['service-node-port-range', o.serviceNodePortRange],
    ['advertise-address', o.advertiseAddress],
    ['service-account-signing-key-file', o.serviceAccountSigningKeyFile],
    ['service-account-issuer', o.serviceAccountIssuer],
    ['api-audiences', o.apiAudiences?.length ? o.apiAudiences.join(',') : undefined],
    ['service-account-max-token-expiration', o.serviceAccountMaxTokenExpirationSeconds],
    ['metric-resolution', o.metricResolution],
  ];
  const keyFiles = (o.serviceAccountKeyFiles ?? []).map((f) => `--service-account-key-file=${f}`);
  return [
    ...flags.filter(([, v]) => v !== undefined && v !== '').map(([name, v]) => `--${name}=${v}`),
    ...keyFiles,
  ];
}

// The scheduler and the controller manager: leader election is on however they
// are started (two replicas may run), and the controller manager allocates
// each node a /24 of the cluster CIDR.

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
