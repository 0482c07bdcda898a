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
    services: Record<string, { command?: string[] }>;
  };
  const command = compose.services.apiserver?.command ?? [];
  assert.deepEqual(command.slice(0, 2), ['node', 'packages/apiserver/dist/src/main.bundle.mjs']);
  const pki = '/state/pki';
  assert.deepEqual(
    command.slice(2),
    apiserverArgs({
      bindAddress: '0.0.0.0',
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
