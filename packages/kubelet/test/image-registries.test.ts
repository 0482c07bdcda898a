// Pulls through containerd's hosts.toml (deploy/containerd/hosts.toml.tmpl):
// the local mirror first, the upstream registry after it; and pulls from a
// registry behind htpasswd with the pod's imagePullSecrets as CRI AuthConfig.
// Three real registries on loopback: the cluster's mirror, an "upstream" for a
// made-up registry name, and a private one with basic authentication.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import {
  buildTestImages,
  pushTestImage,
  startRegistry,
  type TestImage,
  type TestRegistry,
} from '@kubit/testkit';
import type { Secret } from 'kubernetes-types/core/v1.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, FAST_BACKOFF, makePod, waitStatus } from './helpers.js';

const UPSTREAM_NAME = 'upstream.kubit.test';
const USER = 'puller';
const PASSWORD = 'open:sesame';

let upstream: TestRegistry;
let priv: TestRegistry;
let node: Node;
let busybox: TestImage;

before(async () => {
  [upstream, priv] = await Promise.all([
    startRegistry({ logRequests: true }),
    startRegistry({ htpasswd: { username: USER, password: PASSWORD } }),
  ]);
  const images = await buildTestImages();
  const found = images.find((i) => i.repository === 'library/busybox');
  assert.ok(found);
  busybox = found;
  node = await startNode(
    { imageBackoff: FAST_BACKOFF },
    {
      mirrored: [
        { registry: 'docker.io' },
        { registry: UPSTREAM_NAME, upstream: `http://${upstream.host}` },
        { registry: priv.host, upstream: `http://${priv.host}` },
      ],
    },
    { logRequests: true },
  );
  await Promise.all([
    pushTestImage(busybox, `${upstream.host}/only/upstream:1`),
    pushTestImage(busybox, `${upstream.host}/both/places:1`),
    pushTestImage(busybox, `${node.registry.host}/both/places:1`),
    pushTestImage(busybox, `${priv.host}/private/busybox:1`, `${USER}:${PASSWORD}`),
  ]);
});

after(async () => {
  await node?.stop();
  await Promise.all([upstream?.stop(), priv?.stop()]);
});

/** The access-log lines of containerd's requests (not the test's pushes) to a registry. */
const pullRequests = async (r: TestRegistry) =>
  (await readFile(r.logFile, 'utf8'))
    .split('\n')
    .filter((l) => l.startsWith('127.0.0.1 - -') && l.includes('"containerd/'))
    .join('\n');

test('the mirror lacks the image, the upstream has it: the pull falls through to the upstream', async () => {
  const ref = await node.runtime.pullImage(`${UPSTREAM_NAME}/only/upstream:1`);
  assert.match(ref, /^sha256:/);
  assert.match(
    await pullRequests(node.registry),
    /"HEAD \/v2\/only\/upstream\/manifests\/1\?ns=upstream\.kubit\.test HTTP\/1\.1" 404/,
    'the mirror was asked first',
  );
  assert.match(
    await pullRequests(upstream),
    /"(HEAD|GET) \/v2\/only\/upstream\/manifests\/1(\?\S*)? HTTP\/1\.1" 200/,
  );
});

test('the mirror has the image: the upstream gets no request for it', async () => {
  const ref = await node.runtime.pullImage(`${UPSTREAM_NAME}/both/places:1`);
  assert.match(ref, /^sha256:/);
  assert.match(
    await pullRequests(node.registry),
    /"(HEAD|GET) \/v2\/both\/places\/manifests\/1\?ns=\S+ HTTP\/1\.1" 200/,
  );
  assert.match(await pullRequests(upstream), /only\/upstream/, 'the upstream log holds containerd requests');
  assert.doesNotMatch(await pullRequests(upstream), /both\/places/);
});

function dockerConfigSecret(name: string, type: string, registryKey: string): Secret {
  const entry = { auth: Buffer.from(`${USER}:${PASSWORD}`).toString('base64') };
  const doc =
    type === 'kubernetes.io/dockerconfigjson'
      ? { '.dockerconfigjson': { auths: { [registryKey]: entry } } }
      : { '.dockercfg': { [registryKey]: entry } };
  const [key, value] = Object.entries(doc)[0] ?? ['', {}];
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'default' },
    type,
    data: { [key]: Buffer.from(JSON.stringify(value)).toString('base64') },
  };
}

const sleeper = (image: string) => ({
  name: 'c',
  image,
  command: ['sleep', '3600'],
  imagePullPolicy: 'Always' as const,
});

test('a private registry without a pull secret: ErrImagePull naming the registry 401', async () => {
  const pod = makePod('no-secret', { containers: [sleeper(`${priv.host}/private/busybox:1`)] });
  node.manager.upsert(pod);
  const s = await waitStatus(
    node.sink,
    pod,
    'ErrImagePull',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ErrImagePull',
    60_000,
  );
  const message = containerState(s, 'c')?.state?.waiting?.message ?? '';
  assert.match(message, /401 Unauthorized/, message);
  assert.match(message, new RegExp(`Failed to pull image "${priv.host}/private/busybox:1"`));
  node.manager.remove(pod);
});

test('a missing pull secret is a warning event; the pull goes on without it', async () => {
  const pod = makePod('secret-missing', {
    imagePullSecrets: [{ name: 'nowhere' }],
    containers: [sleeper(`${priv.host}/private/busybox:1`)],
  });
  node.manager.upsert(pod);
  await waitStatus(
    node.sink,
    pod,
    'ErrImagePull',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ErrImagePull',
    60_000,
  );
  const ev = node.sink.events.find(
    (e) => e.pod === 'default/secret-missing' && e.reason === 'FailedToRetrieveImagePullSecret',
  );
  assert.ok(ev, 'FailedToRetrieveImagePullSecret event');
  assert.match(ev.message, /\(nowhere\)/);
  node.manager.remove(pod);
});

for (const [type, key] of [
  ['kubernetes.io/dockerconfigjson', () => priv.host],
  ['kubernetes.io/dockercfg', () => `http://${priv.host}/v2/`],
] as const) {
  test(`a ${type} pull secret for the registry: the pod runs`, async () => {
    const name = type.endsWith('json') ? 'with-json' : 'with-cfg';
    node.objects.putSecret(dockerConfigSecret(`${name}-creds`, type, key()));
    const pod = makePod(name, {
      imagePullSecrets: [{ name: `${name}-creds` }],
      containers: [sleeper(`${priv.host}/private/busybox:1`)],
    });
    node.manager.upsert(pod);
    const s = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
    assert.ok(containerState(s, 'c')?.state?.running);
    node.manager.remove(pod);
  });
}

test('a pull secret for another registry is not sent: ErrImagePull', async () => {
  node.objects.putSecret(dockerConfigSecret('elsewhere-creds', 'kubernetes.io/dockerconfigjson', 'quay.io'));
  const pod = makePod('wrong-registry', {
    imagePullSecrets: [{ name: 'elsewhere-creds' }],
    containers: [sleeper(`${priv.host}/private/busybox:1`)],
  });
  node.manager.upsert(pod);
  const s = await waitStatus(
    node.sink,
    pod,
    'ErrImagePull',
    (st) => containerState(st, 'c')?.state?.waiting?.reason === 'ErrImagePull',
    60_000,
  );
  assert.match(containerState(s, 'c')?.state?.waiting?.message ?? '', /401/);
  node.manager.remove(pod);
});
