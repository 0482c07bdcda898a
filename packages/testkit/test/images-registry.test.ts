// The test images and the local registry: built offline, pushed with skopeo,
// served by a real docker-registry; scripts/images does the same from a shell.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { buildTestImages, pushTestImages, startRegistry, type TestRegistry } from '../src/index.js';
import { repoRoot } from '../src/process.js';

const run = promisify(execFile);
let registry: TestRegistry;

before(async () => {
  registry = await startRegistry();
});
after(async () => {
  await registry?.stop();
});

test('images are built once into a cached OCI layout', async () => {
  const first = await buildTestImages();
  const second = await buildTestImages();
  assert.deepEqual(first, second);
  assert.deepEqual(
    first.map((i) => i.name),
    ['docker.io/local/pause:1', 'docker.io/library/busybox:latest', 'docker.io/library/nginx:latest'],
  );
  for (const i of first) assert.ok(existsSync(join(i.layout, 'index.json')), i.layout);
});

test('pushed images are served by the registry under their repositories', async () => {
  const images = await pushTestImages(registry.host);
  for (const img of images) {
    const res = await fetch(`http://${registry.host}/v2/${img.repository}/manifests/${img.tag}`, {
      headers: { accept: 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(res.status, 200, img.repository);
    const manifest = (await res.json()) as { layers: { mediaType: string }[] };
    assert.equal(manifest.layers.length, 1);
  }
  const missing = await fetch(`http://${registry.host}/v2/library/nope/manifests/latest`);
  assert.equal(missing.status, 404);
});

test('scripts/images pushes to a registry given on the command line', async () => {
  const { stdout } = await run(join(repoRoot, 'scripts', 'images'), [registry.host], { cwd: repoRoot });
  assert.match(stdout, /library\/nginx:latest/);
  const tags = (await (await fetch(`http://${registry.host}/v2/library/busybox/tags/list`)).json()) as {
    tags: string[];
  };
  assert.deepEqual(tags.tags, ['latest']);
});
