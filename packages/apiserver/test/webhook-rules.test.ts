// Unit tests of which webhooks a request goes to: rules, scope, subresources and
// the namespace and object selectors (admission/rules.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { namespaceMatches, objectMatches, type RuleAttributes, ruleMatches } from '../src/admission/rules.js';

const podCreate: RuleAttributes = {
  operation: 'CREATE',
  group: '',
  version: 'v1',
  resource: 'pods',
  subresource: '',
  namespaced: true,
};
const rule = {
  operations: ['CREATE'],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: ['pods'],
  scope: '*',
};

describe('webhook rules', () => {
  it('match by operation, group, version and resource, with wildcards', () => {
    assert.equal(ruleMatches(rule, podCreate), true);
    assert.equal(ruleMatches(rule, { ...podCreate, operation: 'UPDATE' }), false);
    assert.equal(ruleMatches({ ...rule, operations: ['*'] }, { ...podCreate, operation: 'DELETE' }), true);
    assert.equal(ruleMatches(rule, { ...podCreate, group: 'apps', resource: 'deployments' }), false);
    assert.equal(
      ruleMatches({ ...rule, apiGroups: ['*'], resources: ['*'] }, { ...podCreate, group: 'apps' }),
      true,
    );
    assert.equal(ruleMatches(rule, { ...podCreate, version: 'v2' }), false);
    assert.equal(ruleMatches({ ...rule, apiVersions: ['*'] }, { ...podCreate, version: 'v2' }), true);
  });

  it('name subresources apart from their objects', () => {
    const status = { ...podCreate, operation: 'UPDATE' as const, subresource: 'status' };
    const statusRule = { ...rule, operations: ['UPDATE'], resources: ['pods/status'] };
    assert.equal(ruleMatches(statusRule, status), true);
    assert.equal(ruleMatches(statusRule, { ...status, subresource: '' }), false);
    assert.equal(
      ruleMatches({ ...rule, operations: ['UPDATE'] }, status),
      false,
      '"pods" is not pods/status',
    );
    assert.equal(ruleMatches({ ...statusRule, resources: ['*'] }, status), false, '"*" is no subresource');
    assert.equal(ruleMatches({ ...statusRule, resources: ['*/status'] }, status), true);
    assert.equal(ruleMatches({ ...statusRule, resources: ['pods/*'] }, status), true);
    assert.equal(ruleMatches({ ...statusRule, resources: ['*/*'] }, status), true);
    assert.equal(ruleMatches({ ...statusRule, resources: ['*/scale'] }, status), false);
  });

  it('keep to their scope', () => {
    const node = { ...podCreate, resource: 'nodes', namespaced: false };
    assert.equal(ruleMatches({ ...rule, resources: ['*'], scope: 'Cluster' }, node), true);
    assert.equal(ruleMatches({ ...rule, resources: ['*'], scope: 'Cluster' }, podCreate), false);
    assert.equal(ruleMatches({ ...rule, resources: ['*'], scope: 'Namespaced' }, node), false);
    assert.equal(ruleMatches({ ...rule, resources: ['*'], scope: 'Namespaced' }, podCreate), true);
  });
});

describe('webhook selectors', () => {
  const pods = { namespaced: true, group: '', resource: 'pods' };
  const nodes = { namespaced: false, group: '', resource: 'nodes' };
  const namespaces = { namespaced: false, group: '', resource: 'namespaces' };
  const sel = { matchLabels: { team: 'a' } };

  it('namespaceSelector: a namespaced object by its namespace, a Namespace by itself, others always', () => {
    assert.equal(namespaceMatches(sel, pods, { team: 'a' }, {}), true);
    assert.equal(namespaceMatches(sel, pods, { team: 'b' }, { team: 'a' }), false);
    assert.equal(namespaceMatches(sel, namespaces, undefined, { team: 'a' }), true);
    assert.equal(namespaceMatches(sel, namespaces, undefined, {}), false);
    assert.equal(namespaceMatches(sel, nodes, undefined, {}), true);
    assert.equal(
      namespaceMatches(
        { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] },
        pods,
        {},
        {},
      ),
      true,
    );
  });

  it('objectSelector: the new object or the old one; an empty selector matches a request without objects', () => {
    assert.equal(objectMatches(sel, { team: 'a' }, undefined), true);
    assert.equal(objectMatches(sel, { team: 'b' }, { team: 'a' }), true);
    assert.equal(objectMatches(sel, { team: 'b' }, { team: 'c' }), false);
    assert.equal(objectMatches(sel, undefined, undefined), false);
    assert.equal(objectMatches({}, undefined, undefined), true);
    assert.equal(objectMatches(undefined, {}, undefined), true);
  });
});
