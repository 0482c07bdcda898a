// @kubit/client against a real kubit-apiserver: REST verbs and their errors,
// watch, informers, leader election over a Lease, the event recorder, and
// surviving an apiserver restart (informer and `kubit get -w`).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isAlreadyExists, isConflict, isNotFound, StatusError } from '@kubit/api';
import {
  type CoreEvent,
  EventRecorder,
  Informer,
  KubeClient,
  type KubeObject,
  LeaderElector,
  type Lease,
  RateLimitingQueue,
  resources,
  SharedInformerFactory,
} from '@kubit/client';
import { type ControlPlane, startControlPlane, type TestProcess, waitFor } from '@kubit/testkit';
import { kubit } from './helpers.js';
import { restartApiserver } from './restart.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };

let cp: ControlPlane;
let client: KubeClient;
let restarted: TestProcess | undefined;

before(async () => {
  cp = await startControlPlane();
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
});

after(async () => {
  client?.close();
  await restarted?.stop();
  await cp?.stop();
});

const cm = (
  name: string,
  data: Record<string, string> = {},
  labels: Record<string, string> = {},
): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default', labels },
  data,
});

describe('KubeClient on a real apiserver', () => {
  it('creates, reads, lists with selectors and pages, updates, patches and deletes', async () => {
    const created = await client.create(resources.configmaps, cm('one', { a: '1' }, { app: 'x' }));
    assert.ok(created.metadata?.resourceVersion);
    await assert.rejects(client.create(resources.configmaps, cm('one')), (e) => isAlreadyExists(e));
    for (const n of ['two', 'three']) await client.create(resources.configmaps, cm(n, {}, { app: 'y' }));
    const sel = await client.list<ConfigMap>(resources.configmaps, {
      namespace: 'default',
      labelSelector: 'app=y',
    });
    assert.deepEqual(sel.items.map((i) => i.metadata?.name).sort(), ['three', 'two']);
    const page = await client.list(resources.configmaps, { namespace: 'default', limit: 1 });
    assert.equal(page.items.length, 1);
    assert.ok(page.metadata.continue, 'a continue token for the next page');
    const all = await client.listAll(resources.configmaps, { namespace: 'default', limit: 1 });
    assert.ok(all.items.length >= 3);
    const got = await client.get<ConfigMap>(resources.configmaps, 'one');
    const updated = await client.update<ConfigMap>(resources.configmaps, { ...got, data: { a: '2' } });
    assert.equal(updated.data?.a, '2');
    await assert.rejects(client.update(resources.configmaps, { ...got, data: { a: '3' } }), (e) =>
      isConflict(e),
    );
    const merged = await client.patch<ConfigMap>(resources.configmaps, 'one', { data: { b: 'x' } });
    assert.deepEqual(merged.data, { a: '2', b: 'x' });
    const json = await client.patch<ConfigMap>(
      resources.configmaps,
      'one',
      [{ op: 'remove', path: '/data/a' }],
      { type: 'json' },
    );
    assert.deepEqual(json.data, { b: 'x' });
    await client.delete(resources.configmaps, 'one');
    await assert.rejects(
      client.get(resources.configmaps, 'one'),
      (e) => e instanceof StatusError && isNotFound(e) && e.message === 'configmaps "one" not found',
    );
    await client.deleteCollection(resources.configmaps, { namespace: 'default', labelSelector: 'app=y' });
    const left = await client.list(resources.configmaps, { namespace: 'default', labelSelector: 'app=y' });
    assert.equal(left.items.length, 0);
  });

  it('watches from a resourceVersion and stops on request', async () => {
    const list = await client.list(resources.configmaps, { namespace: 'default' });
    const w = client.watch<ConfigMap>(resources.configmaps, {
      namespace: 'default',
      resourceVersion: list.metadata.resourceVersion,
    });
    await client.create(resources.configmaps, cm('watched', { k: 'v' }));
    await client.delete(resources.configmaps, 'watched');
    const types: string[] = [];
    for await (const ev of w) {
      if (ev.object.metadata?.name !== 'watched') continue;
      types.push(ev.type);
      if (ev.type === 'DELETED') w.stop();
    }
    assert.deepEqual(types, ['ADDED', 'DELETED']);
  });

  it('informers (shared) keep an indexed cache in step with the server', async () => {
    const factory = new SharedInformerFactory(client);
    const inf = factory.forResource<ConfigMap>(resources.configmaps, {
      namespace: 'default',
      indexers: { app: (o) => (o.metadata?.labels?.app ? [o.metadata.labels.app] : []) },
    });
    const queue = new RateLimitingQueue<string>();
    inf.addEventHandler({
      onAdd: (o) => queue.add(`add/${o.metadata?.name}`),
      onUpdate: (_o, n) => queue.add(`update/${n.metadata?.name}`),
      onDelete: (o) => queue.add(`delete/${o.metadata?.name}`),
    });
    factory.start();
    await factory.waitForCacheSync();
    await client.create(resources.configmaps, cm('inf', {}, { app: 'z' }));
    await client.patch(resources.configmaps, 'inf', { data: { x: '1' } });
    await client.delete(resources.configmaps, 'inf');
    const seen: string[] = [];
    // Never hang the file: shut the queue down after a minute (the assertions then fail).
    const timer = setTimeout(() => queue.shutDown(), 60_000);
    while (!seen.includes('delete/inf')) {
      const item = await queue.get();
      if (item === undefined) break;
      seen.push(item);
      queue.done(item);
    }
    clearTimeout(timer);
    assert.deepEqual(
      seen.filter((s) => s.endsWith('/inf')),
      ['add/inf', 'update/inf', 'delete/inf'],
    );
    assert.equal(inf.store.byIndex('app', 'z').length, 0);
    queue.shutDown();
    await factory.stop();
  });

  it('elects one leader over a real Lease and hands over on release', async () => {
    const mk = (id: string, log: string[]) =>
      new LeaderElector(client, {
        lockName: 'e2e-lock',
        lockNamespace: 'kube-system',
        identity: id,
        leaseDurationMs: 3000,
        renewDeadlineMs: 2000,
        retryPeriodMs: 300,
        onStartedLeading: () => {
          log.push(`start ${id}`);
        },
        onStoppedLeading: () => log.push(`stop ${id}`),
      });
    const log: string[] = [];
    const a = mk('a', log);
    const b = mk('b', log);
    const ca = new AbortController();
    const cb = new AbortController();
    const ra = a.run(ca.signal);
    await waitFor('a to lead', () => a.isLeader(), 20_000, 50);
    const rb = b.run(cb.signal);
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(b.isLeader(), false);
    const lease = await client.get<Lease>(resources.leases, 'e2e-lock', { namespace: 'kube-system' });
    assert.equal(lease.spec?.holderIdentity, 'a');
    ca.abort();
    await ra;
    await waitFor('b to lead', () => b.isLeader(), 20_000, 50);
    cb.abort();
    await rb;
    assert.deepEqual(log, ['start a', 'stop a', 'start b', 'stop b']);
  });

  it('records events and aggregates repeats', async () => {
    const obj = await client.create(resources.configmaps, cm('evented'));
    const rec = new EventRecorder(client, { component: 'e2e-test', host: 'h1' });
    rec.event(obj, 'Warning', 'Trouble', 'something failed');
    rec.event(obj, 'Warning', 'Trouble', 'something failed');
    await rec.flush();
    const events = await client.list<CoreEvent>(resources.events, { namespace: 'default' });
    const mine = events.items.filter((e) => e.involvedObject?.name === 'evented');
    assert.equal(mine.length, 1);
    assert.equal(mine[0].count, 2);
    assert.equal(mine[0].source.component, 'e2e-test');
    const d = await kubit(['describe', 'configmap', 'evented'], {
      env: { HOME: cp.dir, KUBECONFIG: cp.kubeconfigPath },
    });
    assert.match(d.out, /Warning\s+Trouble\s+\S+ \(x2 over \S+\)\s+e2e-test\s+something failed/);
  });

  it('an informer and `kubit get -w` survive an apiserver restart', async () => {
    const inf = new Informer<ConfigMap>(client, resources.configmaps, {
      namespace: 'default',
      backoff: { baseDelayMs: 100, maxDelayMs: 1000 },
    });
    const ac = new AbortController();
    let out = '';
    const env = { HOME: cp.dir, KUBECONFIG: cp.kubeconfigPath };
    let watching: ReturnType<typeof kubit> | undefined;
    try {
      inf.start();
      await inf.waitForSync();
      watching = kubit(['get', 'configmaps', '-w', '--watch-only', '-o', 'name'], {
        env,
        signal: ac.signal,
        onOut: (s) => {
          out += s;
        },
      });
      await new Promise((r) => setTimeout(r, 500));

      // Restart the apiserver on the same port with the same flags.
      restarted = await restartApiserver(cp);

      await client.create(resources.configmaps, cm('after-restart'));
      await waitFor(
        'the informer to see the new object',
        () => inf.store.get('after-restart', 'default') !== undefined,
        60_000,
        50,
      );
      await waitFor(
        'get -w to print the new object',
        () => out.includes('configmap/after-restart'),
        60_000,
        50,
      );
    } finally {
      // Always end the watch and the informer: a live loop would keep this file running.
      ac.abort();
      await inf.stop();
    }
    const r = await watching;
    assert.equal(r?.code, 0, r?.err);
    assert.match(r?.err ?? '', /watch interrupted/);
  });
});
