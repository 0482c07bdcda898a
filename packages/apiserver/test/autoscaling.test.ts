// HorizontalPodAutoscalers and metrics.k8s.io on a control plane without nodes: 422s
// with Kubernetes' field paths, `kubectl autoscale` and `kubectl get hpa`, the v1 view of
// a v2 object (one stored form), discovery of metrics.k8s.io for `kubectl top`, and the
// metrics resources authorized like any other (system:aggregated-metrics-reader).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ nodes: [], tokens: ['carol-token,carol,3001'] });
  api = new Api(cp);
  const r = await api.req('POST', '/apis/apps/v1/namespaces/default/deployments', {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [{ name: 'c', image: 'busybox:latest', resources: { requests: { cpu: '100m' } } }],
        },
      },
    },
  });
  assert.equal(r.status, 201, r.text);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const HPAS = '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers';

function hpa(name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' },
      maxReplicas: 3,
      ...spec,
    },
  };
}

describe('HorizontalPodAutoscaler validation', () => {
  const cases: { name: string; spec: Record<string, unknown>; fields: string[] }[] = [
    {
      name: 'minReplicas 0, maxReplicas 0',
      spec: { minReplicas: 0, maxReplicas: 0 },
      fields: ['spec.minReplicas', 'spec.maxReplicas'],
    },
    { name: 'max below min', spec: { minReplicas: 4, maxReplicas: 2 }, fields: ['spec.maxReplicas'] },
    {
      name: 'a target without kind or name',
      spec: { scaleTargetRef: { apiVersion: 'apps/v1' } },
      fields: ['spec.scaleTargetRef.kind', 'spec.scaleTargetRef.name'],
    },
    {
      name: 'a Resource metric without a target value',
      spec: { metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization' } } }] },
      fields: ['spec.metrics[0].resource.target.averageUtilization'],
    },
    {
      name: 'an unknown metric type and a zero utilization',
      spec: {
        metrics: [
          { type: 'Magic' },
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 0 } },
          },
        ],
      },
      fields: ['spec.metrics[0].type', 'spec.metrics[1].resource.target.averageUtilization'],
    },
    {
      name: 'behavior out of range',
      spec: {
        behavior: {
          scaleUp: {
            stabilizationWindowSeconds: 4000,
            policies: [{ type: 'Pods', value: 0, periodSeconds: 2000 }],
          },
          scaleDown: { selectPolicy: 'Sometimes', policies: [] },
        },
      },
      fields: [
        'spec.behavior.scaleUp.stabilizationWindowSeconds',
        'spec.behavior.scaleUp.policies[0].value',
        'spec.behavior.scaleUp.policies[0].periodSeconds',
        'spec.behavior.scaleDown.selectPolicy',
        'spec.behavior.scaleDown.policies',
      ],
    },
  ];
  for (const c of cases) {
    it(`refuses ${c.name} with 422 and the field paths`, async () => {
      const r = await api.req('POST', HPAS, hpa(`bad-${cases.indexOf(c)}`, c.spec));
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.reason, 'Invalid');
      const fields = (r.body.details?.causes ?? []).map((x: { field: string }) => x.field);
      for (const f of c.fields) assert.ok(fields.includes(f), `${f} in ${JSON.stringify(fields)}`);
      const stored = await api.req('GET', `${HPAS}/bad-${cases.indexOf(c)}`);
      assert.equal(stored.status, 404, 'nothing stored');
    });
  }

  it('defaults minReplicas, the CPU target and the behavior rules', async () => {
    const r = await api.req(
      'POST',
      HPAS,
      hpa('defaults', { behavior: { scaleDown: { stabilizationWindowSeconds: 10 } } }),
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.spec.minReplicas, 1);
    assert.deepEqual(r.body.spec.metrics, [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
      },
    ]);
    assert.equal(r.body.spec.behavior.scaleDown.stabilizationWindowSeconds, 10);
    assert.deepEqual(r.body.spec.behavior.scaleDown.policies, [
      { type: 'Percent', value: 100, periodSeconds: 15 },
    ]);
    assert.equal(r.body.spec.behavior.scaleUp.selectPolicy, 'Max');
    // The same object through autoscaling/v1: its CPU target.
    const v1 = await api.req(
      'GET',
      '/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/defaults',
    );
    assert.equal(v1.status, 200, v1.text);
    assert.equal(v1.body.apiVersion, 'autoscaling/v1');
    assert.equal(v1.body.spec.targetCPUUtilizationPercentage, 80);
    assert.equal(v1.body.spec.metrics, undefined);
  });
});

describe('kubectl', () => {
  it('kubectl autoscale creates an HPA that kubectl get hpa prints as Kubernetes does', async () => {
    const r = await kubectl(cp, ['autoscale', 'deployment', 'web', '--min=1', '--max=4', '--cpu-percent=50']);
    assert.match(r.stdout, /horizontalpodautoscaler.autoscaling\/web autoscaled/);
    const get = await kubectl(cp, ['get', 'hpa', 'web']);
    const [head, row] = get.stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s{2,}/));
    assert.deepEqual(head, ['NAME', 'REFERENCE', 'TARGETS', 'MINPODS', 'MAXPODS', 'REPLICAS', 'AGE']);
    assert.deepEqual(row.slice(0, 6), ['web', 'Deployment/web', 'cpu: <unknown>/50%', '1', '4', '0']);
    const v2 = await api.req('GET', `${HPAS}/web`);
    assert.equal(v2.body.spec.metrics[0].resource.target.averageUtilization, 50);
  });

  it('discovery lists metrics.k8s.io for kubectl top', async () => {
    const r = await kubectl(cp, ['api-resources', '--api-group=metrics.k8s.io']);
    assert.match(r.stdout, /^nodes\s+metrics\.k8s\.io\/v1beta1\s+false\s+NodeMetrics$/m);
    assert.match(r.stdout, /^pods\s+metrics\.k8s\.io\/v1beta1\s+true\s+PodMetrics$/m);
    const top = await kubectl(cp, ['top', 'pods'], { allowFail: true });
    // No pods have run: no metrics, but the API is there (kubectl says so differently otherwise).
    assert.doesNotMatch(top.stderr, /Metrics API not available/);
  });
});

describe('metrics.k8s.io authorization', () => {
  it('a user may read metrics only once bound to system:aggregated-metrics-reader', async () => {
    const carol = api.as({ token: 'carol-token' });
    try {
      const denied = await carol.req('GET', '/apis/metrics.k8s.io/v1beta1/nodes');
      assert.equal(denied.status, 403, denied.text);
      const bind = await api.req('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'carol-metrics' },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: 'system:aggregated-metrics-reader',
        },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'carol' }],
      });
      assert.equal(bind.status, 201, bind.text);
      let r = await carol.req('GET', '/apis/metrics.k8s.io/v1beta1/nodes');
      for (let i = 0; i < 50 && r.status === 403; i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await carol.req('GET', '/apis/metrics.k8s.io/v1beta1/nodes');
      }
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.kind, 'NodeMetricsList');
      const missing = await carol.req('GET', '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.message, 'podmetrics.metrics.k8s.io "nope" not found');
      const write = await carol.req('DELETE', '/apis/metrics.k8s.io/v1beta1/nodes/x');
      assert.equal(write.status, 403);
    } finally {
      carol.close();
    }
  });
});
