// A self-signed serving certificate for the health/metrics port when none is
// given, as kube-controller-manager makes one for itself (here with openssl).
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ServingCert {
  certFile: string;
  keyFile: string;
  cleanup(): Promise<void>;
}

export async function selfSignedCert(host: string): Promise<ServingCert> {
  const dir = await mkdtemp(join(tmpdir(), 'kubit-cm-cert-'));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  const san = /^[\d.]+$/.test(host) ? `IP:${host},DNS:localhost` : `DNS:${host},DNS:localhost,IP:127.0.0.1`;
  try {
    await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '365',
      '-subj',
      `/CN=kubit-controller-manager@${Math.floor(Date.now() / 1000)}`,
      '-addext',
      `subjectAltName=${san}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `could not make a self-signed serving certificate with openssl (${(err as Error).message.split('\n')[0]}); pass --tls-cert-file and --tls-private-key-file`,
    );
  }
  return { certFile, keyFile, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
