// When no --tls-cert-file is given, kube-scheduler and kube-controller-manager
// serve their secure port with a self-signed certificate made at start-up; so do
// Kubit's daemons (with openssl, which the PKI needs anyway).
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

/** A fresh self-signed certificate for `bindAddress` (and localhost), in a temp dir removed by cleanup(). */
export async function selfSignedServingCert(component: string, bindAddress: string): Promise<ServingCert> {
  const dir = await mkdtemp(join(tmpdir(), `${component}-cert-`));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  const host = bindAddress === '0.0.0.0' || bindAddress === '::' ? '127.0.0.1' : bindAddress;
  const isIp = /^[\d.]+$|:/.test(host);
  const san = isIp ? `IP:${host},DNS:localhost` : `DNS:${host},DNS:localhost,IP:127.0.0.1`;
  try {
    await run('openssl', [
      'req',
      '-x509',
      '-nodes',
      '-days',
      '365',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-subj',
      `/CN=${component}@${Math.floor(Date.now() / 1000)}`,
      '-addext',
      `subjectAltName=${san}`,
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    const why = (err as Error).message.split('\n')[0];
    throw new Error(
      `cannot make a self-signed serving certificate with openssl (${why}); pass --tls-cert-file and --tls-private-key-file`,
    );
  }
  return { certFile, keyFile, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
