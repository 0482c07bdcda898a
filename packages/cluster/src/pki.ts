// The cluster's certificates (made by scripts/pki, which keeps what exists) and
// the kubeconfig of every client: the admin, the scheduler, the controller
// manager, kubit-proxy, kubit-dns and each kubelet.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { apiServerServiceIP, DEFAULT_SERVICE_CIDR, formatIPv4 } from '@kubit/api';
import { certKubeconfigYaml } from '@kubit/client';
import type { ClusterLayout } from './layout.js';

const run = promisify(execFile);

/** Files scripts/pki writes that this cluster needs, so a complete PKI is never regenerated. */
export function requiredPkiFiles(layout: ClusterLayout): string[] {
  const names = [
    'ca',
    'apiserver',
    'store',
    'apiserver-etcd-client',
    'apiserver-kubelet-client',
    'admin',
    'scheduler',
    'controller-manager',
    'kube-proxy',
    'kubit-dns',
    'kubit-net',
    ...layout.nodes.flatMap((n) => [`kubelet-${n.name}`, `kubelet-${n.name}-server`]),
  ];
  return [
    ...names.flatMap((n) => [join(layout.pkiDir, `${n}.crt`), join(layout.pkiDir, `${n}.key`)]),
    join(layout.pkiDir, 'sa.key'),
    join(layout.pkiDir, 'sa.pub'),
  ];
}

/** Runs scripts/pki when any certificate is missing (e.g. the first up, or a new node). */
export async function ensurePki(
  layout: ClusterLayout,
  repoRoot: string,
  serviceCidr: string = DEFAULT_SERVICE_CIDR,
): Promise<boolean> {
  if (requiredPkiFiles(layout).every((f) => existsSync(f))) return false;
  // The `kubernetes` Service's address (the first of the Service range) is a name of the apiserver;
  // scripts/pki names the default range's itself.
  const serviceIp = formatIPv4(apiServerServiceIP(serviceCidr));
  const args = [
    layout.pkiDir,
    ...layout.nodes.flatMap((n) => ['--node', n.name]),
    ...(serviceCidr === DEFAULT_SERVICE_CIDR ? [] : [serviceIp]),
  ];
  try {
    await run(join(repoRoot, 'scripts', 'pki'), args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`scripts/pki failed: ${(e.stderr ?? '').trim() || e.message}`);
  }
  const missing = requiredPkiFiles(layout).filter((f) => !existsSync(f));
  if (missing.length > 0) throw new Error(`scripts/pki did not write: ${missing.join(', ')}`);
  return true;
}

/** (Re)writes every kubeconfig: cheap, and it keeps them right if the state dir moved. */
export async function writeKubeconfigs(layout: ClusterLayout, apiserverUrl: string): Promise<void> {
  const caFile = join(layout.pkiDir, 'ca.crt');
  const files: [string, string, string][] = [
    [layout.adminKubeconfig, 'admin', 'admin'],
    [layout.schedulerKubeconfig, 'scheduler', 'system:kube-scheduler'],
    [layout.controllerManagerKubeconfig, 'controller-manager', 'system:kube-controller-manager'],
    [layout.proxyKubeconfig, 'kube-proxy', 'system:kube-proxy'],
    [layout.dnsKubeconfig, 'kubit-dns', 'system:kubit-dns'],
    [layout.netKubeconfig, 'kubit-net', 'system:kubit-net'],
    ...layout.nodes.map((n): [string, string, string] => [
      n.kubeconfig,
      `kubelet-${n.name}`,
      `system:node:${n.name}`,
    ]),
  ];
  for (const [path, cert, user] of files) {
    await mkdir(dirname(path), { recursive: true });
    const text = certKubeconfigYaml({
      server: apiserverUrl,
      caFile,
      certFile: join(layout.pkiDir, `${cert}.crt`),
      keyFile: join(layout.pkiDir, `${cert}.key`),
      user,
    });
    await writeFile(path, text, { mode: 0o600 });
  }
}
