// The files of configMap, secret, downwardAPI and projected volumes, written by
// the VolumeManager into a temporary root directory.
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { MemoryObjectSource } from '../src/pods/sinks.js';
import { MountError, VolumeManager } from '../src/pods/volumes.js';
import { makePod } from './helpers.js';

function objects(): MemoryObjectSource {
  const o = new MemoryObjectSource();
  o.putConfigMap({ metadata: { name: 'app', namespace: 'default' }, data: { 'a.conf': 'A', 'b.conf': 'B' } });
  o.putSecret({
    metadata: { name: 'creds', namespace: 'default' },
    data: { token: Buffer.from('t0k3n').toString('base64') },
  });
  return o;
}

test('downwardAPI and projected volumes hold the pod fields, keys and resources they name', async () => {
  const dir = await tempDir('kubit-volumes-');
  try {
    const volumes = new VolumeManager(dir.path, objects());
    const pod = makePod('downward', {
      containers: [{ name: 'c', image: 'busybox', resources: { limits: { memory: '64Mi', cpu: '250m' } } }],
      volumes: [
        {
          name: 'info',
          downwardAPI: {
            items: [
              { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
              { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
              { path: 'tier', fieldRef: { fieldPath: "metadata.labels['tier']" } },
              {
                path: 'mem',
                resourceFieldRef: { containerName: 'c', resource: 'limits.memory', divisor: '1Mi' },
              },
            ],
          },
        },
        {
          name: 'all',
          projected: {
            defaultMode: 0o400,
            sources: [
              { configMap: { name: 'app', items: [{ key: 'a.conf', path: 'conf/a.conf' }] } },
              { secret: { name: 'creds' } },
              { downwardAPI: { items: [{ path: 'ns', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
              { configMap: { name: 'absent', optional: true } },
            ],
          },
        },
      ],
    });
    pod.metadata = { ...pod.metadata, labels: { tier: 'web', app: 'shop' } };
    const paths = await volumes.setUp(pod);
    const info = paths.get('info') ?? '';
    assert.equal(readFileSync(join(info, 'name'), 'utf8'), 'downward');
    assert.equal(readFileSync(join(info, 'labels'), 'utf8'), 'app="shop"\ntier="web"\n');
    assert.equal(readFileSync(join(info, 'tier'), 'utf8'), 'web');
    assert.equal(readFileSync(join(info, 'mem'), 'utf8'), '64');
    const all = paths.get('all') ?? '';
    assert.equal(readFileSync(join(all, 'conf', 'a.conf'), 'utf8'), 'A');
    assert.equal(readFileSync(join(all, 'token'), 'utf8'), 't0k3n');
    assert.equal(readFileSync(join(all, 'ns'), 'utf8'), 'default');
    assert.equal(statSync(join(all, 'token')).mode & 0o777, 0o400);
    assert.throws(() => readFileSync(join(all, 'b.conf')), /ENOENT/);
  } finally {
    await dir.cleanup();
  }
});

test('a projected volume with a missing source, or a status field in a downwardAPI volume, fails to mount', async () => {
  const dir = await tempDir('kubit-volumes-');
  try {
    const volumes = new VolumeManager(dir.path, objects());
    const missing = makePod('missing', {
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: [{ name: 'p', projected: { sources: [{ secret: { name: 'nope' } }] } }],
    });
    await assert.rejects(volumes.setUp(missing), (err: unknown) => {
      assert.ok(err instanceof MountError);
      assert.match(err.message, /volume "p" : secret "nope" not found/);
      return true;
    });
    const status = makePod('status', {
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: [
        { name: 'd', downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] } },
      ],
    });
    await assert.rejects(volumes.setUp(status), /fieldPath "status.podIP" is not supported/);
  } finally {
    await dir.cleanup();
  }
});
