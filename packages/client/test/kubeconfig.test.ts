import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  certKubeconfigYaml,
  KubeConfigError,
  kubeconfigFiles,
  loadClientConfig,
  loadKubeConfig,
  parseKubeConfig,
  resolveClientConfig,
} from '../src/kubeconfig.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubit-kc-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const first = `
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: c1
  cluster: { server: "https://one:6443", certificate-authority: ca.crt }
users:
- name: u1
  user: { token: tok1 }
contexts:
- name: a
  context: { cluster: c1, user: u1, namespace: team-a }
`;
const second = `
current-context: b
clusters:
- name: c1
  cluster: { server: "https://shadowed:6443" }
- name: c2
  cluster: { server: "https://two:6443", insecure-skip-tls-verify: true }
users:
- name: u2
  user: { client-certificate-data: ${Buffer.from('CERT').toString('base64')}, client-key-data: ${Buffer.from('KEY').toString('base64')} }
contexts:
- name: b
  context: { cluster: c2, user: u2 }
`;

describe('kubeconfig', () => {
  it('merges KUBECONFIG files first-wins and resolves relative paths per file', async () => {
    await writeFile(join(dir, 'one'), first);
    await writeFile(join(dir, 'two'), second);
    await writeFile(join(dir, 'ca.crt'), 'PEM');
    const env = { KUBECONFIG: `${join(dir, 'one')}:${join(dir, 'missing')}:${join(dir, 'two')}` };
    const loaded = loadKubeConfig(undefined, env);
    assert.equal(loaded.config['current-context'], 'a');
    assert.deepEqual(
      loaded.config.clusters.map((c) => c.cluster.server),
      ['https://one:6443', 'https://two:6443'],
    );
    assert.equal(loaded.config.clusters[0].cluster['certificate-authority'], join(dir, 'ca.crt'));
    assert.equal(loaded.origin.contexts.get('b'), join(dir, 'two'));
    const cfg = loadClientConfig({}, env);
    assert.equal(cfg.server, 'https://one:6443');
    assert.equal(cfg.token, 'tok1');
    assert.equal(cfg.namespace, 'team-a');
    assert.equal(cfg.ca?.toString(), 'PEM');
    const b = loadClientConfig({ context: 'b' }, env);
    assert.equal(b.server, 'https://two:6443');
    assert.equal(b.insecureSkipTLSVerify, true);
    assert.equal(b.cert?.toString(), 'CERT');
    assert.equal(b.key?.toString(), 'KEY');
    assert.equal(b.namespace, 'default');
  });

  it('applies flag overrides over the context', () => {
    const cfg = resolveClientConfig(parseKubeConfig(second, '/x/config'), {
      namespace: 'ns1',
      server: 'https://other:1',
      token: 'flagtok',
    });
    assert.equal(cfg.server, 'https://other:1');
    assert.equal(cfg.namespace, 'ns1');
    assert.equal(cfg.token, 'flagtok');
    assert.equal(cfg.cert, undefined, 'flag credentials replace the user entry');
  });

  it('--kubeconfig names exactly one file, which must exist', () => {
    assert.deepEqual(kubeconfigFiles('/a/b', { KUBECONFIG: '/c' }), ['/a/b']);
    assert.throws(() => loadKubeConfig(join(dir, 'nope'), {}), KubeConfigError);
  });

  it('reports an unknown context', () => {
    assert.throws(
      () => resolveClientConfig(parseKubeConfig(first), { context: 'zzz' }),
      /context "zzz" does not exist/,
    );
  });

  it('defaults to localhost:8080 with no config', () => {
    const cfg = loadClientConfig({}, { HOME: dir });
    assert.equal(cfg.server, 'http://localhost:8080');
  });

  it('rejects a malformed file with its name', () => {
    assert.throws(() => parseKubeConfig('clusters: [', '/etc/kc'), /error loading config file "\/etc\/kc"/);
  });
});

describe('certKubeconfigYaml', () => {
  it('writes a kubeconfig the loader reads back, quoting what YAML needs quoted', async () => {
    // Names that a hand-written template would have broken: a colon-space, a "#", a leading "*".
    const pki = join(dir, 'pki: #1');
    await mkdir(pki, { recursive: true });
    for (const f of ['ca.crt', 'c.crt', 'c.key']) await writeFile(join(pki, f), `pem of ${f}\n`);
    const file = join(dir, 'cert.kubeconfig');
    await writeFile(
      file,
      certKubeconfigYaml({
        server: 'https://10.0.0.1:6443',
        caFile: join(pki, 'ca.crt'),
        certFile: join(pki, 'c.crt'),
        keyFile: join(pki, 'c.key'),
        user: '*system:node:n1',
        namespace: 'team-a',
      }),
    );
    const loaded = loadKubeConfig(file, {});
    assert.equal(loaded.config.users[0].name, '*system:node:n1');
    const cfg = resolveClientConfig(loaded.config);
    assert.equal(cfg.server, 'https://10.0.0.1:6443');
    assert.equal(cfg.namespace, 'team-a');
    assert.equal(cfg.contextName, 'kubit');
    assert.equal(cfg.ca?.toString(), 'pem of ca.crt\n');
    assert.equal(cfg.cert?.toString(), 'pem of c.crt\n');
    assert.equal(cfg.key?.toString(), 'pem of c.key\n');
  });

  it('leaves the namespace out when none is given', () => {
    const text = certKubeconfigYaml({ server: 's', caFile: 'a', certFile: 'b', keyFile: 'c', user: 'u' });
    assert.doesNotMatch(text, /namespace/);
  });
});
