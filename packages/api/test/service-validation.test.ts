// Service, Endpoints and EndpointSlice validation, case by case against the messages
// and field paths of Kubernetes' ValidateService, ValidateServiceUpdate,
// ValidateEndpoints and the discovery validation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldErrorString, validateObject, validateUpdate } from '../src/index.js';

type Obj = Record<string, unknown>;

/** A ClusterIP Service as the apiserver has it after defaulting and allocation. */
function service(spec: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      type: 'ClusterIP',
      selector: { app: 'web' },
      ports: [{ port: 80, protocol: 'TCP', targetPort: 8080 }],
      clusterIP: '10.96.0.20',
      clusterIPs: ['10.96.0.20'],
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
      ...spec,
    },
  };
}

const nodePort = (spec: Obj = {}): Obj =>
  service({
    type: 'NodePort',
    externalTrafficPolicy: 'Cluster',
    ports: [{ port: 80, protocol: 'TCP', targetPort: 80, nodePort: 30080 }],
    ...spec,
  });

const loadBalancer = (spec: Obj = {}): Obj =>
  nodePort({ type: 'LoadBalancer', allocateLoadBalancerNodePorts: true, ...spec });

const externalName = (spec: Obj = {}): Obj => {
  const s = service();
  const base = s.spec as Obj;
  for (const k of [
    'clusterIP',
    'clusterIPs',
    'ipFamilies',
    'ipFamilyPolicy',
    'internalTrafficPolicy',
    'selector',
  ])
    delete base[k];
  Object.assign(base, { type: 'ExternalName', externalName: 'db.example.com', ports: [], ...spec });
  return s;
};

const errorsOf = (o: Obj): string[] => validateObject(o).map(fieldErrorString);

const cases: [string, Obj, string[]][] = [
  ['a ClusterIP Service', service(), []],
  ['a NodePort Service', nodePort(), []],
  [
    'a LoadBalancer with Local traffic and its health check port',
    loadBalancer({ externalTrafficPolicy: 'Local', healthCheckNodePort: 31000 }),
    [],
  ],
  ['an ExternalName Service', externalName(), []],
  ['an ExternalName with a trailing dot', externalName({ externalName: 'db.example.com.' }), []],
  ['headless without ports', service({ clusterIP: 'None', clusterIPs: ['None'], ports: [] }), []],
  ['no ports', service({ ports: [] }), ['spec.ports: Required value']],
  [
    'an unknown type',
    service({ type: 'Magic' }),
    [
      'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    ],
  ],
  [
    'two ports, one without a name',
    service({
      ports: [
        { name: 'http', port: 80, protocol: 'TCP', targetPort: 80 },
        { port: 443, protocol: 'TCP', targetPort: 443 },
      ],
    }),
    ['spec.ports[1].name: Required value'],
  ],
  [
    'a duplicate port name',
    service({
      ports: [
        { name: 'http', port: 80, protocol: 'TCP', targetPort: 80 },
        { name: 'http', port: 81, protocol: 'TCP', targetPort: 81 },
      ],
    }),
    ['spec.ports[1].name: Duplicate value: "http"'],
  ],
  [
    'a port name that is not a DNS label',
    service({ ports: [{ name: 'HTTP', port: 80, protocol: 'TCP', targetPort: 80 }] }),
    [
      "spec.ports[0].name: Invalid value: \"HTTP\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ],
  ],
  [
    'a duplicate port and protocol',
    service({
      ports: [
        { name: 'a', port: 80, protocol: 'TCP', targetPort: 80 },
        { name: 'b', port: 80, protocol: 'TCP', targetPort: 81 },
      ],
    }),
    ['spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80}'],
  ],
  [
    'one port number over TCP and UDP',
    service({
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
      ],
    }),
    [],
  ],
  [
    'a port out of range',
    service({ ports: [{ port: 70000, protocol: 'TCP', targetPort: 80 }] }),
    ['spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive'],
  ],
  [
    'an unknown protocol',
    service({ ports: [{ port: 80, protocol: 'ICMP', targetPort: 80 }] }),
    ['spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'],
  ],
  ['a named target port', service({ ports: [{ port: 80, protocol: 'TCP', targetPort: 'http' }] }), []],
  [
    'a target port out of range',
    service({ ports: [{ port: 80, protocol: 'TCP', targetPort: 0 }] }),
    ['spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive'],
  ],
  [
    'a target port name too long',
    service({ ports: [{ port: 80, protocol: 'TCP', targetPort: 'a-very-long-port-name' }] }),
    ['spec.ports[0].targetPort: Invalid value: "a-very-long-port-name": must be no more than 15 characters'],
  ],
  [
    'a node port on a ClusterIP Service',
    service({ ports: [{ port: 80, protocol: 'TCP', targetPort: 80, nodePort: 30080 }] }),
    ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"],
  ],
  [
    'a duplicate node port',
    nodePort({
      ports: [
        { name: 'a', port: 80, protocol: 'TCP', targetPort: 80, nodePort: 30080 },
        { name: 'b', port: 81, protocol: 'TCP', targetPort: 81, nodePort: 30080 },
      ],
    }),
    ['spec.ports[1].nodePort: Duplicate value: 30080'],
  ],
  ['ExternalName without a name', externalName({ externalName: '' }), ['spec.externalName: Required value']],
  [
    'ExternalName with a bad name',
    externalName({ externalName: 'not_a_name' }),
    [
      "spec.externalName: Invalid value: \"not_a_name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ],
  ],
  [
    'ExternalName with a cluster IP',
    externalName({ clusterIP: '10.96.0.5', clusterIPs: ['10.96.0.5'] }),
    ['spec.clusterIPs: Forbidden: may not be set for ExternalName services'],
  ],
  [
    'a cluster IP that is no IP',
    service({ clusterIP: 'banana', clusterIPs: ['banana'] }),
    [
      'spec.clusterIPs[0]: Invalid value: "banana": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ],
  ],
  [
    'clusterIPs[0] not clusterIP',
    service({ clusterIPs: ['10.96.0.21'] }),
    ['spec.clusterIPs: Invalid value: ["10.96.0.21"]: first value must match `clusterIP`'],
  ],
  [
    'clusterIPs without clusterIP',
    service({ clusterIP: '', clusterIPs: ['10.96.0.21'] }),
    ['spec.clusterIPs: Invalid value: ["10.96.0.21"]: must be empty when `clusterIP` is not specified'],
  ],
  [
    'headless NodePort',
    nodePort({ clusterIP: 'None', clusterIPs: ['None'] }),
    ['spec.clusterIPs[0]: Invalid value: "None": may not be set to \'None\' for NodePort services'],
  ],
  [
    'an unknown IP family',
    service({ ipFamilies: ['IPv5'] }),
    ['spec.ipFamilies[0]: Unsupported value: "IPv5": supported values: "IPv4", "IPv6"'],
  ],
  [
    'an unknown IP family policy',
    service({ ipFamilyPolicy: 'Both' }),
    [
      'spec.ipFamilyPolicy: Unsupported value: "Both": supported values: "PreferDualStack", "RequireDualStack", "SingleStack"',
    ],
  ],
  [
    'an IPv4 family with an IPv6 address',
    service({ clusterIP: 'fd00::10', clusterIPs: ['fd00::10'] }),
    ['spec.clusterIPs[0]: Invalid value: "fd00::10": expected an IPv4 value as indicated by `ipFamilies[0]`'],
  ],
  [
    'an unknown session affinity',
    service({ sessionAffinity: 'Sticky' }),
    ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"'],
  ],
  [
    'ClientIP affinity of a day',
    service({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86400 } } }),
    [],
  ],
  [
    'ClientIP affinity over a day',
    service({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86401 } } }),
    [
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400',
    ],
  ],
  [
    'ClientIP affinity of 0 seconds',
    service({ sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 0 } } }),
    [
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400',
    ],
  ],
  [
    'ClientIP affinity without its config',
    service({ sessionAffinity: 'ClientIP' }),
    ['spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP'],
  ],
  [
    'externalTrafficPolicy on a ClusterIP Service',
    service({ externalTrafficPolicy: 'Local' }),
    [
      'spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services',
    ],
  ],
  [
    'an unknown externalTrafficPolicy',
    nodePort({ externalTrafficPolicy: 'Nearby' }),
    ['spec.externalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"'],
  ],
  [
    'an unknown internalTrafficPolicy',
    service({ internalTrafficPolicy: 'Nearby' }),
    ['spec.internalTrafficPolicy: Unsupported value: "Nearby": supported values: "Cluster", "Local"'],
  ],
  [
    'a health check port on a NodePort Service',
    nodePort({ healthCheckNodePort: 31000 }),
    [
      "spec.healthCheckNodePort: Invalid value: 31000: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
    ],
  ],
  [
    'Local LoadBalancer without its health check port',
    loadBalancer({ externalTrafficPolicy: 'Local' }),
    ['spec.healthCheckNodePort: Required value'],
  ],
  [
    'allocateLoadBalancerNodePorts on a NodePort Service',
    nodePort({ allocateLoadBalancerNodePorts: false }),
    ["spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'"],
  ],
  [
    'a bad selector',
    service({ selector: { 'bad key!': 'x' } }),
    [
      "spec.selector: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ],
  ],
  [
    'a loopback external IP',
    service({ externalIPs: ['127.0.0.1'], externalTrafficPolicy: 'Cluster' }),
    [
      'spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    ],
  ],
];

describe('Service validation', () => {
  for (const [what, svc, want] of cases) {
    it(what, () => assert.deepEqual(errorsOf(svc), want));
  }
});

describe('Service update validation', () => {
  const update = (next: Obj, old: Obj) => validateUpdate(next, old).map(fieldErrorString);

  it('keeps a cluster IP once set', () => {
    assert.deepEqual(update(service({ clusterIP: '10.96.0.21', clusterIPs: ['10.96.0.21'] }), service()), [
      'spec.clusterIPs[0]: Invalid value: ["10.96.0.21"]: may not change once set',
    ]);
  });

  it('may not unset the primary cluster IP', () => {
    assert.deepEqual(update(service({ clusterIP: '', clusterIPs: [] }), service()), [
      'spec.clusterIPs[0]: Invalid value: []: primary clusterIP can not be unset',
    ]);
  });

  it('lets a Service turn into ExternalName and back, dropping and getting a cluster IP', () => {
    assert.deepEqual(update(externalName(), service()), []);
    assert.deepEqual(
      update(service({ clusterIP: '10.96.0.30', clusterIPs: ['10.96.0.30'] }), externalName()),
      [],
    );
  });

  it('lets a ClusterIP Service become NodePort keeping its address', () => {
    assert.deepEqual(update(nodePort(), service()), []);
  });
});

describe('Endpoints validation', () => {
  const endpoints = (subsets: unknown[]): Obj => ({
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: 'web', namespace: 'default' },
    subsets,
  });
  const table: [string, unknown[], string[]][] = [
    [
      'ready and not-ready addresses',
      [
        {
          addresses: [{ ip: '10.244.0.5' }],
          notReadyAddresses: [{ ip: '10.244.1.5' }],
          ports: [{ port: 80, protocol: 'TCP' }],
        },
      ],
      [],
    ],
    [
      'a subset without addresses',
      [{ ports: [{ port: 80, protocol: 'TCP' }] }],
      ['subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`'],
    ],
    [
      'an address that is no IP',
      [{ addresses: [{ ip: 'x' }] }],
      [
        'subsets[0].addresses[0].ip: Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      ],
    ],
    [
      'a loopback address',
      [{ addresses: [{ ip: '127.0.0.1' }] }],
      [
        'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
      ],
    ],
    [
      'two ports, one unnamed',
      [
        {
          addresses: [{ ip: '10.244.0.5' }],
          ports: [
            { name: 'a', port: 80, protocol: 'TCP' },
            { port: 81, protocol: 'TCP' },
          ],
        },
      ],
      ['subsets[0].ports[1].name: Required value'],
    ],
  ];
  for (const [what, subsets, want] of table) {
    it(what, () => assert.deepEqual(errorsOf(endpoints(subsets)), want));
  }
});

describe('EndpointSlice validation', () => {
  const slice = (extra: Obj): Obj => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'web-abc', namespace: 'default' },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['10.244.0.5'], conditions: { ready: true } }],
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    ...extra,
  });
  const table: [string, Obj, string[]][] = [
    ['a slice', slice({}), []],
    [
      'an unknown address type',
      slice({ addressType: 'IPX' }),
      ['addressType: Unsupported value: "IPX": supported values: "FQDN", "IPv4", "IPv6"'],
    ],
    [
      'an endpoint without addresses',
      slice({ endpoints: [{ addresses: [] }] }),
      ['endpoints[0].addresses: Required value: must contain at least 1 address'],
    ],
    [
      'an IPv6 address in an IPv4 slice',
      slice({ endpoints: [{ addresses: ['fd00::1'] }] }),
      ['endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address'],
    ],
    [
      'two ports of one name',
      slice({
        ports: [
          { name: 'http', port: 80, protocol: 'TCP' },
          { name: 'http', port: 81, protocol: 'TCP' },
        ],
      }),
      ['ports[1].name: Duplicate value: "http"'],
    ],
  ];
  for (const [what, s, want] of table) {
    it(what, () => assert.deepEqual(errorsOf(s), want));
  }

  it('keeps its address type', () => {
    assert.deepEqual(
      validateUpdate(slice({ addressType: 'IPv6', endpoints: [] }), slice({})).map(fieldErrorString),
      ['addressType: Invalid value: "IPv6": field is immutable'],
    );
  });
});
