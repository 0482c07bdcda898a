// A pod's resolv.conf, /etc/hosts and Service variables, case by case against
// Kubernetes' kubelet (pkg/kubelet/network/dns, pkg/kubelet/envvars).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod, Service } from 'kubernetes-types/core/v1.js';
import { type NodeDnsSettings, parseResolvConf, podDnsConfig, podHostsFile } from '../src/pods/dns.js';
import { containerEnv } from '../src/pods/env.js';
import { serviceEnv, visibleServices } from '../src/pods/service-env.js';
import { MemoryObjectSource } from '../src/pods/sinks.js';

const node: NodeDnsSettings = {
  clusterDNS: ['10.96.0.10'],
  clusterDomain: 'cluster.local',
  host: { servers: ['192.168.1.1'], searches: ['corp.example'], options: ['timeout:2'] },
};

function pod(spec: Partial<NonNullable<Pod['spec']>> = {}, namespace = 'shop'): Pod {
  return { metadata: { name: 'web-0', namespace }, spec: { containers: [{ name: 'c' }], ...spec } };
}

test('resolv.conf: the lines a resolver reads, comments and the last search line', () => {
  const c = parseResolvConf(
    '# generated\nnameserver 1.1.1.1\nnameserver 8.8.8.8 # two\nsearch a.example b.example\noptions ndots:2 edns0\nsearch c.example\n',
  );
  assert.deepEqual(c, {
    servers: ['1.1.1.1', '8.8.8.8'],
    searches: ['c.example'],
    options: ['ndots:2', 'edns0'],
  });
});

const dnsCases: {
  name: string;
  spec: Partial<NonNullable<Pod['spec']>>;
  want: unknown;
  node?: NodeDnsSettings;
}[] = [
  {
    name: 'ClusterFirst (the default): cluster DNS, the namespace search path then the node search, ndots:5',
    spec: {},
    want: {
      servers: ['10.96.0.10'],
      searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
      options: ['ndots:5'],
    },
  },
  { name: 'Default: the node resolv.conf as it is', spec: { dnsPolicy: 'Default' }, want: node.host },
  {
    name: 'ClusterFirst on the host network is Default',
    spec: { hostNetwork: true },
    want: node.host,
  },
  {
    name: 'ClusterFirstWithHostNet on the host network is ClusterFirst',
    spec: { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' },
    want: {
      servers: ['10.96.0.10'],
      searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example'],
      options: ['ndots:5'],
    },
  },
  {
    name: 'None: only dnsConfig',
    spec: {
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['1.2.3.4'],
        searches: ['ns1.svc.example'],
        options: [{ name: 'ndots', value: '2' }],
      },
    },
    want: { servers: ['1.2.3.4'], searches: ['ns1.svc.example'], options: ['ndots:2'] },
  },
  {
    name: 'dnsConfig adds to ClusterFirst; an option of the same name replaces',
    spec: {
      dnsConfig: {
        nameservers: ['10.96.0.10', '1.2.3.4'],
        searches: ['extra.example'],
        options: [{ name: 'ndots', value: '1' }, { name: 'edns0' }],
      },
    },
    want: {
      servers: ['10.96.0.10', '1.2.3.4'],
      searches: [
        'shop.svc.cluster.local',
        'svc.cluster.local',
        'cluster.local',
        'corp.example',
        'extra.example',
      ],
      options: ['ndots:1', 'edns0'],
    },
  },
  {
    name: 'ClusterFirst without --cluster-dns falls back to Default',
    spec: {},
    node: { ...node, clusterDNS: [] },
    want: node.host,
  },
];

for (const c of dnsCases) {
  test(`dnsPolicy: ${c.name}`, () => {
    assert.deepEqual(podDnsConfig(pod(c.spec), c.node ?? node).config, c.want);
  });
}

test('dnsPolicy: more than 3 nameservers are cut, with a warning naming what applies', () => {
  const r = podDnsConfig(
    pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '1.1.1.2', '1.1.1.3', '1.1.1.4'] } }),
    node,
  );
  assert.deepEqual(r.config.servers, ['1.1.1.1', '1.1.1.2', '1.1.1.3']);
  assert.match(r.warnings[0], /Nameserver limits were exceeded.*1\.1\.1\.1 1\.1\.1\.2 1\.1\.1\.3$/);
});

test('/etc/hosts: localhost, the pod name, its FQDN with a subdomain, hostAliases', () => {
  const plain = podHostsFile(pod(), '10.244.1.7', 'cluster.local');
  assert.match(plain, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
  assert.match(plain, /\n10\.244\.1\.7\tweb-0\n$/);
  const sub = podHostsFile(
    pod({
      hostname: 'db-0',
      subdomain: 'db',
      hostAliases: [{ ip: '10.1.2.3', hostnames: ['foo.local', 'bar'] }],
    }),
    '10.244.1.8',
    'cluster.local',
  );
  assert.match(sub, /\n10\.244\.1\.8\tdb-0\.db\.shop\.svc\.cluster\.local\tdb-0\n/);
  assert.match(sub, /# Entries added by HostAliases\.\n10\.1\.2\.3\tfoo\.local\tbar\n$/);
});

function svc(
  namespace: string,
  name: string,
  clusterIP: string,
  ports: NonNullable<Service['spec']>['ports'],
): Service {
  return { metadata: { namespace, name }, spec: { clusterIP, ports } };
}

const services = new Map<string, Service[]>([
  [
    'default',
    [
      svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]),
      svc('default', 'other', '10.96.0.20', [{ port: 80 }]),
    ],
  ],
  [
    'shop',
    [
      svc('shop', 'redis-primary', '10.96.4.5', [
        { name: 'redis', port: 6379, protocol: 'TCP' },
        { name: 'metrics', port: 9121, protocol: 'TCP' },
      ]),
      svc('shop', 'headless', 'None', [{ port: 80 }]),
    ],
  ],
]);
const source = { list: (ns: string) => services.get(ns) ?? [] };

test('Service variables: kubernetes from default, the pod namespace, no headless; names upper-cased', () => {
  const vars = serviceEnv(visibleServices(pod(), source));
  assert.equal(vars.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
  assert.equal(vars.get('KUBERNETES_SERVICE_PORT'), '443');
  assert.equal(vars.get('KUBERNETES_SERVICE_PORT_HTTPS'), '443');
  assert.equal(vars.get('KUBERNETES_PORT'), 'tcp://10.96.0.1:443');
  assert.equal(vars.get('REDIS_PRIMARY_SERVICE_HOST'), '10.96.4.5');
  assert.equal(vars.get('REDIS_PRIMARY_SERVICE_PORT'), '6379');
  assert.equal(vars.get('REDIS_PRIMARY_SERVICE_PORT_METRICS'), '9121');
  assert.equal(vars.get('REDIS_PRIMARY_PORT'), 'tcp://10.96.4.5:6379');
  assert.equal(vars.get('REDIS_PRIMARY_PORT_9121_TCP'), 'tcp://10.96.4.5:9121');
  assert.equal(vars.get('REDIS_PRIMARY_PORT_9121_TCP_PROTO'), 'tcp');
  assert.equal(vars.get('REDIS_PRIMARY_PORT_9121_TCP_PORT'), '9121');
  assert.equal(vars.get('REDIS_PRIMARY_PORT_9121_TCP_ADDR'), '10.96.4.5');
  assert.ok(![...vars.keys()].some((k) => k.startsWith('HEADLESS_')), 'a headless Service has no variables');
  assert.ok(
    ![...vars.keys()].some((k) => k.startsWith('OTHER_')),
    "default's other Services are not the pod's",
  );
});

test('Service variables: enableServiceLinks false keeps only the kubernetes Service', () => {
  const vars = serviceEnv(visibleServices(pod({ enableServiceLinks: false }), source));
  assert.deepEqual(
    [...vars.keys()].filter((k) => !k.startsWith('KUBERNETES_')),
    [],
  );
  assert.equal(vars.get('KUBERNETES_SERVICE_HOST'), '10.96.0.1');
});

test("Service variables: the container's own win, come first and may refer to them", async () => {
  const p = pod({
    containers: [
      {
        name: 'c',
        env: [
          { name: 'REDIS_PRIMARY_SERVICE_PORT', value: '1234' },
          { name: 'REDIS_URL', value: 'redis://$(REDIS_PRIMARY_SERVICE_HOST):$(REDIS_PRIMARY_SERVICE_PORT)' },
        ],
      },
    ],
  });
  const vars = serviceEnv(visibleServices(p, source));
  const env = await containerEnv(
    p,
    p.spec?.containers[0] ?? { name: 'c' },
    new MemoryObjectSource(),
    { podIP: '', hostIP: '' },
    vars,
  );
  assert.deepEqual(env.slice(0, 2), [
    { key: 'REDIS_PRIMARY_SERVICE_PORT', value: '1234' },
    { key: 'REDIS_URL', value: 'redis://10.96.4.5:1234' },
  ]);
  assert.equal(env.filter((e) => e.key === 'REDIS_PRIMARY_SERVICE_PORT').length, 1);
  assert.equal(env.find((e) => e.key === 'KUBERNETES_SERVICE_HOST')?.value, '10.96.0.1');
});
