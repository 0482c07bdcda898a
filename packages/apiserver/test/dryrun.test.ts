// A dry run never writes. For every kind in the apiserver's own registry (so a
// kind added later is covered without editing this file) and every write verb
// and write subresource it serves, a dryRun=All request is made and the store's
// whole /registry/ range (each key with its mod_revision), its revision and its
// leases are compared before and after, read with the real etcdctl. Requests
// that would fail (a conflict, an invalid object, a missing object) fail with
// the status the real request gets, and write nothing either. The real
// kubectl's --dry-run=server runs the same check for the commands people use.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, etcdctl, startControlPlane } from '@kubit/testkit';
import { builtinKinds } from '../src/kinds/index.js';
import { groupVersion, type KindDef } from '../src/kinds/types.js';
import { Api, kubectl, type Reply } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const NS = 'dry';

before(async () => {
  cp = await startControlPlane({ nodes: ['n1'] });
  api = new Api(cp);
  const ns = await api.post('/api/v1/namespaces', { metadata: { name: NS } });
  assert.equal(ns.status, 201, ns.text);
  // The node the pods are bound to and kubectl drain drains.
  const node = await api.post('/api/v1/nodes', { metadata: { name: 'n1' } });
  assert.equal(node.status, 201, node.text);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

/** The store as etcdctl sees it: revision, every /registry/ key with its mod_revision, the leases. */
async function storeState(): Promise<string> {
  const tls = [
    `--cacert=${cp.pki.caFile}`,
    `--cert=${cp.pki.apiserverEtcdClient.cert}`,
    `--key=${cp.pki.apiserverEtcdClient.key}`,
  ];
  const got = await etcdctl(cp.storeEndpoints, [
    ...tls,
    'get',
    '/registry/',
    '--prefix',
    '--keys-only',
    '-w',
    'json',
  ]);
  assert.equal(got.code, 0, got.stderr);
  const range = JSON.parse(got.stdout) as {
    header: { revision: number };
    kvs?: { key: string; mod_revision: number }[];
  };
  const leases = await etcdctl(cp.storeEndpoints, [...tls, 'lease', 'list', '-w', 'json']);
  assert.equal(leases.code, 0, leases.stderr);
  const keys = (range.kvs ?? []).map(
    (kv) => `${Buffer.from(kv.key, 'base64').toString()}@${kv.mod_revision}`,
  );
  const leaseIds = ((JSON.parse(leases.stdout) as { leases?: { ID: number }[] }).leases ?? []).map(
    (l) => l.ID,
  );
  return JSON.stringify({ revision: range.header.revision, keys, leases: leaseIds.sort() }, null, 1);
}

/** Runs `write`, then checks that the store is exactly as it was. */
async function unchanged<T>(what: string, write: () => Promise<T>): Promise<T> {
  const before = await storeState();
  const result = await write();
  const afterState = await storeState();
  assert.equal(afterState, before, `${what}: the dry run changed the store`);
  return result;
}

function collectionPath(def: KindDef, ns = NS): string {
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  return def.namespaced ? `${base}/namespaces/${ns}/${def.resource}` : `${base}/${def.resource}`;
}

function manifest(def: KindDef, name: string, extra: Record<string, unknown> = {}) {
  return {
    ...structuredClone(def.example),
    apiVersion: groupVersion(def),
    kind: def.kind,
    metadata: { name, labels: { suite: 'dryrun' } },
    ...extra,
  };
}

function expectStatus(r: Reply, code: number, what: string) {
  assert.equal(r.status, code, `${what}: ${r.text}`);
}

const DRY = 'dryRun=All';

describe('every kind, every write verb, with dryRun=All', () => {
  for (const [index, def] of builtinKinds().entries()) {
    const label = `${def.group || 'core'}/${def.version} ${def.resource}`;
    it(`${label}: writes nothing, answers as the write would`, async () => {
      const coll = collectionPath(def);
      // Kinds that share storage (core and events.k8s.io Events) get names of their own.
      const name = `dry-${def.resource}-${index}`;
      const item = `${coll}/${name}`;
      const real = await api.post(coll, manifest(def, name));
      expectStatus(real, 201, `${label}: the real create`);
      const stored = (await api.get(item)).body;
      const asIs = async (what: string, r: Promise<Reply>, code: number) => {
        const reply = await unchanged(`${label} ${what}`, () => r);
        expectStatus(reply, code, `${label} ${what}`);
        return reply;
      };

      const created = await asIs('create', api.post(`${coll}?${DRY}`, manifest(def, `${name}-new`)), 201);
      assert.equal(created.body.metadata.name, `${name}-new`);
      assert.ok(
        created.body.metadata.uid,
        `${label}: a dry-run create answers with the object it would store`,
      );
      assert.equal(created.body.metadata.resourceVersion, undefined);
      const generated = await asIs(
        'create with generateName',
        api.post(`${coll}?${DRY}`, { ...manifest(def, ''), metadata: { generateName: 'gen-' } }),
        201,
      );
      assert.match(generated.body.metadata.name, /^gen-[a-z0-9]{5}$/);
      const exists = await asIs(
        'create of an existing name',
        api.post(`${coll}?${DRY}`, manifest(def, name)),
        409,
      );
      assert.equal(exists.body.reason, 'AlreadyExists');
      await asIs('create of an invalid name', api.post(`${coll}?${DRY}`, manifest(def, 'not/a/name')), 422);
      const badMode = await asIs(
        'create with dryRun=Some',
        api.post(`${coll}?dryRun=Some`, manifest(def, 'x')),
        422,
      );
      assert.match(
        badMode.body.message,
        /^CreateOptions\.meta\.k8s\.io "" is invalid: dryRun: Unsupported value/,
      );

      const labelled = {
        ...stored,
        metadata: { ...stored.metadata, labels: { suite: 'dryrun', dry: 'run' } },
      };
      const put = await asIs('update', api.put(`${item}?${DRY}`, labelled), 200);
      assert.equal(put.body.metadata.labels.dry, 'run');
      assert.equal(put.body.metadata.resourceVersion, stored.metadata.resourceVersion);
      const stale = { ...labelled, metadata: { ...labelled.metadata, resourceVersion: '1' } };
      const conflict = await asIs(
        'update with a stale resourceVersion',
        api.put(`${item}?${DRY}`, stale),
        409,
      );
      assert.equal(conflict.body.reason, 'Conflict');
      await asIs(
        'update of a missing object',
        api.put(`${coll}/missing?${DRY}`, { ...labelled, metadata: { name: 'missing' } }),
        404,
      );

      const patches: [string, unknown][] = [
        ['application/merge-patch+json', { metadata: { labels: { dry: 'run' } } }],
        ['application/strategic-merge-patch+json', { metadata: { labels: { dry: 'run' } } }],
        ['application/json-patch+json', [{ op: 'add', path: '/metadata/labels/dry', value: 'run' }]],
        [
          'application/apply-patch+yaml',
          { apiVersion: groupVersion(def), kind: def.kind, metadata: { name, labels: { dry: 'run' } } },
        ],
      ];
      for (const [type, body] of patches) {
        const q = type.startsWith('application/apply') ? `${DRY}&fieldManager=dryrun-test` : DRY;
        const p = await asIs(`patch (${type})`, api.patch(`${item}?${q}`, body, type), 200);
        assert.equal(
          p.body.metadata.labels.dry,
          'run',
          `${label} patch (${type}) answers with the patched object`,
        );
      }
      await asIs(
        'server-side apply of a new object',
        api.patch(
          `${coll}/applied?${DRY}&fieldManager=dryrun-test`,
          manifest(def, 'applied'),
          'application/apply-patch+yaml',
        ),
        201,
      );

      const deleted = await asIs('delete (DeleteOptions.dryRun)', api.del(item, { dryRun: ['All'] }), 200);
      assert.equal(deleted.body.metadata.name, name);
      await asIs('delete (?dryRun=All)', api.req('DELETE', `${item}?${DRY}`), 200);
      await asIs(
        'delete with a uid precondition that does not hold',
        api.del(item, { dryRun: ['All'], preconditions: { uid: 'not-the-uid' } }),
        409,
      );
      await asIs('delete of a missing object', api.del(`${coll}/missing`, { dryRun: ['All'] }), 404);
      await asIs('delete with dryRun=Some', api.del(item, { dryRun: ['Some'] }), 422);
      const collection = await asIs(
        'deletecollection',
        api.req('DELETE', `${coll}?labelSelector=suite%3Ddryrun`, { dryRun: ['All'] }),
        200,
      );
      assert.ok(
        collection.body.items.some((o: { metadata: { name: string } }) => o.metadata.name === name),
        `${label}: deletecollection answers with what it would delete`,
      );

      // A connect subresource (proxy) stores nothing: there is no dry run of it.
      for (const sub of def.subresources.filter((s) => !s.connect)) {
        for (const verb of sub.verbs.filter((v) => v !== 'get')) {
          const current = (await api.get(item)).body;
          const example = sub.exampleBody?.(verb, current);
          assert.ok(example, `${label}/${sub.name}: no exampleBody for ${verb}, so its dry run is untested`);
          const method = verb === 'create' ? 'POST' : verb === 'update' ? 'PUT' : 'PATCH';
          const fallback = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
          const headers = { 'Content-Type': example.contentType ?? fallback };
          const r = await unchanged(`${label}/${sub.name} ${verb}`, () =>
            api.req(method, `${item}/${sub.name}?${DRY}`, example.body, headers),
          );
          assert.ok(r.status >= 200 && r.status < 300, `${label}/${sub.name} ${verb}: ${r.status} ${r.text}`);
        }
      }
      const afterAll = (await api.get(item)).body;
      assert.deepEqual(afterAll, stored, `${label}: the object is as it was`);
    });
  }

  it('deleting an immortal namespace is refused in a dry run too', async () => {
    const r = await unchanged('delete namespace default', () =>
      api.del('/api/v1/namespaces/default', { dryRun: ['All'] }),
    );
    expectStatus(r, 403, 'delete namespace default');
    assert.equal(r.body.message, 'namespaces "default" is forbidden: this namespace may not be deleted');
  });

  it('a dry-run graceful delete answers with the deletion timestamp and finalizers it would set', async () => {
    const pods = `/api/v1/namespaces/${NS}/pods`;
    const made = await api.post(pods, {
      metadata: { name: 'bound', finalizers: ['example.com/hold'] },
      spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox:1.36' }] },
    });
    expectStatus(made, 201, 'create a bound pod');
    const r = await unchanged('graceful delete', () =>
      api.del(`${pods}/bound`, { dryRun: ['All'], gracePeriodSeconds: 7, propagationPolicy: 'Foreground' }),
    );
    expectStatus(r, 200, 'graceful delete');
    assert.equal(r.body.metadata.deletionGracePeriodSeconds, 7);
    assert.ok(r.body.metadata.deletionTimestamp);
    assert.deepEqual(r.body.metadata.finalizers, ['example.com/hold', 'foregroundDeletion']);
    const still = (await api.get(`${pods}/bound`)).body;
    assert.equal(still.metadata.deletionTimestamp, undefined);
    const evicted = await unchanged('eviction with DeleteOptions.dryRun', () =>
      api.post(`${pods}/bound/eviction`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'bound' },
        deleteOptions: { dryRun: ['All'] },
      }),
    );
    expectStatus(evicted, 201, 'eviction');
    const wrongName = await unchanged('eviction naming another pod', () =>
      api.post(`${pods}/bound/eviction?${DRY}`, {
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name: 'other' },
      }),
    );
    expectStatus(wrongName, 400, 'eviction naming another pod');
  });
});

describe("the real kubectl's --dry-run=server", () => {
  const run = (args: string[], input?: string) =>
    unchanged(`kubectl ${args.join(' ')}`, () => kubectl(cp, ['-n', NS, ...args], { input }));

  before(async () => {
    await kubectl(cp, ['-n', NS, 'create', 'configmap', 'kept', '--from-literal=a=b']);
    await kubectl(cp, ['-n', NS, 'label', 'configmap', 'kept', 'app=kept']);
    await kubectl(cp, ['-n', NS, 'create', 'deployment', 'web', '--image=busybox:1.36', '--replicas=2']);
    await kubectl(cp, [
      '-n',
      NS,
      'run',
      'sleeper',
      '--image=busybox:1.36',
      '--overrides={"spec":{"nodeName":"n1"}}',
    ]);
  });

  it('create, apply (client and server side), label, annotate, patch, scale and delete change nothing', async () => {
    // The object kubectl prints for a dry run: what the write would have stored.
    const wouldStore = async (args: string[], input?: string) =>
      JSON.parse((await run([...args, '--dry-run=server', '-o', 'json'], input)).stdout);
    const created = await wouldStore(['create', 'configmap', 'fresh', '--from-literal=x=y']);
    assert.equal(created.metadata.name, 'fresh');
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\ndata:\n  a: changed\n`;
    assert.equal((await wouldStore(['apply', '-f', '-'], yaml)).data.a, 'changed');
    // data.a is kubectl-create's: changing it takes it over (without the flag, a 409).
    assert.equal(
      (await wouldStore(['apply', '--server-side', '--force-conflicts', '-f', '-'], yaml)).data.a,
      'changed',
    );
    const labelled = await wouldStore(['label', 'configmap', 'kept', 'x=y']);
    assert.equal(labelled.metadata.labels.x, 'y');
    const annotated = await wouldStore(['annotate', 'configmap', 'kept', 'note=hi']);
    assert.equal(annotated.metadata.annotations.note, 'hi');
    const patched = await wouldStore(['patch', 'configmap', 'kept', '-p', '{"data":{"c":"d"}}']);
    assert.equal(patched.data.c, 'd');
    const scaled = await run(['scale', 'deployment', 'web', '--replicas=5', '--dry-run=server']);
    assert.match(scaled.stdout, /deployment.apps\/web scaled \(server dry run\)/);
    const one = await run(['delete', 'configmap', 'kept', '--dry-run=server']);
    assert.match(one.stdout, /configmap "kept" deleted \(server dry run\)/);
    const bySelector = await run(['delete', 'configmap', '-l', 'app=kept', '--dry-run=server']);
    assert.match(bySelector.stdout, /configmap "kept" deleted \(server dry run\)/);
    const all = await run(['delete', 'pod', '--all', '--dry-run=server']);
    assert.match(all.stdout, /pod "sleeper" deleted \(server dry run\)/);
    const drained = await run(['drain', 'n1', '--force', '--dry-run=server']);
    assert.match(
      drained.stdout,
      /evicting pod dry\/sleeper \(server dry run\)|pod\/sleeper evicted \(server dry run\)/,
    );
    // Everything is still there.
    const left = await kubectl(cp, [
      '-n',
      NS,
      'get',
      'configmap/kept',
      'pod/sleeper',
      'deployment/web',
      '-o',
      'name',
    ]);
    assert.deepEqual(left.stdout.trim().split('\n'), [
      'configmap/kept',
      'pod/sleeper',
      'deployment.apps/web',
    ]);
  });
});
