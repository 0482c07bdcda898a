// ValidatingAdmissionPolicy (CEL) against a real apiserver on kubit-store, with
// the real kubectl where a user would use it, and webhook matchConditions with a
// real HTTPS webhook this test starts. Each case works in its own namespace, which
// its policy's or binding's namespaceSelector picks, so the cases' policies never
// see each other's writes. Policies reach admission through the watch cache, so
// each case first waits for its policy to take effect.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, type Reply } from './helpers.js';

const exec = promisify(execFile);
const VAP = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies';
const VAPB = '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings';
const VWC = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';

let cp: ControlPlane;
let api: Api;
let me = '';
let hooks: Server;
let hookPort = 0;
let caBundle = '';
let dir = '';
/** The names of the objects the webhook was asked about. */
const reviewed: string[] = [];

async function makeCerts(): Promise<{ key: Buffer; cert: Buffer; ca: Buffer }> {
  const f = (n: string) => join(dir, n);
  const ssl = (args: string[]) => exec('openssl', args);
  await ssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt')].concat([
      '-days',
      '1',
      '-subj',
      '/CN=vap-test-ca',
    ]),
  );
  await ssl([
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    f('tls.key'),
    '-out',
    f('tls.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ]);
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  await ssl(
    [
      'x509',
      '-req',
      '-in',
      f('tls.csr'),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
    ].concat(['-out', f('tls.crt'), '-days', '1', '-extfile', f('ext.cnf')]),
  );
  return { key: readFileSync(f('tls.key')), cert: readFileSync(f('tls.crt')), ca: readFileSync(f('ca.crt')) };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kubit-vap-'));
  const certs = await makeCerts();
  caBundle = certs.ca.toString('base64');
  // A webhook that refuses everything it is asked about.
  hooks = createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      reviewed.push(review.request.object?.metadata?.name ?? '');
      res.setHeader('Content-Type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: review.apiVersion,
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: false,
            status: { message: 'refused by the webhook' },
          },
        }),
      );
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hookPort = (hooks.address() as AddressInfo).port;
  cp = await startControlPlane();
  api = new Api(cp);
  const who = await api.post('/apis/authentication.k8s.io/v1/selfsubjectreviews', {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'SelfSubjectReview',
  });
  me = who.body?.status?.userInfo?.username;
  assert.ok(me, who.text);
});
after(async () => {
  api?.close();
  await cp?.stop();
  hooks?.closeAllConnections();
  await new Promise((r) => hooks?.close(r));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function namespace(name: string, labels: Record<string, string> = {}): Promise<void> {
  const r = await api.post('/api/v1/namespaces', {
    metadata: { name, labels: { 'vap-test': name, ...labels } },
  });
  assert.equal(r.status, 201, r.text);
}

/** Repeats `attempt` until `done` says its answer shows the policy at work. */
async function untilReply(
  what: string,
  attempt: () => Promise<Reply>,
  done: (r: Reply) => boolean,
): Promise<Reply> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await attempt();
    if (done(r)) return r;
    if (Date.now() > deadline) assert.fail(`${what}: last answer ${r.status} ${r.text}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

let seq = 0;
const deployment = (replicas: number, name = `d-${++seq}`) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels: { app: name } },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: {
      metadata: { labels: { app: name } },
      spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
    },
  },
});
const deployments = (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments`;

const deploymentRules = {
  resourceRules: [
    {
      apiGroups: ['apps'],
      apiVersions: ['v1'],
      operations: ['CREATE', 'UPDATE'],
      resources: ['deployments'],
    },
  ],
};

async function policy(name: string, spec: Record<string, unknown>): Promise<void> {
  const r = await api.post(VAP, { metadata: { name }, spec });
  assert.equal(r.status, 201, r.text);
}
async function binding(name: string, spec: Record<string, unknown>): Promise<void> {
  const r = await api.post(VAPB, { metadata: { name }, spec });
  assert.equal(r.status, 201, r.text);
}
/** A binding of `policyName` to the namespace `ns` only. */
const boundTo = (
  policyName: string,
  ns: string,
  actions = ['Deny'],
  extra: Record<string, unknown> = {},
) => ({
  policyName,
  validationActions: actions,
  matchResources: { namespaceSelector: { matchLabels: { 'vap-test': ns } } },
  ...extra,
});

describe('ValidatingAdmissionPolicy', () => {
  it("the docs' replica limit with kubectl: Deny refuses kubectl create deployment, and the status is observed", async () => {
    await namespace('vap-deny');
    const manifest = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit.kubit.dev
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding.kubit.dev
spec:
  policyName: replica-limit.kubit.dev
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        vap-test: vap-deny
`;
    const applied = await kubectl(cp, ['apply', '-f', '-'], { input: manifest });
    assert.match(
      applied.stdout,
      /validatingadmissionpolicy.admissionregistration.k8s.io\/replica-limit.kubit.dev created/,
    );
    const refused = await untilReply(
      'the replica limit',
      () => api.post(deployments('vap-deny'), deployment(7)),
      (r) => r.status !== 201,
    );
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.reason, 'Invalid');
    const message =
      "ValidatingAdmissionPolicy 'replica-limit.kubit.dev' with binding 'replica-limit-binding.kubit.dev' denied request: failed expression: object.spec.replicas <= 5";
    assert.match(refused.body.message, /^deployments.apps "d-\d+" is forbidden: /);
    assert.ok(refused.body.message.endsWith(message), refused.body.message);
    assert.deepEqual(refused.body.details.causes, [{ message }]);
    const k = await kubectl(
      cp,
      ['create', 'deployment', 'big', '-n', 'vap-deny', '--image=busybox', '--replicas=7'],
      {
        allowFail: true,
      },
    );
    assert.notEqual(k.code, 0);
    assert.match(k.stderr, /denied request: failed expression: object\.spec\.replicas <= 5/);
    const ok = await kubectl(cp, [
      'create',
      'deployment',
      'small',
      '-n',
      'vap-deny',
      '--image=busybox',
      '--replicas=3',
    ]);
    assert.match(ok.stdout, /deployment.apps\/small created/);
    const metrics = await api.get('/metrics');
    assert.match(
      metrics.text,
      /apiserver_validating_admission_policy_check_total\{policy="replica-limit\.kubit\.dev",policy_binding="replica-limit-binding\.kubit\.dev",error_type="no_error",enforcement_action="deny"\} [1-9]/,
    );
    // An update past the limit is refused too.
    const scaled = await api.patch(`${deployments('vap-deny')}/small`, { spec: { replicas: 9 } });
    assert.equal(scaled.status, 422, scaled.text);
    // Another namespace is not the binding's.
    await namespace('vap-deny-other');
    const other = await api.post(deployments('vap-deny-other'), deployment(7));
    assert.equal(other.status, 201, other.text);
    // The status: observedGeneration once the policy's generation is checked; kubectl's columns.
    const observed = await untilReply(
      'status.observedGeneration',
      () => api.get(`${VAP}/replica-limit.kubit.dev`),
      (r) => r.body?.status?.observedGeneration === r.body?.metadata?.generation,
    );
    assert.equal(observed.body.metadata.generation, 1);
    // A spec change is a new generation, observed in the same write; a label change is neither.
    const changed = await api.patch(`${VAP}/replica-limit.kubit.dev`, {
      spec: { validations: [{ expression: 'object.spec.replicas <= 5' }, { expression: 'true' }] },
    });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.metadata.generation, 2);
    assert.equal(changed.body.status.observedGeneration, 2);
    const labelled = await api.patch(`${VAP}/replica-limit.kubit.dev`, { metadata: { labels: { a: 'b' } } });
    assert.equal(labelled.body.metadata.generation, 2);
    assert.equal(labelled.body.status.observedGeneration, 2);
    const got = await kubectl(cp, ['get', 'validatingadmissionpolicies']);
    assert.match(got.stdout, /NAME\s+VALIDATIONS\s+PARAMKIND\s+AGE/);
    assert.match(got.stdout, /replica-limit\.kubit\.dev\s+2\s+<unset>/);
    const explained = await kubectl(cp, ['explain', 'validatingadmissionpolicies.spec.validations']);
    assert.match(explained.stdout, /CEL expressions that must evaluate to true/);
    const gotB = await kubectl(cp, ['get', 'validatingadmissionpolicybindings']);
    assert.match(gotB.stdout, /NAME\s+POLICYNAME\s+PARAMREF\s+AGE/);
    assert.match(gotB.stdout, /replica-limit-binding\.kubit\.dev\s+replica-limit\.kubit\.dev\s+<unset>/);
  });

  it('Warn admits the request with a Warning header; dry runs are evaluated and store nothing', async () => {
    await namespace('vap-warn');
    await policy('warn-limit.kubit.dev', {
      matchConstraints: deploymentRules,
      validations: [{ expression: 'object.spec.replicas <= 5', message: 'at most 5 replicas' }],
    });
    await binding('warn-limit.kubit.dev', boundTo('warn-limit.kubit.dev', 'vap-warn', ['Warn', 'Audit']));
    const r = await untilReply(
      'the warning',
      () => api.post(deployments('vap-warn'), deployment(7)),
      (r) => r.headers.warning !== undefined,
    );
    assert.equal(r.status, 201, r.text);
    assert.match(
      String(r.headers.warning),
      /Validation failed for ValidatingAdmissionPolicy 'warn-limit\.kubit\.dev' with binding 'warn-limit\.kubit\.dev': at most 5 replicas/,
    );
    // Dry run: the same policy under Deny in its own namespace.
    await namespace('vap-dry');
    await binding('dry-limit.kubit.dev', boundTo('warn-limit.kubit.dev', 'vap-dry'));
    const refused = await untilReply(
      'the dry-run refusal',
      () => api.post(`${deployments('vap-dry')}?dryRun=All`, deployment(7, 'dry-big')),
      (r) => r.status !== 201,
    );
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.body.message, /at most 5 replicas/);
    const admitted = await api.post(`${deployments('vap-dry')}?dryRun=All`, deployment(2, 'dry-small'));
    assert.equal(admitted.status, 201, admitted.text);
    assert.equal((await api.get(`${deployments('vap-dry')}/dry-small`)).status, 404);
    assert.equal((await api.get(`${deployments('vap-dry')}/dry-big`)).status, 404);
  });

  it('paramKind: a ConfigMap gives the limit, with a messageExpression and a reason; a missing param under Deny', async () => {
    await namespace('vap-params');
    const cm = await api.post('/api/v1/namespaces/vap-params/configmaps', {
      metadata: { name: 'limits' },
      data: { maxReplicas: '3' },
    });
    assert.equal(cm.status, 201, cm.text);
    await policy('param-limit.kubit.dev', {
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: deploymentRules,
      variables: [{ name: 'limit', expression: 'int(params.data.maxReplicas)' }],
      validations: [
        {
          expression: 'object.spec.replicas <= variables.limit',
          messageExpression: "'replicas must be no greater than ' + string(variables.limit)",
          reason: 'Forbidden',
        },
      ],
    });
    await binding(
      'param-limit.kubit.dev',
      boundTo('param-limit.kubit.dev', 'vap-params', ['Deny'], {
        paramRef: { name: 'limits', namespace: 'vap-params', parameterNotFoundAction: 'Deny' },
      }),
    );
    const refused = await untilReply(
      'the param limit',
      () => api.post(deployments('vap-params'), deployment(4)),
      (r) => r.status !== 201,
    );
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.reason, 'Forbidden');
    assert.match(refused.body.message, /denied request: replicas must be no greater than 3$/);
    assert.equal((await api.post(deployments('vap-params'), deployment(3))).status, 201);
    // The param changes: the next request sees it.
    await api.patch('/api/v1/namespaces/vap-params/configmaps/limits', { data: { maxReplicas: '10' } });
    await untilReply(
      'the raised limit',
      () => api.post(deployments('vap-params'), deployment(4)),
      (r) => r.status === 201,
    );
    // A selector: every ConfigMap it picks in the request's namespace is a param, each evaluated.
    await namespace('vap-selector');
    for (const [name, max] of [
      ['loose', '5'],
      ['strict', '2'],
    ]) {
      const made = await api.post('/api/v1/namespaces/vap-selector/configmaps', {
        metadata: { name, labels: { 'replica-limit': 'yes' } },
        data: { maxReplicas: max },
      });
      assert.equal(made.status, 201, made.text);
    }
    await binding(
      'selector-limit.kubit.dev',
      boundTo('param-limit.kubit.dev', 'vap-selector', ['Deny'], {
        paramRef: { selector: { matchLabels: { 'replica-limit': 'yes' } }, parameterNotFoundAction: 'Allow' },
      }),
    );
    const strict = await untilReply(
      'the strictest param',
      () => api.post(deployments('vap-selector'), deployment(3)),
      (r) => r.status !== 201,
    );
    assert.match(strict.body.message, /replicas must be no greater than 2$/);
    assert.equal((await api.post(deployments('vap-selector'), deployment(2))).status, 201);
    // Allow: with no param selected, nothing is evaluated.
    for (const name of ['loose', 'strict'])
      await api.patch(`/api/v1/namespaces/vap-selector/configmaps/${name}`, { metadata: { labels: null } });
    await untilReply(
      'no params',
      () => api.post(deployments('vap-selector'), deployment(9)),
      (r) => r.status === 201,
    );
    // A binding whose param does not exist, under Deny.
    await namespace('vap-noparam');
    await binding(
      'noparam.kubit.dev',
      boundTo('param-limit.kubit.dev', 'vap-noparam', ['Deny'], {
        paramRef: { name: 'absent', parameterNotFoundAction: 'Deny' },
      }),
    );
    const missing = await untilReply(
      'the missing param',
      () => api.post(deployments('vap-noparam'), deployment(1)),
      (r) => r.status !== 201,
    );
    assert.equal(missing.status, 422, missing.text);
    assert.match(
      missing.body.message,
      /denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction/,
    );
  });

  it('matchConditions leave out a user; namespaceSelector picks namespaces by label', async () => {
    await namespace('vap-cond');
    await policy('not-me.kubit.dev', {
      matchConstraints: deploymentRules,
      matchConditions: [{ name: 'exclude-me', expression: `request.userInfo.username != '${me}'` }],
      validations: [{ expression: 'false', message: 'nobody else may' }],
    });
    await policy('only-me.kubit.dev', {
      matchConstraints: deploymentRules,
      matchConditions: [{ name: 'only-me', expression: `request.userInfo.username == '${me}'` }],
      validations: [{ expression: "object.metadata.name != 'forbidden-name'", message: 'not this name' }],
    });
    await binding('not-me.kubit.dev', boundTo('not-me.kubit.dev', 'vap-cond'));
    await binding('only-me.kubit.dev', boundTo('only-me.kubit.dev', 'vap-cond'));
    const refused = await untilReply(
      'the only-me policy',
      () => api.post(deployments('vap-cond'), deployment(1, 'forbidden-name')),
      (r) => r.status !== 201,
    );
    assert.match(refused.body.message, /only-me\.kubit\.dev.*not this name/);
    // not-me's validation (false) would refuse anything; its condition leaves this user out.
    assert.equal((await api.post(deployments('vap-cond'), deployment(1))).status, 201);

    await namespace('vap-prod', { env: 'prod' });
    await namespace('vap-dev', { env: 'dev' });
    await policy('prod-only.kubit.dev', {
      matchConstraints: { ...deploymentRules, namespaceSelector: { matchLabels: { env: 'prod' } } },
      validations: [{ expression: 'object.spec.replicas >= 2', message: 'prod runs two at least' }],
    });
    await binding('prod-only.kubit.dev', { policyName: 'prod-only.kubit.dev', validationActions: ['Deny'] });
    const prod = await untilReply(
      'the prod policy',
      () => api.post(deployments('vap-prod'), deployment(1)),
      (r) => r.status !== 201,
    );
    assert.match(prod.body.message, /prod runs two at least/);
    assert.equal((await api.post(deployments('vap-dev'), deployment(1))).status, 201);
  });

  it('authorizer: expressions ask RBAC, as the user or as a service account', async () => {
    await namespace('vap-authz');
    await policy('authz.kubit.dev', {
      matchConstraints: {
        resourceRules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
        ],
      },
      validations: [
        {
          expression:
            "authorizer.group('').resource('secrets').namespace(request.namespace).check('list').allowed()",
          message: 'the user may not list secrets',
        },
        {
          expression:
            "!has(object.metadata.labels) || !('as-sa' in object.metadata.labels) || authorizer.serviceAccount(request.namespace, 'nobody').group('').resource('secrets').namespace(request.namespace).check('list').allowed()",
          message: 'the service account may not list secrets',
        },
      ],
    });
    await binding('authz.kubit.dev', boundTo('authz.kubit.dev', 'vap-authz'));
    const cms = '/api/v1/namespaces/vap-authz/configmaps';
    const refused = await untilReply(
      'the service account check',
      () => api.post(cms, { metadata: { name: `sa-${++seq}`, labels: { 'as-sa': 'yes' } } }),
      (r) => r.status !== 201,
    );
    assert.match(refused.body.message, /denied request: the service account may not list secrets$/);
    // The admin may list secrets: its own check passes.
    assert.equal((await api.post(cms, { metadata: { name: 'plain' } })).status, 201);
  });

  it('an expression that errors: failurePolicy Fail refuses, Ignore admits; a pathological one is cut off', async () => {
    await namespace('vap-fail');
    await namespace('vap-ignore');
    const spec = (failurePolicy: string) => ({
      failurePolicy,
      matchConstraints: deploymentRules,
      validations: [{ expression: 'object.spec.nosuchfield == 1' }],
    });
    await policy('errors-fail.kubit.dev', spec('Fail'));
    await policy('errors-ignore.kubit.dev', spec('Ignore'));
    await binding('errors-fail.kubit.dev', boundTo('errors-fail.kubit.dev', 'vap-fail'));
    await binding('errors-ignore.kubit.dev', boundTo('errors-ignore.kubit.dev', 'vap-ignore'));
    const failed = await untilReply(
      'the evaluation error',
      () => api.post(deployments('vap-fail'), deployment(1)),
      (r) => r.status !== 201,
    );
    assert.equal(failed.status, 422, failed.text);
    assert.match(
      failed.body.message,
      /ValidatingAdmissionPolicy 'errors-fail\.kubit\.dev' with binding 'errors-fail\.kubit\.dev' denied request: expression 'object\.spec\.nosuchfield == 1' resulted in error: /,
    );
    // Ignore: given time to take effect, the create still passes.
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await api.post(deployments('vap-ignore'), deployment(1))).status, 201);

    // Three nested loops over a big list: refused before it runs, and the apiserver answers on.
    await namespace('vap-cost');
    await policy('costly.kubit.dev', {
      matchConstraints: {
        resourceRules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
        ],
      },
      validations: [
        {
          expression:
            'object.data.all(a, object.data.all(b, object.data.all(c, a != b || b != c || a.size() >= 0)))',
        },
      ],
    });
    await binding('costly.kubit.dev', boundTo('costly.kubit.dev', 'vap-cost'));
    const data = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 'v']));
    const start = Date.now();
    const cut = await untilReply(
      'the cost limit',
      () => api.post('/api/v1/namespaces/vap-cost/configmaps', { metadata: { name: `big-${++seq}` }, data }),
      (r) => r.status !== 201,
    );
    assert.match(cut.body.message, /operation cancelled: actual cost limit exceeded/);
    assert.ok(Date.now() - start < 10_000);
    assert.equal((await api.get('/api/v1/namespaces/vap-cost/configmaps')).status, 200);
  });

  it('bad input: a CEL compile error is a 422 naming the expression; binding rules; nothing stored', async () => {
    const r = await api.post(VAP, {
      metadata: { name: 'broken.kubit.dev' },
      spec: { matchConstraints: deploymentRules, validations: [{ expression: 'object.spec.replicas <= ' }] },
    });
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.details.causes[0].field, 'spec.validations[0].expression');
    assert.match(
      r.body.message,
      /spec\.validations\[0\]\.expression: Invalid value: "object\.spec\.replicas <= ": compilation failed: /,
    );
    const undeclared = await api.post(VAP, {
      metadata: { name: 'broken.kubit.dev' },
      spec: {
        matchConstraints: deploymentRules,
        validations: [{ expression: 'nosuchvariable > 1', messageExpression: '1 + 1' }],
      },
    });
    assert.equal(undeclared.status, 422, undeclared.text);
    const fields = undeclared.body.details.causes.map((c: { field: string }) => c.field);
    assert.deepEqual(fields, ['spec.validations[0].expression', 'spec.validations[0].messageExpression']);
    assert.equal((await api.get(`${VAP}/broken.kubit.dev`)).status, 404);
    const noRules = await api.post(VAP, {
      metadata: { name: 'norules.kubit.dev' },
      spec: { validations: [{ expression: 'true' }] },
    });
    assert.equal(noRules.status, 422);
    assert.match(noRules.body.message, /spec\.matchConstraints: Required value/);
    const b = await api.post(VAPB, {
      metadata: { name: 'bad.kubit.dev' },
      spec: { policyName: 'x', validationActions: ['Deny', 'Warn', 'Nope'] },
    });
    assert.equal(b.status, 422, b.text);
    assert.match(b.body.message, /spec\.validationActions\[2\]: Unsupported value: "Nope"/);
    assert.match(b.body.message, /must not contain both "Deny" and "Warn"/);
  });
});

describe('webhook matchConditions', () => {
  it('a webhook is called only when its conditions all hold; an error follows its failurePolicy', async () => {
    await namespace('vap-hook');
    const hook = (name: string, expression: string, failurePolicy = 'Fail') => ({
      name,
      clientConfig: { url: `https://127.0.0.1:${hookPort}/refuse`, caBundle },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      namespaceSelector: { matchLabels: { 'vap-test': 'vap-hook' } },
      matchConditions: [{ name: 'not-skipped', expression }],
      failurePolicy,
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    });
    const bad = await api.post(VWC, {
      metadata: { name: 'bad-conditions' },
      webhooks: [
        {
          ...hook('bad.kubit.dev', 'object.metadata.name +'),
          matchConditions: [
            { name: 'a', expression: 'object.metadata.name +' },
            { name: 'a', expression: 'true' },
          ],
        },
      ],
    });
    assert.equal(bad.status, 422, bad.text);
    assert.match(
      bad.body.message,
      /webhooks\[0\]\.matchConditions\[0\]\.expression: Invalid value: .*compilation failed/,
    );
    assert.match(bad.body.message, /webhooks\[0\]\.matchConditions\[1\]\.name: Duplicate value: "a"/);
    const r = await api.post(VWC, {
      metadata: { name: 'conditional' },
      webhooks: [hook('refuse.kubit.dev', "!object.metadata.name.startsWith('skip-')")],
    });
    assert.equal(r.status, 201, r.text);
    const cms = '/api/v1/namespaces/vap-hook/configmaps';
    const refused = await untilReply(
      'the webhook',
      () => api.post(cms, { metadata: { name: `called-${++seq}` } }),
      (r) => r.status !== 201,
    );
    assert.match(
      refused.body.message,
      /admission webhook "refuse.kubit.dev" denied the request: refused by the webhook/,
    );
    const before = reviewed.length;
    const skipped = await api.post(cms, { metadata: { name: 'skip-me' } });
    assert.equal(skipped.status, 201, skipped.text);
    assert.equal(reviewed.length, before, 'the webhook was not called');
    assert.ok(!reviewed.includes('skip-me'));

    // A condition that errors: Fail refuses (500) without calling, Ignore skips the webhook.
    await namespace('vap-hook-err');
    const erring = (name: string, failurePolicy: string, ns: string) => ({
      ...hook(name, 'object.metadata.nosuchfield == 1', failurePolicy),
      namespaceSelector: { matchLabels: { 'vap-test': ns } },
    });
    await namespace('vap-hook-ign');
    await api.post(VWC, {
      metadata: { name: 'erring' },
      webhooks: [
        erring('fail.kubit.dev', 'Fail', 'vap-hook-err'),
        erring('ignore.kubit.dev', 'Ignore', 'vap-hook-ign'),
      ],
    });
    const failed = await untilReply(
      'the failed condition',
      () => api.post('/api/v1/namespaces/vap-hook-err/configmaps', { metadata: { name: `e-${++seq}` } }),
      (r) => r.status !== 201,
    );
    assert.equal(failed.status, 500, failed.text);
    assert.match(
      failed.body.message,
      /failed calling webhook "fail.kubit.dev": failed to evaluate match conditions: expression 'object.metadata.nosuchfield == 1' resulted in error/,
    );
    const ignored = await api.post('/api/v1/namespaces/vap-hook-ign/configmaps', {
      metadata: { name: 'ign' },
    });
    assert.equal(ignored.status, 201, ignored.text);
    assert.ok(!reviewed.includes('ign'));
  });
});
