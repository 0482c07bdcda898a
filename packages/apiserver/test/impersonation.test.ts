// Impersonation and the identity reviews with the real kubectl: `kubectl auth
// whoami` (SelfSubjectReview) answers the impersonated user, `--as`/`--as-group`
// need the `impersonate` verb on users, groups and serviceaccounts (403 as
// Kubernetes words it otherwise), `kubectl auth can-i` (with `--list`) and
// SubjectAccessReview answer what RBAC grants the user.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let admin: Api;
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

before(async () => {
  cp = await startControlPlane({ tokens: ['bob-token,bob,1002'] });
  admin = new Api(cp);
  const sa = await admin.post('/api/v1/namespaces/default/serviceaccounts', {
    metadata: { name: 'default' },
  });
  assert.ok(sa.status === 201 || sa.status === 409, sa.text);
});
after(async () => {
  admin?.close();
  await cp?.stop();
});

async function created(path: string, body: unknown): Promise<void> {
  const r = await admin.post(path, body);
  assert.equal(r.status, 201, r.text);
}

/** Waits until RBAC (read from the watch cache) says yes to `alice` listing pods. */
async function untilAllowed(args: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await kubectl(cp, ['auth', 'can-i', ...args], { allowFail: true });
    if (r.stdout.trim() === 'yes') return;
    assert.ok(Date.now() < deadline, `never allowed: ${args.join(' ')}: ${r.stdout} ${r.stderr}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const whoami = async (args: string[]) =>
  JSON.parse((await kubectl(cp, ['auth', 'whoami', '-o', 'json', ...args])).stdout);

describe('impersonation', () => {
  it('kubectl auth whoami answers who the request is, impersonated or not', async () => {
    const me = await whoami([]);
    assert.equal(me.kind, 'SelfSubjectReview');
    assert.equal(me.apiVersion, 'authentication.k8s.io/v1');
    assert.ok(me.status.userInfo.groups.includes('system:masters'), JSON.stringify(me));
    const alice = await whoami(['--as=alice', '--as-group=devs', '--as-uid=1001']);
    assert.deepEqual(alice.status.userInfo, {
      username: 'alice',
      uid: '1001',
      groups: ['devs', 'system:authenticated'],
    });
    const sa = await whoami(['--as=system:serviceaccount:default:builder']);
    assert.deepEqual(sa.status.userInfo, {
      username: 'system:serviceaccount:default:builder',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
    });
    const table = await kubectl(cp, ['auth', 'whoami', '--as=alice']);
    assert.match(table.stdout, /Username\s+alice/);
  });

  it('kubectl --as and auth can-i act with the impersonated user’s rights', async () => {
    const no = await kubectl(cp, ['auth', 'can-i', 'list', 'pods', '--as=alice'], { allowFail: true });
    assert.equal(no.stdout.trim(), 'no');
    await created(`${RBAC}/namespaces/default/roles`, {
      metadata: { name: 'pod-reader' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
    });
    await created(`${RBAC}/namespaces/default/rolebindings`, {
      metadata: { name: 'alice-reads-pods' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
    });
    await untilAllowed(['list', 'pods', '--as=alice']);
    const pods = await kubectl(cp, ['get', 'pods', '--as=alice']);
    assert.match(pods.stderr + pods.stdout, /No resources found in default namespace/);
    const secrets = await kubectl(cp, ['get', 'secrets', '--as=alice'], { allowFail: true });
    assert.notEqual(secrets.code, 0);
    assert.match(
      secrets.stderr,
      /secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "default"/,
    );
    // can-i --list is the SelfSubjectRulesReview of the impersonated user.
    const list = await kubectl(cp, ['auth', 'can-i', '--list', '--as=alice']);
    assert.ok(
      list.stdout.split('\n').some((l) => /^pods\s+\[\]\s+\[\]\s+\[get list watch\]$/.test(l.trim())),
      list.stdout,
    );
    assert.ok(
      list.stdout
        .split('\n')
        .some((l) =>
          /^selfsubjectreviews\.authentication\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/.test(l.trim()),
        ),
      list.stdout,
    );
    // SubjectAccessReview answers the same for alice.
    const sar = await admin.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'alice',
        groups: ['system:authenticated'],
        resourceAttributes: { verb: 'list', resource: 'pods', namespace: 'default' },
      },
    });
    assert.equal(sar.status, 201, sar.text);
    assert.equal(sar.body.status.allowed, true);
    const sarNo = await admin.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      spec: { user: 'alice', resourceAttributes: { verb: 'delete', resource: 'pods', namespace: 'default' } },
    });
    assert.equal(sarNo.body.status.allowed, false);
  });

  it('impersonating needs the impersonate verb on each part, else Kubernetes’ 403', async () => {
    const bob = ['--token=bob-token'];
    const denied = await kubectl(cp, [...bob, 'get', 'pods', '--as=alice'], { allowFail: true });
    assert.match(
      denied.stderr,
      /users "alice" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope/,
    );
    await created(`${RBAC}/clusterroles`, {
      metadata: { name: 'impersonate-alice' },
      rules: [{ apiGroups: [''], resources: ['users'], verbs: ['impersonate'], resourceNames: ['alice'] }],
    });
    await created(`${RBAC}/clusterrolebindings`, {
      metadata: { name: 'bob-impersonates-alice' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'impersonate-alice' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' }],
    });
    await untilAllowed([...bob, 'impersonate', 'users/alice']);
    const asAlice = await kubectl(cp, [...bob, 'auth', 'whoami', '-o', 'json', '--as=alice']);
    assert.equal(JSON.parse(asAlice.stdout).status.userInfo.username, 'alice');
    const pods = await kubectl(cp, [...bob, 'get', 'pods', '--as=alice']);
    assert.match(pods.stderr + pods.stdout, /No resources found/);
    const carol = await kubectl(cp, [...bob, 'get', 'pods', '--as=carol'], { allowFail: true });
    assert.match(carol.stderr, /users "carol" is forbidden: User "bob" cannot impersonate resource "users"/);
    const group = await kubectl(cp, [...bob, 'get', 'pods', '--as=alice', '--as-group=admins'], {
      allowFail: true,
    });
    assert.match(
      group.stderr,
      /groups "admins" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope/,
    );
    const sa = await kubectl(cp, [...bob, 'get', 'pods', '--as=system:serviceaccount:default:builder'], {
      allowFail: true,
    });
    assert.match(
      sa.stderr,
      /serviceaccounts "builder" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "default"/,
    );
    // Extras and a uid are parts of their own, in authentication.k8s.io.
    const bobApi = admin.as({ token: 'bob-token' });
    const extra = await bobApi.post(
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      { 'Impersonate-User': 'alice', 'Impersonate-Extra-Scopes': 'view' },
    );
    assert.equal(extra.status, 403, extra.text);
    assert.equal(
      extra.body.message,
      'userextras.authentication.k8s.io "view" is forbidden: User "bob" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope',
    );
    const uid = await bobApi.post(
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      {},
      { 'Impersonate-User': 'alice', 'Impersonate-Uid': '42' },
    );
    assert.equal(uid.status, 403, uid.text);
    assert.match(
      uid.body.message,
      /^uids\.authentication\.k8s\.io "42" is forbidden: User "bob" cannot impersonate resource "uids"/,
    );
    bobApi.close();
    const asAdmin = await admin.post(
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      {},
      {
        'Impersonate-User': 'alice',
        'Impersonate-Extra-Scopes': 'view',
        'Impersonate-Extra-Reason%2fwhy': 'audit',
      },
    );
    assert.equal(asAdmin.status, 201, asAdmin.text);
    assert.deepEqual(asAdmin.body.status.userInfo.extra, { scopes: ['view'], 'reason/why': ['audit'] });
    // Groups without a user: refused, as Kubernetes refuses them.
    const headless = await admin.get('/api/v1/namespaces/default/pods', { 'Impersonate-Group': 'devs' });
    assert.equal(headless.status, 500, headless.text);
    assert.match(headless.body.message, /without impersonating a user/);
  });
});
