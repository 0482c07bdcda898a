import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  alreadyExists,
  badRequest,
  conflict,
  expired,
  FieldPath,
  fieldErrors,
  forbidden,
  internalError,
  invalid,
  isNotFound,
  isStatusError,
  methodNotSupported,
  notFound,
  requestEntityTooLarge,
  type StatusError,
  statusFromUnknown,
  timeout,
  tooManyRequests,
  tooOldResourceVersion,
  unauthorized,
} from '../src/index.js';

describe('status errors', () => {
  it('notFound has the exact Kubernetes body', () => {
    const e = notFound({ group: '', resource: 'pods' }, 'x');
    assert.ok(e instanceof Error);
    assert.ok(isStatusError(e, 'NotFound'));
    assert.equal(e.code, 404);
    assert.deepEqual(e.status, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'pods "x" not found',
      reason: 'NotFound',
      details: { name: 'x', kind: 'pods' },
      code: 404,
    });
    assert.deepEqual(Object.keys(e.status), [
      'kind',
      'apiVersion',
      'metadata',
      'status',
      'message',
      'reason',
      'details',
      'code',
    ]);
  });

  const cases: { name: string; err: StatusError; code: number; reason: string; message: string }[] = [
    {
      name: 'group-qualified not found',
      err: notFound({ group: 'apps', resource: 'deployments' }, 'web'),
      code: 404,
      reason: 'NotFound',
      message: 'deployments.apps "web" not found',
    },
    {
      name: 'already exists',
      err: alreadyExists({ group: '', resource: 'pods' }, 'x'),
      code: 409,
      reason: 'AlreadyExists',
      message: 'pods "x" already exists',
    },
    {
      name: 'conflict (default message)',
      err: conflict({ group: '', resource: 'pods' }, 'x'),
      code: 409,
      reason: 'Conflict',
      message:
        'Operation cannot be fulfilled on pods "x": the object has been modified; please apply your changes to the latest version and try again',
    },
    {
      name: 'forbidden namespaced',
      err: forbidden('bob', 'get', 'pods', '', 'x', 'default'),
      code: 403,
      reason: 'Forbidden',
      message:
        'pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "default"',
    },
    {
      name: 'forbidden cluster scope list',
      err: forbidden('bob', 'list', 'nodes', ''),
      code: 403,
      reason: 'Forbidden',
      message:
        'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope',
    },
    {
      name: 'unauthorized',
      err: unauthorized(),
      code: 401,
      reason: 'Unauthorized',
      message: 'Unauthorized',
    },
    { name: 'bad request', err: badRequest('nope'), code: 400, reason: 'BadRequest', message: 'nope' },
    {
      name: 'too old resource version',
      err: tooOldResourceVersion(5, 10),
      code: 410,
      reason: 'Expired',
      message: 'too old resource version: 5 (10)',
    },
    { name: 'expired', err: expired('x'), code: 410, reason: 'Expired', message: 'x' },
    {
      name: 'entity too large',
      err: requestEntityTooLarge('limit is 3145728'),
      code: 413,
      reason: 'RequestEntityTooLarge',
      message: 'Request entity too large: limit is 3145728',
    },
    {
      name: 'method not supported',
      err: methodNotSupported({ group: '', resource: 'bindings' }, 'list'),
      code: 405,
      reason: 'MethodNotAllowed',
      message: 'list is not supported on resources of kind "bindings"',
    },
    {
      name: 'too many requests',
      err: tooManyRequests('slow down', 3),
      code: 429,
      reason: 'TooManyRequests',
      message: 'Too many requests: slow down',
    },
    {
      name: 'internal',
      err: internalError(new Error('boom')),
      code: 500,
      reason: 'InternalError',
      message: 'Internal error occurred: boom',
    },
    { name: 'timeout', err: timeout('waited'), code: 504, reason: 'Timeout', message: 'Timeout: waited' },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.equal(c.err.code, c.code);
      assert.equal(c.err.status.code, c.code);
      assert.equal(c.err.status.reason, c.reason);
      assert.equal(c.err.status.message, c.message);
      assert.equal(c.err.message, c.message);
      assert.equal(c.err.status.status, 'Failure');
    });
  }

  it('tooManyRequests carries retryAfterSeconds', () => {
    assert.equal(tooManyRequests('x', 7).status.details?.retryAfterSeconds, 7);
  });

  it('invalid with one cause', () => {
    const p = FieldPath.root('spec').child('containers').index(0).child('image');
    const e = invalid({ group: '', kind: 'Pod' }, 'x', [fieldErrors.required(p.toString())]);
    assert.equal(e.code, 422);
    assert.equal(e.status.message, 'Pod "x" is invalid: spec.containers[0].image: Required value');
    assert.deepEqual(e.status.details, {
      name: 'x',
      kind: 'Pod',
      causes: [
        { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.containers[0].image' },
      ],
    });
  });

  it('invalid with several causes is bracketed and deduplicated', () => {
    const e = invalid({ group: 'apps', kind: 'Deployment' }, 'd', [
      fieldErrors.invalid('metadata.name', 'A_B', 'bad name'),
      fieldErrors.notSupported('spec.strategy.type', 'Foo', ['Recreate', 'RollingUpdate']),
      fieldErrors.invalid('metadata.name', 'A_B', 'bad name'),
      fieldErrors.tooMany('spec.x', 5, 3),
    ]);
    assert.equal(
      e.status.message,
      'Deployment.apps "d" is invalid: [metadata.name: Invalid value: "A_B": bad name, spec.strategy.type: Unsupported value: "Foo": supported values: "Recreate", "RollingUpdate", spec.x: Too many: 5: must have at most 3 items]',
    );
    assert.equal(e.status.details?.group, 'apps');
    assert.equal(e.status.details?.causes?.length, 4);
  });

  it('field error bodies render values like Kubernetes', () => {
    const e = invalid({ group: '', kind: 'Pod' }, 'p', [
      fieldErrors.invalid('spec.x', 70000, 'must be between 1 and 65535, inclusive'),
      fieldErrors.invalid('spec.y', null),
      fieldErrors.duplicate('spec.z', 'a"b'),
      fieldErrors.tooLong('metadata.annotations', 'huge', 262144),
      fieldErrors.forbidden('spec', 'pod updates may not change fields'),
    ]);
    const causes = e.status.details?.causes?.map((c) => c.message);
    assert.deepEqual(causes, [
      'Invalid value: 70000: must be between 1 and 65535, inclusive',
      'Invalid value: null',
      'Duplicate value: "a\\"b"',
      'Too long: must have at most 262144 bytes',
      'Forbidden: pod updates may not change fields',
    ]);
  });

  it('huge bad values are cut short in messages', () => {
    const e = invalid({ group: '', kind: 'Pod' }, 'p', [
      fieldErrors.invalid('metadata.name', 'x'.repeat(100_000), 'bad'),
    ]);
    assert.ok(e.message.length < 5000, String(e.message.length));
    assert.ok(e.message.includes('...(truncated): bad'), 'truncation marker');
  });

  it('statusFromUnknown wraps anything', () => {
    assert.equal(statusFromUnknown(notFound({ group: '', resource: 'pods' }, 'a')).code, 404);
    const s = statusFromUnknown('weird');
    assert.equal(s.code, 500);
    assert.equal(s.message, 'Internal error occurred: weird');
    assert.equal(statusFromUnknown(new TypeError('t')).reason, 'InternalError');
    assert.ok(isNotFound(notFound({ group: '', resource: 'pods' }, 'a').status));
    assert.ok(!isStatusError(new Error('x')));
  });

  it('hostile names are carried verbatim and do not break the message', () => {
    const name = `${'ü'.repeat(10000)}"\n__proto__`;
    const e = notFound({ group: '', resource: 'pods' }, name);
    assert.equal(e.status.details?.name, name);
    assert.ok(e.message.startsWith('pods "ü'));
    assert.equal(JSON.parse(JSON.stringify(e.status)).details.name, name);
  });
});
