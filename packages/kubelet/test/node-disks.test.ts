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
import { DISK_BACKING_FILE_ATTRIBUTE, DISK_CSI_DRIVER } from '@kubit/api';
import {
  isMountPoint,
  loopDevicesOf,
  loopDevicesUnder,
  mountsUnder,
  parseMountInfo,
  readMountTable,
} from '@kubit/cri/host-mounts';
import { tempDir } from '@kubit/testkit';
import { MemoryObjectSource } from '../src/pods/sinks.js';
import { MountError, VolumeManager } from '../src/pods/volumes.js';
import { attach, createBackingFile, detach, grow, prepareDisk } from '../src/volumes/disk.js';
import { LocalStorage } from '../src/volumes/local-path.js';
import { bindMount, mountDevice, unmount, unmountAll } from '../src/volumes/mounter.js';
import { makePod } from './helpers.js';

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

test('pod claim volumes: local and kubit-disk mounted for the pod, unbound or broken ones fail as FailedMount, tear-down leaves the data and nothing mounted', async () => {
  const dir = await tempDir('kubit-claims-');
  const storage = new LocalStorage(join(dir.path, 'storage'));
  const objects = new MemoryObjectSource();
  const volumes = new VolumeManager(join(dir.path, 'root'), objects);
  const bound = (name: string, volumeName: string) =>
    objects.putClaim({
      metadata: { name, namespace: 'default' },
      spec: { volumeName, accessModes: ['ReadWriteOnce'] },
      status: { phase: 'Bound' },
    });
  const disk = storage.diskFile('pvc-disk');
  try {
    const local = await storage.makePathDir('pvc-local');
    await createBackingFile(disk, 32 * MiB);
    objects.putVolume({ metadata: { name: 'pvc-local' }, spec: { local: { path: local } } });
    objects.putVolume({
      metadata: { name: 'pvc-disk' },
      spec: {
        csi: {
          driver: DISK_CSI_DRIVER,
          volumeHandle: 'pvc-disk',
          volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: disk },
        },
      },
    });
    objects.putVolume({
      metadata: { name: 'pvc-gone' },
      spec: {
        csi: {
          driver: DISK_CSI_DRIVER,
          volumeHandle: 'pvc-gone',
          volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: join(dir.path, 'missing.img') },
        },
      },
    });
    bound('data', 'pvc-local');
    bound('disk', 'pvc-disk');
    bound('gone', 'pvc-gone');
    objects.putClaim({
      metadata: { name: 'waiting', namespace: 'default' },
      spec: {},
      status: { phase: 'Pending' },
    });

    const pod = makePod('app', {
      containers: [{ name: 'c', image: 'busybox' }],
      securityContext: { fsGroup: 2000, fsGroupChangePolicy: 'OnRootMismatch' },
      volumes: [
        { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
        { name: 'disk', persistentVolumeClaim: { claimName: 'disk' } },
      ],
    });
    const paths = await volumes.setUp(pod);
    writeFileSync(join(paths.get('data') ?? '', 'f'), 'local');
    writeFileSync(join(paths.get('disk') ?? '', 'f'), 'disk');
    assert.equal(statfsSync(paths.get('disk') ?? '').blocks > 0, true);
    assert.equal((await stat(paths.get('disk') ?? '')).gid, 2000, 'fsGroup owns the volume');
    assert.equal(loopDevicesOf(disk).length, 1);

    for (const [claim, message] of [
      [
        'waiting',
        /MountVolume.SetUp failed for volume "v" : error processing PVC default\/waiting: PVC is not bound/,
      ],
      ['gone', /backing file ".*missing.img" of volume "pvc-gone" does not exist/],
      ['absent', /persistentvolumeclaim "absent" not found/],
    ] as const) {
      const broken = makePod(`broken-${claim}`, {
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }],
      });
      await assert.rejects(
        volumes.setUp(broken),
        (err: Error) => err instanceof MountError && message.test(err.message),
      );
      await volumes.tearDown(broken.metadata?.uid ?? '');
    }

    await volumes.tearDown(pod.metadata?.uid ?? '');
    assert.deepEqual(mountsUnder(dir.path), []);
    assert.deepEqual(loopDevicesOf(disk), [], 'the disk is detached with its last mount');
    assert.equal(readFileSync(join(local, 'f'), 'utf8'), 'local', 'the local volume keeps its data');

    // The same claim in a new pod reads what the first one wrote.
    const next = makePod('next', {
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: [{ name: 'disk', persistentVolumeClaim: { claimName: 'disk', readOnly: true } }],
    });
    const again = await volumes.setUp(next);
    assert.equal(readFileSync(join(again.get('disk') ?? '', 'f'), 'utf8'), 'disk');
    assert.throws(() => writeFileSync(join(again.get('disk') ?? '', 'g'), 'x'), /EROFS/);
    await volumes.tearDown(next.metadata?.uid ?? '');
  } finally {
    await unmountAll(dir.path).catch(() => {});
    await detach(disk).catch(() => {});
    await dir.cleanup();
  }
  assert.deepEqual(loopDevicesOf(disk), []);
});

test('a Block kubit-disk: the raw loop device given to the pod, never formatted, released at tear-down', async () => {
  const dir = await tempDir('kubit-block-');
  const storage = new LocalStorage(join(dir.path, 'storage'));
  const objects = new MemoryObjectSource();
  const volumes = new VolumeManager(join(dir.path, 'root'), objects);
  const disk = storage.diskFile('pvc-raw');
  try {
    await createBackingFile(disk, 16 * MiB);
    objects.putVolume({
      metadata: { name: 'pvc-raw' },
      spec: {
        volumeMode: 'Block',
        csi: {
          driver: DISK_CSI_DRIVER,
          volumeHandle: 'pvc-raw',
          volumeAttributes: { [DISK_BACKING_FILE_ATTRIBUTE]: disk },
        },
      },
    });
    objects.putClaim({
      metadata: { name: 'raw', namespace: 'default' },
      spec: { volumeName: 'pvc-raw', volumeMode: 'Block', accessModes: ['ReadWriteOnce'] },
      status: { phase: 'Bound' },
    });
    const pod = makePod('db', {
      containers: [
        { name: 'c', image: 'busybox', volumeDevices: [{ name: 'raw', devicePath: '/dev/xvda' }] },
      ],
      volumes: [{ name: 'raw', persistentVolumeClaim: { claimName: 'raw' } }],
    });
    const paths = await volumes.setUp(pod);
    const host = paths.get('raw') ?? '';
    const [dev] = loopDevicesOf(disk);
    assert.match(dev ?? '', /^\/dev\/loop\d+$/);
    const st = await stat(host);
    assert.ok(st.isBlockDevice(), `${host} is the device itself`);
    assert.equal(st.rdev, (await stat(dev ?? '')).rdev, 'the pod gets the disk’s loop device');
    const probe = await run('blkid', ['-p', dev ?? '']).catch((e: { code?: number }) => e);
    assert.equal(
      (probe as { code?: number }).code,
      2,
      'a Block volume is never formatted (blkid finds nothing)',
    );
    // Setting up again (the worker's next sync) changes nothing.
    assert.equal((await volumes.setUp(pod)).get('raw'), host);
    assert.equal(loopDevicesOf(disk).length, 1);

    await volumes.tearDown(pod.metadata?.uid ?? '');
    assert.deepEqual(mountsUnder(dir.path), []);
    assert.deepEqual(loopDevicesOf(disk), [], 'the device is detached when the pod is gone');
  } finally {
    await unmountAll(dir.path).catch(() => {});
    await detach(disk).catch(() => {});
    await dir.cleanup();
  }
});
