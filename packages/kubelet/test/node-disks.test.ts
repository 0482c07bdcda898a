// The node's own volume pieces on real loop devices and mounts: a kubit-disk's sparse
// file, its loop device, ext4, ENOSPC at its size, online growth, finding it again as a
// restarted kubelet would, and nothing left behind; local-path's bind mounts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statfsSync, writeFileSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from '@kubit/testkit';
import {
  attach,
  createBackingFile,
  detach,
  grow,
  loopDevicesOf,
  loopDevicesUnder,
  prepareDisk,
} from '../src/volumes/disk.js';
import { LocalStorage } from '../src/volumes/local-path.js';
import { isMountPoint, mountsUnder, parseMountInfo, readMountTable } from '../src/volumes/mount-table.js';
import { bindMount, mountDevice, unmount, unmountAll } from '../src/volumes/mounter.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;

test('mountinfo lines are parsed with their escapes, and mounts below a directory come deepest first', () => {
  const text = [
    '36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
    '37 35 7:3 / /k/pods/u/volumes/a rw shared:2 - ext4 /dev/loop3 rw',
    '38 37 0:5 / /k/pods/u/volumes/a/sub rw - tmpfs tmpfs rw',
  ].join('\n');
  const t = parseMountInfo(text);
  assert.equal(t[0]?.mountPoint, '/mnt/with space');
  assert.equal(t[0]?.root, '/mnt1');
  assert.equal(t[1]?.source, '/dev/loop3');
  assert.equal(t[1]?.fsType, 'ext4');
  assert.deepEqual(
    mountsUnder('/k/pods/u', t).map((m) => m.mountPoint),
    ['/k/pods/u/volumes/a/sub', '/k/pods/u/volumes/a'],
  );
});

test('a kubit-disk: sparse file, loop device, ext4, ENOSPC at its size, online growth, found again, no leftovers', async () => {
  const dir = await tempDir('kubit-disk-');
  const storage = new LocalStorage(join(dir.path, 'storage'));
  const file = storage.diskFile('pvc-1');
  const target = join(dir.path, 'mnt');
  try {
    await createBackingFile(file, 64 * MiB);
    assert.equal((await stat(file)).size, 64 * MiB);
    assert.ok((await stat(file)).blocks * 512 < MiB, 'the backing file is sparse');

    const dev = await prepareDisk(file);
    assert.match(dev, /^\/dev\/loop\d+$/);
    assert.equal(await attach(file), dev, 'attaching twice gives the same device');
    await mkdir(target, { recursive: true });
    await mountDevice(dev, target, 'ext4');
    await mountDevice(dev, target, 'ext4'); // idempotent
    assert.equal(readMountTable().filter((m) => m.mountPoint === target).length, 1);
    const size = statfsSync(target);
    assert.ok(size.blocks * size.bsize > 50 * MiB && size.blocks * size.bsize <= 64 * MiB);

    // Writing past the disk's size fails with ENOSPC, not by filling the node.
    const big = await run('dd', ['if=/dev/zero', `of=${join(target, 'big')}`, 'bs=1M', 'count=100']).then(
      () => '',
      (err: { stderr?: string }) => err.stderr ?? '',
    );
    assert.match(big, /No space left on device/);
    await run('rm', [join(target, 'big')]);
    writeFileSync(join(target, 'keep'), 'data');

    // Grown while mounted: the filesystem follows online, or (without CAP_SYS_RESOURCE,
    // as on the test machines) on its next mount.
    const outcome = await grow(file, 128 * MiB, true);
    if (outcome === 'pending') {
      await unmount(target);
      await mountDevice(await prepareDisk(file), target, 'ext4');
    }
    const grown = statfsSync(target);
    assert.ok(grown.blocks * grown.bsize > 100 * MiB, `grown to ${grown.blocks * grown.bsize} (${outcome})`);

    // A restarted kubelet knows nothing but the file: it finds the device and the mount again.
    assert.deepEqual(loopDevicesOf(file), [dev]);
    assert.deepEqual(loopDevicesUnder(storage.dir), [{ device: dev, file }]);
    await unmount(target);
    await unmount(target); // idempotent
    await detach(file);
    await detach(file); // idempotent
    assert.deepEqual(loopDevicesOf(file), []);

    // Attached and mounted again, the data is still there, and it is not formatted anew.
    const again = await prepareDisk(file);
    await mountDevice(again, target, 'ext4');
    assert.equal(readFileSync(join(target, 'keep'), 'utf8'), 'data');
    await unmountAll(dir.path);
    await detach(file);
  } finally {
    await unmountAll(dir.path).catch(() => {});
    await detach(file).catch(() => {});
    await dir.cleanup();
  }
  assert.ok(!isMountPoint(target));
  assert.deepEqual(loopDevicesOf(file), []);
  const { stdout } = await run('losetup', ['-a']);
  assert.ok(!stdout.includes(dir.path), `no loop device left: ${stdout}`);
});

test('a local-path volume is a directory in the storage dir, bind-mounted (read-only when asked)', async () => {
  const dir = await tempDir('kubit-local-path-');
  const storage = new LocalStorage(join(dir.path, 'storage'));
  const rw = join(dir.path, 'rw');
  const ro = join(dir.path, 'ro');
  try {
    const src = await storage.makePathDir('pvc-2');
    await mkdir(rw);
    await mkdir(ro);
    await bindMount(src, rw);
    await bindMount(src, ro, true);
    writeFileSync(join(rw, 'f'), 'hello');
    assert.equal(readFileSync(join(ro, 'f'), 'utf8'), 'hello');
    assert.throws(() => writeFileSync(join(ro, 'g'), 'x'), /EROFS/);
    assert.ok((await storage.freeBytes()) > 0);
    await unmountAll(dir.path);
    assert.deepEqual(mountsUnder(dir.path), []);
    assert.equal(readFileSync(join(src, 'f'), 'utf8'), 'hello', 'unmounting keeps the data');
    await storage.removePathDir('pvc-2');
    assert.ok(!existsSync(src));
  } finally {
    await unmountAll(dir.path).catch(() => {});
    await dir.cleanup();
  }
});
