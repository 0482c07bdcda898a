// CustomResourceDefinitions end to end with the real kubectl: a CronTab CRD (as
// Kubernetes' docs use) is served once Established, its objects are validated,
// defaulted and pruned against the schema, have status and scale subresources
// and printer columns, and go with the CRD.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { apiserverArgs } from '@kubit/daemon/daemon-args';
import {
  type ControlPlane,
  daemonCommand,
  freePort,
  httpsGet,
  pkiApiserverFlags,
  startControlPlane,
  startProcess,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const extra: TestProcess[] = [];

before(async () => {
  cp = await startControlPlane({ nodes: [] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  for (const p of extra) await p.stop();
  await cp?.stop();
});

const CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            x-kubernetes-validations:
            - rule: "!has(self.image) || self.image != 'forbidden'"
              message: image may not be forbidden
            properties:
              cronSpec:
                type: string
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: cronSpec is immutable
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`;

const BASE = '/apis/stable.example.com/v1/namespaces/default/crontabs';

async function poll<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('CustomResourceDefinitions', () => {
  it('a bad CRD is refused with the field path', async () => {
    const r = await api.req('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'wrong.stable.example.com' },
      spec: {
        group: 'stable.example.com',
        scope: 'Namespaced',
        names: { plural: 'things', kind: 'Thing' },
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    });
    assert.equal(r.status, 422, r.text);
    assert.match(
      r.body.message,
      /metadata\.name: Invalid value: "wrong\.stable\.example\.com": must be spec\.names\.plural\+"\."\+spec\.group/,
    );
  });

  it('a CRD naming a resource a built-in kind serves is not accepted', async () => {
    const r = await api.post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: {
        name: 'storageclasses.storage.k8s.io',
        annotations: { 'api-approved.kubernetes.io': 'unapproved' },
      },
      spec: {
        group: 'storage.k8s.io',
        scope: 'Cluster',
        names: { plural: 'storageclasses', kind: 'StorageClass' },
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    });
    assert.equal(r.status, 201, r.text);
    const path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/storageclasses.storage.k8s.io';
    const st = await poll('NamesAccepted=False', async () => {
      const c = await api.get(path);
      const na = (c.body.status?.conditions ?? []).find((x: { type: string }) => x.type === 'NamesAccepted');
      return na?.status === 'False' ? na : undefined;
    });
    assert.equal(st.reason, 'PluralConflict');
    // The built-in kind is still the one served.
    const sc = await api.get('/apis/storage.k8s.io/v1/storageclasses');
    assert.equal(sc.status, 200);
    assert.equal(sc.body.kind, 'StorageClassList');
    await api.del(path);
    await poll('the conflicting CRD gone', async () => (await api.get(path)).status === 404);
    assert.equal((await api.get('/apis/storage.k8s.io/v1/storageclasses')).status, 200);
  });

  it('kubectl applies a CRD that becomes Established and is discovered', async () => {
    const file = join(cp.dir, 'crd.yaml');
    await writeFile(file, CRD);
    const r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(
      r.stdout,
      /customresourcedefinition.apiextensions.k8s.io\/crontabs.stable.example.com created/,
    );
    await kubectl(cp, [
      'wait',
      '--for=condition=Established',
      '--timeout=10s',
      'crd/crontabs.stable.example.com',
    ]);
    const crd = await api.get(
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com',
    );
    const types = crd.body.status.conditions.map(
      (c: { type: string; status: string }) => `${c.type}=${c.status}`,
    );
    assert.deepEqual(types, ['NamesAccepted=True', 'Established=True']);
    assert.deepEqual(crd.body.metadata.finalizers, ['customresourcecleanup.apiextensions.k8s.io']);
    const disc = await api.get('/apis/stable.example.com/v1');
    const res = disc.body.resources.find((x: { name: string }) => x.name === 'crontabs');
    assert.deepEqual(res.shortNames, ['ct']);
    assert.ok(disc.body.resources.some((x: { name: string }) => x.name === 'crontabs/scale'));
    // A dry-run create of a CRD or of a custom object stores nothing.
    const dry = await api.post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All', {
      ...crd.body,
      metadata: { name: 'others.stable.example.com' },
      spec: { ...crd.body.spec, names: { plural: 'others', kind: 'Other' } },
      status: undefined,
    });
    assert.equal(dry.status, 201, dry.text);
    const dryGet = await api.get(
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/others.stable.example.com',
    );
    assert.equal(dryGet.status, 404);
    const dryCr = await api.post(`${BASE}?dryRun=All`, {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'dry' },
      spec: { cronSpec: '* * * * *' },
    });
    assert.equal(dryCr.status, 201, dryCr.text);
    assert.equal((await api.get(`${BASE}/dry`)).status, 404);
    const ar = await kubectl(cp, ['api-resources', '--api-group=stable.example.com']);
    assert.match(ar.stdout, /crontabs\s+ct\s+stable\.example\.com\/v1\s+true\s+CronTab/);
  });

  it('custom objects: create, defaults, pruning, 422 with the field path, get by short name', async () => {
    const file = join(cp.dir, 'ct.yaml');
    await writeFile(
      file,
      'apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: my-cron\n  labels: {app: cron}\nspec:\n  cronSpec: "* * * * */5"\n  image: my-image\n  unknownField: x\n',
    );
    // kubectl's default --validate=strict would refuse the unknown field, as Kubernetes does.
    const c = await kubectl(cp, ['apply', '--validate=false', '-f', file]);
    assert.match(c.stdout, /crontab.stable.example.com\/my-cron created/);
    const got = await api.get(`${BASE}/my-cron`);
    assert.equal(got.body.spec.replicas, 1, 'defaulted');
    assert.equal(got.body.spec.unknownField, undefined, 'pruned');
    assert.equal(got.body.metadata.generation, 1);
    const bad = await api.req('POST', BASE, {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'bad' },
      spec: { cronSpec: 'nope', replicas: 20 },
    });
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.details.causes[0].field, 'spec.cronSpec');
    assert.match(
      bad.body.message,
      /CronTab.stable.example.com "bad" is invalid: \[spec.cronSpec: Invalid value: "nope": should match/,
    );
    assert.match(bad.body.message, /spec.replicas: Invalid value: 20: should be less than or equal to 10/);
    assert.equal((await api.get(`${BASE}/bad`)).status, 404, 'nothing stored');
    const strict = await api.req('POST', `${BASE}?fieldValidation=Strict`, {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'strict' },
      spec: { cronSpec: '* * * * *', typo: 1 },
    });
    assert.equal(strict.status, 400, strict.text);
    assert.match(strict.body.message, /strict decoding error: unknown field "spec.typo"/);
    const table = await kubectl(cp, ['get', 'ct']);
    assert.match(table.stdout, /NAME\s+SPEC\s+REPLICAS\s+AGE/);
    assert.match(table.stdout, /my-cron\s+\* \* \* \* \*\/5\s+1\s+\d+s/);
    const sel = await api.get(`${BASE}?labelSelector=app%3Dcron&fieldSelector=metadata.name%3Dmy-cron`);
    assert.deepEqual(
      sel.body.items.map((i: { metadata: { name: string } }) => i.metadata.name),
      ['my-cron'],
    );
    const none = await api.get(`${BASE}?fieldSelector=metadata.name%3Dother`);
    assert.equal(none.body.items.length, 0);
  });

  it('CEL rules, transition rules, a second served version, kubectl get all', async () => {
    const bad = await api.post(BASE, {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'cel' },
      spec: { cronSpec: '* * * * *', image: 'forbidden' },
    });
    assert.equal(bad.status, 422, bad.text);
    assert.match(bad.body.message, /spec: Invalid value: "object": image may not be forbidden/);
    const immutable = await api.patch(`${BASE}/my-cron`, { spec: { cronSpec: '1 * * * *' } });
    assert.equal(immutable.status, 422, immutable.text);
    assert.match(immutable.body.message, /spec.cronSpec: Invalid value: "string": cronSpec is immutable/);
    // Server-side apply of a custom object.
    const ssa = join(cp.dir, 'ssa.yaml');
    await writeFile(
      ssa,
      'apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: applied\nspec:\n  cronSpec: "0 * * * *"\n  image: ssa\n',
    );
    const applied = await kubectl(cp, ['apply', '--server-side', '-f', ssa]);
    assert.match(applied.stdout, /crontab.stable.example.com\/applied serverside-applied/);
    const got = await api.get(`${BASE}/applied`);
    assert.equal(got.body.spec.image, 'ssa');
    assert.equal(got.body.spec.replicas, 1);
    await api.del(`${BASE}/applied`);
    const beta = await api.get('/apis/stable.example.com/v1beta1/namespaces/default/crontabs/my-cron');
    assert.equal(beta.status, 200, beta.text);
    assert.equal(beta.body.apiVersion, 'stable.example.com/v1beta1');
    assert.equal(beta.body.spec.cronSpec, '* * * * */5');
    const all = await kubectl(cp, ['get', 'all']);
    assert.match(all.stdout, /crontab.stable.example.com\/my-cron/);
  });

  it('patch (merge, JSON), status and scale subresources, watch', async () => {
    const w = api.watch(`${BASE}?watch=true&fieldSelector=metadata.name%3Dmy-cron`);
    await kubectl(cp, ['patch', 'ct', 'my-cron', '--type=merge', '-p', '{"spec":{"image":"new"}}']);
    let o = await api.get(`${BASE}/my-cron`);
    assert.equal(o.body.spec.image, 'new');
    assert.equal(o.body.metadata.generation, 2);
    await kubectl(cp, [
      'patch',
      'ct',
      'my-cron',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/image","value":"json"}]',
    ]);
    // A strategic merge patch (kubectl patch's default type) has no patch keys to go by on a custom
    // resource: 415, naming the types it takes, as Kubernetes answers.
    const smp = await kubectl(cp, ['patch', 'ct', 'my-cron', '-p', '{"spec":{"image":"smp"}}'], {
      allowFail: true,
    });
    assert.notEqual(smp.code, 0);
    assert.match(
      smp.stderr,
      /the body of the request was in an unknown format - accepted media types include: application\/json-patch\+json, application\/merge-patch\+json, application\/apply-patch\+yaml/,
    );
    // status through the main resource is ignored; through /status it is kept, and spec there is ignored.
    await kubectl(cp, ['patch', 'ct', 'my-cron', '--type=merge', '-p', '{"status":{"replicas":5}}']);
    o = await api.get(`${BASE}/my-cron`);
    assert.equal(o.body.status, undefined);
    const st = await api.req(
      'PATCH',
      `${BASE}/my-cron/status`,
      { status: { replicas: 2, selector: 'app=cron' }, spec: { image: 'ignored' } },
      { 'Content-Type': 'application/merge-patch+json' },
    );
    assert.equal(st.status, 200, st.text);
    o = await api.get(`${BASE}/my-cron`);
    assert.equal(o.body.status.replicas, 2);
    assert.equal(o.body.spec.image, 'json');
    await kubectl(cp, ['scale', 'ct/my-cron', '--replicas=4']);
    o = await api.get(`${BASE}/my-cron`);
    assert.equal(o.body.spec.replicas, 4);
    const scale = await api.get(`${BASE}/my-cron/scale`);
    assert.deepEqual(scale.body.spec, { replicas: 4 });
    assert.deepEqual(scale.body.status, { replicas: 2, selector: 'app=cron' });
    await poll('watch events', async () => w.events.some((e) => e.object?.spec?.replicas === 4));
    assert.equal(w.events[0].type, 'ADDED');
    w.close();
  });

  it('an apiserver started later serves the existing CRD from its start', async () => {
    const port = await freePort();
    const cmd = daemonCommand('apiserver', 'main.ts');
    const proc = startProcess({
      name: 'kubit-apiserver-second',
      command: cmd.command,
      args: [
        ...cmd.args,
        ...apiserverArgs({
          bindAddress: '127.0.0.1',
          securePort: port,
          ...pkiApiserverFlags(cp.pki, cp.storeEndpoints),
        }),
      ],
      env: { KUBIT_LOG_FORMAT: 'json' },
      logFile: join(cp.logDir, 'kubit-apiserver-second.log'),
    });
    extra.push(proc);
    const url = `https://127.0.0.1:${port}`;
    await waitFor(
      'the second apiserver to be ready',
      async () => {
        if (!proc.running) throw new Error('the second apiserver exited');
        return (await httpsGet(`${url}/readyz`, cp.pki.caFile, cp.pki.admin)).status === 200;
      },
      120_000,
      200,
    );
    const second = new Api({ ...cp, url });
    try {
      // Ready means its caches, the CRDs' included, are filled: no wait here.
      const got = await second.get(`${BASE}/my-cron`);
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.spec.replicas, 4);
      const bad = await second.post(BASE, {
        apiVersion: 'stable.example.com/v1',
        kind: 'CronTab',
        metadata: { name: 'x' },
        spec: { cronSpec: 'nope' },
      });
      assert.equal(bad.status, 422, bad.text);
    } finally {
      second.close();
      await proc.stop();
    }
  });

  it('deleting the CRD deletes its objects first, then stops serving', async () => {
    await api.req('POST', BASE, {
      apiVersion: 'stable.example.com/v1',
      kind: 'CronTab',
      metadata: { name: 'second' },
      spec: { cronSpec: '* * * * *' },
    });
    for (const name of ['third', 'fourth']) {
      const r = await api.post(BASE, {
        apiVersion: 'stable.example.com/v1',
        kind: 'CronTab',
        metadata: { name, labels: { batch: 'b' } },
        spec: { cronSpec: '* * * * *' },
      });
      assert.equal(r.status, 201, r.text);
    }
    const dc = await api.del(`${BASE}?labelSelector=batch%3Db`);
    assert.equal(dc.status, 200, dc.text);
    assert.equal((await api.get(`${BASE}/third`)).status, 404);
    const one = await kubectl(cp, ['delete', 'ct', 'second']);
    assert.match(one.stdout, /crontab.stable.example.com "second" deleted/);
    await kubectl(cp, ['delete', 'crd', 'crontabs.stable.example.com', '--timeout=20s']);
    const gone = await api.get(
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com',
    );
    assert.equal(gone.status, 404);
    assert.equal((await api.get(`${BASE}/my-cron`)).status, 404);
    assert.equal((await api.get('/apis/stable.example.com/v1')).status, 404);
    // A new CRD of the same name finds no objects left.
    await writeFile(join(cp.dir, 'crd2.yaml'), CRD);
    await kubectl(cp, ['apply', '-f', join(cp.dir, 'crd2.yaml')]);
    await kubectl(cp, [
      'wait',
      '--for=condition=Established',
      '--timeout=10s',
      'crd/crontabs.stable.example.com',
    ]);
    const list = await poll('served again', async () => {
      const r = await api.get(BASE);
      return r.status === 200 ? r : undefined;
    });
    assert.equal(list.body.items.length, 0);
  });
});
