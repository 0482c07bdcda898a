// apps/v1 ReplicaSets and Deployments against kubit-apiserver on a real etcd:
// defaults, generation, the status and scale subresources, validation with
// field paths, discovery and OpenAPI, and the real kubectl.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const APPS = '/apis/apps/v1/namespaces/default';

function deployment(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'nginx:1.25' }] },
      },
      ...spec,
    },
  };
}

function replicaSet(name: string, spec: Record<string, unknown> = {}) {
  return { ...deployment(name, spec), kind: 'ReplicaSet' };
}

describe('apps/v1 CRUD', () => {
  it('creates a Deployment with Kubernetes defaults and generation 1', async () => {
    const r = await api.post(`${APPS}/deployments`, deployment('d1'));
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.apiVersion, 'apps/v1');
    assert.equal(r.body.metadata.generation, 1);
    assert.equal(r.body.spec.replicas, 1);
    assert.deepEqual(r.body.spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
    });
    assert.equal(r.body.spec.revisionHistoryLimit, 10);
    assert.equal(r.body.spec.progressDeadlineSeconds, 600);
    assert.equal(r.body.spec.template.spec.restartPolicy, 'Always');
    assert.deepEqual(r.body.status, {});
    const got = await api.get(`${APPS}/deployments/d1`);
    assert.equal(got.body.metadata.uid, r.body.metadata.uid);
    const list = await api.get(`${APPS}/deployments`);
    assert.equal(list.body.kind, 'DeploymentList');
    assert.ok(list.body.items.some((d: { metadata: { name: string } }) => d.metadata.name === 'd1'));
  });

  it('creates a ReplicaSet with replicas 1 and status.replicas 0', async () => {
    const r = await api.post(`${APPS}/replicasets`, replicaSet('rs1'));
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.replicas, 1);
    assert.deepEqual(r.body.status, { replicas: 0 });
    assert.equal((await api.del(`${APPS}/replicasets/rs1`)).status, 200);
    assert.equal((await api.get(`${APPS}/replicasets/rs1`)).status, 404);
  });

  it('bumps generation on spec changes only and keeps status apart from spec', async () => {
    const created = await api.post(`${APPS}/deployments`, deployment('d2'));
    const cur = created.body;
    // A label change is not a spec change.
    let r = await api.put(`${APPS}/deployments/d2`, {
      ...cur,
      metadata: { ...cur.metadata, labels: { x: 'y' } },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.metadata.generation, 1);
    // Nor is the same spec with its fields in another order (as Go clients send them).
    const reordered = Object.fromEntries(Object.entries(r.body.spec).reverse());
    r = await api.put(`${APPS}/deployments/d2`, { ...r.body, spec: reordered });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.metadata.generation, 1);
    // The main resource ignores status; a spec change bumps generation.
    r = await api.put(`${APPS}/deployments/d2`, {
      ...r.body,
      spec: { ...r.body.spec, replicas: 3 },
      status: { replicas: 99 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.metadata.generation, 2);
    assert.equal(r.body.spec.replicas, 3);
    assert.deepEqual(r.body.status, {});
    // /status ignores spec and leaves generation alone.
    r = await api.put(`${APPS}/deployments/d2/status`, {
      ...r.body,
      spec: { ...r.body.spec, replicas: 7 },
      status: { replicas: 3, readyReplicas: 2, observedGeneration: 2 },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.spec.replicas, 3);
    assert.equal(r.body.status.readyReplicas, 2);
    assert.equal(r.body.metadata.generation, 2);
    // A merge patch of status through the main resource changes nothing.
    r = await api.patch(`${APPS}/deployments/d2`, { status: { readyReplicas: 0 } });
    assert.equal(r.body.status.readyReplicas, 2);
  });

  it('merges pod template containers by name in a strategic merge patch', async () => {
    await api.post(
      `${APPS}/deployments`,
      deployment('d3', {
        template: {
          metadata: { labels: { app: 'd3' } },
          spec: {
            containers: [
              { name: 'web', image: 'nginx:1.25' },
              { name: 'side', image: 'busybox:1.36' },
            ],
          },
        },
      }),
    );
    const r = await api.patch(
      `${APPS}/deployments/d3`,
      { spec: { template: { spec: { containers: [{ name: 'web', image: 'nginx:1.26' }] } } } },
      'application/strategic-merge-patch+json',
    );
    assert.equal(r.status, 200, r.text);
    const cs = r.body.spec.template.spec.containers;
    assert.deepEqual(
      cs.map((c: { name: string; image: string }) => `${c.name}=${c.image}`),
      ['web=nginx:1.26', 'side=busybox:1.36'],
    );
    assert.equal(r.body.metadata.generation, 2);
  });

  it('streams Deployment events to a watch', async () => {
    const w = api.watch(`${APPS}/deployments?watch=true&fieldSelector=metadata.name%3Dwatched`);
    await api.post(`${APPS}/deployments`, deployment('watched'));
    await until('ADDED', () => w.events.some((e) => e.type === 'ADDED'));
    w.close();
  });
});

describe('the scale subresource', () => {
  it('reads and writes spec.replicas as an autoscaling/v1 Scale', async () => {
    await api.post(`${APPS}/deployments`, deployment('sc', { replicas: 2 }));
    let s = await api.get(`${APPS}/deployments/sc/scale`);
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.apiVersion, 'autoscaling/v1');
    assert.equal(s.body.kind, 'Scale');
    assert.equal(s.body.metadata.name, 'sc');
    assert.deepEqual(s.body.spec, { replicas: 2 });
    assert.deepEqual(s.body.status, { replicas: 0, selector: 'app=sc' });
    s = await api.put(`${APPS}/deployments/sc/scale`, { ...s.body, spec: { replicas: 4 } });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.spec.replicas, 4);
    let d = await api.get(`${APPS}/deployments/sc`);
    assert.equal(d.body.spec.replicas, 4);
    assert.equal(d.body.metadata.generation, 2);
    s = await api.patch(`${APPS}/deployments/sc/scale`, { spec: { replicas: 0 } });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.spec.replicas, 0);
    d = await api.get(`${APPS}/deployments/sc`);
    assert.equal(d.body.spec.replicas, 0);
    // A stale resourceVersion is a conflict; negative replicas are invalid.
    const stale = await api.put(`${APPS}/deployments/sc/scale`, {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: 'sc', resourceVersion: '1' },
      spec: { replicas: 1 },
    });
    assert.equal(stale.status, 409, stale.text);
    const neg = await api.patch(`${APPS}/deployments/sc/scale`, { spec: { replicas: -1 } });
    assert.equal(neg.status, 422, neg.text);
    assert.equal(neg.body.details.kind, 'Scale');
    assert.equal(neg.body.details.causes[0].field, 'spec.replicas');
  });

  it('scales a ReplicaSet and reports its selector', async () => {
    await api.post(`${APPS}/replicasets`, {
      ...replicaSet('rsc'),
      spec: {
        ...replicaSet('rsc').spec,
        selector: {
          matchLabels: { app: 'rsc' },
          matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }],
        },
        template: {
          metadata: { labels: { app: 'rsc', tier: 'a' } },
          spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
        },
      },
    });
    const s = await api.patch(
      `${APPS}/replicasets/rsc/scale`,
      [{ op: 'replace', path: '/spec/replicas', value: 3 }],
      'application/json-patch+json',
    );
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.spec.replicas, 3);
    assert.equal(s.body.status.selector, 'app=rsc,tier in (a,b)');
  });
});

describe('apps/v1 validation', () => {
  const causes = (r: { body: { details?: { causes?: { field: string; message: string }[] } } }) =>
    (r.body.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);

  const invalid = async (body: unknown, resource = 'deployments') => {
    const r = await api.post(`${APPS}/${resource}`, body);
    assert.equal(r.status, 422, r.text);
    return r;
  };

  it('requires a non-empty selector that matches the template labels', async () => {
    const noSel = deployment('v1') as { spec: Record<string, unknown> };
    delete noSel.spec.selector;
    let r = await invalid(noSel);
    assert.match(r.body.message, /^Deployment\.apps "v1" is invalid: .*spec\.selector: Required value/);
    r = await invalid(deployment('v2', { selector: {} }));
    assert.ok(causes(r).some((c) => c.startsWith('spec.selector: Invalid value')));
    r = await invalid(deployment('v3', { selector: { matchLabels: { app: 'other' } } }));
    assert.ok(
      causes(r).some(
        (c) =>
          c.startsWith('spec.template.metadata.labels: Invalid value') &&
          c.endsWith('`selector` does not match template `labels`'),
      ),
      causes(r).join('\n'),
    );
    r = await invalid(replicaSet('v4', { selector: { matchLabels: { app: 'other' } } }), 'replicasets');
    assert.match(r.body.message, /^ReplicaSet\.apps "v4" is invalid/);
    assert.ok(causes(r).some((c) => c.startsWith('spec.template.metadata.labels')));
  });

  it('checks replicas, minReadySeconds, restartPolicy and the strategy', async () => {
    let r = await invalid(deployment('v5', { replicas: -1, minReadySeconds: -2 }));
    assert.ok(causes(r).some((c) => c.startsWith('spec.replicas: Invalid value: -1')));
    assert.ok(causes(r).some((c) => c.startsWith('spec.minReadySeconds: Invalid value: -2')));
    const never = deployment('v6') as { spec: { template: { spec: Record<string, unknown> } } };
    never.spec.template.spec.restartPolicy = 'Never';
    r = await invalid(never);
    assert.ok(causes(r).some((c) => c.startsWith('spec.template.spec.restartPolicy: Unsupported value')));
    r = await invalid(deployment('v7', { strategy: { type: 'Recreate', rollingUpdate: { maxSurge: 1 } } }));
    assert.ok(causes(r).some((c) => c.startsWith('spec.strategy.rollingUpdate: Forbidden')));
    r = await invalid(
      deployment('v8', {
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 0 } },
      }),
    );
    assert.ok(causes(r).some((c) => c.includes('may not be 0 when `maxSurge` is 0')));
    r = await invalid(
      deployment('v9', { strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '150%' } } }),
    );
    assert.ok(causes(r).some((c) => c.includes('must not be greater than 100%')));
    r = await invalid(deployment('v10', { minReadySeconds: 30, progressDeadlineSeconds: 30 }));
    assert.ok(
      causes(r).some((c) => c.includes('spec.progressDeadlineSeconds') && c.includes('minReadySeconds')),
    );
  });

  it('keeps the selector immutable', async () => {
    const c = await api.post(`${APPS}/deployments`, deployment('imm'));
    const r = await api.put(`${APPS}/deployments/imm`, {
      ...c.body,
      spec: {
        ...c.body.spec,
        selector: { matchLabels: { app: 'imm', v: '2' } },
        template: { ...c.body.spec.template, metadata: { labels: { app: 'imm', v: '2' } } },
      },
    });
    assert.equal(r.status, 422, r.text);
    assert.ok(causes(r).some((c) => c.startsWith('spec.selector') && c.includes('immutable')));
  });

  it('rejects unknown fields in Strict mode with their path', async () => {
    const body = deployment('strict') as { spec: Record<string, unknown> };
    body.spec.replica = 2;
    const r = await api.post(`${APPS}/deployments?fieldValidation=Strict`, body);
    assert.equal(r.status, 400, r.text);
    assert.match(r.body.message, /unknown field "spec\.replica"/);
  });
});

describe('apps/v1 discovery and OpenAPI', () => {
  it('lists replicasets and deployments with short names, category and subresources', async () => {
    const r = await api.get('/apis/apps/v1');
    assert.equal(r.status, 200);
    const byName = new Map(r.body.resources.map((x: { name: string }) => [x.name, x]));
    const deploy = byName.get('deployments') as Record<string, unknown>;
    assert.deepEqual(deploy.shortNames, ['deploy']);
    assert.deepEqual(deploy.categories, ['all']);
    assert.equal(deploy.namespaced, true);
    assert.deepEqual((byName.get('replicasets') as Record<string, unknown>).shortNames, ['rs']);
    const scale = byName.get('deployments/scale') as Record<string, unknown>;
    assert.equal(scale.group, 'autoscaling');
    assert.equal(scale.kind, 'Scale');
    assert.deepEqual(scale.verbs, ['get', 'patch', 'update']);
    assert.ok(byName.has('replicasets/status'));
    const agg = await api.get('/apis', {
      Accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    });
    const apps = agg.body.items.find((g: { metadata: { name: string } }) => g.metadata.name === 'apps');
    assert.ok(apps, 'apps in aggregated discovery');
    const res = apps.versions[0].resources.find((x: { resource: string }) => x.resource === 'deployments');
    assert.equal(res.scope, 'Namespaced');
    assert.ok(res.subresources.some((s: { subresource: string }) => s.subresource === 'scale'));
  });

  it('serves the apps/v1 OpenAPI document with PATCH operations', async () => {
    const root = await api.get('/openapi/v3');
    assert.ok(root.body.paths['apis/apps/v1']);
    const doc = await api.get('/openapi/v3/apis/apps/v1');
    const item = doc.body.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'];
    assert.deepEqual(item.patch['x-kubernetes-group-version-kind'], {
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
    });
    assert.ok(item.patch.parameters.some((p: { name: string }) => p.name === 'fieldValidation'));
    const scale = doc.body.paths['/apis/apps/v1/namespaces/{namespace}/replicasets/{name}/scale'];
    assert.equal(scale.patch['x-kubernetes-group-version-kind'].kind, 'Scale');
  });
});

const manifest = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop}
    spec:
      containers:
      - name: web
        image: ${image}
        ports: [{containerPort: 80}]
      - name: log
        image: busybox:1.36
`;

describe('kubectl with Deployments', () => {
  it('applies, re-applies, configures, gets, describes and scales', async () => {
    const file = join(cp.dir, 'shop.yaml');
    await writeFile(file, manifest('nginx:1.25'));
    let r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /deployment\.apps\/shop created/);
    r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /deployment\.apps\/shop unchanged/);
    await writeFile(file, manifest('nginx:1.26'));
    r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /deployment\.apps\/shop configured/);
    assert.equal(r.stderr.trim(), '', 'no warnings');
    const got = await api.get(`${APPS}/deployments/shop`);
    assert.deepEqual(
      got.body.spec.template.spec.containers.map((c: { image: string }) => c.image),
      ['nginx:1.26', 'busybox:1.36'],
    );
    assert.equal(got.body.metadata.generation, 2);

    r = await kubectl(cp, ['get', 'deploy', 'shop']);
    assert.match(r.stdout, /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\n/);
    assert.match(r.stdout, /\nshop\s+0\/2\s+0\s+0\s+\d+s\n/);
    r = await kubectl(cp, ['get', 'deployments', 'shop', '-o', 'wide']);
    assert.match(r.stdout, /NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR/);
    assert.match(r.stdout, /shop\s+0\/2\s+0\s+0\s+\S+\s+web,log\s+nginx:1\.26,busybox:1\.36\s+app=shop/);

    r = await kubectl(cp, ['describe', 'deployment', 'shop']);
    assert.match(r.stdout, /Name:\s+shop/);
    assert.match(r.stdout, /Selector:\s+app=shop/);
    assert.match(r.stdout, /StrategyType:\s+RollingUpdate/);
    assert.match(r.stdout, /RollingUpdateStrategy:\s+25% max unavailable, 25% max surge/);
    assert.match(r.stdout, /Image:\s+nginx:1\.26/);

    r = await kubectl(cp, ['scale', 'deployment', 'shop', '--replicas=5']);
    assert.match(r.stdout, /deployment\.apps\/shop scaled/);
    assert.equal((await api.get(`${APPS}/deployments/shop`)).body.spec.replicas, 5);

    r = await kubectl(cp, ['get', 'all']);
    assert.match(r.stdout, /deployment\.apps\/shop\s+0\/5/);
  });

  it('prints ReplicaSet columns', async () => {
    await api.post(`${APPS}/replicasets`, replicaSet('front', { replicas: 3 }));
    let r = await kubectl(cp, ['get', 'rs', 'front']);
    assert.match(r.stdout, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\n/);
    assert.match(r.stdout, /\nfront\s+3\s+0\s+0\s+\d+s\n/);
    r = await kubectl(cp, ['get', 'replicasets', 'front', '-o', 'wide']);
    assert.match(r.stdout, /NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR/);
    assert.match(r.stdout, /front\s+3\s+0\s+0\s+\S+\s+web\s+nginx:1\.25\s+app=front/);
  });

  it('kubectl create deployment (sent as protobuf) makes the Deployment its JSON makes', async () => {
    const args = ['create', 'deployment', 'hello', '--image=nginx:1.25', '--replicas=3', '--port=8080'];
    const command = ['--', 'sleep', '100'];
    let r = await kubectl(cp, [...args, ...command]);
    assert.match(r.stdout, /deployment\.apps\/hello created/);
    const viaProtobuf = (await api.get(`${APPS}/deployments/hello`)).body;
    assert.equal(viaProtobuf.spec.replicas, 3);
    assert.deepEqual(viaProtobuf.spec.selector, { matchLabels: { app: 'hello' } });
    assert.deepEqual(viaProtobuf.spec.template.spec.containers[0].command, ['sleep', '100']);
    assert.deepEqual(viaProtobuf.spec.template.spec.containers[0].ports, [
      { containerPort: 8080, protocol: 'TCP' },
    ]);
    // The same command's object as JSON (client-side dry run), created through the JSON path.
    const json = join(cp.dir, 'hello.json');
    await writeFile(
      json,
      (await kubectl(cp, [...args, '--dry-run=client', '-o', 'json', ...command])).stdout,
    );
    await kubectl(cp, ['delete', 'deployment', 'hello']);
    r = await kubectl(cp, ['create', '-f', json]);
    assert.match(r.stdout, /deployment\.apps\/hello created/);
    const viaJson = (await api.get(`${APPS}/deployments/hello`)).body;
    assert.deepEqual(viaProtobuf.spec, viaJson.spec);
    assert.deepEqual(viaProtobuf.metadata.labels, viaJson.metadata.labels);
    await kubectl(cp, ['delete', 'deployment', 'hello']);
  });

  it('reports validation errors with field paths', async () => {
    const file = join(cp.dir, 'bad.yaml');
    await writeFile(
      file,
      manifest('nginx:1.25')
        .replace('matchLabels: {app: shop}', 'matchLabels: {app: other}')
        .replace('name: shop', 'name: bad'),
    );
    const r = await kubectl(cp, ['apply', '-f', file], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /The Deployment "bad" is invalid: spec\.template\.metadata\.labels: Invalid value: .*`selector` does not match template `labels`/,
    );
  });
});
