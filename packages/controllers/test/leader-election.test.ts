// Two kubit-controller-managers against one apiserver: only the Lease holder
// acts; when it stops, the standby takes over and rebuilds its state (no
// podCIDR handed out twice).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Lease, Node } from '@kubit/api';
import { KubeClient as Client, type KubeClient, loadClientConfig, resources } from '@kubit/client';
import { type ControlPlane, freePort, startControlPlane, type TestProcess, waitFor } from '@kubit/testkit';
import { httpsGetInsecure, leaderOn, startControllerManager, type Wire, w } from './cm-process.js';

let cp: ControlPlane;
const managers: { proc: TestProcess; port: number }[] = [];
let client: KubeClient;

before(async () => {
  cp = await startControlPlane();
  const kubeconfig = await cp.kubeconfigFor('controller-manager', cp.pki.controllerManager);
  // Both start at once (startup from sources is the slow part); either may win.
  for (const name of ['controller-manager-1', 'controller-manager-2']) {
    const port = await freePort();
    managers.push({ proc: startControllerManager(cp, kubeconfig, name, port), port });
  }
  client = new Client(loadClientConfig({ kubeconfig: cp.kubeconfigPath }));
});

after(async () => {
  for (const m of managers) await m.proc.stop();
  client?.close();
  await cp?.stop();
});

const lease = () =>
  client.get<Lease & Wire>(resources.leases, 'kube-controller-manager', { namespace: 'kube-system' });

const podCIDR = (name: string) =>
  waitFor(
    `a podCIDR for ${name}`,
    async () => (await client.get<Node & Wire>(resources.nodes, name)).spec?.podCIDR,
  );

test('one leader at a time, and the standby takes over when it stops', { timeout: 110_000 }, async () => {
  for (const m of managers) {
    await waitFor(
      'health',
      async () => (await httpsGetInsecure(`https://127.0.0.1:${m.port}/healthz`)).body === 'ok',
      60_000,
    );
  }
  const leaderIndex = await waitFor('a leader', async () => {
    const states = await Promise.all(managers.map((m) => leaderOn(m.port)));
    assert.ok(!(states[0] && states[1]), 'two leaders at once');
    const i = states.indexOf(true);
    return i >= 0 ? i : undefined;
  });
  const leader = managers[leaderIndex];
  const standby = managers[1 - leaderIndex];
  await client.create(resources.nodes, w<Node>({ metadata: { name: 'before-failover' } }));
  const first = await podCIDR('before-failover');
  assert.equal(await leaderOn(standby.port), false);
  const holderBefore = (await lease()).spec?.holderIdentity;

  await leader.proc.stop();
  await waitFor('the standby to lead', () => leaderOn(standby.port), 30_000);
  assert.notEqual((await lease()).spec?.holderIdentity, holderBefore);
  await client.create(resources.nodes, w<Node>({ metadata: { name: 'after-failover' } }));
  const second = await podCIDR('after-failover');
  assert.notEqual(second, first, 'the new leader rebuilt its allocations from the existing nodes');
});
