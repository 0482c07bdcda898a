// imagePullSecrets end to end: a ServiceAccount's pull secret copied into its
// pods by the apiserver's admission, read by the real kubit-kubelet under its
// node identity (the Node authorizer) and sent to containerd as CRI AuthConfig
// for a registry behind htpasswd.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import {
  buildTestImages,
  type ControlPlane,
  pushTestImage,
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
import type { Pod } from 'kubernetes-types/core/v1.js';

const NODE = 'pull-node';
const USER = 'robot';
const PASSWORD = 'hunter2';

let cp: ControlPlane;
let mirror: TestRegistry;
let priv: TestRegistry;
let containerd: TestContainerd;
let kubelet: TestKubelet;
let client: KubeClient;
let dir: { path: string; cleanup: () => Promise<void> };
let image: string;

before(async () => {
  dir = await tempDir('kubit-pull-secrets-');
  const keyFile = join(dir.path, 'sa.key');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }));
  [mirror, priv] = await Promise.all([
    startRegistry(),
    startRegistry({ htpasswd: { username: USER, password: PASSWORD } }),
  ]);
  image = `${priv.host}/team/busybox:1`;
  const busybox = (await buildTestImages()).find((i) => i.repository === 'library/busybox');
  assert.ok(busybox);
  const [c, d] = await Promise.all([
    startControlPlane({ nodes: [NODE], apiserverArgs: [`--service-account-signing-key-file=${keyFile}`] }),
    startContainerd({
      mirror: mirror.host,
      mirrored: [{ registry: 'docker.io' }, { registry: priv.host, upstream: `http://${priv.host}` }],
    }),
    pushTestImages(mirror.host),
    pushTestImage(busybox, image, `${USER}:${PASSWORD}`),
  ]);
  cp = c;
  containerd = d;
  client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
  kubelet = await startTestKubelet(cp, { node: NODE, containerd, dir: join(dir.path, 'kubelet') });
  await kubelet.waitReady(client);
  const auth = Buffer.from(`${USER}:${PASSWORD}`).toString('base64');
  await client.create(resources.secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'registry-creds', namespace: 'default' },
    type: 'kubernetes.io/dockerconfigjson',
    data: {
      '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { [priv.host]: { auth } } })).toString(
        'base64',
      ),
    },
  });
  for (const [name, secrets] of [
    ['default', []],
    ['puller', [{ name: 'registry-creds' }]],
  ] as const) {
    await client.create(resources.serviceaccounts, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name, namespace: 'default' },
      imagePullSecrets: [...secrets],
    });
  }
});

after(async () => {
  client?.close();
  await kubelet?.stop();
  await containerd?.stop();
  await Promise.all([mirror?.stop(), priv?.stop()]);
  await cp?.stop();
  await dir?.cleanup();
});

async function createPod(name: string, serviceAccountName: string): Promise<Pod> {
  return client.create<Pod>(resources.pods, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName: NODE,
      serviceAccountName,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'c', image, command: ['sleep', '3600'] }],
    },
  } as Pod);
}

async function waitPod(name: string, what: string, pred: (p: Pod) => boolean): Promise<Pod> {
  let pod: Pod | undefined;
  await waitFor(
    `pod ${name}: ${what}`,
    async () => {
      pod = await client.get<Pod>(resources.pods, name, { namespace: 'default' });
      return pred(pod);
    },
    90_000,
    250,
  );
  assert.ok(pod);
  return pod;
}

test("a pod without pull secrets: ErrImagePull with the registry's 401", async () => {
  const created = await createPod('anonymous', 'default');
  assert.equal(created.spec?.imagePullSecrets, undefined);
  const pod = await waitPod(
    'anonymous',
    'ErrImagePull',
    (p) => p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImagePull',
  );
  const message = pod.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '';
  assert.match(message, /401 Unauthorized/, message);
});

test("the ServiceAccount's imagePullSecrets reach the pod, and the kubelet pulls with them: Running", async () => {
  const created = await createPod('with-sa-secret', 'puller');
  assert.deepEqual(created.spec?.imagePullSecrets, [{ name: 'registry-creds' }]);
  const pod = await waitPod('with-sa-secret', 'Running', (p) => p.status?.phase === 'Running');
  assert.match(pod.status?.containerStatuses?.[0]?.imageID ?? '', /sha256:/);
});
