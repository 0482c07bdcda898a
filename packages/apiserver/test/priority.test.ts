// PriorityClass and the Priority admission plugin against a real apiserver, with the
// real kubectl: the built-in classes exist from the start, validation is Kubernetes'
// (422 with field paths), one global default, and a new pod gets its class's priority
// and preemption policy (or the default class's), or a 403 naming the class.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, pod } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const PCS = '/apis/scheduling.k8s.io/v1/priorityclasses';

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
  const sa = await api.post('/api/v1/namespaces/default/serviceaccounts', { metadata: { name: 'default' } });
  assert.ok(sa.status === 201 || sa.status === 409, sa.text);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const pc = (name: string, value: number, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name },
  value,
  ...extra,
});

/** Waits until the apiserver's watch cache (what admission reads) lists the class. */
async function cached(name: string, present = true): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const l = await api.get(`${PCS}?resourceVersion=0`);
    const has = (l.body.items as { metadata: { name: string } }[]).some((i) => i.metadata.name === name);
    if (has === present) return;
    assert.ok(Date.now() < deadline, `${name} never ${present ? 'reached' : 'left'} the watch cache`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

const causes = (body: { details?: { causes?: { field: string; message: string }[] } }) =>
  (body.details?.causes ?? []).map((c) => `${c.field}: ${c.message}`);

describe('PriorityClass', () => {
  it('has the built-in classes, shown with kubectl get priorityclass', async () => {
    const node = await api.get(`${PCS}/system-node-critical`);
    assert.equal(node.status, 200, node.text);
    assert.equal(node.body.value, 2000001000);
    assert.equal(node.body.preemptionPolicy, 'PreemptLowerPriority');
    const cluster = await api.get(`${PCS}/system-cluster-critical`);
    assert.equal(cluster.body.value, 2000000000);
    const del = await kubectl(cp, ['delete', 'priorityclass', 'system-cluster-critical'], {
      allowFail: true,
    });
    assert.match(
      del.stderr,
      /priorityclasses\.scheduling\.k8s\.io "system-cluster-critical" is forbidden: this is a system priority class and cannot be deleted/,
    );
    assert.equal((await api.get(`${PCS}/system-cluster-critical`)).status, 200);
    await kubectl(cp, ['create', 'priorityclass', 'high', '--value=1000', '--description=high pods']);
    const out = await kubectl(cp, ['get', 'priorityclass']);
    const lines = out.stdout.trim().split('\n');
    assert.match(lines[0], /^NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\s+PREEMPTIONPOLICY$/);
    assert.ok(
      lines.some((l) => /^system-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority$/.test(l)),
      out.stdout,
    );
    assert.ok(
      lines.some((l) => /^high\s+1000\s+false\s+\S+\s+PreemptLowerPriority$/.test(l)),
      out.stdout,
    );
  });

  it('refuses what Kubernetes refuses, with field paths', async () => {
    const big = await api.post(PCS, pc('too-big', 1_000_000_001));
    assert.equal(big.status, 422, big.text);
    assert.deepEqual(causes(big.body), [
      'value: Forbidden: maximum allowed value of a user defined priority is 1000000000',
    ]);
    const reserved = await api.post(PCS, pc('system-mine', 10));
    assert.equal(reserved.status, 422, reserved.text);
    assert.deepEqual(causes(reserved.body), [
      "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
    ]);
    const policy = await api.post(PCS, pc('bad-policy', 10, { preemptionPolicy: 'Sometimes' }));
    assert.equal(policy.status, 422, policy.text);
    assert.deepEqual(causes(policy.body), [
      'preemptionPolicy: Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"',
    ]);
    for (const name of ['too-big', 'system-mine', 'bad-policy'])
      assert.equal((await api.get(`${PCS}/${name}`)).status, 404);

    const r = await api.post(PCS, pc('fixed', 50));
    assert.equal(r.status, 201, r.text);
    const changed = await api.patch(`${PCS}/fixed`, { value: 51 });
    assert.equal(changed.status, 422, changed.text);
    assert.deepEqual(causes(changed.body), ['value: Forbidden: may not be changed in an update.']);
    const desc = await api.patch(`${PCS}/fixed`, { description: 'still fine' });
    assert.equal(desc.status, 200, desc.text);
  });

  it('keeps one global default, which pods without a class get', async () => {
    const first = await api.post(PCS, pc('the-default', 7, { globalDefault: true }));
    assert.equal(first.status, 201, first.text);
    await cached('the-default');
    const second = await api.post(PCS, pc('another-default', 8, { globalDefault: true }));
    assert.equal(second.status, 403, second.text);
    assert.equal(
      second.body.message,
      'priorityclasses.scheduling.k8s.io "another-default" is forbidden: PriorityClass the-default is already marked as default. Only one default can exist',
    );
    const p = await api.post('/api/v1/namespaces/default/pods', pod('defaulted'));
    assert.equal(p.status, 201, p.text);
    assert.equal(p.body.spec.priority, 7);
    assert.equal(p.body.spec.priorityClassName, 'the-default');
    assert.equal(p.body.spec.preemptionPolicy, 'PreemptLowerPriority');
    assert.equal((await api.del(`${PCS}/the-default`)).status, 200);
    await cached('the-default', false);
    const none = await api.post('/api/v1/namespaces/default/pods', pod('no-class'));
    assert.equal(none.status, 201, none.text);
    assert.equal(none.body.spec.priority, 0);
    assert.equal(none.body.spec.priorityClassName, undefined);
  });

  it("gives a pod its class's priority and policy, and refuses what contradicts it", async () => {
    const r = await api.post(PCS, pc('never', 500, { preemptionPolicy: 'Never' }));
    assert.equal(r.status, 201, r.text);
    await cached('never');
    const p = await api.post('/api/v1/namespaces/default/pods', pod('calm', { priorityClassName: 'never' }));
    assert.equal(p.status, 201, p.text);
    assert.equal(p.body.spec.priority, 500);
    assert.equal(p.body.spec.preemptionPolicy, 'Never');
    const critical = await api.post(
      '/api/v1/namespaces/default/pods',
      pod('critical', { priorityClassName: 'system-node-critical' }),
    );
    assert.equal(critical.body.spec.priority, 2000001000);

    const missing = await api.post(
      '/api/v1/namespaces/default/pods',
      pod('lost', { priorityClassName: 'nowhere' }),
    );
    assert.equal(missing.status, 403, missing.text);
    assert.equal(
      missing.body.message,
      'pods "lost" is forbidden: no PriorityClass with name nowhere was found',
    );
    const own = await api.post(
      '/api/v1/namespaces/default/pods',
      pod('own', { priorityClassName: 'never', priority: 3 }),
    );
    assert.equal(own.status, 403, own.text);
    assert.equal(
      own.body.message,
      'pods "own" is forbidden: the integer value of priority (3) must not be provided in pod spec; priority admission controller computed 500 from the given PriorityClass name',
    );
    const policy = await api.post(
      '/api/v1/namespaces/default/pods',
      pod('pushy', { priorityClassName: 'never', preemptionPolicy: 'PreemptLowerPriority' }),
    );
    assert.equal(policy.status, 403, policy.text);
    assert.equal(
      policy.body.message,
      'pods "pushy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name',
    );
    for (const name of ['lost', 'own', 'pushy'])
      assert.equal((await api.get(`/api/v1/namespaces/default/pods/${name}`)).status, 404);
  });
});
