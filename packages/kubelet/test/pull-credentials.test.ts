// The credential keyring's matching rules (pull-credentials.ts), as Kubernetes' kubelet matches.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Secret } from 'kubernetes-types/core/v1.js';
import {
  keyMatches,
  keyOf,
  keyringOf,
  lookupCredentials,
  PullSecretError,
  repositoryOf,
} from '../src/pods/pull-credentials.js';

function secret(
  name: string,
  auths: Record<string, unknown>,
  type = 'kubernetes.io/dockerconfigjson',
): Secret {
  const key = type === 'kubernetes.io/dockercfg' ? '.dockercfg' : '.dockerconfigjson';
  const doc = key === '.dockercfg' ? auths : { auths };
  return {
    metadata: { name, namespace: 'ns' },
    type,
    data: { [key]: Buffer.from(JSON.stringify(doc)).toString('base64') },
  };
}

test('image references normalize to their repository as Docker names them', () => {
  assert.equal(repositoryOf('nginx'), 'docker.io/library/nginx');
  assert.equal(repositoryOf('nginx:1.25'), 'docker.io/library/nginx');
  assert.equal(repositoryOf('user/app:v1'), 'docker.io/user/app');
  assert.equal(repositoryOf('quay.io/org/app@sha256:abc'), 'quay.io/org/app');
  assert.equal(repositoryOf('127.0.0.1:5000/a/b:1'), '127.0.0.1:5000/a/b');
  assert.equal(repositoryOf('localhost/x'), 'localhost/x');
});

test('keys lose their scheme and the /v1/ or /v2/ API prefix', () => {
  assert.equal(keyOf('https://index.docker.io/v1/'), 'index.docker.io');
  assert.equal(keyOf('http://reg.example:5000/v2/'), 'reg.example:5000');
  assert.equal(keyOf('quay.io/org'), 'quay.io/org');
  assert.equal(keyOf('Quay.IO'), 'quay.io');
});

test('matching: a glob per host part, the same number of parts, the port, the path as a prefix', () => {
  assert.ok(keyMatches('*.example.com', 'a.example.com/x'));
  assert.ok(!keyMatches('*.example.com', 'a.b.example.com/x'), 'a glob is one part');
  assert.ok(!keyMatches('*.example.com', 'example.com/x'));
  assert.ok(keyMatches('reg.example:5000', 'reg.example:5000/x'));
  assert.ok(!keyMatches('reg.example:5000', 'reg.example/x'), 'the port must match');
  assert.ok(!keyMatches('reg.example', 'reg.example:5000/x'), 'a key without a port matches no port');
  assert.ok(keyMatches('quay.io/org', 'quay.io/org/app'));
  assert.ok(!keyMatches('quay.io/org', 'quay.io/other/app'));
});

test('the most specific key comes first; Docker Hub images use index.docker.io', () => {
  const ring = keyringOf([
    secret('a', { 'quay.io': { username: 'broad', password: 'p' } }),
    secret('b', { 'quay.io/org': { username: 'narrow', password: 'p' } }),
    secret('c', { 'https://index.docker.io/v1/': { auth: Buffer.from('hub:pa:ss').toString('base64') } }),
  ]);
  assert.deepEqual(
    lookupCredentials(ring, 'quay.io/org/app:1').map((a) => a.username),
    ['narrow', 'broad'],
  );
  const hub = lookupCredentials(ring, 'nginx');
  assert.equal(hub.length, 1);
  assert.equal(hub[0]?.username, 'hub');
  assert.equal(hub[0]?.password, 'pa:ss', 'the password keeps its colons');
  assert.deepEqual(lookupCredentials(ring, 'ghcr.io/x/y'), [], 'nothing matches: anonymous');
});

test('dockercfg secrets hold the registries at the top level; other secret types are skipped', () => {
  const ring = keyringOf([
    secret('cfg', { 'reg.example': { username: 'u', password: 'p' } }, 'kubernetes.io/dockercfg'),
    { metadata: { name: 'opaque' }, type: 'Opaque', data: { x: 'eA==' } },
  ]);
  assert.equal(ring.entries.length, 1);
  assert.equal(lookupCredentials(ring, 'reg.example/app')[0]?.username, 'u');
});

test('a pull secret that is not a docker config: an error naming the secret and the key', () => {
  const bad: Secret = {
    metadata: { name: 'bad', namespace: 'ns' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from('{not json').toString('base64') },
  };
  assert.throws(
    () => keyringOf([bad]),
    (e: unknown) => {
      assert.ok(e instanceof PullSecretError);
      assert.match(e.message, /image pull secret ns\/bad: \.dockerconfigjson is not valid JSON/);
      return true;
    },
  );
  const noAuths = secret('na', {});
  noAuths.data = { '.dockerconfigjson': Buffer.from('{"x":1}').toString('base64') };
  assert.throws(() => keyringOf([noAuths]), /has no "auths" object/);
});
