import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNotFound } from '@kubit/api';
import { KubeClient } from '../src/client.js';
import { Informer, SharedInformerFactory } from '../src/informer.js';
import { resources } from '../src/resources.js';
import { IndexedStore } from '../src/store.js';
import type { KubeObject } from '../src/types.js';
import { FakeApi } from './fake-api.js';

type Pod = KubeObject & { spec?: { nodeName?: string } };
const PODS = '/api/v1/namespaces/default/pods';

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

function pod(
  name: string,
  nodeName?: string,
): { metadata: { name: string; namespace: string }; spec: { nodeName?: string } } {
  return { metadata: { name, namespace: 'default' }, spec: nodeName ? { nodeName } : {} };
}

describe('IndexedStore', () => {
  it('indexes by namespace and custom indexers, and updates indexes on change', () => {
    const s = new IndexedStore<Pod>({ node: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) });
    s.set({ metadata: { name: 'a', namespace: 'x' }, spec: { nodeName: 'n1' } });
    s.set({ metadata: { name: 'b', namespace: 'y' }, spec: { nodeName: 'n1' } });
    assert.equal(s.byIndex('node', 'n1').length, 2);
    s.set({ metadata: { name: 'a', namespace: 'x' }, spec: { nodeName: 'n2' } });
    assert.deepEqual(
      s.byIndex('node', 'n1').map((p) => p.metadata?.name),
      ['b'],
    );
    assert.equal(s.listInNamespace('x').length, 1);
    assert.equal(s.get('a', 'x')?.spec?.nodeName, 'n2');
    const removed = s.replace([{ metadata: { name: 'c', namespace: 'x' } }]);
    assert.deepEqual(removed.map((p) => p.metadata?.name).sort(), ['a', 'b']);
    assert.deepEqual(s.byIndex('node', 'n2'), []);
    assert.throws(() => s.byIndex('nope', 'v'), /does not exist/);
  });

  it('rejects a second indexer of the same name as a conflict naming the index, adding none of the batch', () => {
    const byNode = (p: Pod) => (p.spec?.nodeName ? [p.spec.nodeName] : []);
    const s = new IndexedStore<Pod>({ node: byNode });
    assert.throws(
      () => s.addIndexers({ other: byNode, node: byNode }),
      (e: unknown) => e instanceof Error && /^indexer conflict: .*"node"/.test(e.message),
    );
    assert.equal(s.hasIndex('other'), false, 'a rejected batch adds nothing');
    assert.equal(s.hasIndex('node'), true);
    assert.equal(s.hasIndex('namespace'), true, 'the namespace index is always there');
    s.addIndexers({ other: byNode });
    assert.equal(s.hasIndex('other'), true);
  });

  it('looks objects up by key or name without throwing when they are absent', () => {
    const s = new IndexedStore<Pod>();
    s.set({ metadata: { name: 'a', namespace: 'x' } });
    s.set({ metadata: { name: 'node-1' } });
    assert.equal(s.getByKey('x/a')?.metadata?.name, 'a');
    assert.equal(s.getByKey('x/missing'), undefined);
    assert.equal(s.get('missing', 'x'), undefined);
    assert.equal(s.get('node-1')?.metadata?.name, 'node-1');
    assert.equal(s.hasKey('x/a'), true);
    assert.equal(s.hasKey('node-1'), true);
    assert.equal(s.hasKey('y/a'), false);
  });
});

describe('Informer', () => {
  it('lists, watches, and delivers add/update/delete', async () => {
    const api = new FakeApi();
    api.put(PODS, pod('a'));
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const inf = new Informer<Pod>(client, resources.pods, {
      indexers: { node: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) },
    });
    const seen: string[] = [];
    inf.addEventHandler({
      onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
      onUpdate: (_o, n) => seen.push(`update ${n.metadata?.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
    });
    inf.start();
    await inf.waitForSync();
    assert.ok(inf.hasSynced());
    assert.equal(inf.store.get('a', 'default')?.kind, 'Pod', 'list items get their kind');
    api.put(PODS, pod('b'));
    api.put(PODS, pod('a', 'n1'), 'MODIFIED');
    api.remove(PODS, 'b');
    await until(() => seen.length === 4, 'four events');
    assert.deepEqual(seen, ['add a', 'add b', 'update a', 'delete b']);
    assert.equal(inf.store.byIndex('node', 'n1')[0].metadata?.name, 'a');
    assert.equal(inf.resourceVersion, String(api.rv));
    await inf.stop();
  });

  it('resumes after a dropped watch and relists on 410, reporting deletes it missed', async () => {
    const api = new FakeApi();
    api.put(PODS, pod('a'));
    api.put(PODS, pod('b'));
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const inf = new Informer<Pod>(client, resources.pods, { backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
    const deletes: [string, boolean][] = [];
    inf.addEventHandler({ onDelete: (o, unknown) => deletes.push([o.metadata?.name ?? '', unknown]) });
    inf.start();
    await inf.waitForSync();
    // A dropped stream resumes from the last resourceVersion: no relist.
    api.dropWatches();
    api.put(PODS, pod('c'));
    await until(() => inf.store.size === 3, 'c arrives after resume');
    assert.equal(inf.listCount, 1);
    // History is compacted and the stream dropped; the resume gets 410 and the informer relists.
    api.compactedBelow = api.rv + 10;
    const watchesBefore = api.watchers.size;
    assert.equal(watchesBefore, 1);
    for (const w of api.watchers) w.out.destroy();
    api.watchers.clear();
    // While not watching, b is deleted and the log is compacted.
    const coll = api.objects.get(PODS);
    coll?.delete('b');
    api.rv += 20;
    await until(() => inf.listCount === 2, 'relist');
    await until(() => deletes.length === 1, 'missed delete');
    assert.deepEqual(deletes, [['b', true]]);
    assert.equal(inf.store.size, 2);
    await inf.stop();
    // The first list may come from the apiserver's watch cache (resourceVersion=0);
    // the relist after 410 asks for the latest state (no resourceVersion).
    const lists = api.requests.filter((r) => r.startsWith('GET /api/v1/pods?limit'));
    assert.equal(lists.length, 2);
    assert.match(lists[0], /[?&]resourceVersion=0(&| |$)/);
    assert.doesNotMatch(lists[1], /resourceVersion=/);
  });

  it('shares one informer per resource in a factory and replays existing objects to late handlers', async () => {
    const api = new FakeApi();
    api.put(PODS, pod('a'));
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const factory = new SharedInformerFactory(client);
    const i1 = factory.forResource(resources.pods);
    const i2 = factory.forResource(resources.pods);
    assert.equal(i1, i2);
    assert.notEqual(factory.forResource(resources.nodes) as unknown, i1 as unknown);
    factory.start();
    await factory.waitForCacheSync();
    const late: string[] = [];
    i1.addEventHandler({ onAdd: (o) => late.push(o.metadata?.name ?? '') });
    assert.deepEqual(late, ['a']);
    await factory.stop();
    assert.equal(api.requests.filter((r) => r.startsWith('GET /api/v1/pods?limit')).length, 1);
  });

  it('keeps listing a resource that is not served yet, reports it once, and syncs once it appears', async () => {
    const WIDGETS = '/apis/example.com/v1/widgets';
    const widgets = {
      group: 'example.com',
      version: 'v1',
      resource: 'widgets',
      kind: 'Widget',
      namespaced: false,
    };
    const api = new FakeApi();
    api.unserved.add(WIDGETS);
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const errors: unknown[] = [];
    const inf = new Informer(client, widgets, {
      backoff: { baseDelayMs: 2, maxDelayMs: 10 },
      onError: (e) => errors.push(e),
    });
    inf.start();
    try {
      const lists = () => api.requests.filter((r) => r.startsWith(`GET ${WIDGETS}?`)).length;
      await until(() => lists() >= 4, 'several list attempts while the resource is not served');
      assert.equal(inf.hasSynced(), false);
      assert.equal(errors.length, 1, 'a resource that is not served is reported once, not at every retry');
      assert.ok(isNotFound(errors[0]));
      api.unserved.delete(WIDGETS);
      api.put(WIDGETS, { metadata: { name: 'w1' } });
      await until(() => inf.hasSynced(), 'sync once the resource is served');
      assert.equal(inf.store.get('w1')?.kind, 'Widget');
      api.put(WIDGETS, { metadata: { name: 'w2' } });
      await until(() => inf.store.size === 2, 'the watch delivers w2');
      assert.equal(errors.length, 1);
    } finally {
      await inf.stop();
    }
  });

  it('resyncs by re-delivering updates', async () => {
    const api = new FakeApi();
    api.put(PODS, pod('a'));
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const inf = new Informer<Pod>(client, resources.pods, { resyncPeriodMs: 20 });
    let updates = 0;
    inf.addEventHandler({
      onUpdate: (o, n) => {
        assert.equal(o, n);
        updates++;
      },
    });
    inf.start();
    await until(() => updates >= 2, 'resyncs');
    await inf.stop();
  });
});
