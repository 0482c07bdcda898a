// core/v1 PodTemplate with the real kubectl: applied, listed with Kubernetes'
// columns, explained, defaulted as a pod template, and refused (422 with field
// paths under `template`) when its template is not a valid pod template.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';

let cp: ControlPlane;
let api: Api;
const PATH = '/api/v1/namespaces/default/podtemplates';

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

describe('PodTemplate', () => {
  it('is applied, listed, explained and defaulted like a pod template', async () => {
    const manifest = `apiVersion: v1
kind: PodTemplate
metadata:
  name: web
template:
  metadata:
    labels: {app: web, tier: front}
  spec:
    containers:
    - {name: nginx, image: nginx:1.27}
    - {name: sidecar, image: busybox:1.36}
`;
    await kubectl(cp, ['apply', '--validate=strict', '-f', '-'], { input: manifest });
    const out = await kubectl(cp, ['get', 'podtemplates']);
    const lines = out.stdout.trim().split('\n');
    assert.match(lines[0], /^NAME\s+CONTAINERS\s+IMAGES\s+POD LABELS$/);
    assert.match(lines[1], /^web\s+nginx,sidecar\s+nginx:1\.27,busybox:1\.36\s+app=web,tier=front$/);
    const got = await api.get(`${PATH}/web`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.template.spec.restartPolicy, 'Always');
    assert.equal(got.body.template.spec.containers[0].terminationMessagePath, '/dev/termination-log');
    const explain = await kubectl(cp, ['explain', 'podtemplate.template']);
    assert.match(explain.stdout, /KIND:\s+PodTemplate/);
    assert.match(explain.stdout, /FIELD:\s+template <PodTemplateSpec>/);
    await kubectl(cp, ['delete', 'podtemplate', 'web']);
    assert.equal((await api.get(`${PATH}/web`)).status, 404);
  });

  it('refuses a template that is not a valid pod template, with field paths', async () => {
    const r = await api.post(PATH, {
      apiVersion: 'v1',
      kind: 'PodTemplate',
      metadata: { name: 'broken' },
      template: { metadata: { labels: { 'bad key!': 'x' } }, spec: { containers: [] } },
    });
    assert.equal(r.status, 422, r.text);
    const fields = (r.body.details.causes as { field: string }[]).map((c) => c.field);
    assert.ok(fields.includes('template.metadata.labels'), JSON.stringify(fields));
    assert.ok(fields.includes('template.spec.containers'), JSON.stringify(fields));
    assert.equal((await api.get(`${PATH}/broken`)).status, 404);
  });
});
