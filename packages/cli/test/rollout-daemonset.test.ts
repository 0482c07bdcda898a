// kubit rollout for DaemonSets against a real cluster (apiserver on etcd,
// kubit-controller-manager's daemonset controller, kubit-scheduler and hollow
// nodes): status waits for the rolling update, history lists the
// ControllerRevisions, undo applies the previous one, pause is refused.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { type Cluster, startCluster } from './cluster.js';
import { type KubitOptions, kubit } from './helpers.js';

let cluster: Cluster;
let tmp: { path: string; cleanup: () => Promise<void> };

const k = (args: string[], o: Partial<KubitOptions> = {}) => kubit(args, { env: cluster.env, ...o });

before(async () => {
  tmp = await tempDir('kubit-cli-rollout-ds-');
  cluster = await startCluster({ nodes: 2, home: tmp.path, controllers: 'daemonset' });
});

after(async () => {
  await cluster?.stop();
  await tmp?.cleanup();
});

const daemonSet = (image: string) => `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: ${image}
`;

async function apply(image: string): Promise<void> {
  const file = join(tmp.path, 'ds.yaml');
  await writeFile(file, daemonSet(image));
  const r = await k(['apply', '-f', file]);
  assert.equal(r.code, 0, r.err);
}

async function rolledOut(): Promise<void> {
  const r = await k(['rollout', 'status', 'daemonset/agent', '--timeout=90s']);
  assert.equal(r.code, 0, `${r.err}\n${cluster.logs()}`);
  assert.match(r.out, /daemon set "agent" successfully rolled out\n$/);
}

async function image(): Promise<string> {
  const r = await k(['get', 'ds', 'agent', '-o', 'jsonpath={.spec.template.spec.containers[0].image}']);
  assert.equal(r.code, 0, r.err);
  return r.out;
}

describe('kubit rollout daemonset', () => {
  it('status, history and undo over ControllerRevisions', async () => {
    await apply('pause:1');
    await rolledOut();
    await apply('pause:2');
    await rolledOut();

    const h = await k(['rollout', 'history', 'daemonset/agent']);
    assert.equal(h.code, 0, h.err);
    assert.match(h.out, /^daemonset\.apps\/agent \nREVISION +CHANGE-CAUSE\n1 +<none>\n2 +<none>\n/);
    const one = await k(['rollout', 'history', 'ds/agent', '--revision=1']);
    assert.equal(one.code, 0, one.err);
    assert.match(one.out, /with revision #1\n[\s\S]*Image:\s+pause:1/);

    const undo = await k(['rollout', 'undo', 'daemonset/agent']);
    assert.equal(undo.code, 0, undo.err);
    assert.equal(undo.out, 'daemonset.apps/agent rolled back\n');
    assert.equal(await image(), 'pause:1');
    await rolledOut();
    const again = await k(['rollout', 'undo', 'daemonset/agent', '--to-revision=3']);
    assert.equal(
      again.out,
      'daemonset.apps/agent skipped rollback (current template already matches revision 3)\n',
    );
    const missing = await k(['rollout', 'undo', 'daemonset/agent', '--to-revision=9']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.err, /unable to find specified revision 9 in history/);
  });

  it('pause is not supported for a DaemonSet', async () => {
    const r = await k(['rollout', 'pause', 'daemonset/agent']);
    assert.notEqual(r.code, 0);
    assert.match(r.err, /daemonsets\.apps pausing is not supported/);
  });
});
