import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { StatusError } from '@kubit/api';
import fc from 'fast-check';
import { ConnectionError } from '../src/errors.js';
import type { KubeObject } from '../src/types.js';
import { LineSplitter, parseWatchEvent, Watch } from '../src/watch.js';

function open(stream: PassThrough, statusCode = 200) {
  return async () => ({ statusCode, headers: {}, stream });
}

describe('watch stream', () => {
  it('splits lines across chunks', () => {
    const s = new LineSplitter();
    assert.deepEqual(s.push('{"a":1}\n{"b"'), ['{"a":1}']);
    assert.deepEqual(s.push(':2}\n\n'), ['{"b":2}']);
    assert.deepEqual(s.flush(), []);
    assert.throws(() => parseWatchEvent('{"type":"ADDED"}'), /malformed/);
  });

  it('gives the same non-blank lines however the stream is cut into chunks', () => {
    const line = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\t', '{', '}', '"') }),
      fc.constant(''),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.array(fc.nat(40), { maxLength: 6 }), (lines, cuts) => {
        const text = lines.map((l) => `${l}\n`).join('');
        const s = new LineSplitter();
        const got: string[] = [];
        let at = 0;
        for (const c of [...cuts].sort((a, b) => a - b)) {
          const to = Math.min(c, text.length);
          if (to > at) got.push(...s.push(text.slice(at, to)));
          at = Math.max(at, to);
        }
        got.push(...s.push(text.slice(at)), ...s.flush());
        assert.deepEqual(
          got,
          lines.filter((l) => l.trim() !== ''),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('iterates events and ends when the server closes', async () => {
    const s = new PassThrough();
    const w = new Watch<KubeObject>(open(s), 'h:1');
    s.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"DEL');
    s.end('ETED","object":{"metadata":{"name":"a"}}}\n');
    const got: string[] = [];
    for await (const ev of w) got.push(`${ev.type} ${ev.object.metadata?.name}`);
    assert.deepEqual(got, ['ADDED a', 'DELETED a']);
    assert.equal(await w.closed, undefined);
  });

  it('surfaces a non-2xx answer as StatusError and an abrupt close as ConnectionError', async () => {
    const s = new PassThrough();
    const w = new Watch(open(s, 410), 'h:1');
    s.end(
      JSON.stringify({
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version: 1 (5)',
      }),
    );
    await assert.rejects(
      async () => {
        for await (const _ of w) {
        }
      },
      (e: unknown) => e instanceof StatusError && e.reason === 'Expired',
    );
    const s2 = new PassThrough();
    const w2 = new Watch(open(s2), 'h:1');
    s2.write('{"type":"ADDED","object":{}}\n');
    setTimeout(() => s2.destroy(), 10);
    const seen: string[] = [];
    await assert.rejects(async () => {
      for await (const ev of w2) seen.push(ev.type);
    }, ConnectionError);
    assert.deepEqual(seen, ['ADDED']);
  });

  it('pauses the socket when the consumer falls behind and stops on request', async () => {
    const s = new PassThrough();
    const w = new Watch(open(s), 'h:1', { maxBuffered: 4 });
    for (let i = 0; i < 10; i++) s.write(`{"type":"ADDED","object":{"metadata":{"name":"p${i}"}}}\n`);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(s.isPaused(), true);
    let n = 0;
    for await (const _ of w) {
      n++;
      if (n === 10) w.stop();
    }
    assert.equal(n, 10);
    assert.equal(w.stopped, true);
  });
});
