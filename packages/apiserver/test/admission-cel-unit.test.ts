// Unit tests of the pure parts of CEL admission: compiling in each scope (the
// variables it declares, the result type), the cost bound decided before an
// evaluation, JSON to CEL values, and which requests a policy's matchConstraints
// select (resourceNames, excludeResourceRules, matchPolicy Equivalent).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileCel, countValues, exceedsCost, runCel, toCel } from '../src/admission/cel.js';
import { celAuthorizer } from '../src/admission/cel-request.js';
import { matchedBy } from '../src/admission/policy-match.js';
import type { AdmissionAttributes } from '../src/admission/webhooks.js';
import type { Attributes, Authorizer } from '../src/authz.js';
import { builtinKinds, KindRegistry } from '../src/kinds/index.js';
import { S } from '../src/model/schema.js';

describe('CEL admission expressions', () => {
  it('compile in their scope: undeclared variables and wrong result types are compile errors', () => {
    const ok = compileCel('object.spec.replicas <= params.max', 'policy', 'bool');
    assert.notEqual(typeof ok, 'string');
    assert.match(String(compileCel('params.max > 1', 'matchCondition', 'bool')), /Unknown variable: params/);
    assert.match(
      String(compileCel('1 + 1', 'policy', 'bool')),
      /must evaluate to bool, but evaluates to int/,
    );
    assert.match(String(compileCel('object.x <', 'policy', 'bool')), /./);
    assert.notEqual(typeof compileCel("'n: ' + string(1)", 'policy', 'string'), 'string');
  });

  it('evaluate with ints for JSON integers, doubles where the schema says number', () => {
    const c = compileCel('object.spec.replicas <= 5 && object.spec.ratio > 0.5', 'policy', 'bool');
    assert.ok(typeof c !== 'string');
    const schema = S.obj({ spec: S.obj({ replicas: S.int, ratio: S.num }) });
    const object = toCel({ spec: { replicas: 3, ratio: 1 } }, schema);
    assert.deepEqual(object, { spec: { replicas: 3n, ratio: 1 } });
    assert.deepEqual(runCel(c, { object }, 10), { ok: true, value: true });
    const failed = runCel(c, { object: { spec: {} } }, 10);
    assert.equal(failed.ok, false);
    assert.match(
      (failed as { error: string }).error,
      /^expression 'object\.spec\.replicas <= 5 && object\.spec\.ratio > 0\.5' resulted in error: /,
    );
  });

  it('refuse before running an expression whose nested loops over the data would pass the bound', () => {
    const nested = compileCel('object.l.all(a, object.l.all(b, object.l.all(c, a + b + c >= 0)))', 'policy');
    const flat = compileCel('object.l.all(a, a >= 0)', 'policy');
    assert.ok(typeof nested !== 'string' && typeof flat !== 'string');
    assert.equal(nested.loopDepth, 3);
    assert.equal(flat.loopDepth, 1);
    const big = { l: Array.from({ length: 1000 }, (_, i) => i) };
    const values = countValues(big, 1_000_000);
    assert.ok(values >= 1000);
    assert.equal(exceedsCost(nested, values), true);
    assert.equal(exceedsCost(flat, values), false);
    const r = runCel(nested, { object: toCel(big) }, values);
    assert.deepEqual(r.ok, false);
    assert.match((r as { error: string }).error, /operation cancelled: actual cost limit exceeded/);
    // A pattern that backtracks exponentially in JavaScript is refused at compile time.
    assert.match(
      String(compileCel("object.name.matches('^(a+)+$')", 'policy', 'bool')),
      /regular expression '\^\(a\+\)\+\$' could take exponential time/,
    );
    assert.match(String(compileCel("matches(object.name, '(x*)*')", 'policy', 'bool')), /exponential/);
    assert.notEqual(typeof compileCel("object.name.matches('^[a-z]+$')", 'policy', 'bool'), 'string');
    // Small data: the same expression runs.
    assert.deepEqual(runCel(nested, { object: toCel({ l: [1, 2] }) }, 4), { ok: true, value: true });
  });
});

describe("Kubernetes' CEL libraries", () => {
  it('quantities, list and string functions', () => {
    const cases: [string, unknown][] = [
      ["quantity('1Gi').isGreaterThan(quantity('1Mi'))", true],
      ["quantity(object.mem).compareTo(quantity('1024Mi')) == 0", true],
      ["quantity('1500m').asApproximateFloat() == 1.5", true],
      ["quantity('2k').asInteger()", 2000n],
      ["quantity('1').add(quantity('500m')).isLessThan(quantity('2'))", true],
      ["isQuantity('1Gi') && !isQuantity('one')", true],
      ['object.counts.sum()', 6n],
      ['object.counts.max() == 3 && object.counts.min() == 1', true],
      ['[1, 2, 2].isSorted() && ![2, 1].isSorted()', true],
      ["['a', 'b'].indexOf('b')", 1n],
      ["'a-b-c'.replace('-', '+')", 'a+b+c'],
      ["'a-b-c'.replace('-', '+', 1)", 'a+b-c'],
    ];
    const object = toCel({ mem: '1Gi', counts: [1, 2, 3] });
    for (const [expression, want] of cases) {
      const c = compileCel(expression, 'policy');
      assert.ok(typeof c !== 'string', `${expression}: ${c}`);
      assert.deepEqual(runCel(c, { object }, 10), { ok: true, value: want }, expression);
    }
    const bad = compileCel("quantity('one').sign() == 1", 'policy', 'bool');
    assert.ok(typeof bad !== 'string');
    assert.match((runCel(bad, {}, 1) as { error: string }).error, /resulted in error: cannot parse 'one'/);
  });
});

describe('the authorizer variable', () => {
  it('asks the authorizer as the user, a service account, or for the request resource', () => {
    const asked: Attributes[] = [];
    // Allows only `get` on deployments in ns "ok", and the path /healthz.
    const authz: Authorizer = {
      authorize(a) {
        asked.push(a);
        const allow =
          (a.resourceRequest && a.verb === 'get' && a.resource === 'deployments' && a.namespace === 'ok') ||
          (!a.resourceRequest && a.path === '/healthz');
        return { decision: allow ? 'allow' : 'noopinion', reason: allow ? '' : 'no rule' };
      },
    };
    const a = {
      def: new KindRegistry(builtinKinds()).lookup('apps', 'v1', 'deployments')!,
      subresource: '',
      operation: 'CREATE' as const,
      namespace: 'ok',
      name: 'd',
      user: { name: 'alice', groups: ['devs'] },
      dryRun: false,
      warnings: [],
    };
    const authorizer = celAuthorizer(authz, a);
    const cases: [string, unknown][] = [
      ["authorizer.group('apps').resource('deployments').namespace('ok').check('get').allowed()", true],
      ["authorizer.group('apps').resource('deployments').namespace('no').check('get').allowed()", false],
      ["authorizer.group('apps').resource('deployments').namespace('no').check('get').reason()", 'no rule'],
      ["authorizer.requestResource.check('get').allowed()", true],
      ["authorizer.path('/healthz').check('get').allowed()", true],
      ["authorizer.serviceAccount('kube-system', 'x').path('/metrics').check('get').allowed()", false],
    ];
    for (const [expression, want] of cases) {
      const c = compileCel(expression, 'policy');
      assert.ok(typeof c !== 'string', `${expression}: ${c}`);
      assert.deepEqual(runCel(c, { authorizer }, 1), { ok: true, value: want }, expression);
    }
    assert.equal(asked[0].user.name, 'alice');
    assert.equal(asked[3].name, 'd');
    assert.equal(asked.at(-1)?.user.name, 'system:serviceaccount:kube-system:x');
    assert.notEqual(
      typeof compileCel("authorizer.path('/x').check('get').allowed()", 'matchCondition', 'bool'),
      'string',
    );
  });
});

describe('policy matchConstraints', () => {
  const kinds = new KindRegistry(builtinKinds());
  const hpaV2 = kinds.lookup('autoscaling', 'v2', 'horizontalpodautoscalers')!;
  const pods = kinds.lookup('', 'v1', 'pods')!;
  const attrs = (def = pods, name = 'p', extra: Partial<AdmissionAttributes> = {}): AdmissionAttributes => ({
    def,
    subresource: '',
    operation: 'CREATE',
    namespace: 'ns',
    name,
    object: { metadata: { name, labels: { app: 'a' } } },
    user: { name: 'u', groups: [] },
    dryRun: false,
    warnings: [],
    ...extra,
  });
  const rule = (group: string, version: string, resource: string, more: Record<string, unknown> = {}) => ({
    operations: ['CREATE'],
    apiGroups: [group],
    apiVersions: [version],
    resources: [resource],
    ...more,
  });

  it('resourceNames, excludeResourceRules and the selectors narrow the rules', () => {
    const m = { resourceRules: [rule('', 'v1', 'pods', { resourceNames: ['p'] })] };
    assert.equal(matchedBy(kinds, m, attrs(), {}), pods);
    assert.equal(matchedBy(kinds, m, attrs(pods, 'q'), {}), undefined);
    const excluded = { ...m, excludeResourceRules: [rule('', 'v1', 'pods')] };
    assert.equal(matchedBy(kinds, excluded, attrs(), {}), undefined);
    const bySelector = { ...m, namespaceSelector: { matchLabels: { env: 'prod' } } };
    assert.equal(matchedBy(kinds, bySelector, attrs(), { env: 'dev' }), undefined);
    assert.equal(matchedBy(kinds, bySelector, attrs(), { env: 'prod' }), pods);
    const byObject = { ...m, objectSelector: { matchLabels: { app: 'b' } } };
    assert.equal(matchedBy(kinds, byObject, attrs(), {}), undefined);
    // A binding's matchResources without rules narrows by its selectors only.
    assert.equal(matchedBy(kinds, { objectSelector: { matchLabels: { app: 'a' } } }, attrs(), {}), pods);
    assert.equal(matchedBy(kinds, m, attrs(pods, 'p', { subresource: 'status' }), {}), undefined);
  });

  it('matchPolicy Equivalent matches another version of the same kind; Exact does not', () => {
    const m = { resourceRules: [rule('autoscaling', 'v1', 'horizontalpodautoscalers')] };
    const matched = matchedBy(kinds, { ...m, matchPolicy: 'Equivalent' }, attrs(hpaV2, 'h'), {});
    assert.equal(matched?.version, 'v1');
    assert.equal(matchedBy(kinds, { ...m, matchPolicy: 'Exact' }, attrs(hpaV2, 'h'), {}), undefined);
  });
});
