// Authentication and authorization: client certs and tokens, anonymous 401,
// RBAC roles and bindings, the Node authorizer and NodeRestriction.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, pod } from './helpers.js';

let cp: ControlPlane;
let admin: Api;
const NS = '/api/v1/namespaces/default';

before(async () => {
  cp = await startControlPlane({
    nodes: ['n1', 'n2'],
    tokens: ['alice-token,alice,1001,"devs,qa"', 'bob-token,bob,1002'],
  });
  admin = new Api(cp);
});
after(async () => {
  admin?.close();
  await cp?.stop();
});

describe('authentication', () => {
  it('anonymous requests get 401 with a Status', async () => {
    const anon = admin.as({});
    const r = await anon.get('/api/v1/namespaces');
    assert.equal(r.status, 401);
    assert.equal(r.body.kind, 'Status');
    assert.equal(r.body.reason, 'Unauthorized');
    const bad = admin.as({ token: 'wrong' });
    assert.equal((await bad.get('/api/v1/namespaces')).status, 401);
    assert.equal((await anon.get('/livez')).status, 200, 'health stays public');
    anon.close();
    bad.close();
  });

  it('a token user is known by name and groups', async () => {
    const alice = admin.as({ token: 'alice-token' });
    const r = await alice.post('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      spec: { resourceAttributes: { verb: 'list', resource: 'pods', namespace: 'default' } },
    });
    assert.equal(r.status, 201);
    assert.equal(r.body.status.allowed, false);
    const denied = await alice.get(`${NS}/pods`);
    assert.equal(denied.status, 403);
    assert.equal(
      denied.body.message,
      'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
    );
    alice.close();
  });
});

describe('RBAC', () => {
  it('a RoleBinding to a group grants exactly the role, in its namespace', async () => {
    assert.equal(
      (
        await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', {
          metadata: { name: 'pod-reader' },
          rules: [
            { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
            { apiGroups: [''], resources: ['configmaps'], resourceNames: ['visible'], verbs: ['get'] },
          ],
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await admin.post('/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings', {
          metadata: { name: 'devs-read' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
          subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' }],
        })
      ).status,
      201,
    );
    const alice = admin.as({ token: 'alice-token' });
    const bob = admin.as({ token: 'bob-token' });
    assert.equal((await alice.get(`${NS}/pods`)).status, 200);
    assert.equal((await alice.get('/api/v1/namespaces/kube-system/pods')).status, 403);
    assert.equal((await alice.post(`${NS}/pods`, pod('nope'))).status, 403);
    assert.equal((await bob.get(`${NS}/pods`)).status, 403);
    await admin.post(`${NS}/configmaps`, { metadata: { name: 'visible' } });
    await admin.post(`${NS}/configmaps`, { metadata: { name: 'hidden' } });
    assert.equal((await alice.get(`${NS}/configmaps/visible`)).status, 200);
    assert.equal((await alice.get(`${NS}/configmaps/hidden`)).status, 403);
    alice.close();
    bob.close();
  });

  it('a ClusterRoleBinding to a user grants cluster-wide; removing it revokes', async () => {
    await admin.post('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      metadata: { name: 'ns-viewer' },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list'] }],
    });
    await admin.post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'bob-ns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ns-viewer' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'bob' }],
    });
    const bob = admin.as({ token: 'bob-token' });
    const waitFor = async (code: number) => {
      for (let i = 0; i < 50; i++) {
        if ((await bob.get('/api/v1/namespaces')).status === code) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.fail(`expected ${code}`);
    };
    await waitFor(200);
    await admin.del('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/bob-ns');
    await waitFor(403);
    bob.close();
  });

  it('the scheduler and controller manager identities have their bootstrap roles', async () => {
    const sched = admin.as(cp.pki.scheduler);
    assert.equal((await sched.get('/api/v1/pods')).status, 200);
    assert.equal((await sched.get('/api/v1/nodes')).status, 200);
    assert.equal((await sched.get(`${NS}/secrets`)).status, 403);
    const cm = admin.as(cp.pki.controllerManager);
    assert.equal((await cm.post(`${NS}/pods`, pod('from-cm'))).status, 201);
    sched.close();
    cm.close();
  });
});

describe('the controller manager bootstrap policy', () => {
  const can = async (verb: string, resource: string, namespace = '', group = '', subresource = '') => {
    const r = await admin.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'system:kube-controller-manager',
        resourceAttributes: { verb, resource, namespace, group, subresource },
      },
    });
    assert.equal(r.status, 201, r.text);
    return r.body.status.allowed === true;
  };

  it('grants what each controller needs', async () => {
    const allowed: [string, string, string?, string?, string?][] = [
      ['get', 'leases', 'kube-system', 'coordination.k8s.io'],
      ['create', 'leases', 'kube-system', 'coordination.k8s.io'],
      ['update', 'leases', 'kube-system', 'coordination.k8s.io'],
      ['list', 'leases', '', 'coordination.k8s.io'],
      ['watch', 'leases', 'kube-node-lease', 'coordination.k8s.io'],
      ['create', 'pods', 'default'],
      ['delete', 'pods', 'default'],
      ['patch', 'pods', 'default'],
      ['update', 'pods', 'default', '', 'status'],
      ['update', 'nodes'],
      ['patch', 'nodes', '', '', 'status'],
      ['create', 'replicasets', 'default', 'apps'],
      ['update', 'replicasets', 'default', 'apps', 'status'],
      ['patch', 'deployments', 'default', 'apps', 'scale'],
      ['delete', 'deployments', 'default', 'apps'],
      ['update', 'statefulsets', 'default', 'apps', 'status'],
      ['create', 'controllerrevisions', 'default', 'apps'],
      ['update', 'controllerrevisions', 'default', 'apps'],
      ['delete', 'controllerrevisions', 'default', 'apps'],
      ['create', 'persistentvolumeclaims', 'default'],
      ['update', 'persistentvolumeclaims', 'default'],
      ['delete', 'persistentvolumeclaims', 'default'],
      ['delete', 'namespaces'],
      ['update', 'namespaces', '', '', 'finalize'],
      ['update', 'namespaces', '', '', 'status'],
      ['delete', 'services', 'default'],
      ['create', 'endpoints', 'default'],
      ['update', 'configmaps', 'default'],
      ['get', 'secrets', 'default'],
      ['create', 'serviceaccounts', 'default'],
      ['create', 'events', 'default'],
      ['patch', 'events', 'default', 'events.k8s.io'],
    ];
    for (const [verb, resource, ns, group, sub] of allowed) {
      assert.equal(
        await can(verb, resource, ns, group, sub),
        true,
        `${verb} ${resource}/${sub ?? ''} in ${ns}`,
      );
    }
  });

  it('grants no more: other Leases, node deletion and RBAC writes are denied', async () => {
    const denied: [string, string, string?, string?, string?][] = [
      ['create', 'leases', 'default', 'coordination.k8s.io'],
      ['update', 'leases', 'default', 'coordination.k8s.io'],
      ['delete', 'nodes'],
      ['create', 'clusterrolebindings', '', 'rbac.authorization.k8s.io'],
      ['create', 'namespaces'],
    ];
    for (const [verb, resource, ns, group, sub] of denied) {
      assert.equal(await can(verb, resource, ns, group, sub), false, `${verb} ${resource} in ${ns}`);
    }
  });
});

describe('Node authorizer and NodeRestriction', () => {
  const node = (name: string) => ({
    metadata: { name },
    status: { addresses: [{ type: 'InternalIP', address: '127.0.0.1' }] },
  });

  it('a kubelet registers and updates only its own Node', async () => {
    const n1 = admin.as(cp.pki.kubeletClient('n1'));
    assert.equal((await n1.post('/api/v1/nodes', node('n1'))).status, 201);
    const other = await n1.post('/api/v1/nodes', node('n2'));
    assert.equal(other.status, 403);
    assert.match(other.body.message, /node "n1" is not allowed to modify node "n2"/);
    assert.equal(
      (
        await n1.patch('/api/v1/nodes/n1/status', {
          status: { conditions: [{ type: 'Ready', status: 'True' }] },
        })
      ).status,
      200,
    );
    const n2 = admin.as(cp.pki.kubeletClient('n2'));
    assert.equal((await n2.post('/api/v1/nodes', node('n2'))).status, 201);
    assert.equal((await n1.patch('/api/v1/nodes/n2/status', { status: { phase: 'x' } })).status, 403);
    assert.equal((await n1.del('/api/v1/nodes/n2')).status, 403);
    n1.close();
    n2.close();
  });

  it('a kubelet writes status only for pods bound to it, and its own Lease', async () => {
    await admin.post(`${NS}/pods`, pod('on-n1', { nodeName: 'n1' }));
    await admin.post(`${NS}/pods`, pod('on-n2', { nodeName: 'n2' }));
    const n1 = admin.as(cp.pki.kubeletClient('n1'));
    assert.equal((await n1.get(`/api/v1/pods?fieldSelector=spec.nodeName%3Dn1`)).status, 200);
    assert.equal((await n1.patch(`${NS}/pods/on-n1/status`, { status: { phase: 'Running' } })).status, 200);
    const foreign = await n1.patch(`${NS}/pods/on-n2/status`, { status: { phase: 'Running' } });
    assert.equal(foreign.status, 403);
    assert.equal((await n1.del(`${NS}/pods/on-n2`, { gracePeriodSeconds: 0 })).status, 403);
    assert.equal((await n1.post(`${NS}/pods`, pod('mine'))).status, 403);
    assert.equal((await n1.patch(`${NS}/pods/on-n1`, { metadata: { labels: { a: 'b' } } })).status, 403);
    const lease = {
      metadata: { name: 'n1' },
      spec: { holderIdentity: 'n1', leaseDurationSeconds: 40, renewTime: new Date().toISOString() },
    };
    assert.equal(
      (await n1.post('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', lease)).status,
      201,
    );
    const stolen = await n1.post('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      ...lease,
      metadata: { name: 'n2' },
    });
    assert.equal(stolen.status, 403);
    assert.equal(
      (await n1.get('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2')).status,
      403,
    );
    assert.equal(
      (
        await n1.post(`${NS}/events`, {
          metadata: { name: 'n1.e' },
          involvedObject: { kind: 'Node', name: 'n1' },
          reason: 'R',
          message: 'm',
          type: 'Normal',
        })
      ).status,
      201,
    );
    assert.equal((await n1.get(`${NS}/secrets`)).status, 403);
    n1.close();
  });

  it('a kubelet reads a secret only when a pod on its node uses it', async () => {
    await admin.post(`${NS}/secrets`, { metadata: { name: 'used' }, stringData: { k: 'v' } });
    await admin.post(`${NS}/secrets`, { metadata: { name: 'unused' }, stringData: { k: 'v' } });
    await admin.post(
      `${NS}/pods`,
      pod('with-secret', { nodeName: 'n1', volumes: [{ name: 's', secret: { secretName: 'used' } }] }),
    );
    const n1 = admin.as(cp.pki.kubeletClient('n1'));
    assert.equal((await n1.get(`${NS}/secrets/used`)).status, 200);
    assert.equal((await n1.get(`${NS}/secrets/unused`)).status, 403);
    n1.close();
  });
});
