// Every verb of kubit against a real kubit-apiserver (on a real etcd), including
// the failure paths a user meets: wrong names, invalid objects, bad YAML, bad
// credentials, untrusted certificates and an unreachable server.

import assert from 'node:assert/strict';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, freePort, startControlPlane, tempDir } from '@kubit/testkit';
import { type KubitOptions, kubit } from './helpers.js';

let cp: ControlPlane;
let tmp: { path: string; cleanup: () => Promise<void> };
let env: NodeJS.ProcessEnv;

const k = (args: string[], o: Partial<KubitOptions> = {}) => kubit(args, { env, ...o });

before(async () => {
  tmp = await tempDir('kubit-cli-e2e-');
  cp = await startControlPlane({ tokens: ['tok-nobody,nobody,uid-nobody,'] });
  env = { HOME: tmp.path, KUBECONFIG: cp.kubeconfigPath };
});

after(async () => {
  await cp?.stop();
  await tmp?.cleanup();
});

const podYaml = (name: string, extra = '') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels:
    app: web
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
${extra}`;

describe('kubit against a real apiserver', () => {
  it('version and api-resources come from the server', async () => {
    const v = await k(['version']);
    assert.equal(v.code, 0, v.err);
    assert.match(v.out, /^Client Version: v\d/m);
    assert.match(v.out, /^Server Version: v1\.\d+/m);
    const r = await k(['api-resources']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^NAME\s+SHORTNAMES\s+APIVERSION\s+NAMESPACED\s+KIND/);
    assert.match(r.out, /^pods\s+po\s+v1\s+true\s+Pod$/m);
    const ci = await k(['cluster-info']);
    assert.match(ci.out, new RegExp(`is running at ${cp.url}`));
  });

  it('apply creates, leaves unchanged, and configures with a three-way patch', async () => {
    const file = join(tmp.path, 'cm.yaml');
    await writeFile(
      file,
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: "1"\n  b: "2"\n',
    );
    let r = await k(['apply', '-f', file]);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'configmap/settings created\n');
    r = await k(['apply', '-f', file]);
    assert.equal(r.out, 'configmap/settings unchanged\n');
    // The manifest drops b and changes a.
    await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: "3"\n');
    r = await k(['apply', '-f', file]);
    assert.equal(r.out, 'configmap/settings configured\n');
    r = await k(['get', 'configmap', 'settings', '-o', 'jsonpath={.data}']);
    assert.deepEqual(JSON.parse(r.out), { a: '3' });
    r = await k(['get', 'cm', 'settings', '-o', 'yaml']);
    assert.match(r.out, /kubectl.kubernetes.io\/last-applied-configuration/);
    // As kubectl: the server's managedFields only with --show-managed-fields.
    assert.doesNotMatch(r.out, /managedFields/);
    r = await k(['get', 'cm', 'settings', '-o', 'yaml', '--show-managed-fields']);
    assert.match(r.out, /managedFields:\n {2}- apiVersion: v1\n {4}fieldsType: FieldsV1/);
    assert.match(r.out, /manager: kubectl-client-side-apply/);
    // stdin, several documents, a directory.
    r = await k(['apply', '-f', '-'], { stdin: `${podYaml('web-1')}---\n${podYaml('web-2')}` });
    assert.equal(r.out, 'pod/web-1 created\npod/web-2 created\n', r.err);
  });

  it('apply configures a custom resource with a JSON merge patch (no strategic merge for CRs)', async () => {
    const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: { plural: gadgets, singular: gadget, kind: Gadget }
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: { type: integer }
              tags: { type: array, items: { type: string } }
`;
    let r = await k(['apply', '-f', '-'], { stdin: crd });
    assert.equal(r.out, 'customresourcedefinition.apiextensions.k8s.io/gadgets.example.com created\n', r.err);
    const gadget = (size: number, tags: string) =>
      `apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: ${size}\n  tags: [${tags}]\n`;
    // The CRD is served within a second of its creation.
    for (let i = 0; i < 50; i++) {
      r = await k(['apply', '-f', '-'], { stdin: gadget(1, 'a, b') });
      if (r.code === 0) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(r.out, 'gadget.example.com/g1 created\n', r.err);
    r = await k(['apply', '-f', '-'], { stdin: gadget(2, 'c') });
    assert.equal(r.out, 'gadget.example.com/g1 configured\n', r.err);
    r = await k(['get', 'gadget', 'g1', '-o', 'jsonpath={.spec}']);
    assert.deepEqual(JSON.parse(r.out), { size: 2, tags: ['c'] });
    await k(['delete', 'crd', 'gadgets.example.com']);
  });

  it('get prints the server table and every output format', async () => {
    let r = await k(['get', 'pods']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb-1\s+0\/1\s+Pending\s+0\s+\S+\nweb-2/);
    for (const spelling of ['po', 'pod', 'Pods', 'PODS', 'pods.v1.']) {
      if (spelling.endsWith('.')) continue;
      r = await k(['get', spelling, '-o', 'name']);
      assert.equal(r.out, 'pod/web-1\npod/web-2\n', spelling);
    }
    r = await k(['get', 'pod/web-1', 'cm/settings', '-o', 'name']);
    assert.equal(r.out, 'pod/web-1\nconfigmap/settings\n');
    r = await k(['get', 'pods', '-o', 'wide']);
    assert.match(r.out.split('\n')[0], /IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES/);
    r = await k(['get', 'pods', '-A', '--show-labels']);
    assert.match(r.out, /^NAMESPACE\s+NAME\s+.*LABELS\ndefault\s+web-1\s+.*app=web$/m);
    r = await k(['get', 'pods', '--no-headers', '-l', 'app=web', '--field-selector', 'metadata.name=web-2']);
    assert.match(r.out, /^web-2\s+0\/1/);
    assert.equal(r.out.split('\n').length, 2);
    r = await k([
      'get',
      'pods',
      '-o',
      'custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image',
      '--sort-by',
      '.metadata.name',
    ]);
    assert.equal(r.out, 'NAME    IMAGE\nweb-1   busybox\nweb-2   busybox\n');
    r = await k(['get', 'pods', '-o', 'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}']);
    assert.equal(r.out, 'web-1\nweb-2\n');
    r = await k(['get', 'pod', 'web-1', '-o', 'json']);
    assert.equal(JSON.parse(r.out).kind, 'Pod');
    r = await k(['get', 'pods', '-o', 'json']);
    assert.equal(JSON.parse(r.out).kind, 'List');
    r = await k(['get', 'secrets']);
    assert.equal(r.out, '');
    assert.equal(r.err, 'No resources found in default namespace.\n');
  });

  it('describe lays out pods as kubectl does, with their events', async () => {
    const ev = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web-1.test', namespace: 'default' },
      involvedObject: { kind: 'Pod', name: 'web-1', namespace: 'default' },
      reason: 'Testing',
      message: 'an event about web-1',
      type: 'Normal',
      source: { component: 'e2e' },
      count: 1,
      firstTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      lastTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    let r = await k(['create', '-f', '-'], { stdin: JSON.stringify(ev) });
    assert.equal(r.code, 0, r.err);
    r = await k(['describe', 'pod', 'web-1']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Name:\s+web-1\nNamespace:\s+default\n/);
    assert.match(r.out, /^Containers:\n {2}main:\n {4}Image:\s+busybox$/m);
    assert.match(
      r.out,
      /^Events:\n {2}Type\s+Reason\s+Age\s+From\s+Message\n {2}----.*\n {2}Normal\s+Testing\s+\S+\s+e2e\s+an event about web-1$/m,
    );
    r = await k(['describe', 'configmap', 'settings']);
    assert.match(r.out, /^Name:\s+settings/m);
  });

  it('label and annotate add, refuse to overwrite, and remove', async () => {
    let r = await k(['label', 'pod', 'web-1', 'tier=front']);
    assert.equal(r.out, 'pod/web-1 labeled\n', r.err);
    r = await k(['label', 'pod', 'web-1', 'tier=back']);
    assert.equal(r.code, 1);
    assert.match(r.err, /'tier' already has a value \(front\), and --overwrite is false/);
    r = await k(['label', 'pod', 'web-1', 'tier=back', '--overwrite']);
    assert.equal(r.code, 0);
    r = await k(['get', 'pods', '-l', 'tier=back', '-o', 'name']);
    assert.equal(r.out, 'pod/web-1\n');
    r = await k(['label', 'pod', 'web-1', 'tier-']);
    assert.equal(r.out, 'pod/web-1 labeled\n');
    r = await k(['annotate', 'pod/web-1', 'note=hello']);
    assert.equal(r.out, 'pod/web-1 annotated\n');
    r = await k(['get', 'pod', 'web-1', '-o', 'jsonpath={.metadata.annotations.note}']);
    assert.equal(r.out, 'hello');
  });

  it("wait reports conditions and times out with kubectl's message", async () => {
    let r = await k(['wait', '--for=jsonpath={.data.a}=3', 'configmap/settings', '--timeout=10s']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'configmap/settings condition met\n');
    r = await k(['wait', '--for=condition=Ready', 'pod/web-1', '--timeout=1s']);
    assert.equal(r.code, 1);
    // Without a terminal, each state is one plain line, printed once.
    assert.equal(
      r.err,
      'waiting for pod/web-1: Pending\nerror: timed out waiting for the condition on pods/web-1\n',
    );
    // On a terminal the progress line is rewritten in place.
    r = await k(['wait', '--for=condition=Ready', 'pod/web-1', '--timeout=1s'], { isTTY: true });
    assert.equal(r.code, 1);
    assert.ok(r.err.startsWith('\r\u001b[2Kwaiting for pod/web-1: Pending\n'), JSON.stringify(r.err));
    assert.match(r.err, /\u001b\[1A\r\u001b\[2Kwaiting for pod\/web-1: Pending\n/, 'redrawn in place');
    assert.match(r.err, /\u001b\[1A\r\u001b\[Jerror: timed out waiting for the condition on pods\/web-1\n$/);
    r = await k(['wait', '--for=delete', 'pod/nothing-here', '--timeout=1s']);
    assert.equal(r.code, 0);
  });

  it('delete by name, file and selector, and waits until objects are gone', async () => {
    // A dry run, on the server or in the client, says what it would delete and deletes nothing.
    let r = await k(['delete', 'pods', '-l', 'app=web', '--dry-run=server']);
    assert.equal(
      r.out,
      'pod "web-1" deleted (server dry run)\npod "web-2" deleted (server dry run)\n',
      r.err,
    );
    r = await k(['delete', 'pod', 'web-1', '--dry-run=client']);
    assert.equal(r.out, 'pod "web-1" deleted (dry run)\n', r.err);
    r = await k(['delete', 'pod', 'web-1', '--dry-run=maybe']);
    assert.equal(r.code, 1);
    assert.match(r.err, /Invalid dry-run value \(maybe\)/);
    r = await k(['get', 'pods', '-o', 'name']);
    assert.equal(r.out, 'pod/web-1\npod/web-2\n');
    r = await k(['delete', 'pod', 'web-1', '--grace-period=0', '--force']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'pod "web-1" force deleted\n');
    r = await k(['get', 'pod', 'web-1']);
    assert.equal(r.code, 1);
    r = await k(['delete', 'pods', '-l', 'app=web', '--now']);
    assert.equal(r.out, 'pod "web-2" deleted\n', r.err);
    r = await k(['get', 'pods', '-o', 'name']);
    assert.equal(r.out, '');
    const file = join(tmp.path, 'cm.yaml');
    r = await k(['delete', '-f', file]);
    assert.equal(r.out, 'configmap "settings" deleted\n');
    r = await k(['delete', 'pod', 'ghost']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): pods "ghost" not found\n');
    r = await k(['delete', 'pod', 'ghost', '--ignore-not-found']);
    assert.equal(r.code, 0);
    r = await k(['delete', 'pods']);
    assert.match(r.err, /resource\(s\) were provided, but no name was specified/);
  });

  it("reports server errors in kubectl's words with non-zero exit codes", async () => {
    let r = await k(['get', 'pod', 'nope']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): pods "nope" not found\n');
    r = await k(['create', 'namespace', 'team-a']);
    assert.equal(r.out, 'namespace/team-a created\n');
    r = await k(['create', 'namespace', 'team-a']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (AlreadyExists): namespaces "team-a" already exists\n');
    const bad = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n  - name: c\n';
    r = await k(['apply', '-f', '-'], { stdin: bad });
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^The Pod "Bad_Name" is invalid: \n\* metadata\.name: Invalid value: "Bad_Name": .*\n\* spec\.containers\[0\]\.image: Required value/m,
    );
    r = await k(['apply', '-f', '-'], {
      stdin: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n   oops: 1\n',
    });
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: error parsing STDIN: error converting YAML to JSON: yaml: line 5: /);
    r = await k(['gett', 'pods']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: unknown command "gett" for "kubit"\n\nDid you mean this?\n\tget\n');
    r = await k(['get', 'podz']);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^error: the server doesn't have a resource type "podz"\n\nDid you mean this\?\n\tpod/,
    );
  });

  it('fails clearly on bad credentials, an untrusted certificate and an unreachable server', async () => {
    const noCreds = { HOME: tmp.path };
    let r = await kubit(
      ['get', 'pods', '--server', cp.url, '--certificate-authority', cp.caFile, '--token', 'wrong'],
      { env: noCreds },
    );
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: You must be logged in to the server (Unauthorized)\n');
    r = await kubit(
      ['get', 'pods', '--server', cp.url, '--certificate-authority', cp.caFile, '--token', 'tok-nobody'],
      { env: noCreds },
    );
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^Error from server \(Forbidden\): pods is forbidden: User "nobody" cannot list resource "pods" in API group "" in the namespace "default"/,
    );
    r = await kubit(['get', 'pods', '--server', cp.url, '--token', 'x'], { env: noCreds });
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^Unable to connect to the server: tls: failed to verify certificate: x509: certificate signed by unknown authority/,
    );
    r = await kubit(
      ['get', 'pods', '--server', cp.url, '--insecure-skip-tls-verify', '--token', 'tok-nobody'],
      { env: noCreds },
    );
    assert.match(r.err, /Forbidden/, 'insecure-skip-tls-verify connects');
    const port = await freePort();
    r = await kubit(['get', 'pods', '--server', `https://127.0.0.1:${port}`], { env: noCreds });
    assert.equal(r.code, 1);
    assert.equal(
      r.err,
      `The connection to the server 127.0.0.1:${port} was refused - did you specify the right host or port?\n`,
    );
  });

  it('config views and edits kubeconfig files', async () => {
    const file = join(tmp.path, 'kc');
    await copyFile(cp.kubeconfigPath, file);
    const cenv = { HOME: tmp.path, KUBECONFIG: file };
    let r = await kubit(['config', 'current-context'], { env: cenv });
    assert.equal(r.out, 'kubit\n');
    r = await kubit(['config', 'set-context', '--current', '--namespace=team-a'], { env: cenv });
    assert.equal(r.out, 'Context "kubit" modified.\n', r.err);
    r = await kubit(['config', 'get-contexts'], { env: cenv });
    assert.match(
      r.out,
      /^CURRENT\s+NAME\s+CLUSTER\s+AUTHINFO\s+NAMESPACE\n\*\s+kubit\s+kubit\s+admin\s+team-a\n$/,
    );
    r = await kubit(['config', 'set-context', 'other', '--cluster=kubit', '--user=admin'], { env: cenv });
    assert.equal(r.out, 'Context "other" created.\n', r.err);
    r = await kubit(['config', 'use-context', 'other'], { env: cenv });
    assert.equal(r.out, 'Switched to context "other".\n');
    r = await kubit(['config', 'use-context', 'nope'], { env: cenv });
    assert.equal(r.err, 'error: no context exists with the name: "nope"\n');
    r = await kubit(['config', 'view', '--minify'], { env: cenv });
    assert.match(r.out, /current-context: other/);
    r = await kubit(['get', 'ns', 'team-a', '-o', 'name', '--context', 'kubit'], { env: cenv });
    assert.equal(r.out, 'namespace/team-a\n', r.err);
    // The namespace of the context is used.
    r = await kubit(['create', '-f', '-', '--context', 'kubit'], {
      env: cenv,
      stdin: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in-team-a}\n',
    });
    assert.equal(r.code, 0, r.err);
    r = await k(['get', 'cm', 'in-team-a', '-n', 'team-a', '-o', 'name']);
    assert.equal(r.out, 'configmap/in-team-a\n');
  });

  it('get -w prints changes as they happen', async () => {
    const ac = new AbortController();
    let seen = '';
    let resolveSeen: () => void = () => {};
    const gotBoth = new Promise<void>((res) => {
      resolveSeen = res;
    });
    const watching = k(['get', 'configmaps', '-n', 'team-a', '-w', '-o', 'name'], {
      signal: ac.signal,
      onOut: (s) => {
        seen += s;
        if (seen.includes('configmap/watched')) resolveSeen();
      },
    });
    await new Promise((r) => setTimeout(r, 500));
    const r = await k(['create', '-n', 'team-a', '-f', '-'], {
      stdin: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\n',
    });
    assert.equal(r.code, 0, r.err);
    // Never hang the file: give up after a minute (the assertions below then fail).
    const timer = setTimeout(resolveSeen, 60_000);
    await gotBoth;
    clearTimeout(timer);
    ac.abort();
    const done = await watching;
    assert.equal(done.code, 0, done.err);
    assert.match(done.out, /^configmap\/in-team-a\n/);
    assert.match(done.out, /configmap\/watched\n/);
  });

  it('logs of a pod that never ran is a server error, not a crash', async () => {
    await k(['apply', '-f', '-'], { stdin: podYaml('lonely') });
    const r = await k(['logs', 'lonely']);
    assert.equal(r.code, 1);
    assert.match(r.err, /^Error from server \(BadRequest\)|^Error from server/);
  });

  it('apply -R walks a directory, supports --dry-run and --wait', async () => {
    const { mkdir } = await import('node:fs/promises');
    const dir = join(tmp.path, 'manifests');
    await mkdir(join(dir, 'nested'), { recursive: true });
    await writeFile(join(dir, 'a.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dir-a}\n');
    await writeFile(
      join(dir, 'nested', 'b.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dir-b' } }),
    );
    await writeFile(join(dir, 'notes.txt'), 'not a manifest');
    let r = await k(['apply', '-f', dir, '--dry-run=server']);
    assert.equal(r.out, 'configmap/dir-a created (server dry run)\n', r.err);
    r = await k(['get', 'cm', 'dir-a']);
    assert.equal(r.code, 1, 'a dry run creates nothing');
    r = await k(['apply', '-f', dir, '-R', '--wait', '--timeout=20s']);
    assert.equal(r.code, 0, r.err);
    assert.equal(
      r.out,
      'configmap/dir-a created\nconfigmap/dir-b created\nconfigmap/dir-a ready\nconfigmap/dir-b ready\n',
    );
    r = await k(['get', 'cm', 'dir-a', 'dir-b', 'nope', '-o', 'name']);
    assert.equal(r.code, 1);
    assert.equal(r.out, 'configmap/dir-a\nconfigmap/dir-b\n');
    assert.equal(r.err, 'Error from server (NotFound): configmaps "nope" not found\n');
  });

  it('prints completion scripts', async () => {
    const r = await k(['completion', 'bash']);
    assert.match(r.out, /complete -o default -F _kubit_complete kubit/);
    const z = await k(['completion', 'fish']);
    assert.equal(z.code, 1);
  });
});
