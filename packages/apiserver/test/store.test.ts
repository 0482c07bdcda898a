// The store client of the request path (etcdkv.ts) and the reuse of written
// objects for the apiserver's own watch events (written.ts): unit tests of the
// identity rules (etcdkv's codecs: etcdkv-codec.test.ts), then against a real store, that every watch
// event carries exactly what the store holds at the event's revision.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { KvClient } from '../src/etcdkv.js';
import type { KObject } from '../src/storage.js';
import { WrittenObjects } from '../src/written.js';
import { Api, pod, until } from './helpers.js';

describe('written objects', () => {
  const obj = (): KObject => ({
    metadata: { name: 'a', resourceVersion: '4', uid: 'u' },
    spec: { nodeName: 'n' },
  });
  const bytes = (o: KObject) => Buffer.from(JSON.stringify(o));
  const ok = (rev: number) => ({ ok: true as const, rev });

  it('gives the object back only for the same key, revision and bytes', () => {
    const w = new WrittenObjects();
    const o = obj();
    w.noteWrite('/k', o, bytes(o), ok(7));
    assert.equal(w.take('/k', 6, bytes(o)), undefined, 'an older event leaves the entry');
    assert.equal(w.size, 1);
    const got = w.take('/k', 7, bytes(o));
    assert.ok(got);
    assert.equal(got.metadata?.resourceVersion, '7');
    assert.notEqual(got, o, 'a new top level');
    assert.notEqual(got.metadata, o.metadata, 'a new metadata: the writer may still touch its own');
    assert.deepEqual(Object.keys(got.metadata ?? {}), ['name', 'uid', 'resourceVersion']);
    assert.equal(o.metadata?.resourceVersion, '4', 'the written object is not changed');
    assert.equal(w.take('/k', 7, bytes(o)), undefined, 'taken once');
    assert.equal(w.hits, 1);
  });

  it('decodes instead when the bytes or the revision differ', () => {
    const w = new WrittenObjects();
    const o = obj();
    w.noteWrite('/k', o, bytes(o), ok(7));
    assert.equal(w.take('/k', 7, Buffer.from('{"other":true}')), undefined);
    assert.equal(w.size, 0, 'a mismatch drops the entry');
    w.noteWrite('/k', o, bytes(o), ok(8));
    assert.equal(w.take('/k', 9, bytes(o)), undefined, 'a newer event than our write');
    assert.equal(w.size, 0);
    w.noteWrite('/k', o, bytes(o), { ok: false, current: null });
    assert.equal(w.size, 0, 'a failed write is not remembered');
  });

  it('offers our newer write over a stale cached copy, and forgets deleted keys', () => {
    const w = new WrittenObjects();
    const o = obj();
    w.noteWrite('/k', o, bytes(o), ok(10));
    assert.equal(w.newerThan('/k', 10), undefined);
    const newer = w.newerThan('/k', 9);
    assert.equal(newer?.rev, 10);
    assert.equal(newer?.obj.metadata?.resourceVersion, '10');
    assert.notEqual(newer?.obj.metadata, o.metadata);
    w.forget('/k', 9);
    assert.equal(w.size, 1, 'a delete older than our write does not forget it');
    w.forget('/k', 11);
    assert.equal(w.size, 0);
  });
});

describe('written objects: bounds', () => {
  it('drops entries whose event never came, oldest first, by age and by count', () => {
    let now = 0;
    const w = new WrittenObjects(() => now);
    const o: KObject = { metadata: { name: 'a' } };
    const v = Buffer.from('{}');
    w.noteWrite('/a', o, v, { ok: true, rev: 1 });
    now = 5000;
    w.noteWrite('/b', o, v, { ok: true, rev: 2 });
    now = 10_500;
    w.noteWrite('/c', o, v, { ok: true, rev: 3 });
    assert.equal(w.newerThan('/a', 0), undefined, '/a is older than 10 s: dropped');
    assert.equal(w.newerThan('/b', 0)?.rev, 2);
    assert.equal(w.size, 2);
    // Rewriting a key moves it to the back: /c is the oldest now.
    now = 12_000;
    w.noteWrite('/b', o, v, { ok: true, rev: 4 });
    now = 21_000;
    w.noteWrite('/d', o, v, { ok: true, rev: 5 });
    assert.equal(w.newerThan('/c', 0), undefined);
    assert.equal(w.newerThan('/b', 0)?.rev, 4);
    for (let i = 0; i < 10_050; i++) w.noteWrite(`/n${i}`, o, v, { ok: true, rev: 10 + i });
    assert.ok(w.size <= 10_000, `at most 10,000 entries, not ${w.size}`);
    assert.equal(w.newerThan('/n10049', 0)?.rev, 10_059, 'the newest stay');
  });
});

describe('against a real store', () => {
  let cp: ControlPlane;
  let api: Api;
  let kv: KvClient;
  const NS = '/api/v1/namespaces/default';

  before(async () => {
    cp = await startControlPlane();
    api = new Api(cp);
    kv = new KvClient({
      endpoints: cp.storeEndpoints,
      ca: readFileSync(cp.pki.caFile),
      cert: readFileSync(cp.pki.apiserverEtcdClient.cert),
      key: readFileSync(cp.pki.apiserverEtcdClient.key),
    });
  });
  after(async () => {
    kv?.close();
    api?.close();
    await cp?.stop();
  });

  it('creates once, guards on revisions and reads at a revision', async () => {
    const key = Buffer.from(`/kvtest/${Date.now()}`);
    const put = (v: string) => ({ put: { key, value: Buffer.from(v) } });
    const first = await kv.txn({ key, target: 'create', value: 0 }, put('one'), { range: { key } });
    assert.equal(first.succeeded, true);
    const again = await kv.txn({ key, target: 'create', value: 0 }, put('two'), { range: { key } });
    assert.equal(again.succeeded, false);
    assert.equal(again.rangeKvs[0].value.toString(), 'one');
    assert.equal(again.rangeKvs[0].mod_revision, first.revision);
    const stale = await kv.txn({ key, target: 'mod', value: first.revision - 1 }, put('x'), {
      range: { key },
    });
    assert.equal(stale.succeeded, false);
    const upd = await kv.txn({ key, target: 'mod', value: first.revision }, put('three'), { range: { key } });
    assert.equal(upd.succeeded, true);
    const old = await kv.range({ key, revision: first.revision });
    assert.equal(old.kvs[0].value.toString(), 'one');
    const now = await kv.range({ key });
    assert.equal(now.kvs[0].value.toString(), 'three');
    assert.ok(now.revision >= upd.revision);
    const del = await kv.txn(
      { key, target: 'mod', value: upd.revision },
      { delete: { key } },
      { range: { key } },
    );
    assert.equal(del.succeeded, true);
    assert.equal((await kv.range({ key })).kvs.length, 0);
  });

  it('reads a range of many MiB in one response', async () => {
    const prefix = `/kvbig/${Date.now()}/`;
    const value = Buffer.alloc(1_000_000, 'x');
    for (let i = 0; i < 8; i++) {
      const key = Buffer.from(`${prefix}${i}`);
      const r = await kv.txn(
        { key, target: 'create', value: 0 },
        { put: { key, value } },
        { range: { key } },
      );
      assert.equal(r.succeeded, true);
    }
    const end = Buffer.from(prefix);
    end[end.length - 1]++;
    const all = await kv.range({ key: Buffer.from(prefix), rangeEnd: end });
    assert.equal(all.kvs.length, 8);
    for (const x of all.kvs) assert.ok(x.value.equals(value));
    const two = await kv.range({ key: Buffer.from(prefix), rangeEnd: end, limit: 2 });
    assert.equal(two.kvs.length, 2);
    assert.equal(two.more, true);
  });

  it('every watch event carries exactly what the store holds at its revision', async () => {
    const list = await api.get(`${NS}/pods`);
    const w = api.watch(`${NS}/pods?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
    try {
      const name = `ident-${Date.now()}`;
      const c = await api.post(`${NS}/pods`, pod(name));
      assert.equal(c.status, 201, c.text);
      const b = await api.post(`${NS}/pods/${name}/binding`, {
        metadata: { name, uid: c.body.metadata.uid },
        target: { kind: 'Node', name: 'node-a' },
      });
      assert.equal(b.status, 201, b.text);
      const p = await api.patch(`${NS}/pods/${name}/status`, { status: { phase: 'Running' } });
      assert.equal(p.status, 200, p.text);
      await until('three events', () => w.events.length >= 3);
      const key = Buffer.from(`/registry/pods/default/${name}`);
      for (const ev of w.events.slice(0, 3)) {
        const rv = Number(ev.object.metadata.resourceVersion);
        const atRev = await kv.range({ key, revision: rv });
        assert.equal(atRev.kvs.length, 1);
        assert.equal(atRev.kvs[0].mod_revision, rv);
        const stored = JSON.parse(atRev.kvs[0].value.toString('utf8'));
        stored.metadata.resourceVersion = String(rv);
        assert.deepEqual(ev.object, stored, `event at ${rv}`);
        assert.equal(JSON.stringify(ev.object), JSON.stringify(stored), `same text at ${rv}`);
      }
      assert.deepEqual(
        w.events.slice(0, 3).map((e) => e.type),
        ['ADDED', 'MODIFIED', 'MODIFIED'],
      );
      // The cache serves the same object as the store.
      const cached = await api.get(`${NS}/pods?resourceVersion=0&fieldSelector=metadata.name=${name}`);
      const fresh = await api.get(`${NS}/pods/${name}`);
      assert.deepEqual(cached.body.items[0], { ...fresh.body });
    } finally {
      w.close();
    }
  });
});
