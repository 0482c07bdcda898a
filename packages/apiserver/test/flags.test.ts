// apiserverArgs: the command line the launcher, the installer and the test
// harness start kubit-apiserver with (the processes they start test the parsing).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiserverArgs } from '../src/flags.js';

describe('apiserverArgs', () => {
  it("spells each option as main.ts's flag, lists joined by commas", () => {
    assert.deepEqual(
      apiserverArgs({
        bindAddress: '10.0.0.1',
        securePort: 6443,
        tlsCertFile: '/pki/apiserver.crt',
        tlsPrivateKeyFile: '/pki/apiserver.key',
        etcdServers: ['https://a:2379', 'https://b:2379'],
        authorizationModes: ['Node', 'RBAC'],
        watchBookmarkIntervalSeconds: 5,
      }),
      [
        '--bind-address=10.0.0.1',
        '--secure-port=6443',
        '--tls-cert-file=/pki/apiserver.crt',
        '--tls-private-key-file=/pki/apiserver.key',
        '--etcd-servers=https://a:2379,https://b:2379',
        '--authorization-mode=Node,RBAC',
        '--watch-bookmark-interval=5',
      ],
    );
  });

  it('passes nothing for options left out or empty, so the defaults hold', () => {
    assert.deepEqual(apiserverArgs({ tokenAuthFile: '', etcdServers: [], authorizationModes: [] }), []);
    assert.deepEqual(apiserverArgs({ securePort: 0 }), ['--secure-port=0']);
  });
});
