import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  applyDefaults,
  assertValid,
  type FieldError,
  fieldErrorString,
  invalidError,
  isDNS1123Label,
  isDNS1123Subdomain,
  isStatusError,
  validateObject,
  validateUpdate,
} from '../src/index.js';

type Obj = Record<string, unknown>;
const clone = <T>(v: T): T => structuredClone(v);

function pod(): Obj {
  return applyDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'nginx:1.25',
          ports: [{ containerPort: 80, name: 'http' }],
          resources: { requests: { cpu: '100m' }, limits: { cpu: '1', memory: '64Mi' } },
          volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg' }],
          livenessProbe: { httpGet: { port: 80 } },
        },
      ],
      volumes: [{ name: 'cfg', configMap: { name: 'cfg' } }],
    },
  });
}

function deployment(): Obj {
  return applyDefaults({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'app', image: 'nginx' }] },
      },
    },
  });
}

function messages(errs: FieldError[]): string[] {
  return errs.map(fieldErrorString);
}

/** Sets a value at a dotted path with [i] indexes. */
function set(o: Obj, path: string, value: unknown): Obj {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let cur: Record<string, unknown> = o;
  for (const p of parts.slice(0, -1)) cur = cur[p] as Record<string, unknown>;
  const last = parts[parts.length - 1];
  if (value === undefined) delete cur[last];
  else cur[last] = value;
  return o;
}

describe('validateObject: pods', () => {
  it('a defaulted pod is valid', () => {
    assert.deepEqual(messages(validateObject(pod())), []);
  });

  const cases: [string, (p: Obj) => void, string][] = [
    [
      'missing name',
      (p) => set(p, 'metadata.name', undefined),
      'metadata.name: Required value: name or generateName is required',
    ],
    [
      'bad name',
      (p) => set(p, 'metadata.name', 'Web_1'),
      `metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    ],
    [
      'missing namespace',
      (p) => set(p, 'metadata.namespace', undefined),
      'metadata.namespace: Required value',
    ],
    ['no containers', (p) => set(p, 'spec.containers', []), 'spec.containers: Required value'],
    [
      'missing image',
      (p) => set(p, 'spec.containers[0].image', undefined),
      'spec.containers[0].image: Required value',
    ],
    [
      'port out of range',
      (p) => set(p, 'spec.containers[0].ports[0].containerPort', 70000),
      'spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ],
    [
      'bad protocol',
      (p) => set(p, 'spec.containers[0].ports[0].protocol', 'ICMP'),
      'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ],
    [
      'bad restart policy',
      (p) => set(p, 'spec.restartPolicy', 'Sometimes'),
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ],
    [
      'bad pull policy',
      (p) => set(p, 'spec.containers[0].imagePullPolicy', 'Maybe'),
      'spec.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: "Always", "IfNotPresent", "Never"',
    ],
    [
      'bad dns policy',
      (p) => set(p, 'spec.dnsPolicy', 'X'),
      'spec.dnsPolicy: Unsupported value: "X": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
    ],
    [
      'requests above limits',
      (p) => set(p, 'spec.containers[0].resources.requests.cpu', '2'),
      'spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1',
    ],
    [
      'extended resource request differs from its limit',
      (p) =>
        set(p, 'spec.containers[0].resources', {
          requests: { 'example.com/gpu': '1' },
          limits: { 'example.com/gpu': '2' },
        }),
      'spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "1": must be equal to example.com/gpu limit',
    ],
    [
      'malformed quantity',
      (p) => set(p, 'spec.containers[0].resources.limits.memory', '64 MB'),
      `spec.containers[0].resources.limits[memory]: Invalid value: "64 MB": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
    ],
    [
      'negative quantity',
      (p) => set(p, 'spec.containers[0].resources.limits.memory', '-1'),
      'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0',
    ],
    [
      'duplicate container name',
      (p) =>
        ((p.spec as Obj).containers = [
          ...((p.spec as Obj).containers as Obj[]),
          clone(((p.spec as Obj).containers as Obj[])[0]),
        ]),
      'spec.containers[1].name: Duplicate value: "app"',
    ],
    [
      'duplicate volume name',
      (p) => ((p.spec as Obj).volumes as Obj[]).push({ name: 'cfg', emptyDir: {} }),
      'spec.volumes[1].name: Duplicate value: "cfg"',
    ],
    [
      'two volume sources',
      (p) => set(p, 'spec.volumes[0].emptyDir', {}),
      'spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type',
    ],
    [
      'mount of unknown volume',
      (p) => set(p, 'spec.containers[0].volumeMounts[0].name', 'nope'),
      'spec.containers[0].volumeMounts[0].name: Not found: "nope"',
    ],
    [
      'probe with two handlers',
      (p) => set(p, 'spec.containers[0].livenessProbe.tcpSocket', { port: 80 }),
      'spec.containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type',
    ],
    [
      'probe with no handler',
      (p) => set(p, 'spec.containers[0].livenessProbe', { periodSeconds: 3 }),
      'spec.containers[0].livenessProbe: Required value: must specify a handler type',
    ],
    [
      'liveness success threshold',
      (p) => set(p, 'spec.containers[0].livenessProbe.successThreshold', 2),
      'spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1',
    ],
    [
      'configMap defaultMode out of range',
      (p) => set(p, 'spec.volumes[0].configMap.defaultMode', 0o1000),
      'spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive',
    ],
    [
      'bad label value',
      (p) => set(p, 'metadata.labels', { app: 'a b' }),
      `metadata.labels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    ],
    [
      'huge annotations',
      (p) => set(p, 'metadata.annotations', { a: 'x'.repeat(256 * 1024) }),
      'metadata.annotations: Too long: must have at most 262144 bytes',
    ],
    [
      'toleration Exists with a value',
      (p) => set(p, 'spec.tolerations', [{ key: 'k', operator: 'Exists', value: 'v' }]),
      'spec.tolerations[0].operator: Invalid value: {"key":"k","operator":"Exists","value":"v"}: value must be empty when `operator` is \'Exists\'',
    ],
    [
      'containers of the wrong type',
      (p) => set(p, 'spec.containers', 'nginx'),
      'spec.containers: Invalid value: "nginx": must be an array',
    ],
    [
      'activeDeadlineSeconds zero',
      (p) => set(p, 'spec.activeDeadlineSeconds', 0),
      'spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive',
    ],
    [
      'env with value and valueFrom',
      (p) =>
        set(p, 'spec.containers[0].env', [
          { name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        ]),
      'spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty',
    ],
    [
      'number out of the safe integer range',
      (p) => set(p, 'spec.terminationGracePeriodSeconds', 2 ** 53 + 2),
      'spec.terminationGracePeriodSeconds: Invalid value: 9007199254740994: must be an integer',
    ],
    [
      'fractional port',
      (p) => set(p, 'spec.containers[0].ports[0].containerPort', 80.5),
      'spec.containers[0].ports[0].containerPort: Invalid value: 80.5: must be an integer',
    ],
    [
      'huge name',
      (p) => set(p, 'metadata.name', 'a'.repeat(1_000_000)),
      'metadata.name: Invalid value: "' +
        'a'.repeat(4095) +
        '...(truncated): must be no more than 253 characters',
    ],
    [
      'non-ASCII container name',
      (p) => set(p, 'spec.containers[0].name', 'ウェブ'),
      `spec.containers[0].name: Invalid value: "ウェブ": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
    ],
  ];
  for (const [name, mutate, want] of cases) {
    it(name, () => {
      const p = pod();
      mutate(p);
      const got = messages(validateObject(p));
      assert.ok(got.includes(want), `expected ${JSON.stringify(want)} in ${JSON.stringify(got, null, 1)}`);
    });
  }

  it('invalidError builds the 422 Status', () => {
    const p = set(pod(), 'spec.containers[0].image', undefined);
    set(p, 'spec.restartPolicy', 'X');
    const e = invalidError(p, validateObject(p));
    assert.equal(e.code, 422);
    assert.equal(
      e.status.message,
      'Pod "web" is invalid: [spec.containers[0].image: Required value, spec.restartPolicy: Unsupported value: "X": supported values: "Always", "OnFailure", "Never"]',
    );
    assert.deepEqual(e.status.details?.causes?.[0], {
      reason: 'FieldValueRequired',
      message: 'Required value',
      field: 'spec.containers[0].image',
    });
    assert.throws(
      () => assertValid(p),
      (err: unknown) => isStatusError(err, 'Invalid'),
    );
  });

  it('hostile objects produce errors, not crashes or pollution', () => {
    const hostile = JSON.parse(
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"d","__proto__":{"polluted":1},"labels":{"__proto__":"x"}},"spec":{"__proto__":{"polluted":2},"constructor":{"prototype":{"polluted":3}},"containers":[{"name":"a","image":"i","ports":[{"containerPort":1e400}]}]}}',
    );
    applyDefaults(hostile);
    const got = messages(validateObject(hostile));
    assert.ok(
      got.some((m) => m.startsWith('metadata.labels: Invalid value: "__proto__"')),
      got.join('\n'),
    );
    assert.ok(
      got.includes('spec.containers[0].ports[0].containerPort: Invalid value: Infinity: must be an integer'),
      got.join('\n'),
    );
    assert.equal(({} as Obj).polluted, undefined);
    for (const v of [null, 5, 'x', [], { kind: 'Pod' }, { apiVersion: 'v1', kind: 'Nope' }]) {
      assert.ok(validateObject(v).length > 0, JSON.stringify(v));
    }
    let deep: Obj = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) {
      const next: Obj = {};
      deep.x = next;
      deep = next;
    }
    const p = pod();
    set(p, 'spec.affinity', root);
    assert.deepEqual(messages(validateObject(p)), []);
  });
});

describe('validateUpdate', () => {
  it('image changes are allowed, other spec changes are not', () => {
    const old = pod();
    const ok = clone(old);
    set(ok, 'spec.containers[0].image', 'nginx:1.26');
    set(ok, 'metadata.labels', { app: 'web', extra: 'yes' });
    assert.deepEqual(messages(validateUpdate(ok, old)), []);

    const bad = clone(old);
    set(bad, 'spec.containers[0].ports[0].containerPort', 8080);
    const got = validateUpdate(bad, old);
    assert.equal(got.length, 1);
    assert.equal(got[0].field, 'spec');
    assert.ok(
      got[0].detail.startsWith('pod updates may not change fields other than `spec.containers[*].image`'),
    );
    assert.ok(got[0].detail.includes('changed: spec.containers'));
  });

  it('tolerations may only be added', () => {
    const old = pod();
    set(old, 'spec.tolerations', [
      { key: 'a', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
    ]);
    const added = clone(old);
    ((added.spec as Obj).tolerations as Obj[]).push({ key: 'b', operator: 'Exists' });
    assert.deepEqual(messages(validateUpdate(added, old)), []);
    const shorter = clone(old);
    set(shorter, 'spec.tolerations[0].tolerationSeconds', 30);
    assert.deepEqual(messages(validateUpdate(shorter, old)), []);
    const removed = clone(old);
    set(removed, 'spec.tolerations', []);
    assert.ok(
      messages(validateUpdate(removed, old)).includes(
        'spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds',
      ),
    );
  });

  it('metadata name, namespace and uid are immutable', () => {
    const old = set(pod(), 'metadata.uid', 'u1');
    const n = clone(old);
    set(n, 'metadata.uid', 'u2');
    set(n, 'metadata.name', 'other');
    const got = messages(validateUpdate(n, old));
    assert.ok(got.includes('metadata.uid: Invalid value: "u2": field is immutable'));
    assert.ok(got.includes('metadata.name: Invalid value: "other": field is immutable'));
  });

  it('activeDeadlineSeconds may only shrink', () => {
    const old = set(pod(), 'spec.activeDeadlineSeconds', 100);
    assert.deepEqual(messages(validateUpdate(set(clone(old), 'spec.activeDeadlineSeconds', 50), old)), []);
    assert.ok(
      messages(validateUpdate(set(clone(old), 'spec.activeDeadlineSeconds', 200), old)).includes(
        'spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value',
      ),
    );
  });

  it('node podCIDR is fixed once set', () => {
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'n1' },
      spec: { podCIDR: '10.0.1.0/24', podCIDRs: ['10.0.1.0/24'] },
    };
    const fresh = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {} };
    assert.deepEqual(messages(validateUpdate(node, fresh)), []);
    const moved = set(clone(node), 'spec.podCIDR', '10.0.2.0/24');
    set(moved, 'spec.podCIDRs', ['10.0.2.0/24']);
    const got = messages(validateUpdate(moved, node));
    assert.ok(
      got.includes('spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'),
    );
    assert.ok(
      messages(validateObject(set(clone(node), 'spec.podCIDR', '10.0.1.0/33'))).some((m) =>
        m.startsWith('spec.podCIDR: Invalid value: "10.0.1.0/33": must be a valid CIDR'),
      ),
    );
  });

  it('immutable ConfigMap and Secret', () => {
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'd' },
      data: { a: '1' },
      immutable: true,
    };
    const changed = set(clone(cm), 'data', { a: '2' });
    assert.deepEqual(messages(validateUpdate(changed, cm)), [
      'data: Forbidden: field is immutable when `immutable` is set',
    ]);
    const unset = set(clone(cm), 'immutable', false);
    assert.deepEqual(messages(validateUpdate(unset, cm)), [
      'immutable: Forbidden: field is immutable when `immutable` is set',
    ]);
    const secret = applyDefaults({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'd' },
      data: { k: 'dg==' },
    });
    assert.deepEqual(messages(validateObject(secret)), []);
    assert.deepEqual(
      messages(validateUpdate(set(clone(secret), 'type', 'kubernetes.io/tls'), secret)).slice(-1),
      ['type: Invalid value: "kubernetes.io/tls": field is immutable'],
    );
    assert.ok(
      messages(validateObject(set(clone(secret), 'data', { k: 'not base64!' }))).includes(
        'data[k]: Invalid value: "<secret contents redacted>": must be base64 encoded',
      ),
    );
  });

  it('apps/v1 selector is immutable', () => {
    const d = deployment();
    assert.deepEqual(messages(validateObject(d)), []);
    const n = clone(d);
    set(n, 'spec.selector', { matchLabels: { app: 'other' } });
    set(n, 'spec.template.metadata.labels', { app: 'other' });
    assert.ok(
      messages(validateUpdate(n, d)).includes(
        'spec.selector: Invalid value: {"matchLabels":{"app":"other"}}: field is immutable',
      ),
    );
  });
});

describe('validateObject: other kinds', () => {
  const cases: [string, Obj, string[]][] = [
    [
      'deployment selector mismatch',
      set(deployment(), 'spec.template.metadata.labels', { app: 'db' }),
      [
        'spec.template.metadata.labels: Invalid value: {"app":"db"}: `selector` does not match template `labels`',
      ],
    ],
    [
      'deployment restartPolicy Never',
      set(deployment(), 'spec.template.spec.restartPolicy', 'Never'),
      ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ],
    [
      'deployment both zero',
      set(deployment(), 'spec.strategy.rollingUpdate', { maxSurge: 0, maxUnavailable: '0%' }),
      ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'],
    ],
    [
      'deployment missing selector',
      set(deployment(), 'spec.selector', undefined),
      ['spec.selector: Required value'],
    ],
    [
      'deployment empty selector',
      set(deployment(), 'spec.selector', {}),
      ['spec.selector: Invalid value: {}: empty selector is invalid for deployment'],
    ],
    [
      'deployment negative replicas and minReadySeconds',
      set(set(deployment(), 'spec.replicas', -1), 'spec.minReadySeconds', -1),
      [
        'spec.replicas: Invalid value: -1: must be greater than or equal to 0',
        'spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0',
      ],
    ],
    [
      'deployment rollingUpdate with Recreate',
      set(deployment(), 'spec.strategy.type', 'Recreate'),
      ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"],
    ],
    [
      'deployment maxUnavailable over 100%',
      set(deployment(), 'spec.strategy.rollingUpdate.maxUnavailable', '101%'),
      ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%'],
    ],
    [
      'deployment progressDeadlineSeconds not over minReadySeconds',
      set(set(deployment(), 'spec.minReadySeconds', 600), 'spec.progressDeadlineSeconds', 600),
      ['spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds'],
    ],
    [
      'replicaset selector mismatch',
      { ...set(deployment(), 'spec.template.metadata.labels', { app: 'db' }), kind: 'ReplicaSet' },
      [
        'spec.template.metadata.labels: Invalid value: {"app":"db"}: `selector` does not match template `labels`',
      ],
    ],
    [
      'namespace with a dot',
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a.b' } },
      [
        `metadata.name: Invalid value: "a.b": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      ],
    ],
    [
      'cluster-scoped with namespace',
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n', namespace: 'x' } },
      ['metadata.namespace: Forbidden: not allowed on this type'],
    ],
    [
      'role rule without verbs',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'r', namespace: 'd' },
        rules: [{ apiGroups: [''], resources: ['pods'] }],
      },
      ['rules[0].verbs: Required value: verbs must contain at least one value'],
    ],
    [
      'role with non-resource URLs',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'r', namespace: 'd' },
        rules: [{ verbs: ['get'], nonResourceURLs: ['/x'] }],
      },
      ['rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs'],
    ],
    [
      'cluster role binding to a Role',
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'b' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
        subjects: [{ kind: 'ServiceAccount', name: 'sa' }],
      },
      [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        'subjects[0].namespace: Required value',
      ],
    ],
    [
      'lease with zero duration',
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'l', namespace: 'd' },
        spec: { leaseDurationSeconds: 0 },
      },
      ['spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0'],
    ],
    [
      'configmap bad key',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'd' }, data: { 'a b': 'x' } },
      [
        `data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
      ],
    ],
    [
      'configmap too big',
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'c', namespace: 'd' },
        data: { a: 'x'.repeat(1024 * 1024 + 1) },
      },
      ['Too long: must have at most 1048576 bytes'],
    ],
    [
      'binding without target',
      {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'p', namespace: 'd' },
        target: { kind: 'Node' },
      },
      ['target.name: Required value'],
    ],
    [
      'event namespace mismatch',
      {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'e', namespace: 'd' },
        involvedObject: { namespace: 'x' },
      },
      ['involvedObject.namespace: Invalid value: "x": does not match event.namespace'],
    ],
    [
      'node taint without effect',
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec: { taints: [{ key: 'k' }] } },
      ['spec.taints[0].effect: Required value'],
    ],
    [
      'unknown kind',
      { apiVersion: 'v1', kind: 'Widget', metadata: { name: 'w' } },
      ['kind: Unsupported value: "v1/Widget"'],
    ],
  ];
  for (const [name, obj, want] of cases) {
    it(name, () => assert.deepEqual(messages(validateObject(obj)), want));
  }

  it('valid objects of each kind', () => {
    const valid: Obj[] = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'd' } },
      {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: 'p', namespace: 'd' },
        target: { kind: 'Node', name: 'n1' },
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'system:kube-scheduler' },
        rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      },
      applyDefaults({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'b', namespace: 'd' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [
          { kind: 'User', name: 'bob' },
          { kind: 'ServiceAccount', name: 'sa', namespace: 'd' },
        ],
      }),
      applyDefaults({
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: { name: 'rs', namespace: 'd' },
        spec: {
          selector: { matchLabels: { a: 'b' } },
          template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        },
      }),
      {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: 'e', namespace: 'd' },
        eventTime: '2024-01-01T00:00:00.000000Z',
        reportingController: 'kubit/scheduler',
        reportingInstance: 'x',
        action: 'Binding',
        reason: 'Scheduled',
        type: 'Normal',
      },
      {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'n' },
        status: { capacity: { cpu: '2', memory: '4Gi', pods: '110' } },
      },
    ];
    for (const o of valid) assert.deepEqual(messages(validateObject(o)), [], JSON.stringify(o));
  });
});

describe('name checks', () => {
  it('DNS names with hostile lengths stay fast', () => {
    const long = `${'a.'.repeat(500_000)}-`;
    assert.equal(isDNS1123Subdomain(long).length, 2);
    assert.equal(isDNS1123Label('a'.repeat(64))[0], 'must be no more than 63 characters');
    assert.deepEqual(isDNS1123Subdomain('example.com'), []);
  });
});
