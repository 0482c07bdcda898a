// The gRPC framing of the member's HTTP/2 server: messages split across and
// packed into reads, empty messages, the size limit, compression, and the
// percent-encoding of status messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeGrpcMessage, MessageReader } from '../src/server/grpc-server.js';
import { parseGrpcTimeout } from '../src/server/grpc-timeout.js';
import { frameMessage } from '../src/wire/grpc-frame.js';

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

test('status messages are percent-encoded outside printable ASCII', () => {
  assert.equal(encodeGrpcMessage('etcdserver: key not found'), 'etcdserver: key not found');
  assert.equal(encodeGrpcMessage('100% done'), '100%25 done');
  assert.equal(encodeGrpcMessage('line\nnext é'), 'line%0Anext %C3%A9');
});

test('grpc-timeout in each unit, and what is not one', () => {
  assert.equal(parseGrpcTimeout('2H'), 7_200_000);
  assert.equal(parseGrpcTimeout('3M'), 180_000);
  assert.equal(parseGrpcTimeout('5S'), 5000);
  assert.equal(parseGrpcTimeout('250m'), 250);
  assert.equal(parseGrpcTimeout('4999856u'), 4999.856);
  assert.equal(parseGrpcTimeout('1n'), 1e-6);
  assert.equal(parseGrpcTimeout('0n'), 0);
  assert.equal(parseGrpcTimeout('99999999S'), 99_999_999_000);
  for (const bad of ['', '5', 's', '123456789m', '-1S', '1.5S', '5 S', '5s', '5ms']) {
    assert.equal(parseGrpcTimeout(bad), undefined, bad);
  }
});
