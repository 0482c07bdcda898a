// Start-up problems end the process with exit code 1 and one clear line.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { daemonCommand, generatePki, type Pki, startProcess, tempDir } from '@kubit/testkit';

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
  const timer = setTimeout(() => void p.stop(), 40_000);
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

  it('an unreachable store', async () => {
    const r = await run('nostore', [
      `--tls-cert-file=${pki.apiserver.cert}`,
      `--tls-private-key-file=${pki.apiserver.key}`,
      '--etcd-servers=https://127.0.0.1:1',
      `--etcd-cafile=${pki.caFile}`,
      `--etcd-certfile=${pki.apiserverEtcdClient.cert}`,
      `--etcd-keyfile=${pki.apiserverEtcdClient.key}`,
    ]);
    assert.equal(r.code, 1);
    const lines = r.output.split('\n').filter((l) => !l.startsWith('{'));
    assert.equal(lines.length, 1, r.output);
    assert.match(lines[0], /^kubit-apiserver: cannot reach the store at https:\/\/127\.0\.0\.1:1: /);
  });

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
