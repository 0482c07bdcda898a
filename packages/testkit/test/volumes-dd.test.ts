// bench:volumes' write script, run by the same busybox the test image is made of
// (/usr/bin/busybox), on two directories of this machine.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ddScript, mbPerSecond, parseDdLog } from '../bench/volumes-dd.js';
import { tempDir } from '../src/process.js';

const run = promisify(execFile);
const BUSYBOX = '/usr/bin/busybox';

test('the dd script times each write on each target in turns, leaves no file, and its log parses', {
  skip: !existsSync(BUSYBOX) && 'needs /usr/bin/busybox',
}, async () => {
  const dir = await tempDir('kubit-dd-test-');
  try {
    const a = join(dir.path, 'a');
    const b = join(dir.path, 'b');
    mkdirSync(a);
    mkdirSync(b);
    const script = ddScript({
      targets: { disk: a, node: b },
      rounds: 3,
      mib: 4,
      flag: 'conv=fsync',
      finally: 'true',
    });
    const { stdout } = await run(BUSYBOX, ['sh', '-c', script]);
    const results = parseDdLog(stdout);
    assert.ok(results, `no end marker in:\n${stdout}`);
    // The order turns every other round, so neither target always goes first.
    assert.deepEqual(
      results.map((r) => `${r.target} ${r.round}`),
      ['disk 0', 'node 0', 'node 1', 'disk 1', 'disk 2', 'node 2'],
    );
    for (const r of results)
      assert.ok(Number.isFinite(r.seconds) && r.seconds >= 0, `seconds of ${r.target}`);
    assert.deepEqual([...readdirSync(a), ...readdirSync(b)], []);
  } finally {
    await dir.cleanup();
  }
});

test('a log without the end marker is not finished; a failed write is an error; MB/s are 10^6 bytes a second', () => {
  assert.equal(parseDdLog('DD disk 0 1000000 2000000\n'), undefined);
  assert.deepEqual(parseDdLog('DD disk 0 1000000 2500000\nnoise\nDD-DONE\n'), [
    { target: 'disk', round: 0, seconds: 1.5 },
  ]);
  assert.throws(() => parseDdLog('DD-FAILED disk dd: No space left on device\nDD-DONE\n'), /No space left/);
  assert.equal(mbPerSecond(256, 1).toFixed(1), '268.4');
});

test('a write that fails ends the script with its error', {
  skip: !existsSync(BUSYBOX) && 'needs /usr/bin/busybox',
}, async () => {
  const script = ddScript({
    targets: { gone: '/nonexistent-kubit-dir' },
    rounds: 1,
    mib: 1,
    flag: 'conv=fsync',
    finally: 'true',
  }).replace('exec sleep 3600', 'exit 0');
  const { stdout } = await run(BUSYBOX, ['sh', '-c', script]);
  assert.throws(() => parseDdLog(stdout), /nonexistent-kubit-dir/);
});
