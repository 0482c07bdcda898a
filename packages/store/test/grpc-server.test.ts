// The member's HTTP/2 gRPC server's pure parts: the percent-encoding of
// status messages and the grpc-timeout header (the framing is @kubit/wire's).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeGrpcMessage } from '../src/server/grpc-server.js';
import { parseGrpcTimeout } from '../src/server/grpc-timeout.js';

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
