import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addDefaultTolerations, applyDefaults, defaultPullPolicy, defaultTolerations } from '../src/index.js';

type Obj = Record<string, unknown>;

describe('defaults', () => {
  const pullPolicies: [string, string][] = [
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['nginx:1.25', 'IfNotPresent'],
    ['localhost:5000/nginx', 'Always'],
    ['localhost:5000/nginx:v1', 'IfNotPresent'],
    ['nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'IfNotPresent'],
    ['registry.example.com:443/a/b:latest', 'Always'],
  ];
  for (const [image, want] of pullPolicies) {
    it(`imagePullPolicy for ${image}`, () => assert.equal(defaultPullPolicy(image), want));
  }

  it('pods get Kubernetes defaults', () => {
    const pod = applyDefaults({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        containers: [
          {
            name: 'c',
            image: 'busybox',
            ports: [{ containerPort: 80 }],
            resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '100m' } },
            readinessProbe: { httpGet: { port: 80 } },
          },
        ],
        volumes: [
          { name: 'a', configMap: { name: 'x' } },
          { name: 'b', secret: { secretName: 's' } },
          { name: 'e' },
        ],
      },
    });
    assert.deepEqual(pod.spec, {
      containers: [
        {
          name: 'c',
          image: 'busybox',
          ports: [{ containerPort: 80, protocol: 'TCP' }],
          resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '100m', memory: '1Gi' } },
          readinessProbe: {
            httpGet: { port: 80, path: '/', scheme: 'HTTP' },
            timeoutSeconds: 1,
            periodSeconds: 10,
            successThreshold: 1,
            failureThreshold: 3,
          },
          imagePullPolicy: 'Always',
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
        },
      ],
      volumes: [
        { name: 'a', configMap: { name: 'x', defaultMode: 420 } },
        { name: 'b', secret: { secretName: 's', defaultMode: 420 } },
        { name: 'e', emptyDir: {} },
      ],
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      securityContext: {},
      enableServiceLinks: true,
    });
  });

  it('keeps what is set and host network ports become host ports', () => {
    const pod = applyDefaults({
      apiVersion: 'v1',
      kind: 'Pod',
      spec: {
        hostNetwork: true,
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'c', image: 'x:1', imagePullPolicy: 'Never', ports: [{ containerPort: 8080 }] }],
      },
    }) as { spec: Obj };
    assert.equal(pod.spec.restartPolicy, 'Never');
    assert.equal(pod.spec.terminationGracePeriodSeconds, 0);
    const c = (pod.spec.containers as Obj[])[0];
    assert.equal(c.imagePullPolicy, 'Never');
    assert.deepEqual(c.ports, [{ containerPort: 8080, protocol: 'TCP', hostPort: 8080 }]);
  });

  it('deployments and replicasets', () => {
    const d = applyDefaults({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      spec: { template: { spec: { containers: [{ name: 'c', image: 'x' }] } } },
    }) as { spec: Obj };
    assert.equal(d.spec.replicas, 1);
    assert.deepEqual(d.spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
    });
    assert.equal(d.spec.revisionHistoryLimit, 10);
    assert.equal(d.spec.progressDeadlineSeconds, 600);
    assert.equal(((d.spec.template as Obj).spec as Obj).restartPolicy, 'Always');
    const recreate = applyDefaults({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      spec: { strategy: { type: 'Recreate' } },
    }) as {
      spec: Obj;
    };
    assert.deepEqual(recreate.spec.strategy, { type: 'Recreate' });
    const rs = applyDefaults({ apiVersion: 'apps/v1', kind: 'ReplicaSet', spec: { replicas: 0 } }) as {
      spec: Obj;
    };
    assert.equal(rs.spec.replicas, 0);
  });

  it('other kinds', () => {
    assert.equal((applyDefaults({ apiVersion: 'v1', kind: 'Secret' }) as Obj).type, 'Opaque');
    assert.deepEqual((applyDefaults({ apiVersion: 'v1', kind: 'Namespace' }) as Obj).status, {
      phase: 'Active',
    });
    const node = applyDefaults({ apiVersion: 'v1', kind: 'Node', status: { capacity: { cpu: '2' } } }) as {
      status: Obj;
    };
    assert.deepEqual(node.status.allocatable, { cpu: '2' });
    const rb = applyDefaults({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      subjects: [
        { kind: 'User', name: 'bob' },
        { kind: 'ServiceAccount', name: 'sa' },
      ],
    }) as { subjects: Obj[] };
    assert.equal(rb.subjects[0].apiGroup, 'rbac.authorization.k8s.io');
    assert.equal(rb.subjects[1].apiGroup, '');
    assert.equal(applyDefaults(null), null);
    assert.equal(applyDefaults('x'), 'x');
  });

  it('hostile shapes neither crash nor pollute', () => {
    const weird = JSON.parse(
      '{"apiVersion":"v1","kind":"Pod","spec":{"containers":"nope","volumes":[null,1,{"name":"v","__proto__":{"x":1}}],"__proto__":{"restartPolicy":"Evil"}}}',
    );
    applyDefaults(weird);
    assert.equal(weird.spec.restartPolicy, 'Always');
    const limits = JSON.parse(
      '{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"__proto__":"1"}}}]}}',
    );
    applyDefaults(limits);
    assert.equal(Object.hasOwn(limits.spec.containers[0].resources.requests, '__proto__'), true);
    assert.equal(({} as Obj).polluted, undefined);
    assert.equal(Object.getPrototypeOf(limits.spec.containers[0].resources.requests), Object.prototype);
    applyDefaults({ apiVersion: 'v1', kind: 'Pod', spec: 'x' });
  });

  it('default tolerations', () => {
    assert.deepEqual(defaultTolerations(), [
      {
        key: 'node.kubernetes.io/not-ready',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 300,
      },
      {
        key: 'node.kubernetes.io/unreachable',
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 300,
      },
    ]);
    const pod = addDefaultTolerations({
      spec: {
        tolerations: [
          {
            key: 'node.kubernetes.io/not-ready',
            operator: 'Exists',
            effect: 'NoExecute',
            tolerationSeconds: 5,
          },
        ],
      },
    }) as { spec: { tolerations: Obj[] } };
    assert.equal(pod.spec.tolerations.length, 2);
    assert.equal(pod.spec.tolerations[0].tolerationSeconds, 5);
    const all = addDefaultTolerations({ spec: { tolerations: [{ operator: 'Exists' }] } }) as {
      spec: { tolerations: Obj[] };
    };
    assert.equal(all.spec.tolerations.length, 1);
  });
});
