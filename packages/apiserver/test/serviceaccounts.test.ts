// ServiceAccount tokens end to end on a real apiserver: the ServiceAccount
// admission (default account, the projected kube-api-access volume, 403 when the
// account is missing), the TokenRequest API through the real `kubectl create
// token`, tokens as bearer credentials under RBAC, binding to a pod (the token dies
// with it), TokenReview, and the kubelet's NodeRestriction on token requests.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const NS = 'tokens';

before(async () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyFile = join(process.env.TMPDIR ?? '/tmp', `kubit-sa-${process.pid}.key`);
  await writeFile(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }));
  cp = await startControlPlane({
    nodes: ['node-a', 'node-b'],
    apiserverArgs: [`--service-account-signing-key-file=${keyFile}`],
  });
  api = new Api(cp);
  assert.equal((await api.req('POST', '/api/v1/namespaces', { metadata: { name: NS } })).status, 201);
});
after(async () => {
  await cp?.stop();
});

const pod = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    initContainers: [{ name: 'i', image: 'busybox' }],
    ...extra,
  },
});

async function createSA(name: string): Promise<string> {
  const r = await api.req('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { metadata: { name } });
  assert.equal(r.status, 201, r.text);
  return r.body.metadata.uid;
}

async function tokenFor(sa: string, body: Record<string, unknown> = {}, as = api) {
  return as.req('POST', `/api/v1/namespaces/${NS}/serviceaccounts/${sa}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: body,
  });
}

describe('ServiceAccount admission', () => {
  it('refuses a pod whose ServiceAccount does not exist, as Kubernetes does', async () => {
    const r = await api.req('POST', `/api/v1/namespaces/${NS}/pods`, pod('early'));
    assert.equal(r.status, 403, r.text);
    assert.equal(
      r.body.message,
      `pods "early" is forbidden: error looking up service account ${NS}/default: serviceaccount "default" not found`,
    );
  });

  it('runs a pod as default and mounts kube-api-access into every container', async () => {
    await createSA('default');
    const r = await api.req('POST', `/api/v1/namespaces/${NS}/pods`, pod('p1'));
    assert.equal(r.status, 201, r.text);
    const spec = r.body.spec;
    assert.equal(spec.serviceAccountName, 'default');
    const volume = spec.volumes.find((v: { name: string }) => v.name.startsWith('kube-api-access-'));
    assert.match(volume.name, /^kube-api-access-[a-z0-9]{5}$/);
    assert.deepEqual(volume.projected.sources[0], {
      serviceAccountToken: { expirationSeconds: 3607, path: 'token' },
    });
    assert.equal(volume.projected.sources[1].configMap.name, 'kube-root-ca.crt');
    assert.equal(volume.projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath, 'metadata.namespace');
    for (const c of [...spec.containers, ...spec.initContainers]) {
      assert.deepEqual(c.volumeMounts, [
        { name: volume.name, readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
      ]);
    }
  });

  it('mounts nothing when automountServiceAccountToken is false', async () => {
    const r = await api.req(
      'POST',
      `/api/v1/namespaces/${NS}/pods`,
      pod('p2', { automountServiceAccountToken: false }),
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.volumes, undefined);
  });
});

describe('TokenRequest and tokens as credentials', () => {
  it('kubectl create token gives a token RBAC then governs; a RoleBinding grants what it says', async () => {
    await createSA('reader');
    const created = await kubectl(cp, ['-n', NS, 'create', 'token', 'reader', '--duration=15m']);
    const token = created.stdout.trim();
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    assert.equal(claims.sub, `system:serviceaccount:${NS}:reader`);
    assert.equal(claims.exp - claims.iat, 900);
    const asReader = api.as({ token });
    let r = await asReader.req('GET', `/api/v1/namespaces/${NS}/pods`);
    assert.equal(r.status, 403, r.text);
    assert.match(
      r.body.message,
      new RegExp(`User "system:serviceaccount:${NS}:reader" cannot list resource "pods"`),
    );
    await kubectl(cp, [
      '-n',
      NS,
      'create',
      'rolebinding',
      'reader-view',
      '--clusterrole=cluster-admin',
      `--serviceaccount=${NS}:reader`,
    ]);
    for (let i = 0; i < 50; i++) {
      r = await asReader.req('GET', `/api/v1/namespaces/${NS}/pods`);
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.items.some((p: { metadata: { name: string } }) => p.metadata.name === 'p1'));
  });

  it('a token bound to a pod stops working when the pod is deleted', async () => {
    const p = await api.req('POST', `/api/v1/namespaces/${NS}/pods`, pod('bound'));
    assert.equal(p.status, 201, p.text);
    const t = await tokenFor('default', {
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'bound', uid: p.body.metadata.uid },
    });
    assert.equal(t.status, 201, t.text);
    const claims = JSON.parse(Buffer.from(t.body.status.token.split('.')[1], 'base64url').toString());
    assert.deepEqual(claims['kubernetes.io'].pod, { name: 'bound', uid: p.body.metadata.uid });
    const withToken = api.as({ token: t.body.status.token });
    const review = await api.req('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: t.body.status.token },
    });
    assert.equal(review.status, 201, review.text);
    assert.equal(review.body.status.authenticated, true);
    assert.equal(review.body.status.user.username, `system:serviceaccount:${NS}:default`);
    assert.deepEqual(review.body.status.user.groups, [
      'system:serviceaccounts',
      `system:serviceaccounts:${NS}`,
      'system:authenticated',
    ]);
    assert.deepEqual(review.body.status.user.extra['authentication.kubernetes.io/pod-name'], ['bound']);
    // Allowed to ask who it is (system:basic-user), so the token is accepted while the pod lives.
    const self = await withToken.req('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: NS } },
    });
    assert.equal(self.status, 201, self.text);
    const del = await api.req('DELETE', `/api/v1/namespaces/${NS}/pods/bound?gracePeriodSeconds=0`);
    assert.ok([200, 202].includes(del.status), del.text);
    let after = self.status;
    for (let i = 0; i < 50 && after !== 401; i++) {
      after = (await withToken.req('GET', '/api')).status;
      if (after !== 401) await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(after, 401);
    const again = await api.req('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: t.body.status.token },
    });
    assert.equal(again.body.status.authenticated, false);
    assert.match(again.body.status.error, /pod tokens\/bound does not exist/);
  });

  it('a token of a ServiceAccount that was deleted and made again is refused', async () => {
    await createSA('ephemeral');
    const t = await tokenFor('ephemeral');
    assert.equal((await api.as({ token: t.body.status.token }).req('GET', '/api')).status, 200);
    await api.req('DELETE', `/api/v1/namespaces/${NS}/serviceaccounts/ephemeral`);
    await createSA('ephemeral');
    let status = 200;
    for (let i = 0; i < 50 && status !== 401; i++) {
      status = (await api.as({ token: t.body.status.token }).req('GET', '/api')).status;
      if (status !== 401) await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(status, 401);
  });

  it('bad token requests get Kubernetes answers', async () => {
    let r = await tokenFor('default', { expirationSeconds: 100 });
    assert.equal(r.status, 422, r.text);
    assert.match(
      r.body.message,
      /spec\.expirationSeconds: Invalid value: 100: may not specify a duration less than 10 minutes/,
    );
    r = await tokenFor('nobody');
    assert.equal(r.status, 404, r.text);
    r = await tokenFor('default', {
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p1', uid: 'not-its-uid' },
    });
    assert.equal(r.status, 409, r.text);
    assert.match(r.body.message, /does not match the UID in record/);
    r = await tokenFor('reader', { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'p1' } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.message, /pod running with different serviceaccount name/);
    const garbage = await api.req('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token: 'a.b.c' },
    });
    assert.equal(garbage.status, 201);
    assert.equal(garbage.body.status.authenticated, false);
    assert.equal((await api.as({ token: 'not-a-token' }).req('GET', '/api')).status, 401);
  });
});

describe("a kubelet's token requests", () => {
  it('gets tokens only for pods bound to its node', async () => {
    const created = await api.req(
      'POST',
      `/api/v1/namespaces/${NS}/pods`,
      pod('on-a', { nodeName: 'node-a' }),
    );
    assert.equal(created.status, 201, created.text);
    const uid = created.body.metadata.uid;
    const nodeA = new Api(cp, {
      cert: cp.pki.kubeletClient('node-a').cert,
      key: cp.pki.kubeletClient('node-a').key,
    });
    const nodeB = new Api(cp, {
      cert: cp.pki.kubeletClient('node-b').cert,
      key: cp.pki.kubeletClient('node-b').key,
    });
    const ref = { boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'on-a', uid } };
    const ok = await tokenFor('default', ref, nodeA);
    assert.equal(ok.status, 201, ok.text);
    assert.equal(
      JSON.parse(Buffer.from(ok.body.status.token.split('.')[1], 'base64url').toString())['kubernetes.io']
        .node.name,
      'node-a',
    );
    const other = await tokenFor('default', ref, nodeB);
    assert.equal(other.status, 403, other.text);
    const unbound = await tokenFor('default', {}, nodeA);
    assert.equal(unbound.status, 403, unbound.text);
    assert.match(unbound.body.message, /requested token not bound to a pod/);
  });
});
