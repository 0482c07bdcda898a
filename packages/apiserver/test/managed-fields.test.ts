// metadata.managedFields and server-side apply with the real kubectl: what creates,
// client-side applies, patches and scales record; server-side apply's ownership
// (removed fields, a second manager's 409 and --force-conflicts, the docs' scale
// example); garbage managedFields; dry runs; the cap on Update managers; a CRD's
// associative list.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ nodes: [] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

type Entry = {
  manager: string;
  operation: string;
  apiVersion: string;
  time?: string;
  fieldsType: string;
  fieldsV1: Record<string, unknown>;
  subresource?: string;
};

async function ok(args: string[], input?: string): Promise<string> {
  const r = await kubectl(cp, args, { input, allowFail: true });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function managed(path: string): Promise<Entry[]> {
  const r = await api.req('GET', path);
  assert.equal(r.status, 200, r.text);
  return ((r.body as { metadata: { managedFields?: Entry[] } }).metadata.managedFields ?? []) as Entry[];
}

function entry(list: Entry[], manager: string, operation = 'Update'): Entry {
  const e = list.find((x) => x.manager === manager && x.operation === operation);
  assert.ok(e, `no ${operation} entry of ${manager} in ${JSON.stringify(list)}`);
  return e;
}

const cm = (data: Record<string, string>, name = 'ssa') =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data });

describe('managedFields of Update writes', () => {
  it('kubectl create records kubectl-create with Kubernetes fieldsV1 shape', async () => {
    await ok(['create', 'deployment', 'web', '--image=nginx']);
    const list = await managed('/apis/apps/v1/namespaces/default/deployments/web');
    assert.equal(list.length, 1, JSON.stringify(list));
    const e = entry(list, 'kubectl-create');
    assert.equal(e.apiVersion, 'apps/v1');
    assert.equal(e.fieldsType, 'FieldsV1');
    assert.match(e.time ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const f = e.fieldsV1 as Record<string, Record<string, Record<string, unknown>>>;
    assert.deepEqual(f['f:metadata'], { 'f:labels': { '.': {}, 'f:app': {} } });
    assert.equal(f['f:spec']['.'], undefined, 'a create does not add spec itself');
    assert.deepEqual(f['f:spec']['f:selector'], {}, 'a LabelSelector is atomic');
    assert.deepEqual(f['f:spec']['f:replicas'], {});
    const tmpl = f['f:spec']['f:template'] as Record<string, Record<string, Record<string, unknown>>>;
    const c = (tmpl['f:spec']['f:containers'] as Record<string, Record<string, unknown>>)[
      'k:{"name":"nginx"}'
    ];
    assert.ok(c, JSON.stringify(tmpl));
    assert.deepEqual(c['.'], {});
    assert.deepEqual(c['f:image'], {});
    assert.equal(tmpl['f:spec']['f:containers']['.'], undefined);
    assert.ok(!('f:status' in f), 'status is not the creator’s');
  });

  it('kubectl label, annotate and client-side apply each add their own entry', async () => {
    await ok(['label', 'deployment', 'web', 'tier=front']);
    await ok(['annotate', 'deployment', 'web', 'note=x']);
    await ok(['apply', '-f', '-'], cm({ a: '1' }, 'csa'));
    const web = await managed('/apis/apps/v1/namespaces/default/deployments/web');
    assert.deepEqual(entry(web, 'kubectl-label').fieldsV1, {
      'f:metadata': { 'f:labels': { 'f:tier': {} } },
    });
    assert.deepEqual(entry(web, 'kubectl-annotate').fieldsV1, {
      'f:metadata': { 'f:annotations': { '.': {}, 'f:note': {} } },
    });
    const csa = await managed('/api/v1/namespaces/default/configmaps/csa');
    const e = entry(csa, 'kubectl-client-side-apply');
    assert.deepEqual(e.fieldsV1, {
      'f:data': { '.': {}, 'f:a': {} },
      'f:metadata': {
        'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} },
      },
    });
  });

  it('an update takes the fields it changes from their other owner; no change records nothing', async () => {
    await ok(['label', 'deployment', 'web', 'tier=back', '--overwrite']);
    let web = await managed('/apis/apps/v1/namespaces/default/deployments/web');
    assert.equal(
      web.find((x) => x.manager === 'kubectl-label')?.fieldsV1 !== undefined,
      true,
      'the label is still kubectl-label’s',
    );
    const r = await api.patch('/apis/apps/v1/namespaces/default/deployments/web?fieldManager=relabel', {
      metadata: { labels: { app: 'web' } },
    });
    assert.equal(r.status, 200, r.text);
    web = await managed('/apis/apps/v1/namespaces/default/deployments/web');
    assert.equal(
      web.find((x) => x.manager === 'relabel'),
      undefined,
      'a patch that changes nothing owns nothing',
    );
    const r2 = await api.patch('/apis/apps/v1/namespaces/default/deployments/web?fieldManager=relabel', {
      metadata: { labels: { app: 'other' } },
    });
    assert.equal(r2.status, 200, r2.text);
    web = await managed('/apis/apps/v1/namespaces/default/deployments/web');
    assert.deepEqual(entry(web, 'relabel').fieldsV1, { 'f:metadata': { 'f:labels': { 'f:app': {} } } });
    const created = JSON.stringify(entry(web, 'kubectl-create').fieldsV1);
    assert.ok(created.includes('"f:metadata":{"f:labels":{}}'), created);
  });

  it('a manager comes from the User-Agent when the request names none', async () => {
    const r = await api.req(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      { metadata: { name: 'ua' }, data: { k: 'v' } },
      { 'User-Agent': 'my-tool/v1.2.3 (linux/amd64) kubernetes/abcdef' },
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(
      entry(await managed('/api/v1/namespaces/default/configmaps/ua'), 'my-tool').operation,
      'Update',
    );
    const long = await api.req(
      'POST',
      `/api/v1/namespaces/default/configmaps?fieldManager=${'x'.repeat(129)}`,
      {
        metadata: { name: 'ua2' },
      },
    );
    assert.equal(long.status, 422, long.text);
    assert.match(long.text, /fieldManager/);
  });

  it('garbage managedFields keep the live ones; [{}] clears them', async () => {
    const path = '/api/v1/namespaces/default/configmaps/ua';
    const before = await managed(path);
    const bad = await api.patch(path, {
      metadata: { managedFields: [{ manager: 'x', operation: 'Bogus', fieldsType: 'FieldsV1' }] },
      data: { k: 'v2' },
    });
    assert.equal(bad.status, 200, bad.text);
    const after1 = await managed(path);
    assert.equal(
      after1.find((e) => e.manager === 'x'),
      undefined,
    );
    assert.ok(after1.find((e) => e.manager === entry(before, 'my-tool').manager));
    const clear = await api.patch(path, { metadata: { managedFields: [{}] } });
    assert.equal(clear.status, 200, clear.text);
    assert.deepEqual(await managed(path), []);
    // `[]` clears too, and the write's own change is still recorded.
    await api.patch(`${path}?fieldManager=before`, { data: { k: 'v3' } });
    const reset = await api.patch(`${path}?fieldManager=resetter`, {
      metadata: { managedFields: [] },
      data: { k2: 'x' },
    });
    assert.equal(reset.status, 200, reset.text);
    const left = await managed(path);
    assert.deepEqual(
      left.map((e) => [e.manager, e.fieldsV1]),
      [['resetter', { 'f:data': { 'f:k2': {} } }]],
    );
  });

  it('keeps at most ten Update managers, the oldest merged into ancient-changes', async () => {
    const path = '/api/v1/namespaces/default/configmaps/many';
    assert.equal(
      (await api.req('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'many' } })).status,
      201,
    );
    for (let i = 0; i < 12; i++) {
      const r = await api.patch(`${path}?fieldManager=m${i}`, { data: { [`k${i}`]: 'v' } });
      assert.equal(r.status, 200, r.text);
    }
    const list = await managed(path);
    const updaters = list.filter((e) => e.operation === 'Update');
    assert.equal(updaters.length, 10, JSON.stringify(list.map((e) => e.manager)));
    assert.ok(
      list.some((e) => e.manager === 'ancient-changes'),
      JSON.stringify(list.map((e) => e.manager)),
    );
    assert.ok(list.some((e) => e.manager === 'm11'));
  });
});

describe('server-side apply', () => {
  const path = '/api/v1/namespaces/default/configmaps/ssa';

  it('owns what it applied, changes a field, removes one it no longer applies', async () => {
    await ok(['apply', '--server-side', '-f', '-'], cm({ a: '1', b: '2' }));
    let got = await api.req('GET', path);
    assert.deepEqual((got.body as { data: unknown }).data, { a: '1', b: '2' });
    const e = entry(await managed(path), 'kubectl', 'Apply');
    assert.equal(e.apiVersion, 'v1');
    assert.deepEqual(e.fieldsV1, { 'f:data': { 'f:a': {}, 'f:b': {} } });
    await ok(['apply', '--server-side', '-f', '-'], cm({ a: '9' }));
    got = await api.req('GET', path);
    assert.deepEqual((got.body as { data: unknown }).data, { a: '9' });
    assert.deepEqual(entry(await managed(path), 'kubectl', 'Apply').fieldsV1, { 'f:data': { 'f:a': {} } });
  });

  it('a second manager changing the field gets the 409 kubectl prints; --force-conflicts takes it over', async () => {
    const r = await kubectl(cp, ['apply', '--server-side', '--field-manager=other', '-f', '-'], {
      input: cm({ a: '5' }),
      allowFail: true,
    });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /Apply failed with 1 conflict: conflict with "kubectl": \.data\.a/);
    // The same value is no conflict: both own it.
    await ok(['apply', '--server-side', '--field-manager=shared', '-f', '-'], cm({ a: '9' }));
    let list = await managed(path);
    assert.deepEqual(entry(list, 'shared', 'Apply').fieldsV1, { 'f:data': { 'f:a': {} } });
    await ok(
      ['apply', '--server-side', '--field-manager=other', '--force-conflicts', '-f', '-'],
      cm({ a: '5' }),
    );
    list = await managed(path);
    assert.deepEqual(entry(list, 'other', 'Apply').fieldsV1, { 'f:data': { 'f:a': {} } });
    assert.equal(
      list.find((x) => x.manager === 'kubectl'),
      undefined,
      JSON.stringify(list),
    );
    assert.equal(
      list.find((x) => x.manager === 'shared'),
      undefined,
    );
    assert.deepEqual(((await api.req('GET', path)).body as { data: unknown }).data, { a: '5' });
  });

  it('a conflict with several managers lists every field', async () => {
    const p = '/api/v1/namespaces/default/configmaps/multi';
    const apply = (mgr: string, data: Record<string, string>, force = false) =>
      api.req('PATCH', `${p}?fieldManager=${mgr}${force ? '&force=true' : ''}`, cm(data, 'multi'), {
        'Content-Type': 'application/apply-patch+yaml',
      });
    assert.equal((await apply('one', { x: '1', y: '1' })).status, 201);
    assert.equal((await apply('two', { z: '1' })).status, 200);
    const r = await apply('three', { x: '2', y: '2', z: '2' });
    assert.equal(r.status, 409, r.text);
    const s = r.body as { message: string; reason: string; details: { causes: { field: string }[] } };
    assert.equal(s.reason, 'Conflict');
    assert.equal(
      s.message,
      'Apply failed with 3 conflicts: conflicts with "one":\n- .data.x\n- .data.y\nconflicts with "two":\n- .data.z',
    );
    assert.deepEqual(
      s.details.causes.map((c) => c.field),
      ['.data.x', '.data.y', '.data.z'],
    );
  });

  it('an applied configuration may not carry managedFields', async () => {
    const body = JSON.parse(cm({ a: '5' }));
    body.metadata.managedFields = [
      { manager: 'me', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: {} },
    ];
    const r = await api.req('PATCH', `${path}?fieldManager=sneaky`, body, {
      'Content-Type': 'application/apply-patch+yaml',
    });
    assert.equal(r.status, 400, r.text);
    assert.match(r.text, /metadata\.managedFields must be nil/);
  });

  it('a dry run computes the same and stores nothing', async () => {
    const before = await api.req('GET', path);
    const r = await kubectl(cp, ['apply', '--server-side', '--dry-run=server', '-f', '-', '-o', 'json'], {
      input: cm({ a: '5', c: '3' }),
      allowFail: true,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /"c": "3"/);
    const after1 = await api.req('GET', path);
    assert.equal(
      (after1.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
      (before.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
    );
  });

  it('kubectl scale after apply, then a re-apply conflicts on .spec.replicas (the docs’ example)', async () => {
    const dep = (replicas: number) =>
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'nginx-deployment', namespace: 'default', labels: { app: 'nginx' } },
        spec: {
          replicas,
          selector: { matchLabels: { app: 'nginx' } },
          template: {
            metadata: { labels: { app: 'nginx' } },
            spec: { containers: [{ name: 'nginx', image: 'nginx:1.14.2' }] },
          },
        },
      });
    await ok(['apply', '--server-side', '-f', '-'], dep(3));
    await ok(['scale', 'deployment', 'nginx-deployment', '--replicas=5']);
    const list = await managed('/apis/apps/v1/namespaces/default/deployments/nginx-deployment');
    const scaler = list.find((e) => e.subresource === 'scale');
    assert.ok(scaler, JSON.stringify(list));
    assert.deepEqual(scaler.fieldsV1, { 'f:spec': { 'f:replicas': {} } });
    const applied = entry(list, 'kubectl', 'Apply');
    assert.ok(!JSON.stringify(applied.fieldsV1).includes('f:replicas'), 'the scaler took replicas');
    const r = await kubectl(cp, ['apply', '--server-side', '-f', '-'], { input: dep(3), allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      new RegExp(
        `Apply failed with 1 conflict: conflict with "${scaler.manager}" with subresource "scale" using apps/v1: \\.spec\\.replicas`,
      ),
    );
    const shown = await ok(['get', 'deployment', 'nginx-deployment', '-o', 'yaml', '--show-managed-fields']);
    assert.match(shown, /managedFields:/);
    assert.match(shown, /k:\{"name":"nginx"\}:/);
    assert.match(shown, /subresource: scale/);
    const hidden = await ok(['get', 'deployment', 'nginx-deployment', '-o', 'yaml']);
    assert.doesNotMatch(hidden, /managedFields:/);
  });

  it('merges associative lists by key: a second manager adds a container, the first keeps its own', async () => {
    const p = '/apis/apps/v1/namespaces/default/deployments/nginx-deployment';
    const sidecar = JSON.stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'nginx-deployment', namespace: 'default' },
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'busybox' }] } } },
    });
    const r = await api.req('PATCH', `${p}?fieldManager=sidecar-injector`, sidecar, {
      'Content-Type': 'application/apply-patch+yaml',
    });
    assert.equal(r.status, 200, r.text);
    const names = (
      r.body as { spec: { template: { spec: { containers: { name: string }[] } } } }
    ).spec.template.spec.containers.map((c) => c.name);
    assert.deepEqual(names, ['nginx', 'sidecar']);
    const e = entry(await managed(p), 'sidecar-injector', 'Apply');
    assert.ok(
      JSON.stringify(e.fieldsV1).includes('k:{\\"name\\":\\"sidecar\\"}'),
      JSON.stringify(e.fieldsV1),
    );
  });
});

describe('server-side apply of a custom resource', () => {
  const CRD = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.ssa.example.com' },
    spec: {
      group: 'ssa.example.com',
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: {
                  type: 'object',
                  properties: {
                    ports: {
                      type: 'array',
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['name'],
                      items: {
                        type: 'object',
                        required: ['name'],
                        properties: { name: { type: 'string' }, port: { type: 'integer' } },
                      },
                    },
                    tags: { type: 'array', items: { type: 'string' } },
                  },
                },
              },
            },
          },
        },
      ],
    },
  };
  const path = '/apis/ssa.example.com/v1/namespaces/default/gadgets/g';
  const gadget = (spec: Record<string, unknown>) =>
    JSON.stringify({ apiVersion: 'ssa.example.com/v1', kind: 'Gadget', metadata: { name: 'g' }, spec });
  const apply = (mgr: string, spec: Record<string, unknown>) =>
    api.req('PATCH', `${path}?fieldManager=${mgr}`, gadget(spec), {
      'Content-Type': 'application/apply-patch+yaml',
    });

  before(async () => {
    const r = await api.req('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD);
    assert.equal(r.status, 201, r.text);
    for (let i = 0; i < 100; i++) {
      if ((await api.req('GET', '/apis/ssa.example.com/v1/namespaces/default/gadgets')).status === 200)
        return;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.fail('the CRD was not served');
  });

  it('merges a list-type map by key, replaces an atomic list, and removes only its own items', async () => {
    assert.equal((await apply('a', { ports: [{ name: 'http', port: 80 }], tags: ['x'] })).status, 201);
    let r = await apply('b', { ports: [{ name: 'https', port: 443 }] });
    assert.equal(r.status, 200, r.text);
    type G = { spec: { ports: { name: string }[]; tags?: string[] } };
    assert.deepEqual(
      (r.body as G).spec.ports.map((p) => p.name),
      ['http', 'https'],
    );
    const list = await managed(path);
    assert.deepEqual(entry(list, 'b', 'Apply').fieldsV1, {
      'f:spec': { 'f:ports': { 'k:{"name":"https"}': { '.': {}, 'f:name': {}, 'f:port': {} } } },
    });
    r = await apply('a', { tags: ['y'] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((r.body as G).spec, { ports: [{ name: 'https', port: 443 }], tags: ['y'] });
    const c = await apply('b', { ports: [{ name: 'https', port: 443 }], tags: ['z'] });
    assert.equal(c.status, 409, c.text);
    assert.equal(
      (c.body as { message: string }).message,
      'Apply failed with 1 conflict: conflict with "a": .spec.tags',
    );
  });
});

describe('@kubernetes/client-node and the other subresources', () => {
  it('applies server-side through KubernetesObjectApi, and a conflict is its 409', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const client = KubernetesObjectApi.makeApiClient(kc);
    const spec = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'node-client', namespace: 'default' },
      data: { k: 'v' },
    };
    const made = (await client.patch(
      spec,
      undefined,
      undefined,
      'node-app',
      false,
      PatchStrategy.ServerSideApply,
    )) as { metadata?: { managedFields?: { manager?: string; operation?: string }[] } };
    assert.equal(made.metadata?.managedFields?.[0]?.manager, 'node-app');
    assert.equal(made.metadata?.managedFields?.[0]?.operation, 'Apply');
    await assert.rejects(
      client.patch(
        { ...spec, data: { k: 'other' } },
        undefined,
        undefined,
        'second-app',
        false,
        PatchStrategy.ServerSideApply,
      ),
      (err: { code?: number }) => err.code === 409,
    );
  });

  it('a status write is recorded with its subresource, and the watch cache lists the entries', async () => {
    const p = '/apis/apps/v1/namespaces/default/deployments/web/status?fieldManager=status-writer';
    const r = await api.patch(p, { status: { observedGeneration: 7 } });
    assert.equal(r.status, 200, r.text);
    const e = (await managed('/apis/apps/v1/namespaces/default/deployments/web')).find(
      (x) => x.manager === 'status-writer',
    );
    assert.equal(e?.subresource, 'status');
    assert.deepEqual(e?.fieldsV1, { 'f:status': { 'f:observedGeneration': {} } });
    const cached = await api.req('GET', '/apis/apps/v1/namespaces/default/deployments?resourceVersion=0');
    const items = (cached.body as { items: { metadata: { name: string; managedFields?: Entry[] } }[] }).items;
    const web = items.find((i) => i.metadata.name === 'web');
    assert.ok(web?.metadata.managedFields?.some((x) => x.manager === 'status-writer'));
    // kubectl get's Table rows carry them in each row's PartialObjectMetadata.
    const table = await api.req('GET', '/apis/apps/v1/namespaces/default/deployments/web', undefined, {
      Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    });
    const row = (
      table.body as { rows: { object: { kind: string; metadata: { managedFields?: Entry[] } } }[] }
    ).rows[0];
    assert.equal(row.object.kind, 'PartialObjectMetadata');
    assert.ok(row.object.metadata.managedFields?.some((x) => x.manager === 'kubectl-create'));
  });
});
