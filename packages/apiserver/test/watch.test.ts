// Watch and list semantics over HTTPS: resume without gaps or duplicates, 410
// for history that is gone, selectors applied to old and new, bookmarks,
// timeouts, pagination at one revision.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, pod, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const NS = '/api/v1/namespaces/default';

before(async () => {
  cp = await startControlPlane({
    apiserverArgs: ['--watch-bookmark-interval=1', '--watch-cache-history=50'],
  });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

async function mkcm(name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}) {
  const r = await api.post(`${NS}/configmaps`, { metadata: { name, labels }, data });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

describe('watch', () => {
  it('delivers ADDED/MODIFIED/DELETED in order with increasing resourceVersions', async () => {
    const list = await api.get(`${NS}/configmaps`);
    const w = api.watch(`${NS}/configmaps?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
    try {
      await mkcm('w1');
      await api.patch(`${NS}/configmaps/w1`, { data: { a: '1' } });
      await api.del(`${NS}/configmaps/w1`);
      await until('three events', () => w.events.length >= 3);
      assert.deepEqual(
        w.events.map((e) => e.type),
        ['ADDED', 'MODIFIED', 'DELETED'],
      );
      const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
      assert.ok(rvs[0] < rvs[1] && rvs[1] < rvs[2], `increasing: ${rvs}`);
      assert.equal(w.events[1].object.data.a, '1');
      assert.equal(w.events[0].object.kind, 'ConfigMap');
    } finally {
      w.close();
    }
  });

  it('resumes from any kept resourceVersion with no gap and no duplicate', async () => {
    const first = await mkcm('r1');
    const rv0 = first.metadata.resourceVersion;
    const names = ['r2', 'r3', 'r4'];
    for (const n of names) await mkcm(n);
    const w = api.watch(`${NS}/configmaps?watch=true&resourceVersion=${rv0}`);
    try {
      await until('three replayed events', () => w.events.length >= 3);
      await mkcm('r5');
      await until('the live event', () => w.events.length >= 4);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        w.events.map((e) => `${e.type} ${e.object.metadata.name}`),
        ['ADDED r2', 'ADDED r3', 'ADDED r4', 'ADDED r5'],
      );
    } finally {
      w.close();
    }
  });

  it('rv unset or "0" starts with a synthetic ADDED per existing object', async () => {
    for (const rv of ['', '&resourceVersion=0']) {
      const w = api.watch(`${NS}/configmaps?watch=true&labelSelector=set%3Dinit${rv}`);
      try {
        if (rv === '') await mkcm('init-a', { set: 'init' });
        await until('initial events', () => w.events.length >= 1);
        assert.ok(w.events.every((e) => e.type === 'ADDED'));
        assert.ok(w.events.some((e) => e.object.metadata.name === 'init-a'));
      } finally {
        w.close();
      }
    }
  });

  it('answers 410 Expired for a resourceVersion older than the kept history', async () => {
    // The cache keeps 50 events: push the start of history past an old revision.
    const old = (await mkcm('old')).metadata.resourceVersion;
    for (let i = 0; i < 60; i++) await api.patch(`${NS}/configmaps/old`, { data: { i: String(i) } });
    const w = api.watch(`${NS}/configmaps?watch=true&resourceVersion=${old}`);
    await until('the error event', () => w.events.length >= 1 && w.ended);
    assert.equal(w.status, 200);
    assert.equal(w.events[0].type, 'ERROR');
    assert.equal(w.events[0].object.code, 410);
    assert.equal(w.events[0].object.reason, 'Expired');
    assert.match(w.events[0].object.message, /too old resource version/);
  });

  it('applies selectors to old and new: leaving the selector is DELETED, entering is ADDED', async () => {
    await mkcm('sel', { color: 'red' });
    const list = await api.get(`${NS}/configmaps?labelSelector=color%3Dred`);
    const w = api.watch(
      `${NS}/configmaps?watch=true&labelSelector=color%3Dred&resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    try {
      await api.patch(`${NS}/configmaps/sel`, { metadata: { labels: { color: 'blue' } } });
      await api.patch(`${NS}/configmaps/sel`, { data: { x: 'ignored while blue' } });
      await api.patch(`${NS}/configmaps/sel`, { metadata: { labels: { color: 'red' } } });
      await api.patch(`${NS}/configmaps/sel`, { data: { x: 'seen' } });
      await until('three events', () => w.events.length >= 3);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        w.events.map((e) => e.type),
        ['DELETED', 'ADDED', 'MODIFIED'],
      );
      assert.equal(w.events[0].object.metadata.labels.color, 'blue');
    } finally {
      w.close();
    }
  });

  it('field selectors filter watches too', async () => {
    const list = await api.get(`${NS}/pods`);
    const w = api.watch(
      `${NS}/pods?watch=true&fieldSelector=metadata.name%3Dfs2&resourceVersion=${list.body.metadata.resourceVersion}`,
    );
    try {
      assert.equal((await api.post(`${NS}/pods`, pod('fs1'))).status, 201);
      assert.equal((await api.post(`${NS}/pods`, pod('fs2'))).status, 201);
      await until('one event', () => w.events.length >= 1);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(
        w.events.map((e) => e.object.metadata.name),
        ['fs2'],
      );
    } finally {
      w.close();
    }
  });

  it('sends BOOKMARK only when allowed, and ends at timeoutSeconds', async () => {
    const list = await api.get(`${NS}/configmaps`);
    const rv = list.body.metadata.resourceVersion;
    const plain = api.watch(`${NS}/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=2`);
    const marked = api.watch(
      `${NS}/configmaps?watch=true&resourceVersion=${rv}&timeoutSeconds=3&allowWatchBookmarks=true`,
    );
    await until('both watches to end', () => plain.ended && marked.ended, 10_000);
    assert.equal(plain.events.filter((e) => e.type === 'BOOKMARK').length, 0);
    const bm = marked.events.filter((e) => e.type === 'BOOKMARK');
    assert.ok(bm.length >= 1, 'a bookmark arrived');
    assert.ok(Number(bm[0].object.metadata.resourceVersion) >= Number(rv));
  });

  it('watches one object by name via fieldSelector and the watch path', async () => {
    await mkcm('single');
    const w = api.watch(`/api/v1/watch/namespaces/default/configmaps?fieldSelector=metadata.name%3Dsingle`);
    try {
      await until('initial ADDED', () => w.events.length >= 1);
      await api.patch(`${NS}/configmaps/single`, { data: { z: '1' } });
      await until('MODIFIED', () => w.events.length >= 2);
      assert.equal(w.events[1].type, 'MODIFIED');
    } finally {
      w.close();
    }
  });

  it('watch counts show in /metrics', async () => {
    const m = await api.get('/metrics');
    assert.equal(m.status, 200);
    assert.match(m.text, /apiserver_request_total\{verb="watch",resource="configmaps",code="200"\}/);
    assert.match(m.text, /apiserver_request_duration_seconds_bucket/);
    assert.match(
      m.text,
      /apiserver_storage_request_duration_seconds_bucket\{le="[^"]+",operation="create"\}/,
    );
  });
});

describe('list', () => {
  it('pages with limit/continue at one consistent revision', async () => {
    for (let i = 0; i < 7; i++) await mkcm(`page-${i}`, { paged: 'yes' });
    const seen: string[] = [];
    let cont = '';
    let rv = '';
    let pages = 0;
    do {
      const r = await api.get(
        `${NS}/configmaps?labelSelector=paged%3Dyes&limit=3${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`,
      );
      assert.equal(r.status, 200, r.text);
      if (rv) assert.equal(r.body.metadata.resourceVersion, rv, 'every page at the same revision');
      rv = r.body.metadata.resourceVersion;
      seen.push(...r.body.items.map((i: { metadata: { name: string } }) => i.metadata.name));
      cont = r.body.metadata.continue ?? '';
      pages++;
      // A write between pages must not show up in later pages.
      if (pages === 1) await mkcm('page-9', { paged: 'yes' });
    } while (cont);
    assert.deepEqual(seen, ['page-0', 'page-1', 'page-2', 'page-3', 'page-4', 'page-5', 'page-6']);
    assert.equal(pages, 3);
  });

  it('resourceVersion=0 is served from the cache; Exact reads an old revision', async () => {
    const before = await mkcm('exact', {}, { v: '1' });
    await api.patch(`${NS}/configmaps/exact`, { data: { v: '2' } });
    const cached = await until('the cache to catch up', () => undefined as unknown as false, 1).catch(
      () => undefined,
    );
    void cached;
    const r0 = await api.get(`${NS}/configmaps?resourceVersion=0`);
    assert.equal(r0.status, 200);
    const ex = await api.get(
      `${NS}/configmaps?resourceVersion=${before.metadata.resourceVersion}&resourceVersionMatch=Exact&fieldSelector=metadata.name%3Dexact`,
    );
    assert.equal(ex.status, 200, ex.text);
    assert.equal(ex.body.items[0].data.v, '1');
    assert.equal(ex.body.metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it('rejects bad list options with 400/422 naming the problem', async () => {
    let r = await api.get(`${NS}/configmaps?resourceVersion=abc`);
    assert.equal(r.status, 400);
    assert.match(r.body.message, /resourceVersion "abc"/);
    r = await api.get(`${NS}/configmaps?labelSelector=${encodeURIComponent('a in (b')}`);
    assert.equal(r.status, 400);
    r = await api.get(`${NS}/configmaps?continue=garbage`);
    assert.equal(r.status, 400);
    assert.match(r.body.message, /continue/);
    r = await api.get(`${NS}/configmaps?resourceVersionMatch=Exact`);
    assert.equal(r.status, 422);
    r = await api.get(`${NS}/configmaps?limit=x`);
    assert.equal(r.status, 400);
  });
});
