// What kubit image load reads from archives and layouts, before it copies anything.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { buildTestImages, type TestImage, tempDir } from '@kubit/testkit';
import { archiveImages } from '../src/image/sources.js';

const run = promisify(execFile);
let dir: { path: string; cleanup: () => Promise<void> };
let busybox: TestImage;

before(async () => {
  dir = await tempDir('kubit-image-archives-');
  const found = (await buildTestImages()).find((i) => i.repository === 'library/busybox');
  assert.ok(found);
  busybox = found;
});
after(async () => {
  await dir?.cleanup();
});

const copy = (to: string) =>
  run('skopeo', ['--insecure-policy', 'copy', '--quiet', `oci:${busybox.layout}:${busybox.tag}`, to]);

test('a docker-archive: one source per tag, named by it; without tags, picked by index and unnamed', async () => {
  const tagged = join(dir.path, 'tagged.tar');
  await copy(`docker-archive:${tagged}:example/app:2`);
  const [one] = await archiveImages(tagged);
  assert.equal(one?.source, `docker-archive:${tagged}:docker.io/example/app:2`);
  assert.equal(one?.name?.path, 'example/app');
  assert.equal(one?.name?.tag, '2');

  const bare = join(dir.path, 'bare.tar');
  await copy(`docker-archive:${bare}`);
  const [anon] = await archiveImages(bare);
  assert.equal(anon?.source, `docker-archive:${bare}:@0`);
  assert.equal(anon?.name, undefined);
});

test("a gzip'd docker-archive is read once decompressed into the scratch directory", async () => {
  const plain = join(dir.path, 'zipped.tar');
  await copy(`docker-archive:${plain}:example/zipped:1`);
  await run('gzip', [plain]);
  await assert.rejects(archiveImages(`${plain}.gz`), /is compressed: decompress it first/);
  const scratch = join(dir.path, 'scratch');
  await mkdir(scratch);
  const [img] = await archiveImages(`${plain}.gz`, scratch);
  assert.match(
    img?.source ?? '',
    new RegExp(`^docker-archive:${scratch}/zipped\\.tar\\.\\d+\\.tar:docker\\.io/example/zipped:1$`),
  );
  assert.equal(img?.name?.path, 'example/zipped');
  // skopeo reads what the source names.
  await run('skopeo', ['inspect', '--raw', img?.source ?? '']);
});

test('an OCI layout directory whose ref.name is only a tag carries no name', async () => {
  const [img] = await archiveImages(busybox.layout);
  assert.equal(img?.source, `oci:${busybox.layout}`);
  assert.equal(img?.name, undefined);
});

test('a directory that is not a layout, and a tarball that is not an image, are named as such', async () => {
  const plain = join(dir.path, 'plain');
  await mkdir(plain);
  await assert.rejects(archiveImages(plain), /is a directory but not an OCI image layout/);
  const junk = join(dir.path, 'junk.tar');
  await writeFile(junk, Buffer.alloc(1024, 7));
  await assert.rejects(archiveImages(junk), /junk\.tar is not an image tarball: tar cannot read it/);
});
