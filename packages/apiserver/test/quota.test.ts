// ResourceQuota and LimitRange at admission, against a real apiserver: a quota of
// three pods stops the fourth with Kubernetes' message, a compute quota needs
// requests and counts them, a LimitRange's defaults appear on a new pod and its
// max refuses a bigger one. Each case waits until its quota or range is in the
// apiserver's watch cache (a list with resourceVersion=0 is served from it), as
// admission reads them from there.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, pod } from './helpers.js';

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

async function namespace(name: string): Promise<void> {
  const ns = await api.post('/api/v1/namespaces', { metadata: { name } });
  assert.equal(ns.status, 201, ns.text);
  const sa = await api.post(`/api/v1/namespaces/${name}/serviceaccounts`, { metadata: { name: 'default' } });
  assert.equal(sa.status, 201, sa.text);
}

/** Creates the object (unless it exists) and waits until the apiserver's watch cache lists it. */
async function createCached(
  collection: string,
  body: { metadata: { name: string } },
  create = true,
): Promise<void> {
  if (create) {
    const r = await api.post(collection, body);
    assert.equal(r.status, 201, r.text);
  }
  const deadline = Date.now() + 10_000;
  for (;;) {
    const l = await api.get(`${collection}?resourceVersion=0`);
    if (
      (l.body.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === body.metadata.name)
    )
      return;
    assert.ok(Date.now() < deadline, `${body.metadata.name} never reached the watch cache`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const withResources = (name: string, resources: Record<string, unknown>) => {
  const p = pod(name);
  Object.assign(p.spec.containers[0], { resources });
  return p;
};

describe('ResourceQuota', () => {
  it('a quota of three pods stops the fourth', async () => {
    await namespace('quota-pods');
    await createCached('/api/v1/namespaces/quota-pods/resourcequotas', {
      metadata: { name: 'pods-quota' },
      spec: { hard: { pods: '3' } },
    } as never);
    for (const n of ['p1', 'p2', 'p3']) {
      const r = await api.post('/api/v1/namespaces/quota-pods/pods', pod(n));
      assert.equal(r.status, 201, r.text);
    }
    const fourth = await api.post('/api/v1/namespaces/quota-pods/pods', pod('p4'));
    assert.equal(fourth.status, 403, fourth.text);
    assert.equal(
      fourth.body.message,
      'pods "p4" is forbidden: exceeded quota: pods-quota, requested: pods=1, used: pods=3, limited: pods=3',
    );
    assert.equal((await api.get('/api/v1/namespaces/quota-pods/pods/p4')).status, 404);
    // Other kinds are not counted against it.
    const cm = await api.post('/api/v1/namespaces/quota-pods/configmaps', { metadata: { name: 'c' } });
    assert.equal(cm.status, 201, cm.text);
    // A deleted pod frees its place.
    assert.equal((await api.del('/api/v1/namespaces/quota-pods/pods/p1?gracePeriodSeconds=0')).status, 200);
    const again = await api.post('/api/v1/namespaces/quota-pods/pods', pod('p4'));
    assert.equal(again.status, 201, again.text);
  });

  it('creates at the same time never take a quota past its limit', async () => {
    await namespace('quota-race');
    await createCached('/api/v1/namespaces/quota-race/resourcequotas', {
      metadata: { name: 'three' },
      spec: { hard: { 'count/configmaps': '3' } },
    } as never);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        api.post('/api/v1/namespaces/quota-race/configmaps', { metadata: { name: `c${i}` } }),
      ),
    );
    const codes = answers.map((r) => r.status).sort();
    assert.deepEqual(codes, [201, 201, 201, 403, 403, 403, 403, 403]);
    const list = await api.get('/api/v1/namespaces/quota-race/configmaps');
    assert.equal(list.body.items.length, 3);
    // Free one place: dry runs are checked against it but take none of it.
    const first = list.body.items[0].metadata.name;
    assert.equal((await api.del(`/api/v1/namespaces/quota-race/configmaps/${first}`)).status, 200);
    for (const n of ['dry1', 'dry2']) {
      const dry = await api.post('/api/v1/namespaces/quota-race/configmaps?dryRun=All', {
        metadata: { name: n },
      });
      assert.equal(dry.status, 201, dry.text);
    }
    assert.equal(
      (await api.post('/api/v1/namespaces/quota-race/configmaps', { metadata: { name: 'real' } })).status,
      201,
    );
    const over = await api.post('/api/v1/namespaces/quota-race/configmaps?dryRun=All', {
      metadata: { name: 'dry3' },
    });
    assert.equal(over.status, 403, over.text);
  });

  it('a compute quota needs requests and counts them; count/<resource> counts any kind', async () => {
    await namespace('quota-cpu');
    await createCached('/api/v1/namespaces/quota-cpu/resourcequotas', {
      metadata: { name: 'compute' },
      spec: { hard: { 'requests.cpu': '1', 'count/configmaps': '1' } },
    } as never);
    const bare = await api.post('/api/v1/namespaces/quota-cpu/pods', pod('bare'));
    assert.equal(bare.status, 403, bare.text);
    assert.equal(
      bare.body.message,
      'pods "bare" is forbidden: failed quota: compute: must specify requests.cpu',
    );
    const a = await api.post(
      '/api/v1/namespaces/quota-cpu/pods',
      withResources('a', { requests: { cpu: '600m' } }),
    );
    assert.equal(a.status, 201, a.text);
    const b = await api.post(
      '/api/v1/namespaces/quota-cpu/pods',
      withResources('b', { requests: { cpu: '600m' } }),
    );
    assert.equal(b.status, 403, b.text);
    assert.equal(
      b.body.message,
      'pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1',
    );
    assert.equal(
      (await api.post('/api/v1/namespaces/quota-cpu/configmaps', { metadata: { name: 'c1' } })).status,
      201,
    );
    const c2 = await api.post('/api/v1/namespaces/quota-cpu/configmaps', { metadata: { name: 'c2' } });
    assert.equal(c2.status, 403, c2.text);
    assert.match(
      c2.body.message,
      /exceeded quota: compute, requested: count\/configmaps=1, used: count\/configmaps=1, limited: count\/configmaps=1$/,
    );
  });
});

describe('ResourceQuota on updates', () => {
  it('an update is refused by what it adds', async () => {
    await namespace('quota-update');
    await createCached('/api/v1/namespaces/quota-update/resourcequotas', {
      metadata: { name: 'lb' },
      spec: { hard: { 'services.loadbalancers': '0' } },
    } as never);
    const svc = await api.post('/api/v1/namespaces/quota-update/services', {
      metadata: { name: 's' },
      spec: { ports: [{ port: 80 }] },
    });
    assert.equal(svc.status, 201, svc.text);
    const lb = await api.patch('/api/v1/namespaces/quota-update/services/s', {
      spec: { type: 'LoadBalancer' },
    });
    assert.equal(lb.status, 403, lb.text);
    assert.equal(
      lb.body.message,
      'services "s" is forbidden: exceeded quota: lb, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0',
    );
    const relabel = await api.patch('/api/v1/namespaces/quota-update/services/s', {
      metadata: { labels: { a: 'b' } },
    });
    assert.equal(relabel.status, 200, relabel.text);
  });
});

describe('ResourceQuota scopes', () => {
  it('a BestEffort quota counts only best-effort pods', async () => {
    await namespace('quota-scopes');
    await createCached('/api/v1/namespaces/quota-scopes/resourcequotas', {
      metadata: { name: 'best-effort' },
      spec: { hard: { pods: '1' }, scopes: ['BestEffort'] },
    } as never);
    assert.equal((await api.post('/api/v1/namespaces/quota-scopes/pods', pod('be1'))).status, 201);
    const be2 = await api.post('/api/v1/namespaces/quota-scopes/pods', pod('be2'));
    assert.equal(be2.status, 403, be2.text);
    assert.match(
      be2.body.message,
      /exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1$/,
    );
    const burstable = await api.post(
      '/api/v1/namespaces/quota-scopes/pods',
      withResources('burstable', { requests: { cpu: '10m' } }),
    );
    assert.equal(burstable.status, 201, burstable.text);
    // Other kinds are outside a scoped quota.
    assert.equal(
      (await api.post('/api/v1/namespaces/quota-scopes/configmaps', { metadata: { name: 'c' } })).status,
      201,
    );
  });
});

describe('kubectl', () => {
  it('kubectl create quota (a protobuf body) and kubectl run past it', async () => {
    await namespace('quota-kubectl');
    await kubectl(cp, [
      'create',
      'quota',
      'two',
      '--hard=pods=1,requests.storage=1Gi',
      '-n',
      'quota-kubectl',
    ]);
    const q = await api.get('/api/v1/namespaces/quota-kubectl/resourcequotas/two');
    assert.deepEqual(q.body.spec.hard, { pods: '1', 'requests.storage': '1Gi' });
    await createCached(
      '/api/v1/namespaces/quota-kubectl/resourcequotas',
      { metadata: { name: 'two' } },
      false,
    );
    await kubectl(cp, ['run', 'one', '--image=busybox:1.36', '-n', 'quota-kubectl']);
    const r = await kubectl(cp, ['run', 'two', '--image=busybox:1.36', '-n', 'quota-kubectl'], {
      allowFail: true,
    });
    assert.notEqual(r.code, 0);
    assert.match(
      r.stderr,
      /pods "two" is forbidden: exceeded quota: two, requested: pods=1, used: pods=1, limited: pods=1/,
    );
  });
});

describe('LimitRange', () => {
  it('sets a container defaults and refuses one over its max', async () => {
    await namespace('limits');
    await createCached('/api/v1/namespaces/limits/limitranges', {
      metadata: { name: 'container-limits' },
      spec: {
        limits: [
          {
            type: 'Container',
            default: { cpu: '500m', memory: '128Mi' },
            defaultRequest: { cpu: '100m' },
            max: { cpu: '1' },
          },
        ],
      },
    } as never);
    const lr = await api.get('/api/v1/namespaces/limits/limitranges/container-limits');
    assert.deepEqual(lr.body.spec.limits[0].defaultRequest, { cpu: '100m', memory: '128Mi' });
    const p = await api.post('/api/v1/namespaces/limits/pods', pod('plain'));
    assert.equal(p.status, 201, p.text);
    assert.deepEqual(p.body.spec.containers[0].resources, {
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { cpu: '500m', memory: '128Mi' },
    });
    assert.equal(
      p.body.metadata.annotations['kubernetes.io/limit-ranger'],
      'LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c',
    );
    const own = await api.post(
      '/api/v1/namespaces/limits/pods',
      withResources('own', { requests: { cpu: '200m' }, limits: { cpu: '800m' } }),
    );
    assert.equal(own.status, 201, own.text);
    assert.deepEqual(own.body.spec.containers[0].resources, {
      requests: { cpu: '200m', memory: '128Mi' },
      limits: { cpu: '800m', memory: '128Mi' },
    });
    const big = await api.post(
      '/api/v1/namespaces/limits/pods',
      withResources('big', { limits: { cpu: '2' } }),
    );
    assert.equal(big.status, 403, big.text);
    assert.equal(
      big.body.message,
      'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
    );
  });

  it('checks a pod as a whole (type Pod) and a claim storage request (type PersistentVolumeClaim)', async () => {
    await namespace('limits-pod');
    await createCached('/api/v1/namespaces/limits-pod/limitranges', {
      metadata: { name: 'whole' },
      spec: {
        limits: [
          { type: 'Pod', max: { cpu: '1' } },
          { type: 'PersistentVolumeClaim', min: { storage: '1Gi' }, max: { storage: '5Gi' } },
        ],
      },
    } as never);
    const two = pod('two');
    two.spec.containers = [
      { name: 'a', image: 'busybox:1.36', resources: { limits: { cpu: '600m' } } },
      { name: 'b', image: 'busybox:1.36', resources: { limits: { cpu: '600m' } } },
    ] as never;
    const r = await api.post('/api/v1/namespaces/limits-pod/pods', two);
    assert.equal(r.status, 403, r.text);
    assert.equal(
      r.body.message,
      'pods "two" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m',
    );
    const claim = (name: string, storage: string) => ({
      metadata: { name },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } },
    });
    const big = await api.post('/api/v1/namespaces/limits-pod/persistentvolumeclaims', claim('big', '10Gi'));
    assert.equal(big.status, 403, big.text);
    assert.equal(
      big.body.message,
      'persistentvolumeclaims "big" is forbidden: maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi',
    );
    const small = await api.post(
      '/api/v1/namespaces/limits-pod/persistentvolumeclaims',
      claim('small', '500Mi'),
    );
    assert.equal(small.status, 403, small.text);
    assert.match(
      small.body.message,
      /minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi$/,
    );
    const fits = await api.post('/api/v1/namespaces/limits-pod/persistentvolumeclaims', claim('fits', '2Gi'));
    assert.equal(fits.status, 201, fits.text);
  });

  it('a range whose default is over its max is invalid', async () => {
    const r = await api.post('/api/v1/namespaces/limits/limitranges', {
      metadata: { name: 'bad' },
      spec: { limits: [{ type: 'Container', default: { cpu: '2' }, max: { cpu: '1' } }] },
    });
    assert.equal(r.status, 422, r.text);
    assert.deepEqual(
      (r.body.details.causes as { field: string }[]).map((c) => c.field),
      // The default request defaults to the default limit, so it is over the max too.
      ['spec.limits[0].defaultRequest[cpu]', 'spec.limits[0].default[cpu]'],
    );
  });
});
