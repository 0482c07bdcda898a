import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type KubeObject,
  kindOf,
  kinds,
  lookupKind,
  lookupResource,
  type Pod,
  parseApiVersion,
  resolveResource,
} from '../src/index.js';

describe('kind registry', () => {
  it('knows every kind Kubit serves', () => {
    const names = kinds.map((k) => `${k.apiVersion}/${k.kind}`);
    for (const want of [
      'v1/Namespace',
      'v1/Pod',
      'v1/Node',
      'v1/Event',
      'v1/Binding',
      'v1/ConfigMap',
      'v1/Secret',
      'v1/ServiceAccount',
      'coordination.k8s.io/v1/Lease',
      'rbac.authorization.k8s.io/v1/Role',
      'rbac.authorization.k8s.io/v1/ClusterRole',
      'rbac.authorization.k8s.io/v1/RoleBinding',
      'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
      'apps/v1/ReplicaSet',
      'apps/v1/Deployment',
      'events.k8s.io/v1/Event',
    ]) {
      assert.ok(names.includes(want), want);
    }
  });

  it('lookups', () => {
    const pod = lookupKind('v1', 'Pod');
    assert.equal(pod?.resource, 'pods');
    assert.equal(pod?.namespaced, true);
    assert.deepEqual(pod?.shortNames, ['po']);
    assert.equal(pod?.listKind, 'PodList');
    assert.equal(lookupKind('apps/v1', 'Deployment')?.resource, 'deployments');
    assert.equal(lookupKind('v1', 'Deployment'), undefined);
    assert.equal(lookupResource('', 'nodes')?.namespaced, false);
    assert.equal(
      lookupResource('rbac.authorization.k8s.io', 'clusterrolebindings')?.kind,
      'ClusterRoleBinding',
    );
    assert.equal(lookupResource('events.k8s.io', 'events')?.apiVersion, 'events.k8s.io/v1');
    assert.equal(lookupResource('', '__proto__'), undefined);
    const obj: KubeObject = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' };
    assert.equal(kindOf(obj)?.resource, 'leases');
    assert.equal(kindOf({}), undefined);
  });

  const names: [string, string | undefined][] = [
    ['pods', 'v1/Pod'],
    ['pod', 'v1/Pod'],
    ['po', 'v1/Pod'],
    ['Pod', 'v1/Pod'],
    ['deploy', 'apps/v1/Deployment'],
    ['deployments.apps', 'apps/v1/Deployment'],
    ['rs', 'apps/v1/ReplicaSet'],
    ['ev', 'v1/Event'],
    ['events.events.k8s.io', 'events.k8s.io/v1/Event'],
    ['clusterrolebindings.rbac.authorization.k8s.io', 'rbac.authorization.k8s.io/v1/ClusterRoleBinding'],
    ['ns', 'v1/Namespace'],
    ['cm', 'v1/ConfigMap'],
    ['sa', 'v1/ServiceAccount'],
    ['widgets', undefined],
    ['pods.apps', undefined],
    ['', undefined],
  ];
  for (const [name, want] of names) {
    it(`resolveResource(${JSON.stringify(name)})`, () => {
      const k = resolveResource(name);
      assert.equal(k ? `${k.apiVersion}/${k.kind}` : undefined, want);
    });
  }

  it('parseApiVersion and the kubernetes-types re-exports', () => {
    assert.deepEqual(parseApiVersion('v1'), { group: '', version: 'v1' });
    assert.deepEqual(parseApiVersion('apps/v1'), { group: 'apps', version: 'v1' });
    const p: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x' },
      spec: { containers: [{ name: 'c', image: 'i' }] },
    };
    assert.equal(kindOf(p)?.kind, 'Pod');
  });
});
