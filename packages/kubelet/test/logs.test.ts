// Reading CRI log files: partial lines, tail, timestamps, since, limits, follow.
import assert from 'node:assert/strict';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { parseCriLogLine, readContainerLog } from '../src/server/logs.js';

const LOG = [
  '2026-01-01T00:00:01.000000001Z stdout F one',
  '2026-01-01T00:00:02.000000002Z stderr P tw',
  '2026-01-01T00:00:02.500000000Z stderr F o',
  '2026-01-01T00:00:03.000000003Z stdout F three',
  '',
].join('\n');

async function collect(gen: AsyncGenerator<string>): Promise<string> {
  let out = '';
  for await (const s of gen) out += s;
  return out;
}

test('parses CRI log lines and rejects others', () => {
  assert.deepEqual(parseCriLogLine('2026-01-01T00:00:01.000000001Z stdout F hello world'), {
    time: '2026-01-01T00:00:01.000000001Z',
    timeMs: Date.parse('2026-01-01T00:00:01.000Z'),
    stream: 'stdout',
    tag: 'F',
    content: 'hello world',
  });
  assert.equal(parseCriLogLine('2026-01-01T00:00:01Z stdout F ')?.content, '');
  assert.equal(parseCriLogLine('not a log line'), undefined);
  assert.equal(parseCriLogLine('yesterday stdout F x'), undefined);
});

test('joins partial lines; tailLines, timestamps, sinceTime and limitBytes', async () => {
  const dir = await tempDir();
  try {
    const path = join(dir.path, '0.log');
    await writeFile(path, LOG);
    const never = async () => false;
    assert.equal(await collect(readContainerLog(path, {}, never)), 'one\ntwo\nthree\n');
    assert.equal(await collect(readContainerLog(path, { tailLines: 2 }, never)), 'two\nthree\n');
    assert.equal(await collect(readContainerLog(path, { tailLines: 0 }, never)), '');
    assert.equal(
      await collect(readContainerLog(path, { tailLines: 1, timestamps: true }, never)),
      '2026-01-01T00:00:03.000000003Z three\n',
    );
    assert.equal(
      await collect(readContainerLog(path, { sinceTimeMs: Date.parse('2026-01-01T00:00:02Z') }, never)),
      'two\nthree\n',
    );
    assert.equal(await collect(readContainerLog(path, { limitBytes: 6 }, never)), 'one\ntw');
  } finally {
    await dir.cleanup();
  }
});

test('follow streams appended lines until the container stops', async () => {
  const dir = await tempDir();
  try {
    const path = join(dir.path, '0.log');
    await writeFile(path, LOG);
    let running = true;
    const gen = readContainerLog(path, { follow: true, tailLines: 1 }, async () => running, undefined, 20);
    const seen: string[] = [];
    const done = (async () => {
      for await (const s of gen) seen.push(s);
    })();
    await new Promise((r) => setTimeout(r, 100));
    await appendFile(path, '2026-01-01T00:00:04Z stdout F four\n');
    await new Promise((r) => setTimeout(r, 100));
    await appendFile(path, '2026-01-01T00:00:05Z stdout F five\n');
    running = false;
    await done;
    assert.deepEqual(seen, ['three\n', 'four\n', 'five\n']);
  } finally {
    await dir.cleanup();
  }
});
