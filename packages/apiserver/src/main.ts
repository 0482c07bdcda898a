#!/usr/bin/env node
import { DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_CIDR } from '@kubit/api';
// kubit-apiserver: the Kubernetes REST API over a store speaking etcd's v3 API.
import { createLogger, createRegistry, intArg, listArg, runMain, Shutdown } from '@kubit/daemon';
import { Command } from 'commander';
import { startApiServer } from './apiserver.js';

const program = new Command('kubit-apiserver')
  .description('The Kubernetes API server of Kubit: REST + watch over HTTPS, state in etcd (or kubit-store).')
  .option('--bind-address <ip>', 'address to serve HTTPS on', '0.0.0.0')
  .option('--secure-port <port>', 'port to serve HTTPS on', intArg(1, 65535), 6443)
  .requiredOption('--tls-cert-file <file>', 'serving certificate (PEM)')
  .requiredOption('--tls-private-key-file <file>', 'serving key (PEM)')
  .option('--client-ca-file <file>', 'CA whose client certificates authenticate users (CN user, O groups)')
  .option('--token-auth-file <file>', 'bearer tokens, CSV: token,user,uid,"group1,group2"')
  .option('--etcd-servers <urls>', 'store endpoints, comma-separated', listArg, [])
  .option('--etcd-cafile <file>', 'CA of the store')
  .option('--etcd-certfile <file>', 'client certificate for the store')
  .option('--etcd-keyfile <file>', 'client key for the store')
  .option('--authorization-mode <modes>', 'authorizers in order: Node, RBAC, AlwaysAllow', listArg, [])
  .option('--kubelet-client-certificate <file>', 'client certificate towards kubelets (logs)')
  .option('--kubelet-client-key <file>', 'client key towards kubelets')
  .option('--kubelet-certificate-authority <file>', 'CA of the kubelets serving certificates')
  .option(
    '--watch-cache-history <n>',
    'events kept per resource for watch resumption',
    intArg(10, 10_000_000),
    5000,
  )
  .option(
    '--min-request-timeout <seconds>',
    'a watch without timeoutSeconds is closed after a random time between this and twice this',
    intArg(1, 86_400),
    1800,
  )
  .option('--watch-bookmark-interval <seconds>', 'seconds between watch bookmarks', intArg(1, 3600), 10)
  .option(
    '--service-account-signing-key-file <file>',
    'RSA private key (PEM) that signs ServiceAccount tokens; without it no tokens are issued',
  )
  .option(
    '--service-account-key-file <file>',
    'public key (PEM) tokens may also be verified with; repeatable',
    (v: string, prev: string[]) => [...prev, v],
    [],
  )
  .option(
    '--service-account-issuer <url>',
    'the iss of issued tokens',
    'https://kubernetes.default.svc.cluster.local',
  )
  .option('--api-audiences <list>', 'audiences the API accepts in tokens (default: the issuer)', listArg, [])
  .option(
    '--service-account-max-token-expiration <seconds>',
    'the longest validity a TokenRequest gets',
    intArg(600, 2 ** 32),
  )
  .option(
    '--service-cluster-ip-range <cidr>',
    'IPv4 range Services get their cluster IPs from',
    DEFAULT_SERVICE_CIDR,
  )
  .option(
    '--service-node-port-range <range>',
    'ports NodePort Services get their node ports from',
    DEFAULT_NODE_PORT_RANGE,
  )
  .option(
    '--advertise-address <ip>',
    "address the `kubernetes` Service's endpoints list for this apiserver (default: the bind address, or the host's first non-loopback IPv4 address)",
  )
  .option(
    '--metric-resolution <duration>',
    "how often each node's kubelet is scraped for metrics.k8s.io (kubectl top, HPAs), as metrics-server's flag",
    '15s',
  )
  .option('--v <level>', 'log verbosity (accepted for compatibility)')
  .action(async (o) => {
    const log = createLogger({ name: 'kubit-apiserver' });
    const registry = createRegistry();
    const shutdown = new Shutdown(log);
    shutdown.install();
    const modes: string[] = o.authorizationMode.length > 0 ? o.authorizationMode : ['Node', 'RBAC'];
    const server = await startApiServer(
      {
        bindAddress: o.bindAddress,
        securePort: o.securePort,
        tlsCertFile: o.tlsCertFile,
        tlsPrivateKeyFile: o.tlsPrivateKeyFile,
        clientCaFile: o.clientCaFile,
        tokenAuthFile: o.tokenAuthFile,
        etcdServers: o.etcdServers,
        etcdCaFile: o.etcdCafile,
        etcdCertFile: o.etcdCertfile,
        etcdKeyFile: o.etcdKeyfile,
        authorizationModes: modes,
        kubeletClientCertificate: o.kubeletClientCertificate,
        kubeletClientKey: o.kubeletClientKey,
        kubeletCertificateAuthority: o.kubeletCertificateAuthority,
        watchCacheHistory: o.watchCacheHistory,
        bookmarkIntervalMs: o.watchBookmarkInterval * 1000,
        minRequestTimeoutSeconds: o.minRequestTimeout,
        serviceAccountSigningKeyFile: o.serviceAccountSigningKeyFile,
        serviceAccountKeyFiles: o.serviceAccountKeyFile,
        serviceAccountIssuer: o.serviceAccountIssuer,
        apiAudiences: o.apiAudiences,
        serviceAccountMaxTokenExpirationSeconds: o.serviceAccountMaxTokenExpiration,
        serviceClusterIpRange: o.serviceClusterIpRange,
        serviceNodePortRange: o.serviceNodePortRange,
        advertiseAddress: o.advertiseAddress,
        metricResolution: o.metricResolution,
      },
      log,
      registry,
    );
    shutdown.add(() => server.stop());
  });

await runMain(program);
