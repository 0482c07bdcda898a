// The cluster zone's answers, case by case against the Kubernetes DNS
// specification (kubernetes/dns docs/specification.md, the section in each case's name).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EndpointSlice, Service } from '@kubit/api';
import { ClusterZone, type LookupResult } from '../src/zone.js';

const Z = 'cluster.local';

function svc(name: string, ns: string, spec: Service['spec']): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec };
}

function slice(
  name: string,
  ns: string,
  service: string,
  endpoints: { ip: string; hostname?: string; ready?: boolean }[],
  ports: { name?: string; port: number; protocol?: string }[] = [],
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      ...(e.hostname ? { hostname: e.hostname } : {}),
      conditions: e.ready === undefined ? {} : { ready: e.ready },
    })),
    ports,
  };
}

function zone(): ClusterZone {
  const z = new ClusterZone({ zone: Z, ttl: 30 });
  z.upsertService(
    svc('web', 'default', {
      clusterIP: '10.96.0.20',
      ports: [
        { name: 'http', port: 80, protocol: 'TCP' },
        { name: 'dns', port: 53, protocol: 'UDP' },
        { port: 8080 },
      ],
    }),
  );
  z.upsertService(
    svc('db', 'prod', {
      clusterIP: 'None',
      ports: [{ name: 'pg', port: 5432 }],
      publishNotReadyAddresses: false,
    }),
  );
  z.upsertSlice(
    slice(
      'db-abc',
      'prod',
      'db',
      [
        { ip: '10.244.1.5', hostname: 'db-0' },
        { ip: '10.244.2.6', hostname: 'db-1', ready: true },
        { ip: '10.244.2.7' },
        { ip: '10.244.2.8', hostname: 'db-3', ready: false },
      ],
      [{ name: 'pg', port: 5432, protocol: 'TCP' }],
    ),
  );
  z.upsertService(svc('ext', 'default', { type: 'ExternalName', externalName: 'www.example.com.' }));
  z.upsertService(
    svc('alias', 'default', { type: 'ExternalName', externalName: 'web.default.svc.cluster.local' }),
  );
  z.upsertService(svc('empty', 'default', { clusterIP: 'None' }));
  return z;
}

type Row = {
  what: string;
  q: string;
  type: string;
  rcode?: 'NOERROR' | 'NXDOMAIN';
  /** "TYPE data" per answer, in any order. */
  answers?: string[];
  forward?: boolean;
  soa?: boolean;
  chase?: string;
};

function show(r: LookupResult): string[] {
  if (r.kind !== 'answer') return [];
  return r.answers.map((a) => {
    if (a.type === 'SRV') return `SRV ${a.data.priority} ${a.data.weight} ${a.data.port} ${a.data.target}`;
    if (a.type === 'TXT') return `TXT ${a.data.join(' ')}`;
    if (a.type === 'SOA') return `SOA ${a.data.mname}`;
    return `${a.type} ${a.data}`;
  });
}

const rows: Row[] = [
  {
    what: '2.3.1 A of a ClusterIP Service',
    q: 'web.default.svc.cluster.local.',
    type: 'A',
    answers: ['A 10.96.0.20'],
  },
  {
    what: '2.1 comparisons are case-insensitive',
    q: 'WEB.Default.SVC.cluster.LOCAL',
    type: 'A',
    answers: ['A 10.96.0.20'],
  },
  {
    what: 'NODATA: AAAA of an IPv4-only Service',
    q: 'web.default.svc.cluster.local',
    type: 'AAAA',
    answers: [],
    soa: true,
  },
  {
    what: '2.3.2 SRV of a named TCP port',
    q: '_http._tcp.web.default.svc.cluster.local',
    type: 'SRV',
    answers: ['SRV 0 100 80 web.default.svc.cluster.local'],
  },
  {
    what: '2.3.2 SRV of a named UDP port',
    q: '_dns._udp.web.default.svc.cluster.local',
    type: 'SRV',
    answers: ['SRV 0 100 53 web.default.svc.cluster.local'],
  },
  {
    what: '2.3.2 the protocol must match',
    q: '_dns._tcp.web.default.svc.cluster.local',
    type: 'SRV',
    rcode: 'NXDOMAIN',
  },
  {
    what: 'empty non-terminal _tcp.<svc> is NODATA',
    q: '_tcp.web.default.svc.cluster.local',
    type: 'SRV',
    answers: [],
    soa: true,
  },
  {
    what: '2.3.3 PTR of a cluster IP',
    q: '20.0.96.10.in-addr.arpa.',
    type: 'PTR',
    answers: ['PTR web.default.svc.cluster.local'],
  },
  {
    what: '2.4.1 headless A: every ready endpoint (nil ready counts), not the unready',
    q: 'db.prod.svc.cluster.local',
    type: 'A',
    answers: ['A 10.244.1.5', 'A 10.244.2.6', 'A 10.244.2.7'],
  },
  { what: '2.4.1 hostname A', q: 'db-0.db.prod.svc.cluster.local', type: 'A', answers: ['A 10.244.1.5'] },
  {
    what: '2.4.1 hostname of an unready endpoint: none',
    q: 'db-3.db.prod.svc.cluster.local',
    type: 'A',
    rcode: 'NXDOMAIN',
  },
  {
    what: '2.1 system-assigned hostname (dashed IP) of an endpoint without one',
    q: '10-244-2-7.db.prod.svc.cluster.local',
    type: 'A',
    answers: ['A 10.244.2.7'],
  },
  {
    what: '2.4.2 headless SRV: one per ready endpoint',
    q: '_pg._tcp.db.prod.svc.cluster.local',
    type: 'SRV',
    answers: [
      'SRV 0 100 5432 db-0.db.prod.svc.cluster.local',
      'SRV 0 100 5432 db-1.db.prod.svc.cluster.local',
      'SRV 0 100 5432 10-244-2-7.db.prod.svc.cluster.local',
    ],
  },
  {
    what: '2.4.3 PTR of a headless endpoint',
    q: '6.2.244.10.in-addr.arpa',
    type: 'PTR',
    answers: ['PTR db-1.db.prod.svc.cluster.local'],
  },
  {
    what: 'a reverse name we do not hold goes upstream',
    q: '1.1.168.192.in-addr.arpa',
    type: 'PTR',
    forward: true,
  },
  {
    what: '2.4.1 headless without ready endpoints: NXDOMAIN',
    q: 'empty.default.svc.cluster.local',
    type: 'A',
    rcode: 'NXDOMAIN',
  },
  {
    what: '2.5 ExternalName: CNAME, target resolved upstream',
    q: 'ext.default.svc.cluster.local',
    type: 'A',
    answers: ['CNAME www.example.com'],
    chase: 'www.example.com',
  },
  {
    what: '2.5 CNAME asked for itself',
    q: 'ext.default.svc.cluster.local',
    type: 'CNAME',
    answers: ['CNAME www.example.com'],
  },
  {
    what: '2.5 ExternalName pointing into the zone is followed here',
    q: 'alias.default.svc.cluster.local',
    type: 'A',
    answers: ['CNAME web.default.svc.cluster.local', 'A 10.96.0.20'],
  },
  { what: '2.2 schema version TXT', q: 'dns-version.cluster.local', type: 'TXT', answers: ['TXT 1.0.1'] },
  {
    what: '2.6 pod A record',
    q: '10-244-1-9.default.pod.cluster.local',
    type: 'A',
    answers: ['A 10.244.1.9'],
  },
  { what: '2.6 not an address', q: '10-244-1-999.default.pod.cluster.local', type: 'A', rcode: 'NXDOMAIN' },
  { what: 'SOA of the zone apex', q: 'cluster.local', type: 'SOA', answers: ['SOA ns.dns.cluster.local'] },
  { what: 'A at the apex: NODATA', q: 'cluster.local', type: 'A', answers: [], soa: true },
  {
    what: 'namespace with Services: NODATA',
    q: 'default.svc.cluster.local',
    type: 'A',
    answers: [],
    soa: true,
  },
  { what: 'svc.<zone>: NODATA', q: 'svc.cluster.local', type: 'A', answers: [], soa: true },
  {
    what: 'unknown Service: NXDOMAIN',
    q: 'nope.default.svc.cluster.local',
    type: 'A',
    rcode: 'NXDOMAIN',
    soa: true,
  },
  { what: 'unknown namespace: NXDOMAIN', q: 'web.nope.svc.cluster.local', type: 'A', rcode: 'NXDOMAIN' },
  { what: 'outside the zone: forward', q: 'example.com', type: 'A', forward: true },
  { what: 'a zone that only ends like ours: forward', q: 'xcluster.local', type: 'A', forward: true },
];

describe('cluster zone lookups', () => {
  const z = zone();
  for (const row of rows) {
    it(row.what, () => {
      const r = z.lookup(row.q, row.type);
      if (row.forward) {
        assert.equal(r.kind, 'forward');
        return;
      }
      assert.equal(r.kind, 'answer');
      if (r.kind !== 'answer') return;
      assert.equal(r.rcode, row.rcode ?? 'NOERROR');
      if (row.answers) assert.deepEqual(show(r).sort(), [...row.answers].sort());
      if (row.soa) {
        assert.equal(r.authorities.length, 1);
        assert.equal(r.authorities[0].type, 'SOA');
        assert.equal(r.authorities[0].name, 'cluster.local');
      }
      if (row.chase) assert.deepEqual(r.chase, { name: row.chase, type: row.type });
      else assert.equal(r.chase, undefined);
    });
  }

  it('answers echo the name as asked', () => {
    const r = z.lookup('WEB.default.svc.cluster.local.', 'A');
    assert.ok(r.kind === 'answer');
    assert.equal(r.answers[0].name, 'WEB.default.svc.cluster.local');
    assert.equal(r.answers[0].ttl, 30);
  });

  it('SRV answers carry the targets A records as additionals', () => {
    const r = z.lookup('_pg._tcp.db.prod.svc.cluster.local', 'SRV');
    assert.ok(r.kind === 'answer');
    assert.deepEqual(r.additionals.map((a) => `${a.name} ${a.data}`).sort(), [
      '10-244-2-7.db.prod.svc.cluster.local 10.244.2.7',
      'db-0.db.prod.svc.cluster.local 10.244.1.5',
      'db-1.db.prod.svc.cluster.local 10.244.2.6',
    ]);
  });
});

describe('cluster zone changes', () => {
  it('publishNotReadyAddresses adds the unready endpoints', () => {
    const z = zone();
    z.upsertService(svc('db', 'prod', { clusterIP: 'None', publishNotReadyAddresses: true }));
    const r = z.lookup('db-3.db.prod.svc.cluster.local', 'A');
    assert.deepEqual(show(r), ['A 10.244.2.8']);
  });

  it('a deleted Service takes all its names with it, and its empty parents', () => {
    const z = zone();
    z.deleteService(svc('web', 'default', {}));
    for (const [q, t] of [
      ['web.default.svc.cluster.local', 'A'],
      ['_http._tcp.web.default.svc.cluster.local', 'SRV'],
      ['_tcp.web.default.svc.cluster.local', 'SRV'],
    ]) {
      const r = z.lookup(q, t);
      assert.ok(r.kind === 'answer' && r.rcode === 'NXDOMAIN', q);
    }
    assert.equal(z.lookup('20.0.96.10.in-addr.arpa', 'PTR').kind, 'forward');
    // default still has ext and alias.
    const ns = z.lookup('default.svc.cluster.local', 'A');
    assert.ok(ns.kind === 'answer' && ns.rcode === 'NOERROR');
  });

  it('an endpoint added or removed changes the headless answer', () => {
    const z = zone();
    z.upsertSlice(slice('db-xyz', 'prod', 'db', [{ ip: '10.244.3.3', hostname: 'db-9' }]));
    assert.deepEqual(show(z.lookup('db-9.db.prod.svc.cluster.local', 'A')), ['A 10.244.3.3']);
    assert.equal(show(z.lookup('db.prod.svc.cluster.local', 'A')).length, 4);
    z.deleteSlice(slice('db-abc', 'prod', 'db', []));
    assert.deepEqual(show(z.lookup('db.prod.svc.cluster.local', 'A')), ['A 10.244.3.3']);
    const gone = z.lookup('db-0.db.prod.svc.cluster.local', 'A');
    assert.ok(gone.kind === 'answer' && gone.rcode === 'NXDOMAIN');
  });

  it('a slice relabelled to another Service leaves the first', () => {
    const z = zone();
    z.upsertService(svc('db2', 'prod', { clusterIP: 'None' }));
    const before = slice('db-abc', 'prod', 'db', [{ ip: '10.244.1.5', hostname: 'db-0' }]);
    const after = slice('db-abc', 'prod', 'db2', [{ ip: '10.244.1.5', hostname: 'db-0' }]);
    z.upsertSlice(after, before);
    assert.deepEqual(show(z.lookup('db-0.db2.prod.svc.cluster.local', 'A')), ['A 10.244.1.5']);
    const r = z.lookup('db.prod.svc.cluster.local', 'A');
    assert.ok(r.kind === 'answer' && r.rcode === 'NXDOMAIN');
  });

  it('a cluster IP allocated later appears', () => {
    const z = new ClusterZone({ zone: Z, ttl: 5 });
    z.upsertService(svc('late', 'default', { clusterIP: '' }));
    const before = z.lookup('late.default.svc.cluster.local', 'A');
    assert.ok(before.kind === 'answer' && before.rcode === 'NXDOMAIN');
    const gen = z.generation;
    z.upsertService(svc('late', 'default', { clusterIP: '10.96.5.5' }));
    assert.ok(z.generation > gen);
    const r = z.lookup('late.default.svc.cluster.local', 'A');
    assert.deepEqual(show(r), ['A 10.96.5.5']);
    assert.ok(r.kind === 'answer' && r.answers[0].ttl === 5);
  });

  it('another cluster domain', () => {
    const z = new ClusterZone({ zone: 'kubit.internal.', ttl: 30 });
    z.upsertService(svc('web', 'default', { clusterIP: '10.96.0.20' }));
    assert.deepEqual(show(z.lookup('web.default.svc.kubit.internal', 'A')), ['A 10.96.0.20']);
    assert.equal(z.lookup('web.default.svc.cluster.local', 'A').kind, 'forward');
  });
});

describe('cluster zone generations', () => {
  it('an update that changes no record keeps the generation (and so the answer cache)', () => {
    const z = zone();
    const gen = z.generation;
    z.upsertService(
      svc('web', 'default', {
        clusterIP: '10.96.0.20',
        ports: [
          { name: 'http', port: 80, protocol: 'TCP' },
          { name: 'dns', port: 53, protocol: 'UDP' },
          { port: 8080 },
        ],
        sessionAffinity: 'ClientIP',
      }),
    );
    assert.equal(z.generation, gen);
    z.upsertService(svc('web', 'default', { clusterIP: '10.96.0.21' }));
    assert.ok(z.generation > gen);
  });
});
