// The endpoint, endpointslice and service-lb-ipam controllers on a real stack:
// etcd and kubit-apiserver (testkit's control plane), a controller manager
// with replicaset, deployment and the garbage collector, kubit-scheduler and
// kubit-hollow nodes whose pods become Running and Ready with a pod IP, plus a
// second kubit-controller-manager process running the controllers under test
// with their flags (so the test can restart it). One cluster for the file.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Deployment, EndpointSlice, Endpoints, Event, Pod, Service } from '@kubit/api';
import { KubeClient, resources } from '@kubit/client';
import {
  freePort,
  startDaemon,
  startWorkloadCluster,
  type TestProcess,
  type WorkloadCluster,
  waitFor,
} from '@kubit/testkit';
import { endpointSliceResource } from '../src/endpoints/shared.js';
import { w } from './cm-process.js';

const NS = 'default';
const MAX_PER_SLICE = 5;
const POOL = '10.250.0.1-10.250.0.3';
const TRIGGER = 'endpoints.kubernetes.io/last-change-trigger-time';

let cluster: WorkloadCluster;
let client: KubeClient;
let cm: TestProcess;
let cmKubeconfig: string;

async function startServiceControllers(): Promise<TestProcess> {
  const p = startDaemon({
    name: 'svc-controller-manager',
    pkg: 'controllers',
    args: [
      `--kubeconfig=${cmKubeconfig}`,
      '--leader-elect=false',
      '--controllers=endpoint,endpointslice,endpointslicemirroring,service-lb-ipam',
      `--max-endpoints-per-slice=${MAX_PER_SLICE}`,
      `--load-balancer-ip-range=${POOL}`,
      `--secure-port=${await freePort()}`,
      '--bind-address=127.0.0.1',
    ],
    logDir: cluster.cp.logDir,
  });
  return p;
}

before(async () => {
  cluster = await startWorkloadCluster({ nodes: 2, controllers: 'replicaset,deployment,garbagecollector' });
  client = KubeClient.fromKubeconfig({ kubeconfig: cluster.cp.kubeconfigPath });
  cmKubeconfig = await cluster.cp.kubeconfigFor('controller-manager', cluster.cp.pki.controllerManager);
  // A zone on one node, for the endpoints' zone field.
  await client.patch(resources.nodes, 'hollow-0', {
    metadata: { labels: { 'topology.kubernetes.io/zone': 'zone-a' } },
  });
  cm = await startServiceControllers();
});

after(async () => {
  client?.close();
  await cm?.stop();
  await cluster?.stop();
});

const until = <T>(what: string, fn: () => Promise<T | undefined | false>, ms = 30_000) =>
  waitFor(what, fn, ms, 200).catch((err: Error) => {
    throw new Error(`${err.message}\n${cluster.logs(6)}`);
  });

function deployment(name: string, replicas: number, port = 8080): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image: 'nginx', ports: [{ name: 'http', containerPort: port }] }] },
      },
    },
  };
}

function service(
  name: string,
  spec: Partial<NonNullable<Service['spec']>> = {},
  labels?: Record<string, string>,
): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: NS, labels },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 'http' }], ...spec },
  };
}

const create = <T>(r: typeof resources.pods, o: T) => client.create(r, w(o), { namespace: NS });

async function slicesOf(svc: string): Promise<EndpointSlice[]> {
  const l = await client.list<EndpointSlice>(endpointSliceResource, {
    namespace: NS,
    labelSelector: `kubernetes.io/service-name=${svc}`,
  });
  return l.items;
}

const endpointsOf = (svc: string) => client.get<Endpoints>(resources.endpoints, svc, { namespace: NS });

async function podsOf(app: string): Promise<Pod[]> {
  return (await client.list<Pod>(resources.pods, { namespace: NS, labelSelector: `app=${app}` })).items;
}

const allEndpoints = (slices: EndpointSlice[]) => slices.flatMap((s) => s.endpoints ?? []);

async function setReady(pod: Pod, ready: boolean): Promise<void> {
  const fresh = await client.get<Pod>(resources.pods, pod.metadata!.name!, { namespace: NS });
  const conditions = (fresh.status?.conditions ?? []).map((c) =>
    c.type === 'Ready'
      ? {
          ...c,
          status: ready ? 'True' : 'False',
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        }
      : c,
  );
  // containerStatuses stay ready, so the hollow kubelet does not write its Running status back.
  await client.updateStatus(resources.pods, w({ ...fresh, status: { ...fresh.status, conditions } }), {
    namespace: NS,
  });
}

describe('endpoints of a Deployment behind a Service', () => {
  test('3 ready pods: one slice with 3 endpoints, the named port resolved, and the Endpoints object', async () => {
    await create(resources.deployments, deployment('web', 3));
    await create(resources.services, service('web', {}, { tier: 'front' }));
    const slices = await until('one slice with 3 ready endpoints', async () => {
      const s = await slicesOf('web');
      return (
        s.length === 1 &&
        s[0].endpoints?.length === 3 &&
        s[0].endpoints.every((e) => e.conditions?.ready) &&
        s
      );
    });
    const slice = slices[0];
    const svc = await client.get<Service>(resources.services, 'web', { namespace: NS });
    assert.deepEqual(slice.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.equal(slice.addressType, 'IPv4');
    assert.match(slice.metadata?.name ?? '', /^web-/);
    assert.equal(
      slice.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'],
      'endpointslice-controller.k8s.io',
    );
    assert.equal(slice.metadata?.labels?.tier, 'front');
    assert.equal(slice.metadata?.labels?.['service.kubernetes.io/headless'], undefined);
    assert.deepEqual(slice.metadata?.ownerReferences, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        name: 'web',
        uid: svc.metadata?.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.ok(Date.parse(slice.metadata?.annotations?.[TRIGGER] ?? '') > 0, 'trigger time annotation');
    const pods = await podsOf('web');
    for (const e of slice.endpoints ?? []) {
      const p = pods.find((x) => x.metadata?.name === e.targetRef?.name);
      assert.ok(p, `endpoint ${e.addresses[0]} is a pod of web`);
      assert.deepEqual(e.addresses, [p.status?.podIP]);
      assert.equal(e.targetRef?.uid, p.metadata?.uid);
      assert.equal(e.targetRef?.kind, 'Pod');
      assert.equal(e.nodeName, p.spec?.nodeName);
      assert.equal(e.zone, p.spec?.nodeName === 'hollow-0' ? 'zone-a' : undefined);
      assert.deepEqual(e.conditions, { ready: true, serving: true, terminating: false });
    }
    const ep = await until('the Endpoints with 3 addresses', async () => {
      const e = await endpointsOf('web').catch(() => undefined);
      return e?.subsets?.[0]?.addresses?.length === 3 && e;
    });
    assert.equal(ep.subsets?.length, 1);
    assert.deepEqual(ep.subsets?.[0].ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.deepEqual(
      ep.subsets?.[0].addresses?.map((a) => a.ip).sort(),
      pods.map((p) => p.status?.podIP).sort(),
    );
    assert.equal(ep.metadata?.labels?.tier, 'front');
    assert.ok(ep.metadata?.annotations?.[TRIGGER]);
    // Nothing changes, nothing is written: the same resourceVersions a while later.
    const rvSlice = slice.metadata?.resourceVersion;
    const rvEp = ep.metadata?.resourceVersion;
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal((await slicesOf('web'))[0].metadata?.resourceVersion, rvSlice);
    assert.equal((await endpointsOf('web')).metadata?.resourceVersion, rvEp);
  });

  test('a pod turning unready: ready=false in its slice (updated in place), notReadyAddresses', async () => {
    const [victim] = await podsOf('web');
    const before = (await slicesOf('web'))[0];
    await setReady(victim, false);
    const after = await until('the endpoint not ready', async () => {
      const s = await slicesOf('web');
      const e = allEndpoints(s).find((x) => x.targetRef?.name === victim.metadata?.name);
      return e?.conditions?.ready === false && s;
    });
    assert.equal(after.length, 1);
    assert.equal(after[0].metadata?.name, before.metadata?.name, 'the same slice, updated in place');
    const e = allEndpoints(after).find((x) => x.targetRef?.name === victim.metadata?.name);
    assert.deepEqual(e?.conditions, { ready: false, serving: false, terminating: false });
    const ep = await until('a not-ready address', async () => {
      const x = await endpointsOf('web');
      return x.subsets?.[0]?.notReadyAddresses?.length === 1 && x;
    });
    assert.equal(ep.subsets?.[0].notReadyAddresses?.[0].ip, victim.status?.podIP);
    assert.equal(ep.subsets?.[0].addresses?.length, 2);
    await setReady(victim, true);
    await until('ready again', async () => (await endpointsOf('web')).subsets?.[0]?.addresses?.length === 3);
  });

  test('a deleted pod: terminating, then gone', async () => {
    const [victim] = await podsOf('web');
    const name = victim.metadata!.name!;
    // A finalizer holds the pod in Terminating long enough to see it.
    await client.patch(
      resources.pods,
      name,
      { metadata: { finalizers: ['kubit.test/hold'] } },
      { namespace: NS },
    );
    await client.delete(resources.pods, name, { namespace: NS });
    const s = await until('the endpoint terminating', async () => {
      const e = allEndpoints(await slicesOf('web')).find((x) => x.targetRef?.name === name);
      return e?.conditions?.terminating === true && e;
    });
    assert.deepEqual(s.conditions, { ready: false, serving: true, terminating: true });
    await until('the address out of the Endpoints', async () => {
      const ep = await endpointsOf('web');
      return !(ep.subsets ?? []).some((x) =>
        [...(x.addresses ?? []), ...(x.notReadyAddresses ?? [])].some((a) => a.targetRef?.name === name),
      );
    });
    await client.patch(resources.pods, name, { metadata: { finalizers: null } }, { namespace: NS });
    await until('the endpoint gone and its replacement ready', async () => {
      const es = allEndpoints(await slicesOf('web'));
      return (
        es.length === 3 && !es.some((e) => e.targetRef?.name === name) && es.every((e) => e.conditions?.ready)
      );
    });
  });

  test('scaled to 0: one empty slice, no subsets', async () => {
    await client.patch(resources.deployments, 'web', { spec: { replicas: 0 } }, { namespace: NS });
    await until('an empty slice', async () => {
      const s = await slicesOf('web');
      return s.length === 1 && (s[0].endpoints ?? []).length === 0;
    });
    await until('no subsets', async () => ((await endpointsOf('web')).subsets ?? []).length === 0);
  });

  test('more pods than --max-endpoints-per-slice: several slices', async () => {
    await create(resources.deployments, deployment('many', 12));
    await create(resources.services, service('many'));
    const slices = await until('12 ready endpoints', async () => {
      const s = await slicesOf('many');
      const es = allEndpoints(s);
      return es.length === 12 && es.every((e) => e.conditions?.ready) && s;
    });
    assert.ok(slices.length >= 3, `${slices.length} slices`);
    assert.ok(slices.every((s) => (s.endpoints?.length ?? 0) <= MAX_PER_SLICE));
    assert.equal(new Set(allEndpoints(slices).map((e) => e.addresses[0])).size, 12, 'no address twice');
    assert.equal((await endpointsOf('many')).subsets?.[0].addresses?.length, 12);
  });

  test('the Service deleted: its slices and Endpoints go', async () => {
    await client.delete(resources.services, 'many', { namespace: NS });
    await until('no slices', async () => (await slicesOf('many')).length === 0);
    await until('no Endpoints', async () =>
      endpointsOf('many').then(
        () => false,
        (e: { code?: number }) => e.code === 404,
      ),
    );
    await client.delete(resources.deployments, 'many', { namespace: NS });
  });
});

describe('special Services', () => {
  test('publishNotReadyAddresses: an unready pod is still ready', async () => {
    await create(resources.deployments, deployment('pnr', 1));
    await create(resources.services, service('pnr', { publishNotReadyAddresses: true }));
    await until('one endpoint', async () => allEndpoints(await slicesOf('pnr')).length === 1);
    const [p] = await podsOf('pnr');
    await setReady(p, false);
    await until('the pod unready', async () =>
      (await podsOf('pnr'))[0].status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'False'),
    );
    // Give both controllers a moment, then check they kept it ready.
    await new Promise((r) => setTimeout(r, 1500));
    const e = allEndpoints(await slicesOf('pnr'))[0];
    assert.equal(e.conditions?.ready, true);
    assert.equal(e.conditions?.serving, true);
    const ep = await endpointsOf('pnr');
    assert.equal(ep.subsets?.[0].addresses?.[0].ip, p.status?.podIP);
    assert.equal(ep.subsets?.[0].notReadyAddresses, undefined);
  });

  test('headless with hostname and subdomain', async () => {
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db-0', namespace: NS, labels: { app: 'db' } },
      spec: {
        hostname: 'db-0',
        subdomain: 'db',
        containers: [{ name: 'c', image: 'nginx', ports: [{ name: 'http', containerPort: 5432 }] }],
      },
    };
    await create(resources.pods, pod);
    await create(resources.services, service('db', { clusterIP: 'None' }));
    const slice = await until('the headless slice', async () => {
      const s = await slicesOf('db');
      return s.length === 1 && s[0].endpoints?.length === 1 && s[0];
    });
    assert.equal(slice.metadata?.labels?.['service.kubernetes.io/headless'], '');
    assert.equal(slice.endpoints?.[0].hostname, 'db-0');
    const ep = await until('the Endpoints', async () => {
      const e = await endpointsOf('db');
      return e.subsets?.[0]?.addresses?.length === 1 && e;
    });
    assert.equal(ep.subsets?.[0].addresses?.[0].hostname, 'db-0');
    assert.equal(ep.metadata?.labels?.['service.kubernetes.io/headless'], '');
  });

  test('a Service without a selector: its slices and Endpoints are left alone, the Endpoints mirrored', async () => {
    await create(resources.services, { ...service('manual'), spec: { ports: [{ port: 80 }] } });
    const userSlice = (await create<EndpointSlice>(endpointSliceResource, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'manual-1',
        namespace: NS,
        labels: {
          'kubernetes.io/service-name': 'manual',
          'endpointslice.kubernetes.io/managed-by': 'someone',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['192.0.2.1'] }],
      ports: [{ port: 80, protocol: 'TCP' }],
    } as EndpointSlice)) as EndpointSlice;
    const userEp = (await create<Endpoints>(resources.endpoints, {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'manual', namespace: NS, labels: { team: 'x' } },
      subsets: [
        {
          addresses: [{ ip: '192.0.2.10' }],
          notReadyAddresses: [{ ip: '192.0.2.11' }],
          ports: [{ name: 'web', port: 8000 }],
        },
      ],
    })) as Endpoints;
    const mirrored = await until('the mirrored slice', async () => {
      const s = (await slicesOf('manual')).filter(
        (x) =>
          x.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] ===
          'endpointslicemirroring-controller.k8s.io',
      );
      return s.length === 1 && s[0];
    });
    assert.deepEqual(mirrored.ports, [{ name: 'web', port: 8000, protocol: 'TCP' }]);
    assert.deepEqual((mirrored.endpoints ?? []).map((e) => [e.addresses[0], e.conditions?.ready]).sort(), [
      ['192.0.2.10', true],
      ['192.0.2.11', false],
    ]);
    assert.equal(mirrored.metadata?.labels?.team, 'x');
    assert.deepEqual(
      mirrored.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]),
      [['Endpoints', 'manual', userEp.metadata?.uid]],
    );
    // A Service created after it is served, so the controllers have seen 'manual' by then.
    await create(resources.deployments, deployment('later', 1));
    await create(resources.services, service('later'));
    await until('the later Service served', async () => allEndpoints(await slicesOf('later')).length === 1);
    const slices = await slicesOf('manual');
    assert.deepEqual(
      slices.filter((x) => x.metadata?.name === 'manual-1').map((x) => x.metadata?.resourceVersion),
      [userSlice.metadata?.resourceVersion],
    );
    assert.equal(
      slices.length,
      2,
      'the user slice and the mirrored one, nothing from the endpointslice controller',
    );
    assert.equal((await endpointsOf('manual')).metadata?.resourceVersion, userEp.metadata?.resourceVersion);
    // The endpoint controller's own Endpoints are not mirrored (skip-mirror).
    assert.equal(
      (await endpointsOf('later')).metadata?.labels?.['endpointslice.kubernetes.io/skip-mirror'],
      'true',
    );
    assert.ok(
      (await slicesOf('later')).every(
        (x) =>
          x.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] ===
          'endpointslice-controller.k8s.io',
      ),
    );
    await client.delete(resources.endpoints, 'manual', { namespace: NS });
    await until('the mirrored slice gone', async () => {
      const s = await slicesOf('manual');
      return s.length === 1 && s[0].metadata?.name === 'manual-1';
    });
  });
});

describe('LoadBalancer addresses from --load-balancer-ip-range', () => {
  let freedByTypeChange = '';
  const lbService = (name: string, spec: Partial<NonNullable<Service['spec']>> = {}) =>
    service(name, { type: 'LoadBalancer', ...spec });
  const ingressOf = async (name: string) =>
    (await client.get<Service>(resources.services, name, { namespace: NS })).status?.loadBalancer?.ingress ??
    [];
  const addressOf = (name: string) =>
    until(`an address for ${name}`, async () => {
      const i = await ingressOf(name);
      return i.length === 1 && i[0].ip;
    });
  async function noAddressShared(): Promise<Record<string, string>> {
    const all = (await client.list<Service>(resources.services, { namespace: NS })).items;
    const held: Record<string, string> = {};
    for (const s of all) {
      for (const i of s.status?.loadBalancer?.ingress ?? []) {
        assert.ok(
          !Object.values(held).includes(i.ip ?? ''),
          `${i.ip} given to ${s.metadata?.name} and another`,
        );
        held[s.metadata!.name!] = i.ip ?? '';
      }
    }
    return held;
  }
  async function warning(name: string, re: RegExp): Promise<Event> {
    return until(`a Warning AllocationFailed event for ${name}`, async () => {
      const evs = (await client.list<Event>(resources.events, { namespace: NS })).items;
      return evs.find(
        (e) =>
          e.involvedObject?.name === name &&
          e.reason === 'AllocationFailed' &&
          e.type === 'Warning' &&
          re.test(e.message ?? ''),
      );
    });
  }

  test('addresses from the pool, never shared, even for Services created at once; a requested one honoured', async () => {
    await Promise.all([
      create(resources.services, lbService('lb1')),
      create(resources.services, lbService('lb2', { loadBalancerIP: '10.250.0.3' })),
      create(resources.services, lbService('lb3')),
    ]);
    const got = { lb1: await addressOf('lb1'), lb2: await addressOf('lb2'), lb3: await addressOf('lb3') };
    assert.equal(got.lb2, '10.250.0.3', 'the requested address');
    assert.deepEqual([got.lb1, got.lb3].sort(), ['10.250.0.1', '10.250.0.2']);
    assert.deepEqual(await ingressOf('lb1'), [{ ip: got.lb1, ipMode: 'VIP' }]);
    await noAddressShared();
    const evs = (await client.list<Event>(resources.events, { namespace: NS })).items;
    assert.ok(evs.some((e) => e.involvedObject?.name === 'lb1' && e.reason === 'IPAllocated'));
    freedByTypeChange = got.lb1;
  });

  test('pool exhausted or a bad request: a Warning and the Service stays pending', async () => {
    await create(resources.services, lbService('lb4'));
    await warning('lb4', /no available IPs/);
    await create(resources.services, lbService('lb5', { loadBalancerIP: '192.0.2.99' }));
    await warning('lb5', /not in the pool/);
    await create(resources.services, {
      ...lbService('lb-other'),
      spec: { ...lbService('lb-other').spec, loadBalancerClass: 'example.com/other' },
    });
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(await ingressOf('lb4'), []);
    assert.deepEqual(await ingressOf('lb5'), []);
    assert.deepEqual(await ingressOf('lb-other'), [], 'another class is not ours');
  });

  test('a type change frees the address for a waiting Service', async () => {
    const svc = await client.get<Service>(resources.services, 'lb1', { namespace: NS });
    await client.update(resources.services, w({ ...svc, spec: { ...svc.spec, type: 'ClusterIP' } }), {
      namespace: NS,
    });
    await until('lb1 without an address', async () => (await ingressOf('lb1')).length === 0);
    assert.equal(await addressOf('lb4'), freedByTypeChange);
    await noAddressShared();
  });

  test('the controller manager restarted: the same addresses kept', async () => {
    const before = await noAddressShared();
    await cm.stop();
    cm = await startServiceControllers();
    // A new Service after the restart gets its Warning: the controller is running again.
    await create(resources.services, lbService('lb6'));
    await warning('lb6', /no available IPs/);
    assert.deepEqual(await noAddressShared(), before);
    assert.deepEqual(Object.keys(before).sort(), ['lb2', 'lb3', 'lb4']);
  });
});
