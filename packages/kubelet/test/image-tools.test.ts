// The offline nginx and busybox images (testkit's images.ts) carry what users
// reach for in a pod: sh, cat, tar (kubectl cp), ls, env, and a wget that
// resolves names and fetches a page (busybox-static's own wget crashes here).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { type Node, startNode } from './containerd-fixture.js';
import { containerState, makePod, waitStatus } from './helpers.js';

let node: Node;
before(async () => {
  // DNS settings make the pod workers write each pod's /etc/hosts (its hostAliases: the name wget resolves).
  node = await startNode({
    dns: { clusterDNS: [], clusterDomain: 'cluster.local', host: { servers: [], searches: [], options: [] } },
  });
});
after(async () => {
  await node?.stop();
});

async function running(pod: Pod): Promise<{ id: string; ip: string }> {
  node.manager.upsert(pod);
  const s = await waitStatus(node.sink, pod, 'Running', (st) => st.phase === 'Running', 60_000);
  const id = (containerState(s, 'c')?.containerID ?? '').replace('containerd://', '');
  return { id, ip: s.podIP ?? '' };
}

async function sh(id: string, script: string): Promise<string> {
  const r = await node.runtime.execSync(id, ['sh', '-c', script], 30);
  const out = Buffer.from(r.stdout).toString();
  assert.equal(r.exitCode, 0, `${script}: exit ${r.exitCode}: ${Buffer.from(r.stderr).toString()}${out}`);
  return out;
}

const TOOLS = 'cat /etc/hostname && ls / && env && tar -cf - /etc/hostname | tar -tf -';

test('nginx has sh, cat, ls, env and tar, and wget reaches its own page', async () => {
  const web = await running(makePod('web', { containers: [{ name: 'c', image: 'nginx:latest' }] }));
  const out = await sh(web.id, TOOLS);
  assert.match(out, /^web$/m, 'cat /etc/hostname');
  assert.match(out, /^usr$/m, 'ls /');
  assert.match(out, /^PATH=/m, 'env');
  assert.match(out, /etc\/hostname/, 'tar round trip');
  assert.match(await sh(web.id, 'wget -qO- http://127.0.0.1/'), /Welcome to nginx/);

  const client = await running(
    makePod('client', {
      hostAliases: [{ ip: web.ip, hostnames: ['web'] }],
      containers: [{ name: 'c', image: 'busybox:latest', command: ['sleep', '3600'] }],
    }),
  );
  assert.match(await sh(client.id, TOOLS), /^client$/m);
  assert.match(await sh(client.id, 'wget -qO- http://web/'), /Welcome to nginx/, 'wget by name from busybox');
});
