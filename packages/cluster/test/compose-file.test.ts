// docker-compose.yml spells the apiserver's command line out in YAML (compose
// has no code to build it); this keeps it the line apiserverArgs builds for
// the launcher and the installer, so a renamed flag cannot go stale there.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { apiserverArgs } from '@kubit/daemon/daemon-args';
import { load } from 'js-yaml';
import { repoRoot } from './helpers.js';

it("docker-compose.yml starts the apiserver with apiserverArgs' flags", async () => {
  const compose = load(await readFile(join(repoRoot, 'docker-compose.yml'), 'utf8')) as {
    services: Record<
      string,
      {
        command?: string[];
        environment?: Record<string, string>;
        networks?: Record<string, { ipv4_address?: string }>;
      }
    >;
  };
  const command = compose.services.apiserver?.command ?? [];
  assert.deepEqual(command.slice(0, 2), ['node', 'packages/apiserver/dist/src/main.bundle.mjs']);
  const pki = '/state/pki';
  assert.deepEqual(
    command.slice(2),
    apiserverArgs({
      bindAddress: '0.0.0.0',
      // compose fills the variable in: the apiserver's own address on the compose network.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a compose variable, not a template
      advertiseAddress: '${KUBIT_COMPOSE_NET:-172.28.50}.20',
      serviceClusterIpRange: '10.96.0.0/12',
      serviceAccountSigningKeyFile: `${pki}/sa.key`,
      serviceAccountKeyFiles: [`${pki}/sa.pub`],
      securePort: 6443,
      tlsCertFile: `${pki}/apiserver.crt`,
      tlsPrivateKeyFile: `${pki}/apiserver.key`,
      clientCaFile: `${pki}/ca.crt`,
      etcdServers: [1, 2, 3].map((i) => `https://store-${i}:2379`),
      etcdCaFile: `${pki}/ca.crt`,
      etcdCertFile: `${pki}/apiserver-etcd-client.crt`,
      etcdKeyFile: `${pki}/apiserver-etcd-client.key`,
      authorizationModes: ['Node', 'RBAC'],
      kubeletClientCertificate: `${pki}/apiserver-kubelet-client.crt`,
      kubeletClientKey: `${pki}/apiserver-kubelet-client.key`,
      kubeletCertificateAuthority: `${pki}/ca.crt`,
    }),
  );
});

it('docker-compose.yml gives Services what they need: the advertise address, the LB pool, cluster DNS', async () => {
  const compose = load(await readFile(join(repoRoot, 'docker-compose.yml'), 'utf8')) as {
    services: Record<
      string,
      {
        command?: string[];
        environment?: Record<string, string>;
        networks?: Record<string, { ipv4_address?: string }>;
      }
    >;
  };
  const s = compose.services;
  const net = ['$', '{KUBIT_COMPOSE_NET:-172.28.50}'].join(''); // compose's variable, spelled as in the file
  // The advertise address is the apiserver's static compose address, and its certificate names it.
  assert.equal(s.apiserver?.networks?.kubit?.ipv4_address, `${net}.20`);
  assert.equal(s.init?.environment?.KUBIT_APISERVER_IP, `${net}.20`);
  const cm = s['controller-manager']?.command ?? [];
  assert.ok(cm.includes('--root-ca-file=/state/pki/ca.crt'), cm.join(' '));
  assert.ok(cm.includes(`--load-balancer-ip-range=${net}.200-${net}.250`), cm.join(' '));
  for (const node of ['node-1', 'node-2']) {
    const e = s[node]?.environment ?? {};
    assert.equal(e.KUBIT_DNS, '1', `${node} runs kubit-dns`);
    assert.equal(e.CLUSTER_CIDR, ['$', '{KUBIT_CLUSTER_CIDR:-10.244.0.0/16}'].join(''));
  }
  const entrypoint = await readFile(join(repoRoot, 'deploy', 'docker', 'node', 'entrypoint.sh'), 'utf8');
  for (const flag of ['--cluster-dns=10.96.0.10', '--advertise-address="$NODE_IP"', '--port=53'])
    assert.ok(entrypoint.includes(flag), flag);
});
