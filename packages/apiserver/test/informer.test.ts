// The real @kubernetes/client-node informer against kubit-apiserver: it lists,
// watches (add, update, delete), and when its resourceVersion has fallen out of
// the history kept (and the store compacted it away) it gets a 410 and relists.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';
import { type ControlPlane, etcdctl, startControlPlane } from '@kubit/testkit';
import { Api, pod, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const INF = '/api/v1/namespaces/inf';
const NOISE = '/api/v1/namespaces/noise';
/** Watch events kept per resource: the noise below writes more than this. */
const HISTORY = 50;

before(async () => {
  cp = await startControlPlane({
    // Watches without timeoutSeconds (an informer's) end after 2-4 s, so the
    // informer reconnects with the resourceVersion it has: the way to a 410.
    apiserverArgs: [`--watch-cache-history=${HISTORY}`, '--min-request-timeout=2'],
  });
  api = new Api(cp);
  for (const name of ['inf', 'noise']) {
    assert.equal((await api.post('/api/v1/namespaces', { metadata: { name } })).status, 201);
  }
});
after(async () => {
  api?.close();
  await cp?.stop();
});

/** Compacts the store at its current revision with the real etcdctl. */
async function compactStore(): Promise<number> {
  const rev = Number((await api.get(`${NOISE}/pods?limit=1`)).body.metadata.resourceVersion);
  const tls = [
    `--cacert=${cp.caFile}`,
    `--cert=${cp.pki.apiserverEtcdClient.cert}`,
    `--key=${cp.pki.apiserverEtcdClient.key}`,
  ];
  const r = await etcdctl(cp.storeEndpoints, [...tls, 'compact', String(rev)]);
  assert.equal(r.code, 0, r.stderr);
  return rev;
}

describe('@kubernetes/client-node informer', () => {
  it('lists, watches, and relists after a 410', { timeout: 120_000 }, async () => {
    assert.equal((await api.post(`${INF}/pods`, pod('pre'))).status, 201);
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    let lists = 0;
    const informer = makeInformer<V1Pod>(kc, `${INF}/pods`, () => {
      lists++;
      return core.listNamespacedPod({ namespace: 'inf' });
    });
    const seen: string[] = [];
    const errors: unknown[] = [];
    let stopped = false;
    informer.on('add', (p) => seen.push(`add ${p.metadata?.name}`));
    informer.on('update', (p) => seen.push(`update ${p.metadata?.name} ${p.metadata?.labels?.v ?? ''}`));
    informer.on('delete', (p) => seen.push(`delete ${p.metadata?.name}`));
    // As client-node's documentation does: an informer stops on errors other than 410
    // (a connection reset, say) and is restarted by its owner.
    informer.on('error', (err) => {
      errors.push(err);
      if (!stopped) setTimeout(() => void informer.start(), 500);
    });
    try {
      await informer.start();
      assert.equal(lists, 1);
      await until('the listed pod', () => seen.includes('add pre'));

      assert.equal((await api.post(`${INF}/pods`, pod('a'))).status, 201);
      await until('ADDED', () => seen.includes('add a'));
      assert.equal((await api.patch(`${INF}/pods/a`, { metadata: { labels: { v: '2' } } })).status, 200);
      await until('MODIFIED', () => seen.includes('update a 2'));
      assert.equal((await api.del(`${INF}/pods/a`)).status, 200);
      await until('DELETED', () => seen.includes('delete a'));
      assert.equal(informer.get('a', 'inf'), undefined);

      // More pod events than the apiserver keeps, none visible to the informer (other
      // namespace), and the store compacted past them: its resourceVersion is now too old.
      const listsBefore = lists;
      assert.equal((await api.post(`${NOISE}/pods`, pod('n'))).status, 201);
      for (let i = 0; i < HISTORY + 10; i++) {
        const r = await api.patch(`${NOISE}/pods/n`, { metadata: { labels: { i: String(i) } } });
        assert.equal(r.status, 200, r.text);
      }
      await compactStore();
      await until('a relist after the 410', () => lists > listsBefore, 60_000);

      assert.equal((await api.post(`${INF}/pods`, pod('later'))).status, 201);
      await until('a pod created after the relist', () => seen.includes('add later'), 30_000);
      assert.deepEqual(
        informer
          .list('inf')
          .map((p) => p.metadata?.name)
          .sort(),
        ['later', 'pre'],
      );
    } finally {
      stopped = true;
      await informer.stop();
    }
  });
});
