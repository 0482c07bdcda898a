// Start-up problems in the flags or files end the process with exit code 1 and
// one clear line; a store that is not there yet (or has no leader) does not:
// the apiserver keeps trying, not ready but alive, and serves once it is up.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiserverArgs } from '@kubit/daemon/daemon-args';
import {
  daemonCommand,
  ETCD_BINARY,
  freePort,
  generatePki,
  httpsGet,
  type Pki,
  startProcess,
  type TestProcess,
  tempDir,
  waitFor,
} from '@kubit/testkit';

let dir: { path: string; cleanup: () => Promise<void> };
let pki: Pki;

before(async () => {
  dir = await tempDir('kubit-apiserver-startup-');
  pki = await generatePki(join(dir.path, 'pki'));
});
after(async () => {
  await dir?.cleanup();
});

async function run(name: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const cmd = daemonCommand('apiserver', 'main.ts');
  const logFile = join(dir.path, `${name}.log`);
  const p = startProcess({
    name,
    command: cmd.command,
    args: [...cmd.args, ...args],
    logFile,
    env: { KUBIT_LOG_FORMAT: 'json' },
  });
  // Generous: starting from sources under tsx on a loaded machine takes tens of seconds.
  const timer = setTimeout(() => void p.stop(), 100_000);
  const { code } = await p.exited;
  clearTimeout(timer);
  await new Promise((r) => setTimeout(r, 100));
  return { code, output: (await readFile(logFile, 'utf8')).trim() };
}

describe('start-up errors', { concurrency: true }, () => {
  it('a missing certificate file', async () => {
    const r = await run('nocert', [
      '--tls-cert-file=/nope/cert.pem',
      `--tls-private-key-file=${pki.apiserver.key}`,
      '--etcd-servers=https://127.0.0.1:1',
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.output, 'kubit-apiserver: --tls-cert-file: no such file: /nope/cert.pem');
  });

  for (const [i, [flag, line]] of [
    [
      '--service-cluster-ip-range=10.96.0.0/33',
      'kubit-apiserver: --service-cluster-ip-range=10.96.0.0/33: not an IPv4 CIDR (e.g. 10.96.0.0/12)',
    ],
    [
      '--service-cluster-ip-range=10.0.0.0/8',
      'kubit-apiserver: --service-cluster-ip-range=10.0.0.0/8: too large; the prefix must be /12 or longer',
    ],
    [
      '--service-node-port-range=32767-30000',
      'kubit-apiserver: --service-node-port-range=32767-30000: expected a port range "first-last" within 1-65535 (e.g. 30000-32767)',
    ],
    [
      '--advertise-address=example.com',
      'kubit-apiserver: --advertise-address=example.com: expected one IPv4 address (not 0.0.0.0)',
    ],
  ].entries()) {
    it(`a bad ${flag}`, async () => {
      const r = await run(`bad-service-flag-${i}`, [
        `--tls-cert-file=${pki.apiserver.cert}`,
        `--tls-private-key-file=${pki.apiserver.key}`,
        '--etcd-servers=https://127.0.0.1:1',
        flag,
      ]);
      assert.equal(r.code, 1);
      assert.equal(r.output, line);
    });
  }

  it('a bad flag value', async () => {
    const r = await run('badflag', [
      '--secure-port=http',
      `--tls-cert-file=${pki.apiserver.cert}`,
      `--tls-private-key-file=${pki.apiserver.key}`,
    ]);
    assert.equal(r.code, 1);
    assert.match(r.output, /--secure-port.*"http" is not an integer/);
  });
});

/** Starts member `i` of a 3-member etcd cluster over TLS (the others may not run: no leader). */
function startEtcdMember(i: number, ports: { client: number; peer: number }[], token: string): TestProcess {
  const cluster = ports.map((p, k) => `m${k}=http://127.0.0.1:${p.peer}`).join(',');
  return startProcess({
    name: `etcd-m${i}`,
    command: ETCD_BINARY,
    args: [
      `--name=m${i}`,
      `--data-dir=${join(dir.path, `etcd-m${i}`)}`,
      `--listen-client-urls=https://127.0.0.1:${ports[i].client}`,
      `--advertise-client-urls=https://127.0.0.1:${ports[i].client}`,
      `--listen-peer-urls=http://127.0.0.1:${ports[i].peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${ports[i].peer}`,
      `--initial-cluster=${cluster}`,
      `--initial-cluster-token=${token}`,
      `--cert-file=${pki.store.cert}`,
      `--key-file=${pki.store.key}`,
      `--trusted-ca-file=${pki.caFile}`,
      '--client-cert-auth',
      '--log-level=warn',
      '--logger=zap',
    ],
    logFile: join(dir.path, `etcd-m${i}.log`),
  });
}

describe('a store that comes up after the apiserver', () => {
  it('keeps retrying (alive, not ready, with the reason), then serves', { timeout: 240_000 }, async () => {
    const ports = [];
    for (let i = 0; i < 3; i++) ports.push({ client: await freePort(), peer: await freePort() });
    const port = await freePort();
    const url = `https://127.0.0.1:${port}`;
    const cmd = daemonCommand('apiserver', 'main.ts');
    const logFile = join(dir.path, 'late-store.log');
    const apiserver = startProcess({
      name: 'kubit-apiserver',
      command: cmd.command,
      args: [
        ...cmd.args,
        ...apiserverArgs({
          securePort: port,
          bindAddress: '127.0.0.1',
          tlsCertFile: pki.apiserver.cert,
          tlsPrivateKeyFile: pki.apiserver.key,
          clientCaFile: pki.caFile,
          etcdServers: ports.map((p) => `https://127.0.0.1:${p.client}`),
          etcdCaFile: pki.caFile,
          etcdCertFile: pki.apiserverEtcdClient.cert,
          etcdKeyFile: pki.apiserverEtcdClient.key,
        }),
      ],
      logFile,
      env: { KUBIT_LOG_FORMAT: 'json' },
    });
    const members: TestProcess[] = [];
    const get = (path: string) => httpsGet(`${url}${path}`, pki.caFile, pki.admin);
    const retries = async () =>
      (await readFile(logFile, 'utf8'))
        .split('\n')
        .filter((l) => l.includes('start-up: cannot reach the store') && l.includes('retrying')).length;
    try {
      // Nothing listens where the store should be.
      await waitFor(
        'the apiserver to listen',
        async () => (await get('/livez')).status === 200,
        120_000,
        200,
      );
      // Not ready, and once the first attempt has failed, saying why.
      const notReady = await waitFor(
        'readyz to give the reason',
        async () => {
          const r = await get('/readyz');
          assert.equal(r.status, 503, r.body);
          return /cannot reach the store/.test(r.body) ? r : undefined;
        },
        60_000,
        200,
      );
      assert.match(notReady.body, /cannot reach the store at https:\/\/127\.0\.0\.1:/);
      const refused = await get('/api/v1/namespaces');
      assert.equal(refused.status, 503, refused.body);
      assert.equal(JSON.parse(refused.body).reason, 'ServiceUnavailable');
      await waitFor('two failed attempts in the log', async () => (await retries()) >= 2, 30_000, 200);

      // One member of three: it answers, but has no leader and no quorum.
      const token = `late-${Date.now()}`;
      members.push(startEtcdMember(0, ports, token));
      const before = await retries();
      await waitFor('another failed attempt', async () => (await retries()) > before, 40_000, 200);
      assert.equal((await get('/readyz')).status, 503);
      assert.equal((await get('/livez')).status, 200);
      assert.ok(apiserver.running, 'the apiserver keeps running');

      // A quorum: the apiserver bootstraps and serves without being restarted.
      members.push(startEtcdMember(1, ports, token), startEtcdMember(2, ports, token));
      await waitFor(
        'the apiserver to be ready',
        async () => (await get('/readyz')).status === 200,
        60_000,
        300,
      );
      const list = await get('/api/v1/namespaces');
      assert.equal(list.status, 200, list.body);
      const names = JSON.parse(list.body).items.map((n: { metadata: { name: string } }) => n.metadata.name);
      assert.ok(names.includes('default') && names.includes('kube-system'), names.join(','));
      assert.match(await readFile(logFile, 'utf8'), /store reachable; kubit-apiserver serving/);
    } finally {
      await apiserver.stop();
      await Promise.all(members.map((m) => m.stop()));
    }
  });
});
