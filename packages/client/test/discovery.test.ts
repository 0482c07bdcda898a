import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type APIResourceInfo, resolveResource } from '../src/discovery.js';

function res(
  group: string,
  version: string,
  resource: string,
  kind: string,
  shortNames: string[] = [],
  preferred = true,
): APIResourceInfo {
  return {
    group,
    version,
    resource,
    kind,
    namespaced: true,
    singularName: kind.toLowerCase(),
    shortNames,
    verbs: [],
    categories: [],
    subresource: resource.includes('/'),
    preferred,
  };
}

const all = [
  res('', 'v1', 'pods', 'Pod', ['po']),
  res('', 'v1', 'pods/status', 'Pod'),
  res('', 'v1', 'events', 'Event', ['ev']),
  res('events.k8s.io', 'v1', 'events', 'Event', ['ev']),
  res('apps', 'v1', 'deployments', 'Deployment', ['deploy']),
  res('apps', 'v1beta1', 'deployments', 'Deployment', ['deploy'], false),
];

describe('resolveResource', () => {
  it('accepts plural, singular, short names and kinds in any case', () => {
    for (const typed of ['pods', 'pod', 'po', 'Pod', 'PODS'])
      assert.equal(resolveResource(all, typed)?.resource, 'pods', typed);
    assert.equal(resolveResource(all, 'deploy')?.version, 'v1', 'the preferred version');
  });
  it('prefers the core group for ambiguous names and honours group qualifiers', () => {
    assert.equal(resolveResource(all, 'events')?.group, '');
    assert.equal(resolveResource(all, 'events.events.k8s.io')?.group, 'events.k8s.io');
    assert.equal(resolveResource(all, 'deployments.v1beta1.apps')?.version, 'v1beta1');
    assert.equal(resolveResource(all, 'deployment.apps')?.resource, 'deployments');
  });
  it('never resolves to a subresource or an unknown name', () => {
    assert.equal(resolveResource(all, 'pods/status'), undefined);
    assert.equal(resolveResource(all, 'podz'), undefined);
  });
});
