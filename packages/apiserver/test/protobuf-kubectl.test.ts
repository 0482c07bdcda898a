// The real kubectl's typed clients send protobuf (`kubectl create <kind>`):
// each object so made must equal the one the same command's
// `--dry-run=client -o json` makes through the JSON path, field for field; and
// a protobuf body the decoder cannot read fully is refused (415) with nothing
// stored.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl } from './helpers.js';
import { encodeMessage, envelope } from './protobuf-encode.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane();
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

/**
 * Without what the server writes itself and two creations never share:
 * identity, versions, times, and a namespace's label of its own name.
 */
function comparable(o: Record<string, unknown>): Record<string, unknown> {
  const { uid, resourceVersion, creationTimestamp, managedFields, name, ...meta } = o.metadata as Record<
    string,
    unknown
  >;
  void [uid, resourceVersion, creationTimestamp, managedFields];
  const labels = { ...(meta.labels as Record<string, string> | undefined) };
  if (labels['kubernetes.io/metadata.name'] === name) delete labels['kubernetes.io/metadata.name'];
  return { ...o, metadata: { ...meta, labels } };
}

/** `args` with kubectl flags added before a `--` (which ends them and starts the container's command). */
function withFlags(args: string[], ...flags: string[]): string[] {
  const end = args.indexOf('--');
  return end < 0 ? [...args, ...flags] : [...args.slice(0, end), ...flags, ...args.slice(end)];
}

/**
 * Runs `kubectl create …` (protobuf; kubectl's log says so), then creates
 * the same command's client-side dry run, renamed `<name>-json`, from JSON,
 * and returns both objects as stored.
 */
async function protobufAndJson(args: string[], name: string, path: string) {
  const r = await kubectl(cp, withFlags(args, '-v=8'));
  assert.match(r.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/, 'kubectl sent protobuf');
  assert.match(r.stdout, / created/);
  const dry = JSON.parse((await kubectl(cp, withFlags(args, '--dry-run=client', '-o', 'json'))).stdout);
  dry.metadata.name = `${name}-json`;
  const file = join(cp.dir, `${name}.json`);
  await writeFile(file, JSON.stringify(dry));
  const c = await kubectl(cp, ['create', '-f', file, '-v=8']);
  assert.match(c.stderr, /Content-Type: application\/json/, 'create -f sends JSON');
  const viaProtobuf = (await api.get(`${path}/${name}`)).body;
  const viaJson = (await api.get(`${path}/${name}-json`)).body;
  assert.equal(viaProtobuf.metadata?.name, name, JSON.stringify(viaProtobuf));
  return { viaProtobuf, viaJson };
}

async function sameAsJson(args: string[], name: string, path: string) {
  const { viaProtobuf, viaJson } = await protobufAndJson(args, name, path);
  assert.deepEqual(comparable(viaProtobuf), comparable(viaJson));
  return viaProtobuf;
}

const NS = '/api/v1/namespaces/default';
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

describe('kubectl create through protobuf', () => {
  it('a deployment with a command and a port', async () => {
    const d = await sameAsJson(
      [
        'create',
        'deployment',
        'cmd',
        '--image=nginx:1.25',
        '--replicas=2',
        '--port=8080',
        '--',
        'sh',
        '-c',
        'echo hi',
      ],
      'cmd',
      '/apis/apps/v1/namespaces/default/deployments',
    );
    assert.deepEqual(d.spec.template.spec.containers[0].command, ['sh', '-c', 'echo hi']);
    assert.equal(d.spec.replicas, 2);
  });

  it('a secret from literals and a binary file, with its type', async () => {
    const bin = join(cp.dir, 'blob.bin');
    await writeFile(bin, Buffer.from([0, 0xff, 0x80, 0x7f]));
    const s = await sameAsJson(
      [
        'create',
        'secret',
        'generic',
        'creds',
        '--from-literal=user=admin',
        `--from-file=blob=${bin}`,
        '--type=kubit/test',
      ],
      'creds',
      `${NS}/secrets`,
    );
    assert.equal(s.data.user, Buffer.from('admin').toString('base64'));
    assert.equal(s.data.blob, Buffer.from([0, 0xff, 0x80, 0x7f]).toString('base64'));
    assert.equal(s.type, 'kubit/test');
  });

  it('a configmap from literals, a text file and a binary one (binaryData)', async () => {
    const text = join(cp.dir, 'app.conf');
    const bin = join(cp.dir, 'logo.bin');
    await writeFile(text, 'mode = fast\n');
    await writeFile(bin, Buffer.from([0xde, 0xad, 0xbe, 0xef]));
    const cm = await sameAsJson(
      ['create', 'configmap', 'settings', '--from-literal=k=v', `--from-file=${text}`, `--from-file=${bin}`],
      'settings',
      `${NS}/configmaps`,
    );
    assert.deepEqual(cm.data, { k: 'v', 'app.conf': 'mode = fast\n' });
    assert.deepEqual(cm.binaryData, { 'logo.bin': Buffer.from([0xde, 0xad, 0xbe, 0xef]).toString('base64') });
  });

  it('roles, cluster roles (aggregated, non-resource URLs) and their bindings', async () => {
    const role = await sameAsJson(
      [
        'create',
        'role',
        'reader',
        '--verb=get,list',
        '--resource=pods,deployments.apps',
        '--resource-name=web',
      ],
      'reader',
      `${RBAC}/namespaces/default/roles`,
    );
    assert.equal(role.rules.length, 2);
    await sameAsJson(
      ['create', 'clusterrole', 'health', '--verb=get', '--non-resource-url=/healthz'],
      'health',
      `${RBAC}/clusterroles`,
    );
    const agg = await sameAsJson(
      ['create', 'clusterrole', 'agg', '--aggregation-rule=kubit.dev/aggregate=true'],
      'agg',
      `${RBAC}/clusterroles`,
    );
    assert.deepEqual(agg.aggregationRule, {
      clusterRoleSelectors: [{ matchLabels: { 'kubit.dev/aggregate': 'true' } }],
    });
    const rb = await sameAsJson(
      [
        'create',
        'rolebinding',
        'readers',
        '--role=reader',
        '--user=ann',
        '--group=devs',
        '--serviceaccount=default:bot',
      ],
      'readers',
      `${RBAC}/namespaces/default/rolebindings`,
    );
    assert.equal(rb.subjects.length, 3);
    await sameAsJson(
      ['create', 'clusterrolebinding', 'healthy', '--clusterrole=health', '--user=ann'],
      'healthy',
      `${RBAC}/clusterrolebindings`,
    );
  });

  it('a namespace and a service account', async () => {
    await sameAsJson(['create', 'namespace', 'team'], 'team', '/api/v1/namespaces');
    await sameAsJson(['create', 'serviceaccount', 'bot'], 'bot', `${NS}/serviceaccounts`);
  });

  it('services of each type (their allocated address and node ports aside)', async () => {
    const unallocated = (svc: Record<string, unknown>) => {
      const spec = { ...(svc.spec as Record<string, unknown>) };
      delete spec.clusterIP;
      delete spec.clusterIPs;
      spec.ports = ((spec.ports as Record<string, unknown>[] | undefined) ?? []).map(({ nodePort, ...p }) => {
        void nodePort;
        return p;
      });
      return { ...comparable(svc), spec };
    };
    for (const [type, name, ...flags] of [
      ['clusterip', 'svc-c', '--tcp=80:8080', '--tcp=443:8443'],
      ['clusterip', 'svc-h', '--clusterip=None'],
      ['nodeport', 'svc-n', '--tcp=80:8080'],
      ['loadbalancer', 'svc-l', '--tcp=5678:8080'],
      ['externalname', 'svc-e', '--external-name=db.example.com'],
    ]) {
      const { viaProtobuf, viaJson } = await protobufAndJson(
        ['create', 'service', type, name, ...flags],
        name,
        `${NS}/services`,
      );
      assert.deepEqual(unallocated(viaProtobuf), unallocated(viaJson), type);
      if (name === 'svc-n') assert.ok(viaProtobuf.spec.ports[0].nodePort >= 30000);
    }
  });

  it('auth can-i --list (a SelfSubjectRulesReview in protobuf) lists the rules', async () => {
    const r = await kubectl(cp, ['auth', 'can-i', '--list', '-n', 'default', '-v=8']);
    assert.match(r.stderr, /Content-Type: application\/vnd\.kubernetes\.protobuf/);
    assert.match(r.stdout, /^\*\.\*\s+\[\]\s+\[\]\s+\[\*\]$/m);
  });

  it('a body with a field the schema does not know: 415 with a Status that says so, nothing stored', async () => {
    const cm = encodeMessage({ metadata: { name: 'odd' }, data: { k: 'v' } }, 'k8s.io.api.core.v1.ConfigMap');
    const extra = Buffer.from([(12 << 3) | 2, 1, 0x78]); // field 12 (ConfigMap has 1 to 4), length 1, "x"
    const body = envelope('v1', 'ConfigMap', Buffer.concat([cm, extra]));
    const res = await api.req('POST', `${NS}/configmaps`, body, {
      'Content-Type': 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(res.status, 415);
    assert.equal(res.body.kind, 'Status');
    assert.equal(res.body.reason, 'UnsupportedMediaType');
    assert.match(
      res.body.message,
      /ConfigMap cannot be decoded fully from protobuf: unknown field number 12 \(length-delimited\) in ConfigMap/,
    );
    assert.equal((await api.get(`${NS}/configmaps/odd`)).status, 404);
    // The same body without the stray field is created.
    const ok = await api.req('POST', `${NS}/configmaps`, envelope('v1', 'ConfigMap', cm), {
      'Content-Type': 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual((await api.get(`${NS}/configmaps/odd`)).body.data, { k: 'v' });
  });
});
