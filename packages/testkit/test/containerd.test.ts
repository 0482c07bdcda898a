// A private containerd: serves CRI on its own socket, gives pods addresses on
// its own bridge and subnet, and leaves nothing behind when stopped.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { startContainerd } from '../src/index.js';

test('starts with its own socket, bridge and subnet; stop removes them all', async () => {
  const a = await startContainerd();
  const b = await startContainerd();
  try {
    assert.notEqual(a.socket, b.socket);
    assert.notEqual(a.bridge, b.bridge);
    assert.notEqual(a.podCidr, b.podCidr);
    assert.match(a.podCidr, /^10\.244\.\d+\.0\/24$/);
    assert.ok(existsSync(a.socket));
    const config = readFileSync(`${a.dir}/config.toml`, 'utf8');
    assert.match(config, /restrict_oom_score_adj = true/);
    assert.match(config, /sandbox_image = "docker.io\/local\/pause:1"/);
  } finally {
    await a.stop();
    await b.stop();
  }
  assert.equal(a.process.running, false);
  assert.ok(!existsSync(a.dir));
  assert.ok(!existsSync(`/sys/class/net/${a.bridge}`));
});
