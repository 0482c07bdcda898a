// The operations endpoints of a daemon that serves no API of its own (the
// scheduler, the controller manager), on --secure-port: /healthz, /readyz,
// /metrics over TLS, with the given serving certificate or, as Kubernetes'
// components do without one, a self-signed certificate made at start-up.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { type Check, startHealthServer } from './health.js';
import { StartupError } from './main.js';
import { selfSignedServingCert } from './serving-cert.js';
import type { Shutdown } from './shutdown.js';

export interface OperationsServerOptions {
  /** Names the self-signed certificate ("kubit-scheduler"). */
  component: string;
  bindAddress: string;
  securePort: number;
  /** Both or neither: the caller checks they go together. */
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  registry: Registry;
  log: Logger;
  readiness?: Check[];
  /** Closes the server (and removes a self-signed certificate) on the way out. */
  shutdown: Shutdown;
}

/** Starts the server unless --secure-port is 0; a failure to start is a StartupError. */
export async function serveOperations(o: OperationsServerOptions): Promise<void> {
  if (o.securePort <= 0) return;
  let tls =
    o.tlsCertFile && o.tlsPrivateKeyFile
      ? { certFile: o.tlsCertFile, keyFile: o.tlsPrivateKeyFile }
      : undefined;
  if (!tls) {
    try {
      const cert = await selfSignedServingCert(o.component, o.bindAddress);
      o.shutdown.add(() => cert.cleanup());
      tls = cert;
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
  }
  const health = await startHealthServer({
    host: o.bindAddress,
    port: o.securePort,
    registry: o.registry,
    log: o.log,
    tls,
    readiness: o.readiness,
  }).catch((err: Error) => {
    throw new StartupError(`cannot serve on ${o.bindAddress}:${o.securePort}: ${err.message}`);
  });
  o.shutdown.add(() => health.close());
}
