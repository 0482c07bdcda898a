import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { daemonCommand } from '@kubit/testkit';
import { enabledControllers, KNOWN_CONTROLLERS } from '../src/controller-names.js';

function runCM(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const cmd = daemonCommand('controllers', 'main.ts');
  return new Promise((resolve) => {
    const child = execFile(
      cmd.command,
      [...cmd.args, ...args],
      { encoding: 'utf8', timeout: 60_000 },
      (_err, _out, stderr) => {
        resolve({ code: child.exitCode, stderr: stderr.trim() });
      },
    );
  });
}

describe('--controllers', () => {
  test('"*" and "-name" as Kubernetes reads them', () => {
    assert.deepEqual([...enabledControllers([])].sort(), [...KNOWN_CONTROLLERS].sort());
    assert.deepEqual(
      [...enabledControllers(['*', '-nodeipam'])].sort(),
      KNOWN_CONTROLLERS.filter((c) => c !== 'nodeipam').sort(),
    );
    assert.deepEqual([...enabledControllers(['replicaset', 'deployment'])].sort(), [
      'deployment',
      'replicaset',
    ]);
    assert.throws(
      () => enabledControllers(['*', 'bogus']),
      /"bogus" is not in the list of known controllers/,
    );
  });
});

describe('kubit-controller-manager flags', () => {
  test('bad flags exit 1 with one clear line', async () => {
    const cases: [string[], RegExp][] = [
      [['--controllers=*,nope'], /^kubit-controller-manager: "nope" is not in the list of known controllers/],
      [['--cluster-cidr=10.244.0.0', '--allocate-node-cidrs=true'], /invalid CIDR address: 10\.244\.0\.0/],
      [['--kubeconfig=/nonexistent/kubeconfig'], /nonexistent/],
      [
        ['--load-balancer-ip-range=10.0.0.9-10.0.0.4'],
        /--load-balancer-ip-range: "10\.0\.0\.9-10\.0\.0\.4" ends before it starts/,
      ],
      [['--load-balancer-ip-range=banana'], /--load-balancer-ip-range: "banana" is not an IPv4 CIDR/],
      [['--max-endpoints-per-slice=0'], /max-endpoints-per-slice/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCM(args)));
    for (const [i, [args, re]] of cases.entries()) {
      const r = results[i];
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, re);
      assert.equal(r.stderr.split('\n').length, 1, `one line expected: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /);
    }
  });
});
