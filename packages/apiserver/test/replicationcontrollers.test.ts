// core/v1 ReplicationControllers against kubit-apiserver on a real etcd: the
// defaults (selector and labels from the template, replicas 1), validation with
// Kubernetes' messages, the status and scale subresources (a map selector as the
// Scale's selector), and the real kubectl's get, get -o wide and scale.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

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

const RCS = '/api/v1/namespaces/default/replicationcontrollers';

function rc(name: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'ReplicationController',
    metadata: { name },
    spec: {
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'web', image: 'nginx:1.25' }] },
      },
      ...spec,
    },
  };
}

const causes = (r: { body: { details?: { causes?: { field: string; message: string }[] } } }) =>
  (r.body.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);

describe('core/v1 ReplicationControllers', () => {
  it('defaults the selector and labels from the template, replicas to 1, status.replicas to 0', async () => {
    const r = await api.post(RCS, rc('d1'));
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.apiVersion, 'v1');
    assert.deepEqual(r.body.spec.selector, { app: 'd1' });
    assert.deepEqual(r.body.metadata.labels, { app: 'd1' });
    assert.equal(r.body.spec.replicas, 1);
    assert.equal(r.body.metadata.generation, 1);
    assert.equal(r.body.spec.template.spec.restartPolicy, 'Always');
    assert.deepEqual(r.body.status, { replicas: 0 });
    // A selector given is kept, and labels given are not replaced.
    const own = rc('d2', { selector: { app: 'd2' } }) as { metadata: Record<string, unknown> };
    own.metadata.labels = { team: 'x' };
    const r2 = await api.post(RCS, own);
    assert.equal(r2.status, 201, r2.text);
    assert.deepEqual(r2.body.metadata.labels, { team: 'x' });
    assert.deepEqual(r2.body.spec.selector, { app: 'd2' });
    const list = await api.get(`${RCS}?fieldSelector=status.replicas=0`);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.kind, 'ReplicationControllerList');
    assert.ok(list.body.items.some((x: { metadata: { name: string } }) => x.metadata.name === 'd1'));
  });

  it('refuses what Kubernetes refuses, with its messages', async () => {
    const invalid = async (body: unknown) => {
      const r = await api.post(RCS, body);
      assert.equal(r.status, 422, r.text);
      assert.match(r.body.message, /^ReplicationController "[a-z0-9]+" is invalid: /);
      return causes(r);
    };
    // No selector and no template labels to default it from; no template.
    let c = await invalid({ apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'v1' } });
    assert.ok(c.includes('spec.selector: Required value'), c.join('\n'));
    assert.ok(c.includes('spec.template: Required value'), c.join('\n'));
    c = await invalid(rc('v2', { selector: { app: 'other' } }));
    assert.ok(
      c.some(
        (x) =>
          x.startsWith('spec.template.metadata.labels: Invalid value') &&
          x.endsWith('`selector` does not match template `labels`'),
      ),
      c.join('\n'),
    );
    c = await invalid(rc('v3', { replicas: -1, minReadySeconds: -2 }));
    assert.ok(
      c.some((x) => x.startsWith('spec.replicas: Invalid value: -1')),
      c.join('\n'),
    );
    assert.ok(
      c.some((x) => x.startsWith('spec.minReadySeconds: Invalid value: -2')),
      c.join('\n'),
    );
    const never = rc('v4') as { spec: { template: { spec: Record<string, unknown> } } };
    never.spec.template.spec.restartPolicy = 'Never';
    never.spec.template.spec.activeDeadlineSeconds = 10;
    c = await invalid(never);
    assert.ok(
      c.some((x) => x.startsWith('spec.template.spec.restartPolicy: Unsupported value')),
      c.join('\n'),
    );
    assert.ok(
      c.some((x) => x.endsWith('activeDeadlineSeconds in ReplicationController is not Supported')),
      c.join('\n'),
    );
    // Its selector is not immutable, unlike a ReplicaSet's.
    const made = await api.post(RCS, rc('mut'));
    const moved = await api.put(`${RCS}/mut`, {
      ...made.body,
      spec: {
        ...made.body.spec,
        selector: { app: 'mut', v: '2' },
        template: { ...made.body.spec.template, metadata: { labels: { app: 'mut', v: '2' } } },
      },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.metadata.generation, 2);
  });

  it('serves status apart from spec and a Scale whose selector is the label map', async () => {
    const made = await api.post(RCS, rc('sc', { selector: { app: 'sc' }, replicas: 2 }));
    assert.equal(made.status, 201, made.text);
    const st = await api.put(`${RCS}/sc/status`, {
      ...made.body,
      spec: { ...made.body.spec, replicas: 9 },
      status: { replicas: 2, readyReplicas: 1 },
    });
    assert.equal(st.status, 200, st.text);
    assert.equal(st.body.spec.replicas, 2);
    assert.equal(st.body.status.readyReplicas, 1);
    let s = await api.get(`${RCS}/sc/scale`);
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.apiVersion, 'autoscaling/v1');
    assert.equal(s.body.kind, 'Scale');
    assert.deepEqual(s.body.spec, { replicas: 2 });
    assert.deepEqual(s.body.status, { replicas: 2, selector: 'app=sc' });
    s = await api.patch(`${RCS}/sc/scale`, { spec: { replicas: 4 } });
    assert.equal(s.status, 200, s.text);
    assert.equal((await api.get(`${RCS}/sc`)).body.spec.replicas, 4);
  });
});

describe('kubectl with ReplicationControllers', () => {
  it('gets rc columns, -o wide, and scales', async () => {
    const r0 = await api.post(RCS, rc('front', { replicas: 3, selector: { app: 'front', tier: 'web' } }));
    assert.equal(r0.status, 422, 'the selector must match the template');
    const body = rc('front', { replicas: 3 }) as { spec: { template: { metadata: { labels: object } } } };
    body.spec.template.metadata.labels = { app: 'front', tier: 'web' };
    assert.equal((await api.post(RCS, body)).status, 201);
    let r = await kubectl(cp, ['get', 'rc', 'front']);
    assert.match(r.stdout, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\n/);
    assert.match(r.stdout, /\nfront\s+3\s+0\s+0\s+\d+s\n/);
    r = await kubectl(cp, ['get', 'replicationcontrollers', 'front', '-o', 'wide']);
    assert.match(r.stdout, /NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\s+CONTAINERS\s+IMAGES\s+SELECTOR/);
    assert.match(r.stdout, /front\s+3\s+0\s+0\s+\S+\s+web\s+nginx:1\.25\s+app=front,tier=web\n/);
    r = await kubectl(cp, ['scale', 'rc', 'front', '--replicas=5']);
    assert.match(r.stdout, /replicationcontroller\/front scaled/);
    assert.equal((await api.get(`${RCS}/front`)).body.spec.replicas, 5);
    r = await kubectl(cp, ['get', 'all']);
    assert.match(r.stdout, /replicationcontroller\/front\s+5\s+0\s+0/);
    r = await kubectl(cp, ['describe', 'rc', 'front']);
    assert.match(r.stdout, /Selector:\s+app=front,tier=web/);
    assert.match(r.stdout, /Replicas:\s+0 current \/ 5 desired/);
  });
});
