// The real kubectl v1.32 against kubit-apiserver on a real etcd.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from '@kubit/testkit';
import { Api, kubectl, until } from './helpers.js';

let cp: ControlPlane;
let api: Api;

before(async () => {
  cp = await startControlPlane({ nodes: ['node-a'] });
  api = new Api(cp);
});
after(async () => {
  api?.close();
  await cp?.stop();
});

const manifest = (image: string, data: string) => `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web, tier: front}
spec:
  containers:
  - name: nginx
    image: ${image}
    ports: [{containerPort: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: "${data}"
`;

describe('kubectl', () => {
  it('apply creates, re-apply is unchanged, a changed manifest is configured', async () => {
    const file = join(cp.dir, 'app.yaml');
    await writeFile(file, manifest('nginx:1.25', 'a'));
    let r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /pod\/web created/);
    assert.match(r.stdout, /configmap\/settings created/);
    r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /pod\/web unchanged/);
    assert.match(r.stdout, /configmap\/settings unchanged/);
    await writeFile(file, manifest('nginx:1.26', 'b'));
    r = await kubectl(cp, ['apply', '-f', file]);
    assert.match(r.stdout, /pod\/web configured/);
    assert.match(r.stdout, /configmap\/settings configured/);
    assert.equal(r.stderr.trim(), '', 'no warnings');
    const got = await api.get('/api/v1/namespaces/default/pods/web');
    assert.equal(got.body.spec.containers[0].image, 'nginx:1.26');
    const cm = await api.get('/api/v1/namespaces/default/configmaps/settings');
    assert.equal(cm.body.data.mode, 'b');
  });

  it('diff finds nothing to change after a server-side apply, and empty metadata maps are not stored', async () => {
    const file = join(cp.dir, 'ssa.yaml');
    await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: "1"\n');
    let r = await kubectl(cp, ['apply', '--server-side', '-f', file]);
    assert.match(r.stdout, /configmap\/ssa serverside-applied/);
    r = await kubectl(cp, ['diff', '-f', file], { allowFail: true });
    assert.deepEqual([r.code, r.stdout], [0, ''], r.stderr);
    await writeFile(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: "2"\n');
    r = await kubectl(cp, ['diff', '-f', file], { allowFail: true });
    assert.equal(r.code, 1, 'a real change is a diff');
    assert.match(r.stdout, /\+ {2}a: "2"/);
    const created = await api.post('/api/v1/namespaces/default/configmaps', {
      metadata: { name: 'bare', labels: {}, annotations: {}, finalizers: [] },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      Object.keys(created.body.metadata).filter((k) => ['labels', 'annotations', 'finalizers'].includes(k)),
      [],
    );
  });

  it('create and get pods in every output format', async () => {
    await kubectl(cp, ['create', 'namespace', 'team']);
    await kubectl(cp, ['-n', 'team', 'run', 'other', '--image=busybox:1.36', '--labels=app=other']);
    let r = await kubectl(cp, ['get', 'pods']);
    assert.match(r.stdout, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
    assert.match(r.stdout, /\nweb\s+0\/1\s+Pending\s+0\s+\d+s\n/);
    r = await kubectl(cp, ['get', 'pods', '-o', 'wide']);
    assert.match(
      r.stdout,
      /NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES/,
    );
    assert.match(r.stdout, /web\s+0\/1\s+Pending\s+0\s+\S+\s+<none>\s+<none>\s+<none>\s+<none>/);
    r = await kubectl(cp, ['get', 'pods', '-o', 'name', '-A']);
    assert.deepEqual(r.stdout.trim().split('\n').sort(), ['pod/other', 'pod/web']);
    r = await kubectl(cp, ['get', 'pods', '-A']);
    assert.match(r.stdout, /^NAMESPACE\s+NAME/);
    assert.match(r.stdout, /team\s+other/);
    r = await kubectl(cp, ['get', 'pod', 'web', '-o', 'json']);
    const obj = JSON.parse(r.stdout);
    assert.equal(obj.kind, 'Pod');
    assert.equal(obj.metadata.namespace, 'default');
    assert.match(obj.metadata.uid, /^[0-9a-f-]{36}$/);
    r = await kubectl(cp, ['get', 'pod', 'web', '-o', 'yaml']);
    assert.match(r.stdout, /kind: Pod/);
    assert.match(r.stdout, /tolerationSeconds: 300/);
    r = await kubectl(cp, ['get', 'pods', '-A', '-l', 'app=other', '-o', 'name']);
    assert.equal(r.stdout.trim(), 'pod/other');
    r = await kubectl(cp, ['get', 'pods', '-A', '-l', 'app in (web),tier!=back', '-o', 'name']);
    assert.equal(r.stdout.trim(), 'pod/web');
    r = await kubectl(cp, ['get', 'pods', '-A', '--field-selector', 'metadata.namespace=team', '-o', 'name']);
    assert.equal(r.stdout.trim(), 'pod/other');
    r = await kubectl(cp, ['get', 'pods', '--field-selector', 'spec.nodeName=', '-o', 'name']);
    assert.equal(r.stdout.trim(), 'pod/web');
    r = await kubectl(cp, ['get', 'pods', '--field-selector', 'bogus=1'], { allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /field label not supported: bogus/);
  });

  it('get -w shows later changes', async () => {
    await kubectl(cp, ['create', 'configmap', 'watched', '--from-literal=k=1']);
    const { spawn } = await import('node:child_process');
    const child = spawn('kubectl', [
      '--kubeconfig',
      cp.kubeconfigPath,
      '--cache-dir',
      join(cp.dir, 'kubectl-cache'),
      'get',
      'configmaps',
      '-w',
      '--output-watch-events',
    ]);
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    try {
      await until('the initial list', () => out.includes('watched'), 20_000);
      await kubectl(cp, ['create', 'configmap', 'later', '--from-literal=a=1']);
      await until('ADDED later', () => /ADDED\s+later/.test(out), 20_000);
      await kubectl(cp, ['delete', 'configmap', 'later']);
      await until('DELETED later', () => /DELETED\s+later/.test(out), 20_000);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('nodes: get, wide, describe with events', async () => {
    const node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a', labels: { 'node-role.kubernetes.io/worker': '' } },
      status: {
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
            lastHeartbeatTime: new Date().toISOString(),
            lastTransitionTime: new Date().toISOString(),
          },
        ],
        addresses: [
          { type: 'InternalIP', address: '127.0.0.1' },
          { type: 'Hostname', address: 'node-a' },
        ],
        nodeInfo: {
          kubeletVersion: 'v1.32.0-kubit',
          osImage: 'Debian GNU/Linux 12',
          kernelVersion: '6.1.0',
          containerRuntimeVersion: 'containerd://1.6.20',
          operatingSystem: 'linux',
          architecture: 'amd64',
          machineID: '',
          systemUUID: '',
          bootID: '',
          kubeProxyVersion: '',
        },
        capacity: { cpu: '2', memory: '4Gi', pods: '110' },
        allocatable: { cpu: '2', memory: '4Gi', pods: '110' },
      },
    };
    // The node's own kubelet registers it.
    const kubelet = api.as({
      cert: cp.pki.kubeletClient('node-a').cert,
      key: cp.pki.kubeletClient('node-a').key,
    });
    const created = await kubelet.post('/api/v1/nodes', node);
    assert.equal(created.status, 201, created.text);
    const ev = await kubelet.post('/api/v1/namespaces/default/events', {
      metadata: { name: 'node-a.starting' },
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      reason: 'Starting',
      message: 'Starting kubelet.',
      type: 'Normal',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
      count: 1,
    });
    assert.equal(ev.status, 201, ev.text);
    kubelet.close();
    let r = await kubectl(cp, ['get', 'nodes']);
    assert.match(r.stdout, /^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\n/);
    assert.match(r.stdout, /node-a\s+Ready\s+worker\s+\S+\s+v1\.32\.0-kubit/);
    r = await kubectl(cp, ['get', 'nodes', '-o', 'wide']);
    assert.match(r.stdout, /INTERNAL-IP\s+EXTERNAL-IP\s+OS-IMAGE\s+KERNEL-VERSION\s+CONTAINER-RUNTIME/);
    assert.match(
      r.stdout,
      /127\.0\.0\.1\s+<none>\s+Debian GNU\/Linux 12\s+6\.1\.0\s+containerd:\/\/1\.6\.20/,
    );
    r = await kubectl(cp, ['describe', 'node', 'node-a']);
    assert.match(r.stdout, /Name:\s+node-a/);
    assert.match(r.stdout, /Normal\s+Starting\s+\S+\s+kubelet\s+Starting kubelet\./);
  });

  it('describe pod shows its events', async () => {
    const pod = await api.get('/api/v1/namespaces/default/pods/web');
    const ev = await api.post('/apis/events.k8s.io/v1/namespaces/default/events', {
      metadata: { name: 'web.scheduled' },
      regarding: {
        kind: 'Pod',
        name: 'web',
        namespace: 'default',
        uid: pod.body.metadata.uid,
        apiVersion: 'v1',
      },
      reason: 'Scheduled',
      note: 'Successfully assigned default/web to node-a',
      type: 'Normal',
      action: 'Binding',
      reportingController: 'default-scheduler',
      reportingInstance: 'default-scheduler-1',
      eventTime: new Date().toISOString(),
    });
    assert.equal(ev.status, 201, ev.text);
    assert.equal(ev.body.note, 'Successfully assigned default/web to node-a');
    const r = await kubectl(cp, ['describe', 'pod', 'web']);
    assert.match(r.stdout, /Name:\s+web/);
    assert.match(r.stdout, /Image:\s+nginx:1\.26/);
    assert.match(
      r.stdout,
      /Normal\s+Scheduled\s+.*default-scheduler.*Successfully assigned default\/web to node-a/,
    );
  });

  it('delete returns once the object is gone', async () => {
    const r = await kubectl(cp, ['delete', 'pod', 'web']);
    assert.match(r.stdout, /pod "web" deleted/);
    const got = await api.get('/api/v1/namespaces/default/pods/web');
    assert.equal(got.status, 404);
    assert.equal(got.body.reason, 'NotFound');
  });

  it('auth can-i answers for the admin and for a restricted user', async () => {
    let r = await kubectl(cp, ['auth', 'can-i', 'create', 'pods']);
    assert.equal(r.stdout.trim(), 'yes');
    const sched = await cp.kubeconfigFor('scheduler', cp.pki.scheduler);
    r = await kubectl(cp, ['auth', 'can-i', 'create', 'pods', '--subresource=binding'], {
      kubeconfig: sched,
    });
    assert.equal(r.stdout.trim(), 'yes');
    r = await kubectl(cp, ['auth', 'can-i', 'delete', 'nodes'], { kubeconfig: sched, allowFail: true });
    assert.equal(r.stdout.trim(), 'no');
    r = await kubectl(cp, ['get', 'secrets'], { kubeconfig: sched, allowFail: true });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /forbidden: User "system:kube-scheduler" cannot list resource "secrets"/);
  });

  it('api-resources and explain-free discovery list every kind', async () => {
    const r = await kubectl(cp, ['api-resources', '-o', 'name']);
    for (const name of [
      'pods',
      'nodes',
      'namespaces',
      'events',
      'configmaps',
      'secrets',
      'serviceaccounts',
      'leases.coordination.k8s.io',
      'roles.rbac.authorization.k8s.io',
      'clusterrolebindings.rbac.authorization.k8s.io',
      'events.events.k8s.io',
    ]) {
      assert.ok(r.stdout.split('\n').includes(name), `${name} in api-resources`);
    }
  });
});
