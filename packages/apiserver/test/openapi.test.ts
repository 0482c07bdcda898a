// OpenAPI v2/v3, kubectl explain, field validation and aggregated discovery,
// with the real kubectl v1.32 against kubit-apiserver on a real etcd.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ nodes: ['node-a'] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

async function manifestFile(name: string, text: string): Promise<string> {
  const file = join(cp.dir, name);
  await writeFile(file, text);
  return file;
}

/** kubectl explain, its output with each description's wrapped lines joined. */
async function explain(args: string[], allowFail = false) {
  const r = await kubectl(cp, ['explain', ...args], { allowFail });
  return { ...r, stdout: r.stdout.replace(/\n {4,}(?=\S)/g, ' ') };
}

describe('kubectl explain', () => {
  it('explains pod.spec with its fields and their descriptions', async () => {
    const r = await explain(['pod.spec']);
    assert.match(r.stdout, /KIND:\s+Pod/);
    assert.match(r.stdout, /VERSION:\s+v1/);
    assert.match(r.stdout, /What a pod runs and how/);
    assert.match(r.stdout, /containers\s+<\[\]Container> -required-/);
    assert.match(r.stdout, /At least one; they cannot be added or removed later/);
    assert.match(r.stdout, /nodeName\s+<string>/);
  });

  it('explains deployment.spec.strategy recursively', async () => {
    const r = await explain(['deployment.spec.strategy', '--recursive']);
    assert.match(r.stdout, /GROUP:\s+apps/);
    assert.match(r.stdout, /rollingUpdate\s+<Object>/);
    assert.match(r.stdout, /maxSurge\s+<\w+>/);
    assert.match(r.stdout, /maxUnavailable\s+<\w+>/);
    assert.match(r.stdout, /type\s+<string>/);
    const one = await explain(['deployment.spec.strategy.rollingUpdate.maxSurge']);
    assert.match(one.stdout, /FIELD: maxSurge <IntOrString>/);
    assert.match(one.stdout, /above replicas during the update/);
  });

  it('explains other built-in kinds: metadata, configmaps, services, jobs', async () => {
    let r = await explain(['configmap']);
    assert.match(r.stdout, /data\s+<map\[string\]string>/);
    assert.match(r.stdout, /UTF-8 values by key/);
    r = await explain(['service.spec.ports']);
    assert.match(r.stdout, /port\s+<integer> -required-/);
    r = await explain(['jobs.spec.template.metadata.labels']);
    assert.match(r.stdout, /selectors match on/);
    r = await kubectl(cp, ['explain', 'pods.spec.bogus'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /field "bogus" does not exist/);
  });
});

describe('field validation', () => {
  const typo = `apiVersion: v1
kind: ConfigMap
metadata:
  name: typo
  labelz: {a: b}
data: {k: v}
`;

  it('kubectl apply --validate=strict names the unknown field', async () => {
    const file = await manifestFile('typo.yaml', typo);
    const r = await kubectl(cp, ['apply', '--validate=strict', '-f', file], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /strict decoding error: unknown field "metadata.labelz"/);
    const got = await api.req('GET', '/api/v1/namespaces/default/configmaps/typo');
    assert.equal(got.status, 404);
  });

  it('--validate=warn stores the object and prints a warning', async () => {
    const file = await manifestFile('typo-warn.yaml', typo);
    const r = await kubectl(cp, ['apply', '--validate=warn', '-f', file]);
    assert.match(r.stderr, /Warning: unknown field "metadata.labelz"/);
    const got = await api.req('GET', '/api/v1/namespaces/default/configmaps/typo');
    assert.equal(got.status, 200);
    assert.equal(got.body.metadata.labelz, undefined);
  });

  it('names duplicate and unknown fields in body order: 400 under Strict, a Warning under Warn, nothing under Ignore', async () => {
    const body = (name: string) =>
      `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"${name}","name":"${name}","unknownMeta":1},` +
      `"spec":{"selector":{"matchLabels":{"app":"d"}},"paused":true,"paused":false,"template":{"metadata":{"labels":{"app":"d"}},` +
      `"spec":{"containers":[{"name":"c","image":"busybox:1.36","imagePullPolicy":"Always","imagePullPolicy":"Never","unknownNested":true}]}}}}`;
    const path = '/apis/apps/v1/namespaces/default/deployments';
    const strict = await api.req('POST', `${path}?fieldValidation=Strict`, body('dup-strict'));
    assert.equal(strict.status, 400);
    assert.equal(
      strict.body.message,
      'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: ' +
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta", duplicate field "spec.paused", ' +
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy", ' +
        'unknown field "spec.template.spec.containers[0].unknownNested"',
    );
    const warn = await api.req('POST', `${path}?fieldValidation=Warn`, body('dup-warn'));
    assert.equal(warn.status, 201);
    assert.match(String(warn.headers.warning), /299 - "duplicate field \\"spec.paused\\""/);
    assert.match(String(warn.headers.warning), /299 - "unknown field \\"metadata.unknownMeta\\""/);
    assert.equal(warn.body.spec.paused, false, 'the last of two duplicates wins');
    const ignore = await api.req('POST', `${path}?fieldValidation=Ignore`, body('dup-ignore'));
    assert.equal(ignore.status, 201);
    assert.equal(ignore.headers.warning, undefined);
    const patch = await api.req(
      'PATCH',
      `${path}/dup-warn?fieldValidation=Strict`,
      '{"spec":{"replicas":2,"replicas":3}}',
      { 'Content-Type': 'application/merge-patch+json' },
    );
    assert.equal(patch.status, 400);
    assert.match(patch.body.message, /strict decoding error: duplicate field "spec.replicas"$/);
  });

  it('a kind: List manifest applies every item', async () => {
    const file = await manifestFile(
      'list.yaml',
      `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed-a}
  data: {k: a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: listed-b}
  data: {k: b}
`,
    );
    const r = await kubectl(cp, ['apply', '--validate=strict', '-f', file]);
    assert.match(r.stdout, /configmap\/listed-a created/);
    assert.match(r.stdout, /configmap\/listed-b created/);
  });
});

describe('discovery and OpenAPI documents', () => {
  it('kubectl api-resources reads the whole API in one aggregated request each for /api and /apis', async () => {
    const cache = await mkdtemp(join(cp.dir, 'fresh-cache-'));
    const r = await kubectl(cp, ['--cache-dir', cache, 'api-resources', '-v=6']);
    const gets = r.stderr
      .split('\n')
      .filter((l) => / GET https:/.test(l))
      .map((l) => new URL(/GET (\S+)/.exec(l)![1]).pathname);
    assert.deepEqual([...new Set(gets)].sort(), ['/api', '/apis']);
    assert.match(r.stdout, /deployments\s+deploy\s+apps\/v1\s+true\s+Deployment/);
  });

  it('answers a repeated OpenAPI or discovery fetch with 304 when its ETag is sent back', async () => {
    for (const path of [
      '/openapi/v3/apis/apps/v1',
      '/openapi/v2',
      '/openapi/v3',
      '/apis',
      '/api/v1',
      '/apis/apps/v1',
    ]) {
      const first = await api.req('GET', path);
      assert.equal(first.status, 200, path);
      const etag = String(first.headers.etag);
      assert.match(etag, /^"[0-9a-f]+"$/, path);
      const again = await api.req('GET', path, undefined, { 'If-None-Match': etag });
      assert.equal(again.status, 304, path);
      assert.equal(again.text, '');
      const stale = await api.req('GET', path, undefined, { 'If-None-Match': '"other"' });
      assert.equal(stale.status, 200, path);
    }
  });

  it('sends an outdated hashed v3 URL on to the current one, and marks the current one immutable', async () => {
    const root = await api.req('GET', '/openapi/v3');
    const url = root.body.paths['apis/apps/v1'].serverRelativeURL as string;
    const current = await api.req('GET', url);
    assert.equal(current.status, 200);
    assert.equal(current.headers['cache-control'], 'public, immutable');
    assert.equal(current.headers.etag, `"${url.split('hash=')[1]}"`);
    const old = await api.req('GET', '/openapi/v3/apis/apps/v1?hash=0123');
    assert.equal(old.status, 301);
    assert.equal(old.headers.location, url);
    const plain = await api.req('GET', '/openapi/v3/apis/apps/v1');
    assert.equal(plain.headers['cache-control'], undefined);
  });

  it('serves swagger 2.0 as JSON and protobuf, and 406 for a type it does not write', async () => {
    const v2 = await api.req('GET', '/openapi/v2', undefined, { Accept: 'application/json' });
    assert.equal(v2.body.swagger, '2.0');
    const pod = v2.body.definitions['io.k8s.api.core.v1.Pod'];
    assert.deepEqual(pod['x-kubernetes-group-version-kind'], [{ group: '', kind: 'Pod', version: 'v1' }]);
    assert.equal(
      pod.properties.metadata.$ref,
      '#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta',
    );
    assert.deepEqual(v2.body.definitions['io.k8s.api.core.v1.PodSpec'].required, ['containers']);
    const pb = await api.req('GET', '/openapi/v2', undefined, {
      Accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf',
    });
    assert.equal(pb.status, 200);
    assert.equal(pb.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    // openapi.v2.Document field 1 (swagger) first, then the definitions.
    assert.ok(pb.text.startsWith('\n\x032.0'));
    assert.ok(pb.text.includes('io.k8s.api.apps.v1.DeploymentSpec'));
    const v3pb = await api.req('GET', '/openapi/v3/api/v1', undefined, {
      Accept: 'application/com.github.proto-openapi.spec.v3@v1.0+protobuf',
    });
    assert.equal(v3pb.status, 406);
  });
});
