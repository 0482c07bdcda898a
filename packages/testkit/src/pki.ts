// The cluster PKI for tests: runs scripts/pki (openssl) into a directory.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './process.js';

const run = promisify(execFile);

export interface CertPair {
  cert: string;
  key: string;
}

/** Paths of the files scripts/pki writes. */
export interface Pki {
  dir: string;
  caFile: string;
  caKey: string;
  apiserver: CertPair;
  store: CertPair;
  apiserverEtcdClient: CertPair;
  apiserverKubeletClient: CertPair;
  admin: CertPair;
  scheduler: CertPair;
  controllerManager: CertPair;
  /** The client cert of kubelet `name` (CN=system:node:<name>, O=system:nodes). */
  kubeletClient(name: string): CertPair;
  /** The serving cert of kubelet `name`. */
  kubeletServer(name: string): CertPair;
}

function pair(dir: string, name: string): CertPair {
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/**
 * Generates (or completes) the PKI in `dir`. `nodes` get kubelet client and
 * serving certs; `extraSans` (IPs or DNS names) go on every serving cert.
 */
export async function generatePki(dir: string, nodes: string[] = [], extraSans: string[] = []): Promise<Pki> {
  const args = [dir, ...nodes.flatMap((n) => ['--node', n]), ...extraSans];
  await run(join(repoRoot, 'scripts', 'pki'), args);
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    apiserver: pair(dir, 'apiserver'),
    store: pair(dir, 'store'),
    apiserverEtcdClient: pair(dir, 'apiserver-etcd-client'),
    apiserverKubeletClient: pair(dir, 'apiserver-kubelet-client'),
    admin: pair(dir, 'admin'),
    scheduler: pair(dir, 'scheduler'),
    controllerManager: pair(dir, 'controller-manager'),
    kubeletClient: (name) => pair(dir, `kubelet-${name}`),
    kubeletServer: (name) => pair(dir, `kubelet-${name}-server`),
  };
}
