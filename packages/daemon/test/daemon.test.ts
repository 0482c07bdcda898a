import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, createRegistry, listArg, parseDuration, startHealthServer } from '../src/index.js';

test('parseDuration accepts Go-style durations and rejects the rest', () => {
  const cases: [string, number][] = [
    ['500ms', 500],
    ['10s', 10_000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1.5s', 1500],
  ];
  for (const [text, ms] of cases) assert.equal(parseDuration(text), ms, text);
  for (const bad of ['', '10', 's', '10x', '1m 30s', '-1s', 'ten seconds']) {
    assert.throws(() => parseDuration(bad), /is not a duration/, bad);
  }
});

test('listArg splits commas and accumulates repeats', () => {
  assert.deepEqual(listArg('a,b', ['x']), ['x', 'a', 'b']);
  assert.deepEqual(listArg(' a , ,b'), ['a', 'b']);
});

test('health server answers /livez, /readyz with failing checks, /metrics', async () => {
  let healthy = false;
  const log = createLogger({ name: 'test', level: 'silent', pretty: false });
  const app = await startHealthServer({
    host: '127.0.0.1',
    port: 0,
    registry: createRegistry(),
    log,
    readiness: [
      {
        name: 'store',
        check: () => {
          if (!healthy) throw new Error('unreachable');
        },
      },
    ],
  });
  try {
    const addr = app.server.address();
    assert.ok(addr && typeof addr === 'object');
    const base = `http://127.0.0.1:${addr.port}`;
    assert.equal((await fetch(`${base}/livez`)).status, 200);
    const notReady = await fetch(`${base}/readyz?verbose`);
    assert.equal(notReady.status, 503);
    assert.match(await notReady.text(), /\[-\]store failed: unreachable/);
    healthy = true;
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /process_resident_memory_bytes/);
  } finally {
    await app.close();
  }
});
