// gRPC's message framing: messages split across and packed into reads,
// empty messages, the size limit and compression.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { frameMessage, MessageReader } from '../src/grpc-frame.js';

function collect(max = 1024): { reader: MessageReader; got: string[] } {
  const got: string[] = [];
  return { reader: new MessageReader(max, (b) => got.push(b.toString())), got };
}

test('messages come out whole however the bytes are cut', () => {
  const bytes = Buffer.concat([
    frameMessage(Buffer.from('hello')),
    frameMessage(Buffer.alloc(0)),
    frameMessage(Buffer.from('x')),
  ]);
  for (let cut = 0; cut <= bytes.length; cut++) {
    const { reader, got } = collect();
    assert.equal(reader.push(bytes.subarray(0, cut)), undefined);
    assert.equal(reader.push(bytes.subarray(cut)), undefined);
    assert.deepEqual(got, ['hello', '', 'x'], `cut at ${cut}`);
  }
  // One byte at a time.
  const { reader, got } = collect();
  for (const b of bytes) assert.equal(reader.push(Buffer.from([b])), undefined);
  assert.deepEqual(got, ['hello', '', 'x']);
});

test('a message over the limit is refused before its bytes arrive', () => {
  const { reader, got } = collect(4);
  const head = Buffer.from([0, 0, 0, 0, 5]);
  assert.deepEqual(reader.push(head), {
    code: 8,
    message: 'grpc: received message larger than max (5 vs. 4)',
  });
  assert.deepEqual(got, []);
});

test('a compressed message is refused', () => {
  const { reader } = collect();
  const err = reader.push(Buffer.from([1, 0, 0, 0, 1, 0x61]));
  assert.equal(err?.code, 12);
});
