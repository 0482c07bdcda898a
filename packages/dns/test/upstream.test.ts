// Upstream resolvers from --upstream and from resolv.conf.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseUpstream, resolvConfNameservers } from '../src/forwarder.js';

describe('upstreams', () => {
  it('parses ip, ip:port and [v6]:port', () => {
    assert.deepEqual(parseUpstream('10.0.0.2'), { host: '10.0.0.2', port: 53 });
    assert.deepEqual(parseUpstream('127.0.0.1:5353'), { host: '127.0.0.1', port: 5353 });
    assert.deepEqual(parseUpstream('[fd00::1]:53'), { host: 'fd00::1', port: 53 });
  });

  for (const bad of ['dns.example.com', '10.0.0.2:0', '10.0.0.2:70000', '', '[nope]:53']) {
    it(`refuses "${bad}" with a message naming it`, () => {
      assert.throws(
        () => parseUpstream(bad),
        new RegExp(`"${bad.replace(/[[\]]/g, '\\$&')}" is not an upstream`),
      );
    });
  }

  it('reads the nameservers of a resolv.conf in order, skipping what is not one', () => {
    const text = [
      '# generated',
      'search example.com',
      'nameserver 10.0.0.2',
      'nameserver   fd00::53',
      'nameserver not-an-address',
      'options ndots:2',
      'nameserver 10.0.0.3',
    ].join('\n');
    assert.deepEqual(resolvConfNameservers(text), [
      { host: '10.0.0.2', port: 53 },
      { host: 'fd00::53', port: 53 },
      { host: '10.0.0.3', port: 53 },
    ]);
  });
});
