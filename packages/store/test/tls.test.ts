// Client TLS with client certificates (--cert-file, --key-file,
// --trusted-ca-file, --client-cert-auth), checked with the real etcdctl.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { etcdctl, StoreCluster, tempDir } from '@kubit/testkit';

let pki: { path: string; cleanup: () => Promise<void> };
let cluster: StoreCluster;
const file = (name: string) => join(pki.path, name);

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { stdio: 'ignore' });
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
function makePki(): void {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=kubit-test-ca',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.crt'),
  );
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.csr`),
    );
    execFileSync('sh', ['-c', `printf '%b' "${ext.replace(/\n/g, '\\n')}" > ${file(`${name}.ext`)}`]);
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.crt`),
    );
  }
}

before(async () => {
  pki = await tempDir('kubit-pki-');
  makePki();
  cluster = await StoreCluster.start({
    program: 'kubit-store',
    size: 1,
    tls: {
      cert: file('server.crt'),
      key: file('server.key'),
      ca: file('ca.crt'),
      clientCert: file('client.crt'),
      clientKey: file('client.key'),
    },
  });
});
after(async () => {
  await cluster?.destroy();
  await pki.cleanup();
});

test('etcdctl with a client certificate works over TLS', async () => {
  const tlsArgs = [
    `--cacert=${file('ca.crt')}`,
    `--cert=${file('client.crt')}`,
    `--key=${file('client.key')}`,
  ];
  const put = await cluster.etcdctl([...tlsArgs, 'put', 'secure', 'yes']);
  assert.equal(put.code, 0, put.stderr);
  const get = await cluster.etcdctl([...tlsArgs, 'get', 'secure', '--print-value-only']);
  assert.equal(get.stdout.trim(), 'yes');
});

test('without a client certificate, or without TLS, the request is refused', async () => {
  const noCert = await cluster.etcdctl([
    `--cacert=${file('ca.crt')}`,
    '--dial-timeout=2s',
    '--command-timeout=3s',
    'get',
    'secure',
  ]);
  assert.notEqual(noCert.code, 0);
  const plain = await etcdctl(cluster.endpoints, [
    '--dial-timeout=2s',
    '--command-timeout=3s',
    'get',
    'secure',
  ]);
  assert.notEqual(plain.code, 0);
});
