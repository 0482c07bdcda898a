// Writes over HTTPS: optimistic concurrency, status and binding subresources,
// graceful pod deletion, finalizers, NamespaceLifecycle and admission defaults.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, pod, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const NS = '/api/v1/namespaces/default';

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

describe('optimistic concurrency', () => {
  it('creates once, then AlreadyExists', async () => {
    const body = { metadata: { name: 'once' }, data: { a: '1' } };
    const r1 = await api.post(`${NS}/configmaps`, body);
    assert.equal(r1.status, 201);
    assert.match(r1.body.metadata.resourceVersion, /^\d+$/);
    assert.match(r1.body.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const r2 = await api.post(`${NS}/configmaps`, body);
    assert.equal(r2.status, 409);
    assert.equal(r2.body.reason, 'AlreadyExists');
    assert.equal(r2.body.message, 'configmaps "once" already exists');
  });

  it('a PUT with a stale resourceVersion is a 409 Conflict and writes nothing', async () => {
    const cur = (await api.get(`${NS}/configmaps/once`)).body;
    const u1 = await api.put(`${NS}/configmaps/once`, { ...cur, data: { a: '2' } });
    assert.equal(u1.status, 200, u1.text);
    assert.ok(Number(u1.body.metadata.resourceVersion) > Number(cur.metadata.resourceVersion));
    const stale = await api.put(`${NS}/configmaps/once`, { ...cur, data: { a: 'stale' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.reason, 'Conflict');
    assert.match(
      stale.body.message,
      /the object has been modified; please apply your changes to the latest version and try again/,
    );
    assert.equal((await api.get(`${NS}/configmaps/once`)).body.data.a, '2');
  });

  it('a patch carrying a stale resourceVersion conflicts; without one it applies', async () => {
    const cur = (await api.get(`${NS}/configmaps/once`)).body;
    await api.patch(`${NS}/configmaps/once`, { data: { b: '1' } });
    const stale = await api.patch(`${NS}/configmaps/once`, {
      metadata: { resourceVersion: cur.metadata.resourceVersion },
      data: { c: '1' },
    });
    assert.equal(stale.status, 409);
    const ok = await api.patch(
      `${NS}/configmaps/once`,
      [{ op: 'add', path: '/data/c', value: '3' }],
      'application/json-patch+json',
    );
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.data, { a: '2', b: '1', c: '3' });
    const smp = await api.patch(
      `${NS}/configmaps/once`,
      { data: { a: null } },
      'application/strategic-merge-patch+json',
    );
    assert.deepEqual(smp.body.data, { b: '1', c: '3' });
  });

  it('an unchanged update does not bump the resourceVersion', async () => {
    const cur = (await api.get(`${NS}/configmaps/once`)).body;
    const same = await api.put(`${NS}/configmaps/once`, cur);
    assert.equal(same.body.metadata.resourceVersion, cur.metadata.resourceVersion);
  });

  it('generateName makes a unique name', async () => {
    const r = await api.post(`${NS}/configmaps`, { metadata: { generateName: 'gen-' } });
    assert.equal(r.status, 201);
    assert.match(r.body.metadata.name, /^gen-[a-z0-9]{5}$/);
  });
});

describe('pods', () => {
  it('defaults the spec, tolerations and status on create', async () => {
    const r = await api.post(`${NS}/pods`, { ...pod('p-defaults'), status: { phase: 'Running' } });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.status.phase, 'Pending');
    assert.equal(r.body.status.qosClass, 'BestEffort');
    assert.equal(r.body.spec.restartPolicy, 'Always');
    assert.equal(r.body.spec.schedulerName, 'default-scheduler');
    assert.equal(r.body.metadata.generation, 1);
    const keys = r.body.spec.tolerations.map(
      (t: { key: string; tolerationSeconds: number }) => `${t.key}=${t.tolerationSeconds}`,
    );
    assert.deepEqual(keys, ['node.kubernetes.io/not-ready=300', 'node.kubernetes.io/unreachable=300']);
  });

  it('spec.nodeName is set only at create or through pods/binding', async () => {
    await api.post(`${NS}/pods`, pod('p-bind'));
    const patched = await api.patch(`${NS}/pods/p-bind`, { spec: { nodeName: 'n1' } });
    assert.equal(patched.status, 422);
    assert.match(patched.body.message, /pod updates may not change fields/);
    const bind = await api.post(`${NS}/pods/p-bind/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'p-bind' },
      target: { kind: 'Node', name: 'n1' },
    });
    assert.equal(bind.status, 201, bind.text);
    const got = (await api.get(`${NS}/pods/p-bind`)).body;
    assert.equal(got.spec.nodeName, 'n1');
    assert.ok(
      got.status.conditions.some(
        (c: { type: string; status: string }) => c.type === 'PodScheduled' && c.status === 'True',
      ),
    );
    const again = await api.post(`${NS}/pods/p-bind/binding`, {
      metadata: { name: 'p-bind' },
      target: { kind: 'Node', name: 'n2' },
    });
    assert.equal(again.status, 409);
    assert.match(again.body.message, /is already assigned to node "n1"/);
    const atCreate = await api.post(`${NS}/pods`, pod('p-direct', { nodeName: 'n1' }));
    assert.equal(atCreate.status, 201);
    assert.equal(atCreate.body.spec.nodeName, 'n1');
  });

  it('a pod recreated under the same name binds by its new uid, never by the old one', async () => {
    // The binding starts from the watch cache's copy, which may still be the old pod.
    const old = (await api.post(`${NS}/pods`, pod('p-reborn'))).body;
    assert.equal((await api.del(`${NS}/pods/p-reborn`)).status, 200);
    const reborn = (await api.post(`${NS}/pods`, pod('p-reborn'))).body;
    const byOld = await api.post(`${NS}/pods/p-reborn/binding`, {
      metadata: { name: 'p-reborn', uid: old.metadata.uid },
      target: { name: 'n1' },
    });
    assert.equal(byOld.status, 409);
    assert.match(byOld.body.message, /Precondition failed: UID in precondition/);
    const byNew = await api.post(`${NS}/pods/p-reborn/binding`, {
      metadata: { name: 'p-reborn', uid: reborn.metadata.uid },
      target: { name: 'n1' },
    });
    assert.equal(byNew.status, 201, byNew.text);
    await api.del(`${NS}/pods/p-reborn`, { gracePeriodSeconds: 0 });
  });

  it('a uid in an update or a status patch is a precondition (409 when it is not the stored one)', async () => {
    const created = (await api.post(`${NS}/pods`, pod('p-uid'))).body;
    const stale = await api.patch(`${NS}/pods/p-uid/status`, {
      metadata: { uid: 'uid-of-an-older-pod' },
      status: { message: 'from a deleted twin' },
    });
    assert.equal(stale.status, 409, stale.text);
    assert.match(
      stale.body.message,
      new RegExp(
        `Precondition failed: UID in precondition: uid-of-an-older-pod, UID in object meta: ${created.metadata.uid}`,
      ),
    );
    const put = await api.put(`${NS}/pods/p-uid`, {
      ...created,
      metadata: { ...created.metadata, uid: 'uid-of-an-older-pod', labels: { changed: 'yes' } },
    });
    assert.equal(put.status, 409, put.text);
    const unchanged = (await api.get(`${NS}/pods/p-uid`)).body;
    assert.equal(unchanged.status.message, undefined);
    assert.equal(unchanged.metadata.labels?.changed, undefined);
    const ok = await api.patch(`${NS}/pods/p-uid/status`, {
      metadata: { uid: created.metadata.uid },
      status: { message: 'from this pod' },
    });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.status.message, 'from this pod');
  });

  it('of many concurrent bindings of one pod exactly one succeeds', async () => {
    await api.post(`${NS}/pods`, pod('p-race'));
    const results = await Promise.all(
      ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].map((n) =>
        api.post(`${NS}/pods/p-race/binding`, { metadata: { name: 'p-race' }, target: { name: n } }),
      ),
    );
    const won = results.filter((r) => r.status === 201);
    assert.equal(won.length, 1, results.map((r) => r.status).join(','));
    for (const r of results) if (r.status !== 201) assert.equal(r.status, 409);
    const got = (await api.get(`${NS}/pods/p-race`)).body;
    assert.ok(['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].includes(got.spec.nodeName));
    await api.del(`${NS}/pods/p-race`, { gracePeriodSeconds: 0 });
  });

  it('status updates change only status; main updates keep status', async () => {
    const cur = (await api.get(`${NS}/pods/p-bind`)).body;
    const st = await api.put(`${NS}/pods/p-bind/status`, {
      ...cur,
      spec: { ...cur.spec, nodeName: 'other' },
      status: { ...cur.status, phase: 'Running', podIP: '10.0.0.5' },
    });
    assert.equal(st.status, 200, st.text);
    assert.equal(st.body.status.phase, 'Running');
    assert.equal(st.body.spec.nodeName, 'n1');
    const main = await api.patch(`${NS}/pods/p-bind`, {
      metadata: { labels: { x: 'y' } },
      status: { phase: 'Failed' },
    });
    assert.equal(main.status, 200);
    assert.equal(main.body.status.phase, 'Running');
    assert.equal(main.body.metadata.labels.x, 'y');
  });

  it('a bound pod is deleted gracefully: marked, then removed by its kubelet with grace 0', async () => {
    const del = await api.del(`${NS}/pods/p-bind`);
    // 200, as Kubernetes answers a graceful delete (202 only with orphanDependents=false).
    assert.equal(del.status, 200, del.text);
    assert.ok(del.body.metadata.deletionTimestamp);
    assert.equal(del.body.metadata.deletionGracePeriodSeconds, 30);
    const still = await api.get(`${NS}/pods/p-bind`);
    assert.equal(still.status, 200);
    const bindDeleting = await api.post(`${NS}/pods/p-bind/binding`, {
      metadata: { name: 'p-bind' },
      target: { name: 'n1' },
    });
    assert.equal(bindDeleting.status, 409);
    const kubelet = api.as(cp.pki.kubeletClient('n1'));
    const gone = await kubelet.del(`${NS}/pods/p-bind`, { gracePeriodSeconds: 0 });
    kubelet.close();
    assert.equal(gone.status, 200, gone.text);
    assert.equal((await api.get(`${NS}/pods/p-bind`)).status, 404);
  });

  it('an unbound pod is deleted at once; preconditions are honoured', async () => {
    const p = (await api.post(`${NS}/pods`, pod('p-unbound'))).body;
    const wrong = await api.del(`${NS}/pods/p-unbound`, { preconditions: { uid: 'not-the-uid' } });
    assert.equal(wrong.status, 409);
    assert.match(wrong.body.message, /Precondition failed: UID in precondition/);
    const ok = await api.del(`${NS}/pods/p-unbound`, { preconditions: { uid: p.metadata.uid } });
    assert.equal(ok.status, 200);
    assert.equal((await api.get(`${NS}/pods/p-unbound`)).status, 404);
  });
});

describe('finalizers and collections', () => {
  it('an object with finalizers stays until the last one is removed', async () => {
    await api.post(`${NS}/configmaps`, { metadata: { name: 'fin', finalizers: ['example.com/hold'] } });
    const del = await api.del(`${NS}/configmaps/fin`);
    assert.ok(del.status === 200 || del.status === 202);
    const held = await api.get(`${NS}/configmaps/fin`);
    assert.equal(held.status, 200);
    assert.ok(held.body.metadata.deletionTimestamp);
    const rel = await api.patch(`${NS}/configmaps/fin`, { metadata: { finalizers: null } });
    assert.equal(rel.status, 200, rel.text);
    assert.equal((await api.get(`${NS}/configmaps/fin`)).status, 404);
  });

  it('deletecollection deletes what the selector matches', async () => {
    for (const n of ['dc1', 'dc2', 'dc3'])
      await api.post(`${NS}/configmaps`, {
        metadata: { name: n, labels: { batch: n === 'dc3' ? 'keep' : 'drop' } },
      });
    const r = await api.del(`${NS}/configmaps?labelSelector=batch%3Ddrop`);
    assert.equal(r.status, 200, r.text);
    const left = await api.get(`${NS}/configmaps?labelSelector=batch`);
    assert.deepEqual(
      left.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['dc3'],
    );
  });

  it('deletecollection takes a field selector, and refuses a field it cannot select on', async () => {
    for (const n of ['fs1', 'fs2']) await api.post(`${NS}/configmaps`, { metadata: { name: n } });
    const r = await api.del(`${NS}/configmaps?fieldSelector=metadata.name%3Dfs1`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['fs1'],
    );
    assert.equal((await api.get(`${NS}/configmaps/fs1`)).status, 404);
    assert.equal((await api.get(`${NS}/configmaps/fs2`)).status, 200);
    const bad = await api.del(`${NS}/configmaps?fieldSelector=data.x%3Dy`);
    assert.equal(bad.status, 400, bad.text);
    assert.equal((await api.get(`${NS}/configmaps/fs2`)).status, 200);
  });
});

describe('DeleteOptions, as Kubernetes reads them', () => {
  it('a body is the whole of the options; without one the query is read', async () => {
    const pods = `${NS}/pods`;
    await api.post(pods, { ...pod('opt-body'), spec: { ...pod('x').spec, nodeName: 'n1' } });
    // With a body, the query's gracePeriodSeconds is not looked at.
    const byBody = await api.req('DELETE', `${pods}/opt-body?gracePeriodSeconds=3`, {
      gracePeriodSeconds: 9,
    });
    assert.equal(byBody.status, 200, byBody.text);
    assert.equal(byBody.body.metadata.deletionGracePeriodSeconds, 9);
    const byQuery = await api.req('DELETE', `${pods}/opt-body?gracePeriodSeconds=4`);
    assert.equal(byQuery.body.metadata.deletionGracePeriodSeconds, 4);
    // A later delete may shorten the grace period, never lengthen it.
    const longer = await api.del(`${pods}/opt-body`, { gracePeriodSeconds: 60 });
    assert.equal(longer.body.metadata.deletionGracePeriodSeconds, 4);
  });

  it('a negative grace period means one second; orphanDependents=false answers 202', async () => {
    const pods = `${NS}/pods`;
    await api.post(pods, { ...pod('opt-neg'), spec: { ...pod('x').spec, nodeName: 'n1' } });
    const neg = await api.del(`${pods}/opt-neg`, { gracePeriodSeconds: -5, orphanDependents: false });
    assert.equal(neg.status, 202, neg.text);
    assert.equal(neg.body.metadata.deletionGracePeriodSeconds, 1);
  });

  it('orphanDependents with propagationPolicy, or an unknown dryRun, is a 422 naming the field', async () => {
    await api.post(`${NS}/configmaps`, { metadata: { name: 'opt-cm' } });
    const both = await api.del(`${NS}/configmaps/opt-cm`, {
      orphanDependents: true,
      propagationPolicy: 'Background',
    });
    assert.equal(both.status, 422, both.text);
    assert.equal(both.body.details.causes[0].field, 'propagationPolicy');
    assert.match(both.body.message, /orphanDependents and deletionPropagation cannot be both set/);
    const dry = await api.del(`${NS}/configmaps/opt-cm`, { dryRun: ['Everything'] });
    assert.equal(dry.status, 422, dry.text);
    assert.equal(dry.body.details.kind, 'DeleteOptions');
    assert.equal(dry.body.details.causes[0].field, 'dryRun');
    assert.equal((await api.get(`${NS}/configmaps/opt-cm`)).status, 200);
  });

  it('Orphan and Foreground add their finalizers; a resourceVersion precondition is checked', async () => {
    const cm = (await api.post(`${NS}/configmaps`, { metadata: { name: 'opt-fg' } })).body;
    const stale = await api.del(`${NS}/configmaps/opt-fg`, { preconditions: { resourceVersion: '1' } });
    assert.equal(stale.status, 409, stale.text);
    assert.match(stale.body.message, /Precondition failed: ResourceVersion in precondition: 1/);
    const fg = await api.del(`${NS}/configmaps/opt-fg`, {
      propagationPolicy: 'Foreground',
      preconditions: { uid: cm.metadata.uid, resourceVersion: cm.metadata.resourceVersion },
    });
    assert.equal(fg.status, 200, fg.text);
    assert.deepEqual(fg.body.metadata.finalizers, ['foregroundDeletion']);
    assert.ok(fg.body.metadata.deletionTimestamp);
    await api.post(`${NS}/configmaps`, { metadata: { name: 'opt-orphan' } });
    const orphan = await api.req('DELETE', `${NS}/configmaps/opt-orphan?propagationPolicy=Orphan`);
    assert.deepEqual(orphan.body.metadata.finalizers, ['orphan']);
  });
});

describe('NamespaceLifecycle', () => {
  it('the system namespaces exist and may not be deleted', async () => {
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      assert.equal((await api.get(`/api/v1/namespaces/${ns}`)).status, 200, ns);
    }
    const d = await api.del('/api/v1/namespaces/kube-system');
    assert.equal(d.status, 403);
  });

  it('refuses creation in a missing namespace', async () => {
    const r = await api.post('/api/v1/namespaces/nope/configmaps', { metadata: { name: 'x' } });
    assert.equal(r.status, 404);
    assert.equal(r.body.message, 'namespaces "nope" not found');
  });

  it('a deleted namespace is Terminating until finalized, refusing new content', async () => {
    assert.equal((await api.post('/api/v1/namespaces', { metadata: { name: 'doomed' } })).status, 201);
    assert.equal(
      (await api.post('/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'c' } })).status,
      201,
    );
    const d = await api.del('/api/v1/namespaces/doomed');
    assert.equal(d.status, 200, d.text);
    assert.equal(d.body.status.phase, 'Terminating');
    assert.ok(d.body.metadata.deletionTimestamp);
    assert.deepEqual(d.body.spec.finalizers, ['kubernetes']);
    const r = await api.post('/api/v1/namespaces/doomed/configmaps', { metadata: { name: 'late' } });
    assert.equal(r.status, 403);
    assert.match(
      r.body.message,
      /unable to create new content in namespace doomed because it is being terminated/,
    );
    // The apiserver empties nothing itself (that is the namespace controller's job).
    await new Promise((res) => setTimeout(res, 500));
    assert.equal((await api.get('/api/v1/namespaces/doomed/configmaps/c')).status, 200);
    const ns = await api.get('/api/v1/namespaces/doomed');
    assert.equal(ns.body.status.phase, 'Terminating');
    // What the controller does: empty it, then drop the `kubernetes` finalizer via /finalize.
    assert.equal((await api.del('/api/v1/namespaces/doomed/configmaps/c')).status, 200);
    const fin = await api.put('/api/v1/namespaces/doomed/finalize', {
      ...ns.body,
      spec: { finalizers: [] },
    });
    assert.equal(fin.status, 200, fin.text);
    assert.equal((await api.get('/api/v1/namespaces/doomed')).status, 404);
  });
});

describe('events.k8s.io', () => {
  it('stores events once, visible in both versions', async () => {
    const e = await api.post('/apis/events.k8s.io/v1/namespaces/default/events', {
      metadata: { name: 'ev-both' },
      regarding: { kind: 'Pod', name: 'x', namespace: 'default' },
      note: 'hello',
      reason: 'Test',
      type: 'Normal',
      action: 'Testing',
      reportingController: 'tests',
      reportingInstance: 'tests-1',
      eventTime: '2026-01-02T03:04:05.123Z',
    });
    assert.equal(e.status, 201, e.text);
    assert.equal(e.body.eventTime, '2026-01-02T03:04:05.123000Z');
    const core = await api.get(`${NS}/events/ev-both`);
    assert.equal(core.body.message, 'hello');
    assert.equal(core.body.involvedObject.name, 'x');
    const w = api.watch(`${NS}/events?watch=true&fieldSelector=involvedObject.name%3Dx`);
    await until('the event in a core watch', () => w.events.length >= 1);
    w.close();
  });
});
