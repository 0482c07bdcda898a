// Admission webhooks against a real apiserver: the webhooks are real HTTPS servers
// this test starts, with a CA of its own in the configurations' caBundle. Each case
// works in its own namespace, which its configuration's namespaceSelector picks, so
// the cases' webhooks never see each other's writes. A configuration reaches the
// apiserver through its watch cache, so each case first waits for its webhook to
// take effect.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, pod, type Reply } from './helpers.js';

const exec = promisify(execFile);

let cp: ControlPlane;
let api: Api;
let hooks: Server;
let hookPort = 0;
let caBundle = '';
let dir = '';

/** Every review the webhook server got, by path. */
// biome-ignore lint/suspicious/noExplicitAny: the reviews are arbitrary JSON the test reads
const reviews: { path: string; request: any; apiVersion?: string }[] = [];

/** A non-loopback address of this host: EndpointSlices may not hold loopback addresses. */
function hostAddress(): string | undefined {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

async function makeCerts(sans: string): Promise<{ key: Buffer; cert: Buffer; ca: Buffer }> {
  dir = mkdtempSync(join(tmpdir(), 'kubit-webhooks-'));
  const f = (n: string) => join(dir, n);
  const ssl = (args: string[]) => exec('openssl', args);
  await ssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt')].concat([
      '-days',
      '1',
      '-subj',
      '/CN=webhook-test-ca',
    ]),
  );
  await ssl(
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('tls.key'), '-out', f('tls.csr')].concat([
      '-subj',
      '/CN=hook.wh-service.svc',
    ]),
  );
  writeFileSync(f('ext.cnf'), `subjectAltName=${sans}\n`);
  await ssl(
    ['x509', '-req', '-in', f('tls.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key')].concat([
      '-CAcreateserial',
      '-out',
      f('tls.crt'),
      '-days',
      '1',
      '-extfile',
      f('ext.cnf'),
    ]),
  );
  return { key: readFileSync(f('tls.key')), cert: readFileSync(f('tls.crt')), ca: readFileSync(f('ca.crt')) };
}

/** The webhooks: each path answers its own way. */
// biome-ignore lint/suspicious/noExplicitAny: AdmissionReview requests are arbitrary JSON
function answer(path: string, request: any): Record<string, unknown> | 'hang' {
  const uid = request.uid;
  switch (path) {
    case '/add-label': {
      const labels = request.object?.metadata?.labels;
      const patch = labels
        ? [{ op: 'add', path: '/metadata/labels/added-by', value: 'webhook' }]
        : [{ op: 'add', path: '/metadata/labels', value: { 'added-by': 'webhook' } }];
      return {
        uid,
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
        warnings: ['the label added-by was added'],
      };
    }
    case '/refuse':
      return {
        uid,
        allowed: false,
        status: { code: 403, message: 'objects labelled refuse=yes are not allowed' },
      };
    case '/slow':
      return 'hang';
    default:
      return { uid, allowed: true };
  }
}

before(async () => {
  const host = hostAddress();
  const certs = await makeCerts(`IP:127.0.0.1,DNS:hook.wh-service.svc${host ? `,IP:${host}` : ''}`);
  caBundle = certs.ca.toString('base64');
  hooks = createServer({ key: certs.key, cert: certs.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      reviews.push({ path, request: review.request, apiVersion: review.apiVersion });
      const response = answer(path, review.request);
      if (response === 'hang') {
        // Answers long after any timeout the test gives.
        setTimeout(() => res.destroy(), 5000).unref();
        return;
      }
      res.setHeader('Content-Type', 'application/json');
      // Answered in the version asked, as webhook libraries do.
      res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response }));
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '0.0.0.0', r));
  hookPort = (hooks.address() as AddressInfo).port;
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
  hooks?.closeAllConnections();
  await new Promise((r) => hooks?.close(r));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const VWC = '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations';
const MWC = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';

async function namespace(name: string): Promise<void> {
  const r = await api.post('/api/v1/namespaces', { metadata: { name, labels: { 'webhook-test': name } } });
  assert.equal(r.status, 201, r.text);
}

function webhook(name: string, ns: string, path: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    clientConfig: { url: `https://127.0.0.1:${hookPort}${path}`, caBundle },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    namespaceSelector: { matchLabels: { 'webhook-test': ns } },
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    ...extra,
  };
}

async function configure(path: string, name: string, hooksOf: unknown[]): Promise<void> {
  const r = await api.post(path, { metadata: { name }, webhooks: hooksOf });
  assert.equal(r.status, 201, r.text);
}

/** Repeats `attempt` until `done` says its answer shows the webhook at work. */
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
const configMap = (labels: Record<string, string> = {}) => ({
  metadata: { name: `cm-${++seq}`, labels },
  data: { a: '1' },
});

describe('admission webhooks', () => {
  it('a mutating webhook adds a label, with its warning in the answer', async () => {
    await namespace('wh-mutate');
    await configure(MWC, 'add-label', [webhook('add-label.kubit.dev', 'wh-mutate', '/add-label')]);
    const r = await untilReply(
      'the label from the webhook',
      () => api.post('/api/v1/namespaces/wh-mutate/configmaps', configMap({ app: 'x' })),
      (r) => r.status === 201 && r.body.metadata.labels?.['added-by'] === 'webhook',
    );
    assert.equal(r.body.metadata.labels.app, 'x');
    assert.match(String(r.headers.warning), /the label added-by was added/);
    const stored = await api.get(`/api/v1/namespaces/wh-mutate/configmaps/${r.body.metadata.name}`);
    assert.equal(stored.body.metadata.labels['added-by'], 'webhook');
    const seen = reviews.filter((x) => x.path === '/add-label').at(-1)?.request;
    assert.equal(seen.operation, 'CREATE');
    assert.deepEqual(seen.kind, { group: '', version: 'v1', kind: 'ConfigMap' });
    assert.deepEqual(seen.resource, { group: '', version: 'v1', resource: 'configmaps' });
    assert.equal(seen.namespace, 'wh-mutate');
    assert.equal(seen.object.metadata.name, r.body.metadata.name);
    assert.equal(typeof seen.userInfo.username, 'string');
    assert.equal(seen.dryRun, false);
    const metrics = await api.get('/metrics');
    assert.match(
      metrics.text,
      /apiserver_admission_webhook_admission_duration_seconds_count\{name="add-label\.kubit\.dev",type="admit",operation="CREATE",rejected="false"\} [1-9]/,
    );
    // Other namespaces are not the webhook's (namespaceSelector).
    await namespace('wh-other');
    const other = await api.post('/api/v1/namespaces/wh-other/configmaps', configMap());
    assert.equal(other.status, 201, other.text);
    assert.equal(other.body.metadata.labels?.['added-by'], undefined);
  });

  it('mutating webhooks run in order, and IfNeeded ones again after a later one changed the object', async () => {
    await namespace('wh-reinvoke');
    await configure(MWC, 'reinvoke', [
      webhook('watcher.kubit.dev', 'wh-reinvoke', '/watch', { reinvocationPolicy: 'IfNeeded' }),
      webhook('labeller.kubit.dev', 'wh-reinvoke', '/add-label'),
    ]);
    const r = await untilReply(
      'the label from the second webhook',
      () => api.post('/api/v1/namespaces/wh-reinvoke/configmaps', configMap()),
      (r) => r.status === 201 && r.body.metadata.labels?.['added-by'] === 'webhook',
    );
    const name = r.body.metadata.name;
    const calls = reviews.filter((x) => x.request.object?.metadata?.name === name).map((x) => x.path);
    assert.deepEqual(calls, ['/watch', '/add-label', '/watch']);
    const last = reviews
      .filter((x) => x.path === '/watch' && x.request.object?.metadata?.name === name)
      .at(-1);
    assert.equal(
      last?.request.object.metadata.labels['added-by'],
      'webhook',
      'the second call sees the change',
    );
  });

  it('a validating webhook refuses with its message, and only objects its objectSelector picks', async () => {
    await namespace('wh-refuse');
    await configure(VWC, 'refuse', [
      webhook('refuse.kubit.dev', 'wh-refuse', '/refuse', {
        objectSelector: { matchLabels: { refuse: 'yes' } },
        rules: [
          {
            operations: ['CREATE', 'DELETE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['configmaps'],
          },
        ],
      }),
    ]);
    const cm = configMap({ refuse: 'yes' });
    const r = await untilReply(
      'the refusal',
      () => api.post('/api/v1/namespaces/wh-refuse/configmaps', cm),
      (r) => r.status !== 201,
    );
    assert.equal(r.status, 403, r.text);
    assert.equal(
      r.body.message,
      'admission webhook "refuse.kubit.dev" denied the request: objects labelled refuse=yes are not allowed',
    );
    assert.equal((await api.get(`/api/v1/namespaces/wh-refuse/configmaps/${cm.metadata.name}`)).status, 404);
    // Without the label the webhook is not asked.
    const calls = reviews.length;
    const plain = await api.post('/api/v1/namespaces/wh-refuse/configmaps', configMap());
    assert.equal(plain.status, 201, plain.text);
    assert.equal(reviews.length, calls);
    // A dry run is refused the same way, the webhook told it is one.
    const dry = await api.post(
      '/api/v1/namespaces/wh-refuse/configmaps?dryRun=All',
      configMap({ refuse: 'yes' }),
    );
    assert.equal(dry.status, 403, dry.text);
    assert.equal(reviews.at(-1)?.request.dryRun, true);
    // DELETE: an object that gained the label cannot be deleted.
    const name = plain.body.metadata.name;
    const labelled = await api.patch(`/api/v1/namespaces/wh-refuse/configmaps/${name}`, {
      metadata: { labels: { refuse: 'yes' } },
    });
    assert.equal(labelled.status, 200, labelled.text);
    const del = await api.del(`/api/v1/namespaces/wh-refuse/configmaps/${name}`);
    assert.equal(del.status, 403, del.text);
    assert.equal(reviews.at(-1)?.request.operation, 'DELETE');
    assert.equal(reviews.at(-1)?.request.oldObject.metadata.name, name);
    assert.equal((await api.get(`/api/v1/namespaces/wh-refuse/configmaps/${name}`)).status, 200);
  });

  it('a webhook that is down fails the request under failurePolicy Fail and not under Ignore', async () => {
    await namespace('wh-down');
    // A port nothing listens on: the webhook server's, once it has been closed.
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const hook = webhook('down.kubit.dev', 'wh-down', '/any', {
      clientConfig: { url: `https://127.0.0.1:${deadPort}/any`, caBundle },
      failurePolicy: 'Fail',
    });
    await configure(VWC, 'down', [hook]);
    const failed = await untilReply(
      'the failure',
      () => api.post('/api/v1/namespaces/wh-down/configmaps', configMap()),
      (r) => r.status !== 201,
    );
    assert.equal(failed.status, 500, failed.text);
    assert.match(
      failed.body.message,
      /^Internal error occurred: failed calling webhook "down\.kubit\.dev": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/any\?timeout=10s": .*ECONNREFUSED/,
    );
    const current = await api.get(`${VWC}/down`);
    const ignore = { ...current.body, webhooks: [{ ...current.body.webhooks[0], failurePolicy: 'Ignore' }] };
    assert.equal((await api.put(`${VWC}/down`, ignore)).status, 200);
    await untilReply(
      'the create under Ignore',
      () => api.post('/api/v1/namespaces/wh-down/configmaps', configMap()),
      (r) => r.status === 201,
    );
  });

  it('a webhook that does not answer within timeoutSeconds fails the request', async () => {
    await namespace('wh-slow');
    await configure(VWC, 'slow', [webhook('slow.kubit.dev', 'wh-slow', '/slow', { timeoutSeconds: 1 })]);
    const r = await untilReply(
      'the timeout',
      () => api.post('/api/v1/namespaces/wh-slow/configmaps', configMap()),
      (r) => r.status !== 201,
    );
    assert.equal(r.status, 500, r.text);
    assert.match(
      r.body.message,
      /failed calling webhook "slow\.kubit\.dev": .*\?timeout=1s": context deadline exceeded/,
    );
  });

  it('a webhook on pods/status is called for status writes, not for pods', async () => {
    await namespace('wh-status');
    const sa = await api.post('/api/v1/namespaces/wh-status/serviceaccounts', {
      metadata: { name: 'default' },
    });
    assert.equal(sa.status, 201, sa.text);
    const p = await api.post('/api/v1/namespaces/wh-status/pods', pod('p1'));
    assert.equal(p.status, 201, p.text);
    await configure(VWC, 'status', [
      webhook('status.kubit.dev', 'wh-status', '/status', {
        rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'] }],
      }),
    ]);
    const statusWrites = () => reviews.filter((x) => x.path === '/status');
    let n = 0;
    await untilReply(
      'the pods/status review',
      () =>
        api.patch('/api/v1/namespaces/wh-status/pods/p1/status', {
          status: { conditions: [{ type: 'kubit.dev/test', status: 'True', reason: `R${++n}` }] },
        }),
      (r) => r.status === 200 && statusWrites().length > 0,
    );
    const seen = statusWrites().at(-1)?.request;
    assert.equal(seen.subResource, 'status');
    assert.equal(seen.operation, 'UPDATE');
    assert.deepEqual(seen.kind, { group: '', version: 'v1', kind: 'Pod' });
    const before = statusWrites().length;
    const p2 = await api.post('/api/v1/namespaces/wh-status/pods', pod('p2'));
    assert.equal(p2.status, 201, p2.text);
    const relabel = await api.patch('/api/v1/namespaces/wh-status/pods/p2', {
      metadata: { labels: { a: 'b' } },
    });
    assert.equal(relabel.status, 200, relabel.text);
    assert.equal(statusWrites().length, before);
  });

  it('a webhook behind a Service is reached at its EndpointSlice address', async (t) => {
    const host = hostAddress();
    if (!host) {
      t.skip('this host has no non-loopback IPv4 address');
      return;
    }
    await namespace('wh-service');
    const svc = await api.post('/api/v1/namespaces/wh-service/services', {
      metadata: { name: 'hook' },
      spec: { ports: [{ name: 'https', port: 443, targetPort: hookPort }] },
    });
    assert.equal(svc.status, 201, svc.text);
    const slice = await api.post('/apis/discovery.k8s.io/v1/namespaces/wh-service/endpointslices', {
      metadata: { name: 'hook-1', labels: { 'kubernetes.io/service-name': 'hook' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [host], conditions: { ready: true } }],
      ports: [{ name: 'https', port: hookPort, protocol: 'TCP' }],
    });
    assert.equal(slice.status, 201, slice.text);
    // The certificate names hook.wh-service.svc: the service's DNS name is what TLS checks.
    await configure(MWC, 'service', [
      webhook('service.kubit.dev', 'wh-service', '', {
        clientConfig: { service: { namespace: 'wh-service', name: 'hook', path: '/add-label' }, caBundle },
      }),
    ]);
    await untilReply(
      'the label from the webhook behind the Service',
      () => api.post('/api/v1/namespaces/wh-service/configmaps', configMap()),
      (r) => r.status === 201 && r.body.metadata.labels?.['added-by'] === 'webhook',
    );
  });

  it('a webhook on pods/exec is asked about a CONNECT with its PodExecOptions', async () => {
    await namespace('wh-connect');
    await configure(VWC, 'connect', [
      webhook('connect.kubit.dev', 'wh-connect', '/refuse', {
        rules: [{ operations: ['CONNECT'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/exec'] }],
      }),
    ]);
    const r = await untilReply(
      'the refused exec',
      () =>
        api.req('POST', '/api/v1/namespaces/wh-connect/pods/p/exec?command=ls&stdout=true', undefined, {
          Connection: 'Upgrade',
          Upgrade: 'SPDY/3.1',
        }),
      (r) => r.status === 403,
    );
    assert.equal(
      r.body.message,
      'admission webhook "connect.kubit.dev" denied the request: objects labelled refuse=yes are not allowed',
    );
    const seen = reviews.filter((x) => x.path === '/refuse').at(-1)?.request;
    assert.equal(seen.operation, 'CONNECT');
    assert.equal(seen.subResource, 'exec');
    assert.deepEqual(seen.kind, { group: '', version: 'v1', kind: 'PodExecOptions' });
    assert.deepEqual(seen.object.command, ['ls']);
    assert.equal(seen.object.stdout, true);
  });

  it('matchPolicy Equivalent sends a core Event to a webhook for events.k8s.io Events; Exact does not', async () => {
    await namespace('wh-equivalent');
    const rules = [
      { operations: ['CREATE'], apiGroups: ['events.k8s.io'], apiVersions: ['v1'], resources: ['events'] },
    ];
    await configure(VWC, 'equivalent', [
      webhook('equivalent.kubit.dev', 'wh-equivalent', '/equivalent', { rules, matchPolicy: 'Equivalent' }),
      webhook('exact.kubit.dev', 'wh-equivalent', '/exact', { rules, matchPolicy: 'Exact' }),
    ]);
    let n = 0;
    const event = () => ({
      metadata: { name: `ev-${++n}` },
      involvedObject: { kind: 'Pod', name: 'p', namespace: 'wh-equivalent', apiVersion: 'v1' },
      reason: 'Test',
      message: 'a core event',
      type: 'Normal',
      source: { component: 'test' },
    });
    await untilReply(
      'the review of the equivalent webhook',
      () => api.post('/api/v1/namespaces/wh-equivalent/events', event()),
      (r) => r.status === 201 && reviews.some((x) => x.path === '/equivalent'),
    );
    const seen = reviews.filter((x) => x.path === '/equivalent').at(-1)?.request;
    assert.deepEqual(seen.kind, { group: 'events.k8s.io', version: 'v1', kind: 'Event' });
    assert.deepEqual(seen.resource, { group: 'events.k8s.io', version: 'v1', resource: 'events' });
    assert.deepEqual(seen.requestKind, { group: '', version: 'v1', kind: 'Event' });
    assert.equal(seen.object.apiVersion, 'events.k8s.io/v1');
    assert.equal(seen.object.note, 'a core event', 'the object in the version the webhook asked for');
    assert.equal(reviews.filter((x) => x.path === '/exact').length, 0);
  });

  it('a webhook that takes only v1beta1 reviews gets them in v1beta1', async () => {
    await namespace('wh-beta');
    await configure(MWC, 'beta', [
      webhook('beta.kubit.dev', 'wh-beta', '/add-label', { admissionReviewVersions: ['v1beta1'] }),
    ]);
    const r = await untilReply(
      'the label from the v1beta1 webhook',
      () => api.post('/api/v1/namespaces/wh-beta/configmaps', configMap()),
      (r) => r.status === 201 && r.body.metadata.labels?.['added-by'] === 'webhook',
    );
    const seen = reviews.filter((x) => x.request.object?.metadata?.name === r.body.metadata.name).at(-1);
    assert.equal(seen?.apiVersion, 'admission.k8s.io/v1beta1');
    assert.equal(
      reviews.filter((x) => x.path === '/add-label' && x.request.namespace === 'wh-mutate').at(-1)
        ?.apiVersion,
      'admission.k8s.io/v1',
    );
  });

  it('configurations are validated as Kubernetes validates them', async () => {
    const r = await api.post(VWC, {
      metadata: { name: 'bad' },
      webhooks: [
        {
          name: 'short',
          clientConfig: { url: 'http://example.com/x' },
          rules: [{ operations: ['READ'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          timeoutSeconds: 31,
          admissionReviewVersions: ['v2'],
          // Conditions are supported: this one is refused only for its compile error.
          matchConditions: [{ name: 'x', expression: 'true &&' }],
        },
      ],
    });
    assert.equal(r.status, 422, r.text);
    const fields = (r.body.details.causes as { field: string }[]).map((c) => c.field).sort();
    assert.deepEqual(fields, [
      'webhooks[0].admissionReviewVersions',
      'webhooks[0].clientConfig.url',
      'webhooks[0].matchConditions[0].expression',
      'webhooks[0].name',
      'webhooks[0].rules[0].operations[0]',
      'webhooks[0].sideEffects',
      'webhooks[0].timeoutSeconds',
    ]);
    const defaulted = await api.post(VWC, {
      metadata: { name: 'defaults' },
      webhooks: [webhook('defaults.kubit.dev', 'none', '/any')],
    });
    assert.equal(defaulted.status, 201, defaulted.text);
    const w = defaulted.body.webhooks[0];
    assert.equal(w.failurePolicy, 'Fail');
    assert.equal(w.matchPolicy, 'Equivalent');
    assert.equal(w.timeoutSeconds, 10);
    assert.equal(w.rules[0].scope, '*');
    assert.deepEqual(w.objectSelector, {});
  });
});
