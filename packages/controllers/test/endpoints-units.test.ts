// Table-driven tests of the pure parts of the endpoint and endpointslice
// controllers: which pods become which endpoints, how they are spread over
// slices with the least churn, and how Endpoints are grouped and truncated.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EndpointSlice, Node, Pod, Service } from '@kubit/api';
import { mirroredPortGroups, shouldMirror } from '../src/endpoints/mirroring.js';
import { findPort } from '../src/endpoints/shared.js';
import {
  desiredPortGroups,
  planSlices,
  podToEndpoint,
  serviceSliceMeta,
  sliceLabels,
} from '../src/endpoints/slices.js';
import { desiredEndpoints, truncateSubsets } from '../src/endpoints/subsets.js';
import { TriggerTimeTracker } from '../src/endpoints/trigger-time.js';

const T0 = '2026-01-01T00:00:00Z';

function pod(
  name: string,
  ip: string | undefined,
  o: {
    ready?: boolean;
    deleting?: boolean;
    phase?: string;
    port?: number;
    node?: string;
    hostname?: string;
    subdomain?: string;
    readyAt?: string;
  } = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: 'default',
      uid: `uid-${name}`,
      labels: { app: 'web' },
      ...(o.deleting ? { deletionTimestamp: T0 } : {}),
    },
    spec: {
      nodeName: o.node ?? 'node-1',
      hostname: o.hostname,
      subdomain: o.subdomain,
      containers: [{ name: 'c', image: 'nginx', ports: [{ name: 'http', containerPort: o.port ?? 8080 }] }],
    },
    status: {
      phase: (o.phase ?? 'Running') as 'Running',
      podIP: ip,
      conditions: [
        { type: 'Ready', status: o.ready === false ? 'False' : 'True', lastTransitionTime: o.readyAt ?? T0 },
      ],
    },
  };
}

function service(spec: Partial<NonNullable<Service['spec']>> = {}, labels?: Record<string, string>): Service {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'svc-uid', labels, creationTimestamp: T0 },
    spec: {
      selector: { app: 'web' },
      ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
      ...spec,
    },
  };
}

const nodes: Record<string, Node> = {
  'node-1': { metadata: { name: 'node-1', labels: { 'topology.kubernetes.io/zone': 'z1' } } },
};
const nodeOf = (n: string) => nodes[n];

/** Applies a plan to the list of slices, as the apiserver would (names for the created ones). */
function apply(
  existing: EndpointSlice[],
  plan: ReturnType<typeof planSlices>,
  names: { n: number },
): EndpointSlice[] {
  const gone = new Set(plan.delete.map((s) => s.metadata?.name));
  const updated = new Map(plan.update.map((s) => [s.metadata?.name, s]));
  const out = existing
    .filter((s) => !gone.has(s.metadata?.name))
    .map((s) => updated.get(s.metadata?.name) ?? s);
  for (const s of plan.create)
    out.push({ ...s, metadata: { ...s.metadata, name: `web-${names.n++}`, uid: `slice-${names.n}` } });
  return out;
}

const addresses = (slices: EndpointSlice[]) =>
  slices.flatMap((s) => (s.endpoints ?? []).map((e) => e.addresses[0])).sort();

describe('pod to endpoint', () => {
  const cases: { name: string; pod: Pod; svc?: Service; want: object | undefined }[] = [
    {
      name: 'ready pod',
      pod: pod('a', '10.0.0.1'),
      want: { ready: true, serving: true, terminating: false },
    },
    {
      name: 'unready pod',
      pod: pod('a', '10.0.0.1', { ready: false }),
      want: { ready: false, serving: false, terminating: false },
    },
    {
      name: 'terminating ready pod',
      pod: pod('a', '10.0.0.1', { deleting: true }),
      want: { ready: false, serving: true, terminating: true },
    },
    {
      name: 'publishNotReadyAddresses',
      pod: pod('a', '10.0.0.1', { ready: false, deleting: true }),
      svc: service({ publishNotReadyAddresses: true }),
      want: { ready: true, serving: true, terminating: true },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const e = podToEndpoint(c.pod, c.svc ?? service(), nodes['node-1']);
      assert.deepEqual(e?.conditions, c.want);
      assert.equal(e?.zone, 'z1');
      assert.deepEqual(e?.targetRef, { kind: 'Pod', namespace: 'default', name: 'a', uid: 'uid-a' });
    });
  }

  test('hostname only when the subdomain is the Service', () => {
    assert.equal(
      podToEndpoint(pod('a', '10.0.0.1', { hostname: 'h', subdomain: 'web' }), service(), undefined)
        ?.hostname,
      'h',
    );
    assert.equal(
      podToEndpoint(pod('a', '10.0.0.1', { hostname: 'h', subdomain: 'other' }), service(), undefined)
        ?.hostname,
      undefined,
    );
  });

  test('named target ports resolve per pod; unknown names do not', () => {
    const sp = { port: 80, targetPort: 'http', protocol: 'TCP' as const };
    assert.equal(findPort(pod('a', '1.1.1.1', { port: 9000 }), sp), 9000);
    assert.equal(findPort(pod('a', '1.1.1.1'), { ...sp, targetPort: 'nope' }), undefined);
    assert.equal(findPort(pod('a', '1.1.1.1'), { ...sp, protocol: 'UDP' }), undefined);
    assert.equal(findPort(pod('a', '1.1.1.1'), { port: 80, targetPort: 8443 }), 8443);
    assert.equal(findPort(pod('a', '1.1.1.1'), { port: 80 }), 80);
  });

  test('pods without an IP or finished are left out; terminating ones stay in slices', () => {
    const pods = [
      pod('a', undefined),
      pod('b', '10.0.0.2', { phase: 'Succeeded' }),
      pod('c', '10.0.0.3', { deleting: true }),
      pod('d', '10.0.0.4'),
    ];
    const groups = desiredPortGroups(service(), pods, nodeOf);
    assert.deepEqual(
      [...groups.values()].flatMap((g) => [...g.endpoints.values()].map((e) => e.addresses[0])).sort(),
      ['10.0.0.3', '10.0.0.4'],
    );
  });
});

describe('slice plan', () => {
  const plan = (svc: Service, pods: Pod[], existing: EndpointSlice[], max = 100) =>
    planSlices({
      meta: serviceSliceMeta(svc),
      existing,
      desired: desiredPortGroups(svc, pods, nodeOf),
      maxEndpointsPerSlice: max,
      triggerTime: Date.parse(T0),
    });

  test('three pods: one slice with the resolved port and the labels', () => {
    const svc = service({ clusterIP: 'None' }, { team: 'a', 'endpointslice.kubernetes.io/managed-by': 'me' });
    const p = plan(svc, [pod('a', '10.0.0.1'), pod('b', '10.0.0.2'), pod('c', '10.0.0.3')], []);
    assert.equal(p.create.length, 1);
    const s = p.create[0];
    assert.deepEqual(s.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.equal(s.endpoints?.length, 3);
    assert.deepEqual(s.metadata?.labels, {
      team: 'a',
      'service.kubernetes.io/headless': '',
      'kubernetes.io/service-name': 'web',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
    });
    assert.equal(s.metadata?.generateName, 'web-');
    assert.deepEqual(s.metadata?.ownerReferences, [
      {
        apiVersion: 'v1',
        kind: 'Service',
        name: 'web',
        uid: 'svc-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.equal(s.metadata?.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'], T0);
  });

  test('pods resolving the named port differently get different slices', () => {
    const p = plan(
      service(),
      [pod('a', '10.0.0.1', { port: 8080 }), pod('b', '10.0.0.2', { port: 9090 })],
      [],
    );
    assert.deepEqual(p.create.map((s) => s.ports?.[0].port).sort(), [8080, 9090]);
  });

  test('more pods than fit in a slice: several slices', () => {
    const pods = Array.from({ length: 7 }, (_, i) => pod(`p${i}`, `10.0.0.${i + 1}`));
    const p = plan(service(), pods, [], 3);
    assert.deepEqual(
      p.create.map((s) => s.endpoints?.length),
      [3, 3, 1],
    );
  });

  test('no pods: one empty placeholder slice, kept as is on the next sync', () => {
    const svc = service();
    const p = plan(svc, [], []);
    assert.equal(p.create.length, 1);
    assert.deepEqual(p.create[0].endpoints, []);
    const slices = apply([], p, { n: 0 });
    assert.deepEqual(plan(svc, [], slices), { create: [], update: [], delete: [] });
  });

  test('minimal churn over a sequence of changes', () => {
    const svc = service();
    const names = { n: 0 };
    let pods = Array.from({ length: 5 }, (_, i) => pod(`p${i}`, `10.0.0.${i + 1}`));
    let slices = apply([], plan(svc, pods, [], 3), names);
    assert.equal(slices.length, 2);

    const steps: {
      name: string;
      change: () => void;
      want: { create: number; update: number; delete: number };
    }[] = [
      { name: 'nothing changed', change: () => {}, want: { create: 0, update: 0, delete: 0 } },
      {
        name: 'one pod unready: its slice only',
        change: () => (pods[0] = pod('p0', '10.0.0.1', { ready: false })),
        want: { create: 0, update: 1, delete: 0 },
      },
      {
        name: 'one pod more: fills the slice with room',
        change: () => pods.push(pod('p5', '10.0.0.6')),
        want: { create: 0, update: 1, delete: 0 },
      },
      {
        name: 'one pod more when full: a new slice',
        change: () => pods.push(pod('p6', '10.0.0.7')),
        want: { create: 1, update: 0, delete: 0 },
      },
      {
        name: 'the lone pod goes: its slice goes',
        change: () => (pods = pods.filter((p) => p.metadata?.name !== 'p6')),
        want: { create: 0, update: 0, delete: 1 },
      },
      {
        name: 'all pods go: one slice reused as the placeholder',
        change: () => (pods = []),
        want: { create: 0, update: 1, delete: 1 },
      },
      {
        name: 'pods come back: the placeholder is reused',
        change: () => (pods = [pod('q', '10.0.1.1')]),
        want: { create: 0, update: 1, delete: 0 },
      },
    ];
    for (const s of steps) {
      s.change();
      const p = plan(svc, pods, slices, 3);
      assert.deepEqual(
        { create: p.create.length, update: p.update.length, delete: p.delete.length },
        s.want,
        s.name,
      );
      slices = apply(slices, p, names);
      const want = pods.map((x) => x.status!.podIP!).sort();
      assert.deepEqual(addresses(slices), want, s.name);
      assert.ok(
        slices.every((x) => (x.endpoints?.length ?? 0) <= 3),
        s.name,
      );
    }
  });

  test('a Service label change rewrites the labels only', () => {
    const pods = [pod('a', '10.0.0.1')];
    const slices = apply([], plan(service(), pods, []), { n: 0 });
    const p = plan(service({}, { tier: 'x' }), pods, slices);
    assert.equal(p.update.length, 1);
    assert.equal(p.update[0].metadata?.labels?.tier, 'x');
  });

  test('slice labels drop reserved keys of the Service', () => {
    const l = sliceLabels(
      service({}, { 'kubernetes.io/service-name': 'other', 'service.kubernetes.io/headless': '' }),
    );
    assert.equal(l['kubernetes.io/service-name'], 'web');
    assert.equal(l['service.kubernetes.io/headless'], undefined);
  });
});

describe('Endpoints subsets', () => {
  test('ready and not ready addresses, ports, hostname, sorted by IP', () => {
    const pods = [
      pod('b', '10.0.0.10', { ready: false }),
      pod('a', '10.0.0.9', { hostname: 'h', subdomain: 'web' }),
      pod('c', '10.0.0.2', { deleting: true }),
    ];
    const { subsets, truncated } = desiredEndpoints(service(), pods);
    assert.equal(truncated, false);
    assert.deepEqual(subsets, [
      {
        addresses: [
          {
            ip: '10.0.0.9',
            hostname: 'h',
            nodeName: 'node-1',
            targetRef: { kind: 'Pod', namespace: 'default', name: 'a', uid: 'uid-a' },
          },
        ],
        notReadyAddresses: [
          {
            ip: '10.0.0.10',
            nodeName: 'node-1',
            targetRef: { kind: 'Pod', namespace: 'default', name: 'b', uid: 'uid-b' },
          },
        ],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    ]);
  });

  test('publishNotReadyAddresses: every address is ready, terminating ones too', () => {
    const pods = [pod('b', '10.0.0.2', { ready: false }), pod('c', '10.0.0.3', { deleting: true })];
    const { subsets } = desiredEndpoints(service({ publishNotReadyAddresses: true }), pods);
    assert.deepEqual(
      subsets[0].addresses?.map((a) => a.ip),
      ['10.0.0.2', '10.0.0.3'],
    );
    assert.equal(subsets[0].notReadyAddresses, undefined);
  });

  test('headless without ports: addresses only; pods without the named port: none', () => {
    assert.deepEqual(
      desiredEndpoints(service({ clusterIP: 'None', ports: [] }), [pod('a', '10.0.0.1')]).subsets[0].ports,
      undefined,
    );
    assert.deepEqual(
      desiredEndpoints(service({ ports: [{ port: 80, targetPort: 'nope' }] }), [pod('a', '10.0.0.1')])
        .subsets,
      [],
    );
  });

  test('different resolved ports: different subsets', () => {
    const { subsets } = desiredEndpoints(service(), [
      pod('a', '10.0.0.1', { port: 1 }),
      pod('b', '10.0.0.2', { port: 2 }),
    ]);
    assert.equal(subsets.length, 2);
  });

  const truncations: {
    name: string;
    ready: number[];
    notReady: number[];
    max: number;
    want: [number, number][];
  }[] = [
    { name: 'fits', ready: [3], notReady: [2], max: 5, want: [[3, 2]] },
    {
      name: 'not ready cut first',
      ready: [3, 3],
      notReady: [4, 4],
      max: 10,
      want: [
        [3, 2],
        [3, 2],
      ],
    },
    {
      name: 'ready too many: proportional, no not-ready left',
      ready: [6, 2],
      notReady: [5, 0],
      max: 4,
      want: [
        [3, 0],
        [1, 0],
      ],
    },
  ];
  for (const c of truncations) {
    test(`truncation: ${c.name}`, () => {
      const addrs = (n: number, p: string) => Array.from({ length: n }, (_, i) => ({ ip: `10.${p}.0.${i}` }));
      const subsets = c.ready.map((r, i) => ({
        addresses: addrs(r, `${i}`),
        notReadyAddresses: addrs(c.notReady[i], `${i + 100}`),
      }));
      const truncated = truncateSubsets(subsets, c.max);
      assert.equal(truncated, c.name !== 'fits');
      assert.deepEqual(
        subsets.map((s) => [s.addresses?.length ?? 0, s.notReadyAddresses?.length ?? 0]),
        c.want,
      );
    });
  }

  test('1200 pods: 1000 addresses and truncated', () => {
    const pods = Array.from({ length: 1200 }, (_, i) => pod(`p${i}`, `10.1.${i >> 8}.${i & 255}`));
    const { subsets, truncated } = desiredEndpoints(service(), pods);
    assert.equal(truncated, true);
    assert.equal(
      subsets.reduce((n, s) => n + (s.addresses?.length ?? 0), 0),
      1000,
    );
  });
});

describe('trigger time', () => {
  test('the earliest change not yet synced; nothing when nothing changed', () => {
    const t = new TriggerTimeTracker();
    const svc = service();
    const a = pod('a', '10.0.0.1', { readyAt: '2026-01-01T00:00:10Z' });
    assert.equal(t.compute('k', svc, [a]), Date.parse(T0), 'a new Service: its creation');
    assert.equal(t.compute('k', svc, [a]), undefined);
    const b = pod('b', '10.0.0.2', { readyAt: '2026-01-01T00:00:20Z' });
    const a2 = pod('a', '10.0.0.1', { readyAt: '2026-01-01T00:00:30Z' });
    assert.equal(t.compute('k', svc, [a2, b]), Date.parse('2026-01-01T00:00:20Z'));
  });
});

describe('mirroring', () => {
  test('subsets become port groups; not-ready addresses are not ready; bad addresses and the excess are skipped', () => {
    const ep = {
      metadata: { name: 'm', namespace: 'default', uid: 'ep-uid' },
      subsets: [
        {
          addresses: [
            { ip: '192.0.2.1', hostname: 'a', nodeName: 'n1' },
            { ip: 'fe80::1' },
            { ip: '192.0.2.2' },
            { ip: '192.0.2.3' },
          ],
          notReadyAddresses: [{ ip: '192.0.2.9' }],
          ports: [{ name: 'p', port: 81, protocol: 'TCP' as const }],
        },
        { addresses: [{ ip: '192.0.2.5' }], ports: [{ port: 53, protocol: 'UDP' as const }] },
      ],
    };
    const groups = [...mirroredPortGroups(ep, 3).values()];
    assert.deepEqual(
      groups.map((g) => [
        g.ports,
        [...g.endpoints.values()].map((e) => [e.addresses[0], e.conditions?.ready]),
      ]),
      [
        [
          [{ name: 'p', port: 81, protocol: 'TCP' }],
          [
            ['192.0.2.1', true],
            ['192.0.2.2', true],
            ['192.0.2.3', true],
          ],
        ],
        [[{ name: '', port: 53, protocol: 'UDP' }], [['192.0.2.5', true]]],
      ],
    );
  });

  test('what is mirrored', () => {
    const svc = (selector?: Record<string, string>): Service => ({
      metadata: { name: 'm' },
      spec: { selector },
    });
    const ep = (labels?: Record<string, string>) => ({ metadata: { name: 'm', labels } });
    assert.equal(shouldMirror(ep(), svc()), true);
    assert.equal(
      shouldMirror(ep(), svc({ app: 'm' })),
      false,
      'a Service with a selector has its own slices',
    );
    assert.equal(shouldMirror(ep({ 'endpointslice.kubernetes.io/skip-mirror': 'true' }), svc()), false);
    assert.equal(shouldMirror(ep(), undefined), false, 'no Service');
  });
});
