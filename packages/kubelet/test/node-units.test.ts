// The node side's pure parts: when a status counts as changed, the Ready
// condition without a pod network, the CNI conflist, and the write queue of hollow nodes.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { WriteQueue } from '../src/hollow/write-queue.js';
import {
  CniConfig,
  checkPodCidr,
  defaultCniTemplatePath,
  fillTemplate,
  podMtuOf,
} from '../src/node/cni-config.js';
import { buildNodeStatus, type NodeIdentity, statusSignature } from '../src/node/node-status.js';
import { FakeRuntime } from '../src/runtime/fake.js';

const id: NodeIdentity = {
  name: 'n1',
  nodeIP: '127.0.0.1',
  port: 10250,
  maxPods: 110,
  labels: {},
  taints: [],
};

test('a status is "changed" when a condition changes, not when only heartbeat times move', async () => {
  const runtime = new FakeRuntime();
  const a = await buildNodeStatus(id, runtime, undefined);
  await new Promise((r) => setTimeout(r, 1100));
  const b = await buildNodeStatus(id, runtime, a);
  assert.notEqual(a.conditions?.[0]?.lastHeartbeatTime, b.conditions?.[0]?.lastHeartbeatTime);
  assert.equal(statusSignature(a), statusSignature(b));
  const c = await buildNodeStatus(id, runtime, b, 'network is not ready: no pod CIDR');
  assert.notEqual(statusSignature(b), statusSignature(c));
  const ready = c.conditions?.find((x) => x.type === 'Ready');
  assert.equal(ready?.status, 'False');
  assert.match(ready?.message ?? '', /no pod CIDR/);
});

test('the CNI conflist comes from the repository template, written once per subnet', async () => {
  const template = defaultCniTemplatePath();
  assert.ok(template, 'deploy/containerd/10-kubit.conflist.tmpl is found from the kubelet');
  const dir = await tempDir('kubit-cni-');
  try {
    const cni = new CniConfig({
      confDir: join(dir.path, 'net.d'),
      templatePath: template,
      bridge: 'kbt9',
      networkName: 'net9',
      ipMasq: false,
    });
    assert.equal(cni.podCidr, undefined);
    assert.equal(await cni.ensure('10.244.9.0/24'), true);
    assert.equal(await cni.ensure('10.244.9.0/24'), false, 'same text: not rewritten');
    assert.equal(cni.podCidr, '10.244.9.0/24');
    const conf = JSON.parse(await readFile(cni.path, 'utf8')) as {
      name: string;
      plugins: {
        type: string;
        bridge?: string;
        ipMasq?: boolean;
        ipam?: { ranges: { subnet: string }[][] };
      }[];
    };
    assert.equal(conf.name, 'net9');
    const bridge = conf.plugins.find((p) => p.type === 'bridge');
    assert.equal(bridge?.bridge, 'kbt9');
    assert.equal(bridge?.ipMasq, false);
    assert.equal(bridge?.ipam?.ranges[0]?.[0]?.subnet, '10.244.9.0/24');
    await assert.rejects(cni.ensure('10.244.9.0'), /not an IPv4 CIDR/);
    // kubit-net's pod MTU (net.kubit.dev/pod-mtu) goes on the bridge plugin; a change rewrites the file.
    assert.equal(await cni.ensure('10.244.9.0/24', 1450), true);
    assert.equal(await cni.ensure('10.244.9.0/24', 1450), false);
    assert.equal(cni.mtu, 1450);
    const withMtu = JSON.parse(await readFile(cni.path, 'utf8')) as {
      plugins: { type: string; mtu?: number }[];
    };
    assert.equal(withMtu.plugins.find((p) => p.type === 'bridge')?.mtu, 1450);
    assert.equal(podMtuOf({ 'net.kubit.dev/pod-mtu': '1450' }), 1450);
    assert.equal(podMtuOf({ 'net.kubit.dev/pod-mtu': 'x' }), undefined);
    assert.equal(podMtuOf({ 'net.kubit.dev/pod-mtu': '100' }), undefined, 'below IPv4 minimum 576');
    assert.equal(podMtuOf(undefined), undefined);
  } finally {
    await dir.cleanup();
  }
  assert.throws(() => checkPodCidr('300.1.1.0/24'), /not an IPv4 CIDR/);
  assert.throws(() => fillTemplate('{{NOPE}}', {}), /\{\{NOPE\}\} has no value/);
});

test('writers of the CNI conflist never clobber each other: each has its own temporary file', async () => {
  const template = defaultCniTemplatePath();
  assert.ok(template);
  const dir = await tempDir('kubit-cni-race-');
  try {
    const confDir = join(dir.path, 'net.d');
    const subnets = ['10.244.1.0/24', '10.244.2.0/24'];
    const writer = () =>
      new CniConfig({ confDir, templatePath: template, bridge: 'kbt1', networkName: 'n1', ipMasq: false });
    // Fresh writers (no memory of what is on disk) for two subnets, all at once, several rounds.
    for (let round = 0; round < 5; round++) {
      await Promise.all(Array.from({ length: 16 }, (_, i) => writer().ensure(subnets[i % 2] ?? '')));
      const conf = JSON.parse(await readFile(writer().path, 'utf8')) as {
        plugins: { type: string; ipam?: { ranges: { subnet: string }[][] } }[];
      };
      const subnet = conf.plugins.find((p) => p.type === 'bridge')?.ipam?.ranges[0]?.[0]?.subnet;
      assert.ok(subnet && subnets.includes(subnet), `a whole conflist of one writer, got ${subnet}`);
    }
    assert.deepEqual(await readdir(confDir), ['10-kubit.conflist'], 'no temporary file is left');
  } finally {
    await dir.cleanup();
  }
});

test('the write queue bounds concurrency and coalesces a key already waiting', async () => {
  const errors: string[] = [];
  const q = new WriteQueue(2, (_e, key) => errors.push(key));
  let active = 0;
  let peak = 0;
  const done: string[] = [];
  const task = (key: string) => async () => {
    active++;
    peak = Math.max(peak, active);
    await new Promise((r) => setTimeout(r, 10));
    active--;
    done.push(key);
  };
  for (const k of ['a', 'b', 'c', 'd']) q.push(k, task(k));
  q.push('d', task('d-again')); // 'd' still waits: dropped
  q.push('e', async () => {
    throw new Error('boom');
  });
  await q.drain();
  assert.equal(peak, 2);
  assert.deepEqual(done, ['a', 'b', 'c', 'd']);
  assert.deepEqual(errors, ['e']);
  assert.throws(() => new WriteQueue(0, () => {}), /positive integer/);
});
