// apiserverArgs (@kubit/daemon/daemon-args): the command line the launcher, the
// installer and the test harness start kubit-apiserver with. It lives below the
// apiserver, so its flags type is written out there; this file holds it to
// startApiServer's options and to main.ts's flags (the processes the tests
// start prove the parsing of what they pass).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type ApiServerFlags, apiserverArgs } from '@kubit/daemon/daemon-args';
import { daemonCommand } from '@kubit/testkit';
import type { ApiServerOptions } from '../src/apiserver.js';

// Every option startApiServer takes has a flag, under the same name but for the
// two main.ts converts (the bookmark interval is seconds on the command line,
// and a unit file's port may be a placeholder); this fails to compile when an
// option is added, renamed or retyped on one side only.
type Expected = Omit<ApiServerOptions, 'bookmarkIntervalMs' | 'securePort'> & {
  securePort: number | string;
  watchBookmarkIntervalSeconds: number;
};
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const flagsAreTheOptions: Same<Required<ApiServerFlags>, Required<Expected>> = true;

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

  it('names only flags main.ts declares', { timeout: 60_000 }, async () => {
    assert.equal(flagsAreTheOptions, true);
    const every: Required<ApiServerFlags> = {
      bindAddress: '127.0.0.1',
      securePort: 6443,
      tlsCertFile: 'c',
      tlsPrivateKeyFile: 'k',
      clientCaFile: 'ca',
      tokenAuthFile: 't',
      etcdServers: ['https://a:2379'],
      etcdCaFile: 'eca',
      etcdCertFile: 'ec',
      etcdKeyFile: 'ek',
      authorizationModes: ['RBAC'],
      kubeletClientCertificate: 'kc',
      kubeletClientKey: 'kk',
      kubeletCertificateAuthority: 'kca',
      watchCacheHistory: 100,
      minRequestTimeoutSeconds: 60,
      watchBookmarkIntervalSeconds: 5,
      serviceAccountSigningKeyFile: 'sak',
      serviceAccountKeyFiles: ['sapub'],
      serviceAccountIssuer: 'https://issuer',
      apiAudiences: ['a', 'b'],
      serviceAccountMaxTokenExpirationSeconds: 86400,
      serviceClusterIpRange: '10.96.0.0/12',
      serviceNodePortRange: '30000-32767',
      metricResolution: '15s',
      advertiseAddress: '10.0.0.1',
    };
    const args = apiserverArgs(every);
    assert.equal(args.length, Object.keys(every).length, 'one flag per option');
    const cmd = daemonCommand('apiserver', 'main.ts');
    const { stdout } = await promisify(execFile)(cmd.command, [...cmd.args, '--help']);
    for (const arg of args) {
      const name = arg.slice(0, arg.indexOf('='));
      assert.match(stdout, new RegExp(`^\\s+${name} <`, 'm'), `${name} is not a flag of kubit-apiserver`);
    }
  });
});
