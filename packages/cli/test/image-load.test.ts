// kubit image load / ls against a real node: a control plane, a registry that
// the node's containerd mirrors docker.io from, and a real kubit-kubelet. The
// archives are built here from the testkit's busybox image with skopeo.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { KubeClient, resources } from '@kubit/client';
import {
  buildTestImages,
  type ControlPlane,
  freePort,
  pushTestImages,
  startContainerd,
  startControlPlane,
  startRegistry,
  startTestKubelet,
  type TestContainerd,
  type TestKubelet,
  type TestRegistry,
  tempDir,
  waitFor,
} from '@kubit/testkit';
import { kubit } from './helpers.js';

const run = promisify(execFile);

/** What the test reads of a pod (the CLI package has no Kubernetes types of its own). */
interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec?: Record<string, unknown>;
  status?: {
    phase?: string;
    containerStatuses?: { imageID?: string; state?: { waiting?: { reason?: string; message?: string } } }[];
  };
}
const NODE = 'image-node';

let cp: ControlPlane;
let registry: TestRegistry;
let containerd: TestContainerd;
let kubelet: TestKubelet;
let client: KubeClient;
let dir: { path: string; cleanup: () => Promise<void> };
let env: NodeJS.ProcessEnv;
let dockerArchive: string;
let ociArchive: string;

before(async () => {
  dir = await tempDir('kubit-image-load-');
  registry = await startRegistry();
  const [c, d] = await Promise.all([
    startControlPlane({ nodes: [NODE] }),
    startContainerd({ mirror: registry.host }),
    pushTestImages(registry.host),
  ]);
  cp = c;
  containerd = d;
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  env = { HOME: dir.path, KUBECONFIG: cp.kubeconfigPath };
  kubelet = await startTestKubelet(cp, { node: NODE, containerd, dir: join(dir.path, 'kubelet') });
  const busybox = (await buildTestImages()).find((i) => i.repository === 'library/busybox');
  assert.ok(busybox);
  dockerArchive = join(dir.path, 'app-docker.tar');
  ociArchive = join(dir.path, 'app-oci.tar');
  const copy = (to: string) =>
    run('skopeo', ['--insecure-policy', 'copy', '--quiet', `oci:${busybox.layout}:${busybox.tag}`, to]);
  await Promise.all([
    copy(`docker-archive:${dockerArchive}:kubit-test/app:1`),
    copy(`oci-archive:${ociArchive}:v2`),
  ]);
  await kubelet.waitReady(client);
});

after(async () => {
  client?.close();
  await kubelet?.stop();
  await containerd?.stop();
  await registry?.stop();
  await cp?.stop();
  await dir?.cleanup();
});

async function runPod(name: string, image: string): Promise<Pod> {
  await client.create(resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'c', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  });
  let pod: Pod | undefined;
  await waitFor(
    `pod ${name} Running`,
    async () => {
      pod = await client.get<Pod>(resources.pods, name, { namespace: 'default' });
      const waiting = pod.status?.containerStatuses?.[0]?.state?.waiting;
      if (waiting?.reason === 'ErrImagePull') throw new Error(`ErrImagePull: ${waiting.message}`);
      return pod.status?.phase === 'Running';
    },
    90_000,
    250,
  );
  assert.ok(pod);
  return pod;
}

test('a docker-archive found through the cluster ConfigMap: loaded under its own name, a pod runs it', async () => {
  // Without --registry or KUBIT_REGISTRY: the cluster names its registry (KEP-1755).
  await client
    .create(resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-public' } })
    .catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
  await client.create(resources.configmaps, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'local-registry-hosting', namespace: 'kube-public' },
    data: { 'localRegistryHosting.v1': `host: "${registry.host}"\nhelp: "kubit image load"\n` },
  });
  const r = await kubit(['image', 'load', dockerArchive], { env });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /Image: "docker\.io\/kubit-test\/app:1" loaded/);
  const pod = await runPod('loaded-docker', 'kubit-test/app:1');
  assert.match(pod.status?.containerStatuses?.[0]?.imageID ?? '', /sha256:/);
});

test('an OCI archive whose only name is a tag: --name gives it one; kubit image ls lists it', async () => {
  const noName = await kubit(['image', 'load', ociArchive, '--registry', registry.host], { env });
  assert.equal(noName.code, 1);
  assert.match(noName.err, /carries no image name: give it one with --name/);
  const r = await kubit(
    ['image', 'load', ociArchive, '--name', 'kubit-test/oci:2', '--registry', registry.host],
    {
      env,
    },
  );
  assert.equal(r.code, 0, r.err);
  await runPod('loaded-oci', 'kubit-test/oci:2');
  const ls = await kubit(['image', 'ls', '--registry', registry.host], { env });
  assert.equal(ls.code, 0, ls.err);
  assert.match(ls.out, /^IMAGE\s+TAG\s+DIGEST\s+SIZE$/m);
  assert.match(ls.out, /^docker\.io\/kubit-test\/oci\s+2\s+sha256:[0-9a-f]{12}\s+\d/m);
  assert.match(ls.out, /^docker\.io\/kubit-test\/app\s+1\s/m);
  assert.match(ls.out, /^docker\.io\/library\/nginx\s+latest\s/m);
});

test('bad input: not a reference, not an image tarball, registry down, a name nodes cannot pull', async () => {
  const notRef = await kubit(['image', 'load', 'Not:A:Ref', '--registry', registry.host], { env });
  assert.equal(notRef.code, 1);
  assert.match(
    notRef.err,
    /"Not:A:Ref" is not an image reference: invalid reference format.*and there is no file/,
  );

  const text = join(dir.path, 'notes.txt');
  await writeFile(text, 'hello\n');
  const notTar = await kubit(['image', 'load', text, '--registry', registry.host], { env });
  assert.equal(notTar.code, 1);
  assert.match(notTar.err, /notes\.txt is not an image tarball/);

  const emptyTar = join(dir.path, 'empty.tar');
  await run('tar', ['-cf', emptyTar, '-C', dir.path, 'notes.txt']);
  const noImage = await kubit(['image', 'load', emptyTar, '--registry', registry.host], { env });
  assert.match(noImage.err, /empty\.tar is not an image tarball: it holds neither oci-layout/);

  const down = `127.0.0.1:${await freePort()}`;
  const r = await kubit(
    ['image', 'load', dockerArchive, '--name', 'kubit-test/never:1', '--registry', down],
    {
      env,
    },
  );
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`registry at ${down} does not answer \\(ECONNREFUSED\\)`));

  const quay = await kubit(
    ['image', 'load', dockerArchive, '--name', 'quay.io/x/y:1', '--registry', registry.host],
    {
      env,
    },
  );
  assert.equal(quay.code, 1);
  assert.match(quay.err, /the nodes pull only docker\.io names/);
  // Nothing of the refused loads reached the registry.
  const catalog = (await (await fetch(`http://${registry.host}/v2/_catalog`)).json()) as {
    repositories: string[];
  };
  assert.deepEqual(
    catalog.repositories.filter((r) => r.startsWith('kubit-test/')),
    ['kubit-test/app', 'kubit-test/oci'],
  );
});

test("--nodes imports into the named nodes' containerd, not the registry; a pod runs it", async () => {
  // The kubelet names its runtime on its Node, as kubeadm does.
  const node = await client.get<{ metadata?: { annotations?: Record<string, string> } }>(
    resources.nodes,
    NODE,
  );
  assert.ok(
    node.metadata?.annotations?.['kubeadm.alpha.kubernetes.io/cri-socket']?.endsWith(containerd.socket),
    JSON.stringify(node.metadata?.annotations),
  );
  // A node that does not say is refused with what to do instead.
  await client.patch(
    resources.nodes,
    NODE,
    { metadata: { annotations: { 'kubeadm.alpha.kubernetes.io/cri-socket': null } } },
    { type: 'merge' },
  );
  const unnamed = await kubit(
    ['image', 'load', dockerArchive, '--name', 'kubit-test/direct:3', '--nodes', NODE],
    {
      env,
    },
  );
  assert.equal(unnamed.code, 1);
  assert.match(
    unnamed.err,
    /does not name its container runtime \(annotation kubeadm\.alpha\.kubernetes\.io\/cri-socket\)/,
  );
  const missing = await kubit(['image', 'load', dockerArchive, '--nodes', 'no-such-node'], { env });
  assert.match(missing.err, /node "no-such-node" not found/);

  await client.patch(
    resources.nodes,
    NODE,
    { metadata: { annotations: { 'kubeadm.alpha.kubernetes.io/cri-socket': containerd.endpoint } } },
    { type: 'merge' },
  );
  const r = await kubit(['image', 'load', dockerArchive, '--name', 'kubit-test/direct:3', '--nodes', NODE], {
    env,
  });
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, new RegExp(`Image: "docker\\.io/kubit-test/direct:3" loaded into node "${NODE}"`));
  await runPod('loaded-direct', 'kubit-test/direct:3');
  const ls = await kubit(['image', 'ls', '--nodes', NODE], { env });
  assert.equal(ls.code, 0, ls.err);
  assert.match(ls.out, /^NODE\s+IMAGE\s+TAG\s+DIGEST\s+SIZE$/m);
  assert.match(ls.out, new RegExp(`^${NODE}\\s+docker\\.io/kubit-test/direct\\s+3\\s+sha256:`, 'm'));
  assert.match(ls.out, new RegExp(`^${NODE}\\s+docker\\.io/local/pause\\s+1\\s`, 'm'));
  const tags = await fetch(`http://${registry.host}/v2/kubit-test/direct/tags/list`);
  assert.equal(tags.status, 404, 'the registry never saw it');
});

test('an image a local containerd holds, by reference: exported and pushed to the registry', async () => {
  const r = await kubit(
    [
      'image',
      'load',
      'kubit-test/direct:3',
      '--containerd-address',
      containerd.socket,
      '--registry',
      registry.host,
    ],
    { env },
  );
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /Image: "docker\.io\/kubit-test\/direct:3" loaded into the cluster's registry/);
  const tags = (await (await fetch(`http://${registry.host}/v2/kubit-test/direct/tags/list`)).json()) as {
    tags: string[];
  };
  assert.deepEqual(tags.tags, ['3']);
  const absent = await kubit(
    [
      'image',
      'load',
      'kubit-test/absent:1',
      '--containerd-address',
      containerd.socket,
      '--registry',
      registry.host,
    ],
    { env },
  );
  assert.equal(absent.code, 1);
  assert.match(
    absent.err,
    /image "docker\.io\/kubit-test\/absent:1" was found neither in the local Docker nor in containerd/,
  );
});
