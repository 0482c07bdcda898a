// policy/v1 PodDisruptionBudgets and the eviction subresource's budget checks against
// kubit-apiserver on a real etcd (one control plane for the file): validation with
// Kubernetes' field paths, the status subresource, `kubectl get pdb` and `kubectl
// create pdb` (protobuf), the 429 of a budget that allows no disruption, the 500 of a
// pod with two budgets, unready and terminal pods, dry runs that write nothing, and two
// evictions racing for the last allowed disruption: exactly one wins.
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

const POLICY = '/apis/policy/v1/namespaces/default/poddisruptionbudgets';
const PODS = '/api/v1/namespaces/default/pods';

function budget(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name }, spec };
}

/** Creates a budget and sets its status as the disruption controller would. */
async function budgetWithStatus(name: string, app: string, status: Record<string, unknown>, spec = {}) {
  const r = await api.post(
    POLICY,
    budget(name, { minAvailable: 1, selector: { matchLabels: { app } }, ...spec }),
  );
  assert.equal(r.status, 201, r.text);
  const s = await api.put(`${POLICY}/${name}/status`, {
    ...r.body,
    status: { observedGeneration: r.body.metadata.generation, ...status },
  });
  assert.equal(s.status, 200, s.text);
  return s.body;
}

/** A pod in phase `phase`, Ready or not, as its kubelet would report it. */
async function runningPod(name: string, app: string, ready = true, phase = 'Running') {
  const r = await api.post(PODS, pod(name, {}, { app }));
  assert.equal(r.status, 201, r.text);
  const s = await api.put(`${PODS}/${name}/status`, {
    ...r.body,
    status: {
      phase,
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
    },
  });
  assert.equal(s.status, 200, s.text);
  return s.body;
}

const evict = (name: string, deleteOptions?: Record<string, unknown>, query = '') =>
  api.post(`${PODS}/${name}/eviction${query}`, {
    apiVersion: 'policy/v1',
    kind: 'Eviction',
    metadata: { name },
    ...(deleteOptions ? { deleteOptions } : {}),
  });

/** Whether the pod is still there and not being deleted. */
async function untouched(name: string): Promise<boolean> {
  const r = await api.get(`${PODS}/${name}`);
  return r.status === 200 && !r.body.metadata.deletionTimestamp;
}

describe('PodDisruptionBudget validation', () => {
  const cases: [string, Record<string, unknown>, string, RegExp][] = [
    [
      'both minAvailable and maxUnavailable',
      { minAvailable: 1, maxUnavailable: 1, selector: {} },
      'spec',
      /minAvailable and maxUnavailable cannot be both set/,
    ],
    [
      'a negative minAvailable',
      { minAvailable: -1 },
      'spec.minAvailable',
      /must be greater than or equal to 0/,
    ],
    [
      'a percentage over 100',
      { maxUnavailable: '101%' },
      'spec.maxUnavailable',
      /must not be greater than 100%/,
    ],
    [
      'a string that is no percentage',
      { minAvailable: 'half' },
      'spec.minAvailable',
      /a valid percent string/,
    ],
    [
      'a selector operator that does not exist',
      { minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'Near', values: ['x'] }] } },
      'spec.selector.matchExpressions[0].operator',
      /not a valid selector operator/,
    ],
    [
      'In without values',
      { minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'In' }] } },
      'spec.selector.matchExpressions[0].values',
      /must be specified when `operator` is 'In' or 'NotIn'/,
    ],
    [
      'an unknown unhealthyPodEvictionPolicy',
      { minAvailable: 1, unhealthyPodEvictionPolicy: 'Sometimes' },
      'spec.unhealthyPodEvictionPolicy',
      /Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"/,
    ],
  ];
  for (const [what, spec, field, message] of cases) {
    it(`refuses ${what} with 422 at ${field}`, async () => {
      const r = await api.post(POLICY, budget('bad', spec));
      assert.equal(r.status, 422, r.text);
      assert.equal(r.body.reason, 'Invalid');
      assert.match(r.body.message, /^PodDisruptionBudget.policy "bad" is invalid: /);
      const cause = r.body.details.causes.find((c: { field: string }) => c.field === field);
      assert.ok(cause, `no cause at ${field}: ${r.text}`);
      assert.match(cause.message, message);
    });
  }

  it('refuses a negative count written to status', async () => {
    const b = await budgetWithStatus('neg', 'neg', { disruptionsAllowed: 0 });
    const r = await api.put(`${POLICY}/neg/status`, {
      ...b,
      status: { ...b.status, disruptionsAllowed: -1 },
    });
    assert.equal(r.status, 422, r.text);
    assert.equal(r.body.details.causes[0].field, 'status.disruptionsAllowed');
  });
});

describe('PodDisruptionBudget objects', () => {
  it('creates with generation 1 and the zero status; spec changes bump generation, status stays', async () => {
    const r = await api.post(
      POLICY,
      budget('b1', { maxUnavailable: '25%', selector: { matchLabels: { app: 'b1' } } }),
    );
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.metadata.generation, 1);
    assert.deepEqual(r.body.status, {
      disruptionsAllowed: 0,
      currentHealthy: 0,
      desiredHealthy: 0,
      expectedPods: 0,
    });
    const s = await api.put(`${POLICY}/b1/status`, {
      ...r.body,
      spec: { maxUnavailable: 3 },
      status: { ...r.body.status, observedGeneration: 1, disruptionsAllowed: 2 },
    });
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.spec.maxUnavailable, '25%', 'a status write keeps the spec');
    assert.equal(s.body.metadata.generation, 1);
    const u = await api.patch(`${POLICY}/b1`, {
      spec: { maxUnavailable: 1 },
      status: { disruptionsAllowed: 9 },
    });
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.metadata.generation, 2);
    assert.equal(u.body.status.disruptionsAllowed, 2, 'a spec write keeps the status');
  });

  it('kubectl create pdb (protobuf) and kubectl get pdb show Kubernetes columns', async () => {
    await kubectl(cp, ['create', 'pdb', 'k1', '--selector=app=k1', '--min-available=2']);
    const got = await api.get(`${POLICY}/k1`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.spec.minAvailable, 2);
    assert.deepEqual(got.body.spec.selector, { matchLabels: { app: 'k1' } });
    await kubectl(cp, ['create', 'poddisruptionbudget', 'k2', '--selector=app=k2', '--max-unavailable=30%']);
    const out = (await kubectl(cp, ['get', 'pdb', 'k1', 'k2'])).stdout.split('\n');
    assert.match(out[0], /^NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE$/);
    assert.match(out[1], /^k1\s+2\s+N\/A\s+0\s+\d+s$/);
    assert.match(out[2], /^k2\s+N\/A\s+30%\s+0\s+\d+s$/);
  });
});

describe('pods/eviction with disruption budgets', () => {
  it('evicts a pod no budget selects', async () => {
    await runningPod('free-1', 'free');
    const r = await evict('free-1');
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.status, 'Success');
    assert.equal(await untouched('free-1'), false);
  });

  it('answers 429 with the DisruptionBudget cause when the budget allows no disruption', async () => {
    await budgetWithStatus('full', 'full', {
      disruptionsAllowed: 0,
      currentHealthy: 2,
      desiredHealthy: 2,
      expectedPods: 2,
    });
    await runningPod('full-1', 'full');
    const r = await evict('full-1');
    assert.equal(r.status, 429, r.text);
    assert.equal(r.body.reason, 'TooManyRequests');
    assert.equal(
      r.body.message,
      "Too many requests: Cannot evict pod as it would violate the pod's disruption budget.",
    );
    assert.deepEqual(r.body.details.causes, [
      {
        reason: 'DisruptionBudget',
        message: 'The disruption budget full needs 2 healthy pods and has 2 currently',
      },
    ]);
    assert.ok(await untouched('full-1'));
  });

  it('answers 429 while the budget controller has not observed the spec', async () => {
    const b = await budgetWithStatus('stale', 'stale', { disruptionsAllowed: 5 });
    const p = await api.patch(`${POLICY}/stale`, { spec: { minAvailable: 0 } });
    assert.equal(p.body.metadata.generation, 2);
    assert.equal(b.status.observedGeneration, 1);
    await runningPod('stale-1', 'stale');
    const r = await evict('stale-1');
    assert.equal(r.status, 429, r.text);
    assert.equal(r.body.details.retryAfterSeconds, 10);
    assert.equal(
      r.body.details.causes[0].message,
      'The disruption budget stale is still being processed by the server.',
    );
  });

  it('uses one disruption: decrements disruptionsAllowed and records the pod before the delete', async () => {
    await budgetWithStatus('one', 'one', {
      disruptionsAllowed: 2,
      currentHealthy: 3,
      desiredHealthy: 1,
      expectedPods: 3,
    });
    await runningPod('one-1', 'one');
    const r = await evict('one-1');
    assert.equal(r.status, 201, r.text);
    const b = await api.get(`${POLICY}/one`);
    assert.equal(b.body.status.disruptionsAllowed, 1);
    assert.ok(b.body.status.disruptedPods['one-1'], JSON.stringify(b.body.status));
    assert.ok(!Number.isNaN(Date.parse(b.body.status.disruptedPods['one-1'])));
    assert.equal(await untouched('one-1'), false);
  });

  it('lets exactly one of two racing evictions take the last disruption', async () => {
    for (let round = 0; round < 3; round++) {
      const app = `race${round}`;
      await budgetWithStatus(app, app, {
        disruptionsAllowed: 1,
        currentHealthy: 3,
        desiredHealthy: 2,
        expectedPods: 3,
      });
      await Promise.all([
        runningPod(`${app}-a`, app),
        runningPod(`${app}-b`, app),
        runningPod(`${app}-c`, app),
      ]);
      const answers = await Promise.all([evict(`${app}-a`), evict(`${app}-b`), evict(`${app}-c`)]);
      const codes = answers.map((a) => a.status).sort();
      assert.deepEqual(codes, [201, 429, 429], answers.map((a) => a.text).join('\n'));
      const b = await api.get(`${POLICY}/${app}`);
      assert.equal(b.body.status.disruptionsAllowed, 0);
      assert.equal(Object.keys(b.body.status.disruptedPods).length, 1);
      const cond = b.body.status.conditions.find((c: { type: string }) => c.type === 'DisruptionAllowed');
      assert.equal(cond.status, 'False');
      assert.equal(cond.reason, 'InsufficientPods');
      const alive = await Promise.all(['a', 'b', 'c'].map((s) => untouched(`${app}-${s}`)));
      assert.equal(alive.filter(Boolean).length, 2);
    }
  });

  it('writes nothing on a dry run, whether asked in the query or in the DeleteOptions', async () => {
    await budgetWithStatus('dry', 'dry', {
      disruptionsAllowed: 1,
      currentHealthy: 2,
      desiredHealthy: 1,
      expectedPods: 2,
    });
    await runningPod('dry-1', 'dry');
    const before = await api.get(`${POLICY}/dry`);
    for (const [opts, query] of [
      [undefined, '?dryRun=All'],
      [{ dryRun: ['All'] }, ''],
    ] as const) {
      const r = await evict('dry-1', opts, query);
      assert.equal(r.status, 201, r.text);
    }
    const after = await api.get(`${POLICY}/dry`);
    assert.equal(after.body.metadata.resourceVersion, before.body.metadata.resourceVersion);
    assert.ok(await untouched('dry-1'));
    // A dry run still refuses what the real eviction would.
    await budgetWithStatus('dryfull', 'dryfull', { disruptionsAllowed: 0 });
    await runningPod('dryfull-1', 'dryfull');
    assert.equal((await evict('dryfull-1', { dryRun: ['All'] })).status, 429);
  });

  it('answers 500 for a pod two budgets select', async () => {
    await budgetWithStatus('two-a', 'two', { disruptionsAllowed: 3 });
    await budgetWithStatus('two-b', 'two', { disruptionsAllowed: 3 });
    await runningPod('two-1', 'two');
    const r = await evict('two-1');
    assert.equal(r.status, 500, r.text);
    assert.equal(
      r.body.message,
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    );
    assert.ok(await untouched('two-1'));
  });

  it('evicts Pending, Succeeded and Failed pods without their budget', async () => {
    await budgetWithStatus('term', 'term', { disruptionsAllowed: 0 });
    for (const phase of ['Pending', 'Succeeded', 'Failed']) {
      const name = `term-${phase.toLowerCase()}`;
      await runningPod(name, 'term', false, phase);
      const r = await evict(name);
      assert.equal(r.status, 201, `${phase}: ${r.text}`);
    }
    const b = await api.get(`${POLICY}/term`);
    assert.equal(b.body.status.disruptedPods, undefined);
  });

  it('evicts an unready pod by the budget policy: IfHealthyBudget only when the budget is met, AlwaysAllow always', async () => {
    // Budget met (currentHealthy >= desiredHealthy > 0): the unready pod goes, no disruption used.
    await budgetWithStatus('met', 'met', {
      disruptionsAllowed: 0,
      currentHealthy: 2,
      desiredHealthy: 2,
      expectedPods: 3,
    });
    await runningPod('met-1', 'met', false);
    assert.equal((await evict('met-1')).status, 201);
    assert.equal((await api.get(`${POLICY}/met`)).body.status.disruptedPods, undefined);
    // Budget not met: the unready pod needs a disruption, and there is none.
    await budgetWithStatus('short', 'short', { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 2 });
    await runningPod('short-1', 'short', false);
    assert.equal((await evict('short-1')).status, 429);
    await budgetWithStatus(
      'always',
      'always',
      { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 2 },
      { unhealthyPodEvictionPolicy: 'AlwaysAllow' },
    );
    await runningPod('always-1', 'always', false);
    assert.equal((await evict('always-1')).status, 201);
    // A Ready pod under AlwaysAllow still needs the budget.
    await runningPod('always-2', 'always', true);
    assert.equal((await evict('always-2')).status, 429);
  });
});
