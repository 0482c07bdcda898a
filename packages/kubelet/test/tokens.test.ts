// The kubelet's token manager: one TokenRequest per pod and audience, asked
// again once 80% of the token's life has passed, forgotten with the pod.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { TokenManager, type TokenRequestSpec, tokenRequestFor } from '../src/pods/tokens.js';

function setup() {
  let now = 1_000_000;
  const asked: TokenRequestSpec[] = [];
  const manager = new TokenManager(
    {
      async requestToken(spec) {
        asked.push(spec);
        return { token: `t${asked.length}`, expiresAt: now + spec.expirationSeconds * 1000 };
      },
    },
    () => now,
  );
  return { manager, asked, advance: (ms: number) => (now += ms) };
}

const pod: Pod = {
  metadata: { name: 'web-1', namespace: 'shop', uid: 'u1' },
  spec: { serviceAccountName: 'web', containers: [] },
};

test('a projected source becomes a TokenRequest bound to its pod', () => {
  assert.deepEqual(tokenRequestFor(pod, { expirationSeconds: 3607, audience: 'vault' }), {
    namespace: 'shop',
    serviceAccount: 'web',
    audiences: ['vault'],
    expirationSeconds: 3607,
    pod: { name: 'web-1', uid: 'u1' },
  });
  assert.equal(
    tokenRequestFor({ metadata: { name: 'x' }, spec: { containers: [] } }, {}).serviceAccount,
    'default',
  );
});

test('the same token until 80% of its life, then a new one', async () => {
  const { manager, asked, advance } = setup();
  const spec = tokenRequestFor(pod, { expirationSeconds: 1000 });
  assert.equal(await manager.token(spec), 't1');
  advance(799_000);
  assert.equal(await manager.token(spec), 't1');
  advance(2_000);
  assert.equal(await manager.token(spec), 't2');
  assert.equal(asked.length, 2);
});

test('audiences and pods have tokens of their own; a pod torn down is forgotten', async () => {
  const { manager, asked } = setup();
  await manager.token(tokenRequestFor(pod, {}));
  await manager.token(tokenRequestFor(pod, { audience: 'other' }));
  const other = { ...pod, metadata: { ...pod.metadata, uid: 'u2' } };
  await manager.token(tokenRequestFor(other, {}));
  assert.equal(asked.length, 3);
  manager.forgetPod('u1');
  await manager.token(tokenRequestFor(pod, {}));
  await manager.token(tokenRequestFor(other, {}));
  assert.equal(asked.length, 4);
});
