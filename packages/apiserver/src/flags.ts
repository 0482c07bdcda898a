// The kubit-apiserver command line, from the same option names startApiServer
// takes: what the launcher, the installer's systemd units and the test harness
// pass to the process. One function, so a flag renamed in main.ts is renamed
// for all of them (and a test of main.ts's parsing covers what they send).
import type { ApiServerOptions } from './apiserver.js';

/** The options that have a flag; those left out (or empty) are not passed, so the daemon's default holds. */
export type ApiServerFlags = Partial<
  Omit<ApiServerOptions, 'bookmarkIntervalMs' | 'securePort'> & {
    /** A number, or a placeholder such as ${PORT} in a unit file. */
    securePort: number | string;
    /** Seconds, as --watch-bookmark-interval takes them. */
    watchBookmarkIntervalSeconds: number;
  }
>;

/** `--flag=value` for each option given, in main.ts's order. */
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
  ];
  return flags.filter(([, v]) => v !== undefined && v !== '').map(([name, v]) => `--${name}=${v}`);
}
