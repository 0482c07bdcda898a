// kubit scale and kubit rollout against a real cluster: apiserver on etcd,
// kubit-controller-manager (deployment and replicaset controllers),
// kubit-scheduler and hollow nodes, so rollouts really progress.

import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '@kubit/testkit';
import { type Cluster, startCluster } from './cluster.js';
import { type KubitOptions, kubit, kubitInTerminal } from './helpers.js';

let cluster: Cluster;
let tmp: { path: string; cleanup: () => Promise<void> };

const k = (args: string[], o: Partial<KubitOptions> = {}) => kubit(args, { env: cluster.env, ...o });

before(async () => {
  tmp = await tempDir('kubit-cli-rollout-');
  cluster = await startCluster({ nodes: 2, home: tmp.path });
});

after(async () => {
  await cluster?.stop();
  await tmp?.cleanup();
});

const deployment = (name: string, image: string, replicas = 2) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
spec:
  replicas: ${replicas}
  selector:
    matchLabels: {app: ${name}}
  template:
    metadata:
      labels: {app: ${name}}
    spec:
      containers:
      - name: main
        image: ${image}
`;

/** Waits (through kubit itself) until the rollout is done; fails with the daemons' logs otherwise. */
async function rolledOut(name: string): Promise<string> {
  const r = await k(['rollout', 'status', `deployment/${name}`, '--timeout=90s']);
  assert.equal(r.code, 0, `${r.err}\n${cluster.logs()}`);
  assert.match(r.out, new RegExp(`deployment "${name}" successfully rolled out\\n$`));
  return r.out;
}

async function jsonpath(what: string, path: string): Promise<string> {
  const r = await k(['get', what, '-o', `jsonpath=${path}`]);
  assert.equal(r.code, 0, r.err);
  return r.out;
}

/** Stands in for the controller copying the Deployment's change cause to its ReplicaSet. */
async function annotateRevision(name: string, revision: number, cause: string): Promise<void> {
  const rs = await jsonpath(
    'rs',
    `{range .items[?(@.metadata.annotations.deployment\\.kubernetes\\.io/revision=="${revision}")]}{.metadata.name}{end}`,
  );
  assert.ok(rs.startsWith(`${name}-`), `a ReplicaSet at revision ${revision}: "${rs}"`);
  const r = await k(['annotate', 'rs', rs, `kubernetes.io/change-cause=${cause}`, '--overwrite']);
  assert.equal(r.code, 0, r.err);
}

describe('kubit scale', () => {
  it('scales a deployment through the scale subresource, by kind/name, kind name and -f', async () => {
    let r = await k(['apply', '-f', '-'], { stdin: deployment('web', 'nginx:1.0') });
    assert.equal(r.out, 'deployment.apps/web created\n', r.err);
    await rolledOut('web');

    r = await k(['scale', 'deployment/web', '--replicas=3']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, 'deployment.apps/web scaled\n');
    assert.equal(await jsonpath('deploy/web', '{.spec.replicas}'), '3');
    await rolledOut('web');
    assert.equal(await jsonpath('deploy/web', '{.status.readyReplicas}'), '3');

    r = await k(['scale', 'deploy', 'web', '--replicas=1', '--current-replicas=2']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: Expected replicas to be 2, was 3\n');
    assert.equal(
      await jsonpath('deploy/web', '{.spec.replicas}'),
      '3',
      'a failed precondition changes nothing',
    );

    r = await k(['scale', 'deploy', 'web', '--replicas=2', '--current-replicas=3']);
    assert.equal(r.out, 'deployment.apps/web scaled\n', r.err);

    const file = join(tmp.path, 'web.yaml');
    await writeFile(file, deployment('web', 'nginx:1.0'));
    r = await k(['scale', '-f', file, '--replicas=2']);
    assert.equal(r.out, 'deployment.apps/web scaled\n', r.err);
    await rolledOut('web');
  });

  it('scales a replica set and refuses what cannot be scaled', async () => {
    const rs = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: solo}
spec:
  replicas: 1
  selector: {matchLabels: {app: solo}}
  template:
    metadata: {labels: {app: solo}}
    spec: {containers: [{name: c, image: busybox}]}
`;
    let r = await k(['apply', '-f', '-'], { stdin: rs });
    assert.equal(r.code, 0, r.err);
    r = await k(['scale', 'rs', 'solo', '--replicas=2']);
    assert.equal(r.out, 'replicaset.apps/solo scaled\n', r.err);
    r = await k(['wait', '--for=jsonpath={.status.readyReplicas}=2', 'rs/solo', '--timeout=60s']);
    assert.equal(r.code, 0, `${r.err}\n${cluster.logs()}`);

    r = await k(['scale', 'rs/nope', '--replicas=2']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): replicasets.apps "nope" not found\n');
    r = await k(['scale', 'configmap/x', '--replicas=2']);
    assert.equal(r.code, 1);
    assert.match(r.err, /^error: cannot scale configmaps: the server serves no scale subresource/);
    r = await k(['scale', 'rs/solo']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: required flag(s) "replicas" not set\n');
  });
});

describe('kubit rollout', () => {
  it('status waits for a rollout, history lists revisions with their change cause', async () => {
    await annotateRevision('web', 1, 'first version');
    let r = await k(['apply', '-f', '-'], { stdin: deployment('web', 'nginx:2.0') });
    assert.equal(r.out, 'deployment.apps/web configured\n', r.err);
    const out = await rolledOut('web');
    for (const line of out.trimEnd().split('\n').slice(0, -1)) {
      assert.match(
        line,
        /^Waiting for deployment (spec update to be observed|"web" rollout to finish: .*)\.\.\.$/,
      );
    }
    await annotateRevision('web', 2, 'image 2.0');

    r = await k(['rollout', 'history', 'deployment/web']);
    assert.equal(r.code, 0, r.err);
    assert.equal(
      r.out,
      'deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         first version\n2         image 2.0\n\n',
    );
    r = await k(['rollout', 'history', 'deploy', 'web', '--revision=1']);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^deployment\.apps\/web with revision #1\nPod Template:\n {2}Labels:\s+app=web\n/);
    assert.match(r.out, /^ {4}main:\n {6}Image:\s+nginx:1\.0$/m);
    assert.doesNotMatch(r.out, /pod-template-hash/);
    r = await k(['rollout', 'history', 'deploy/web', '--revision=9']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: unable to find the specified revision\n');

    r = await k(['rollout', 'status', 'deployment/web', '--watch=false']);
    assert.equal(r.out, 'deployment "web" successfully rolled out\n');
    r = await k(['rollout', 'status', 'deployment/ghost']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'Error from server (NotFound): deployments.apps "ghost" not found\n');
    r = await k(['rollout', 'status', 'pod/web']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: no status viewer has been implemented for Pod\n');
  });

  it('undo puts an earlier template back and skips when it already matches', async () => {
    let r = await k(['rollout', 'undo', 'deployment/web']);
    assert.equal(r.out, 'deployment.apps/web rolled back\n', r.err);
    await rolledOut('web');
    assert.equal(await jsonpath('deploy/web', '{.spec.template.spec.containers[0].image}'), 'nginx:1.0');
    const labels = await jsonpath('deploy/web', '{.spec.template.metadata.labels}');
    assert.deepEqual(JSON.parse(labels), { app: 'web' }, 'no pod-template-hash in the Deployment');
    // The old ReplicaSet became revision 3; its change cause came back with it.
    r = await k(['rollout', 'history', 'deployment/web']);
    assert.equal(
      r.out,
      'deployment.apps/web \nREVISION  CHANGE-CAUSE\n2         image 2.0\n3         first version\n\n',
    );
    assert.equal(
      await jsonpath('deploy/web', '{.metadata.annotations.kubernetes\\.io/change-cause}'),
      'first version',
    );

    r = await k(['rollout', 'undo', 'deployment/web', '--to-revision=3']);
    assert.equal(
      r.out,
      'deployment.apps/web skipped rollback (current template already matches revision 3)\n',
    );
    r = await k(['rollout', 'undo', 'deployment/web', '--to-revision=42']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: unable to find specified revision 42 in history\n');
    r = await k(['rollout', 'undo', 'deployment/web', '--to-revision=2']);
    assert.equal(r.out, 'deployment.apps/web rolled back\n', r.err);
    await rolledOut('web');
    assert.equal(await jsonpath('deploy/web', '{.spec.template.spec.containers[0].image}'), 'nginx:2.0');
  });

  it('pause, resume and restart, refusing what kubectl refuses', async () => {
    let r = await k(['rollout', 'pause', 'deployment/web']);
    assert.equal(r.out, 'deployment.apps/web paused\n', r.err);
    assert.equal(await jsonpath('deploy/web', '{.spec.paused}'), 'true');
    r = await k(['rollout', 'pause', 'deployment/web']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: deployments.apps "web" is already paused\n');
    r = await k(['rollout', 'restart', 'deployment/web']);
    assert.equal(r.code, 1);
    assert.equal(
      r.err,
      `error: deployments.apps "web" can't restart paused deployment (run rollout resume first)\n`,
    );
    r = await k(['rollout', 'undo', 'deployment/web']);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^error: you cannot rollback a paused deployment; resume it first with 'kubit rollout resume deployment\/web' and try again\n$/,
    );

    // A paused Deployment does not roll out a new template: status says so, and times out.
    r = await k(['apply', '-f', '-'], { stdin: deployment('web', 'nginx:3.0') });
    assert.equal(r.code, 0, r.err);
    const generation = await jsonpath('deploy/web', '{.metadata.generation}');
    r = await k([
      'wait',
      `--for=jsonpath={.status.observedGeneration}=${generation}`,
      'deploy/web',
      '--timeout=30s',
    ]);
    assert.equal(r.code, 0, r.err);
    r = await k(['rollout', 'status', 'deployment/web', '--watch=false']);
    assert.equal(r.code, 0, r.err);
    assert.equal(
      r.out,
      'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated...\n',
    );
    r = await k(['rollout', 'status', 'deployment/web', '--timeout=1s']);
    assert.equal(r.code, 1);
    assert.equal(
      r.out,
      'Waiting for deployment "web" rollout to finish: 0 out of 2 new replicas have been updated...\n',
    );
    assert.equal(r.err, 'error: timed out waiting for the condition\n');

    r = await k(['rollout', 'resume', 'deployment/web']);
    assert.equal(r.out, 'deployment.apps/web resumed\n', r.err);
    r = await k(['rollout', 'resume', 'deployment/web']);
    assert.equal(r.code, 1);
    assert.equal(r.err, 'error: deployments.apps "web" is not paused\n');
    await rolledOut('web');
    assert.equal(await jsonpath('deploy/web', '{.spec.template.spec.containers[0].image}'), 'nginx:3.0');

    const before = await jsonpath(
      'deploy/web',
      '{.metadata.annotations.deployment\\.kubernetes\\.io/revision}',
    );
    r = await k(['rollout', 'restart', 'deployment/web']);
    assert.equal(r.out, 'deployment.apps/web restarted\n', r.err);
    const at = await jsonpath(
      'deploy/web',
      '{.spec.template.metadata.annotations.kubectl\\.kubernetes\\.io/restartedAt}',
    );
    assert.match(at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
    await rolledOut('web');
    const afterRev = await jsonpath(
      'deploy/web',
      '{.metadata.annotations.deployment\\.kubernetes\\.io/revision}',
    );
    assert.equal(Number(afterRev), Number(before) + 1, 'a restart is a new revision');
  });
});

describe('live progress of apply --wait and wait', () => {
  it('on a terminal, redraws each pod in place while they wait', async () => {
    // Pods no node can take stay Pending for the whole wait, so the pod lines are there
    // however fast the machine is; the wait ends at its timeout.
    const file = join(tmp.path, 'stuck.yaml');
    const stuck = deployment('stuck', 'nginx:1.0', 2).replace(
      '    spec:\n',
      '    spec:\n      nodeSelector: {kubit-test: nowhere}\n',
    );
    await writeFile(file, stuck);
    const r = await kubitInTerminal(['apply', '-f', file, '--wait', '--timeout=6s'], cluster.env);
    assert.notEqual(r.code, 0, 'the wait times out');
    // The terminal turns \n into \r\n.
    const text = r.out.replaceAll('\r\n', '\n');
    assert.match(text, /deployment\.apps\/stuck created\n/);
    assert.match(text, /\u001b\[2Kwaiting for deployment\.apps\/stuck: /, 'the live block');
    assert.match(text, /\u001b\[\d+A/, 'cursor moved up to redraw');
    assert.match(text, /\u001b\[2K {2}pod\/stuck-[a-z0-9]+-[a-z0-9]+: Pending/, 'a line per pod');
  });

  it('on a terminal, ends the block with the result once the deployment is ready', async () => {
    const file = join(tmp.path, 'live.yaml');
    await writeFile(file, deployment('live', 'nginx:1.0', 3));
    const r = await kubitInTerminal(['apply', '-f', file, '--wait', '--timeout=90s'], cluster.env);
    assert.equal(r.code, 0, `${JSON.stringify(r.out)}\n${r.err}\n${cluster.logs()}`);
    const text = r.out.replaceAll('\r\n', '\n');
    assert.match(text, /deployment\.apps\/live created\n/);
    assert.match(text, /\u001b\[2Kwaiting for deployment\.apps\/live: /, 'the live block');
    assert.match(text, /deployment\.apps\/live ready\n/);
    assert.ok(
      text.lastIndexOf('deployment.apps/live ready') > text.lastIndexOf('\u001b[2K'),
      'the result comes after the block',
    );
  });

  it('without a terminal, prints each change once as a plain line', async () => {
    const r = await k(['apply', '-f', '-', '--wait', '--timeout=90s'], {
      stdin: deployment('plain', 'nginx:1.0', 2),
    });
    assert.equal(r.code, 0, `${r.err}\n${cluster.logs()}`);
    assert.equal(r.out, 'deployment.apps/plain created\ndeployment.apps/plain ready\n');
    assert.doesNotMatch(r.err, /\u001b/, 'no escape sequences');
    const lines = r.err.trimEnd().split('\n');
    assert.match(lines[0], /^waiting for deployment\.apps\/plain: /);
    for (const l of lines)
      assert.match(l, /^(waiting for deployment\.apps\/plain| {2}pod\/plain-[a-z0-9-]+): .+$/);

    const w = await k(['wait', '--for=condition=Available', 'deployment/plain', '--timeout=30s']);
    assert.equal(w.code, 0, w.err);
    assert.equal(w.out, 'deployment.apps/plain condition met\n');
  });
});
