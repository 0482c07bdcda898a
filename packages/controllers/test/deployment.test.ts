import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { resources as res } from '@kubit/client';
import { DeploymentController, proportionalSizes } from '../src/deployment/controller.js';
import {
  podTemplateHash,
  RESTARTED_AT_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  resolveFenceposts,
  rollbackTemplate,
} from '../src/deployment/util.js';
import { RecordingEvents } from '../src/events.js';
import { ReplicaSetController } from '../src/replicaset.js';
import { FakeCluster } from '../src/testing.js';
import type { Deployment, Pod, ReplicaSet } from '../src/types.js';
import { newFactory, runAllPods, runPod, settle, startInformers, template } from './helpers.js';

async function setup() {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const now = () => clock.now;
  const cluster = new FakeCluster({ now });
  const informers = newFactory(cluster);
  const rsc = new ReplicaSetController(cluster, informers, { now });
  const events = new RecordingEvents();
  const dc = new DeploymentController(cluster, informers, { now, events });
  await startInformers(informers);
  const run = () => settle([dc, rsc]);
  /** Settle, then let the kubelet make every pod ready, until nothing changes. */
  const rollout = async (check?: () => void) => {
    for (let i = 0; i < 30; i++) {
      await run();
      check?.();
      const before = cluster.writes.length;
      await runAllPods(cluster, clock.now);
      await run();
      check?.();
      if (cluster.writes.length === before) return;
    }
    throw new Error('rollout did not settle');
  };
  return { clock, cluster, informers, rsc, dc, run, rollout, events };
}

function deployment(
  name: string,
  replicas: number,
  extra: Partial<NonNullable<Deployment['spec']>> = {},
): Deployment {
  return {
    metadata: { name, namespace: 'default' },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: template({ app: name }), ...extra },
  };
}

const getD = (c: FakeCluster, name: string) => c.get<Deployment>(res.deployments, 'default', name);
const rsList = (c: FakeCluster) => c.all<ReplicaSet>(res.replicasets);
const livePods = (c: FakeCluster) => c.all<Pod>(res.pods).filter((p) => !p.metadata?.deletionTimestamp);

async function setImage(c: FakeCluster, name: string, image: string) {
  const d = await getD(c, name);
  d.spec!.template.spec!.containers[0].image = image;
  await c.update(res.deployments, d);
}

describe('deployment utilities', () => {
  test('maxSurge rounds up, maxUnavailable rounds down, never both 0', () => {
    const d = (replicas: number, maxSurge: number | string, maxUnavailable: number | string): Deployment => ({
      spec: {
        replicas,
        selector: {},
        template: {},
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge, maxUnavailable } },
      },
    });
    assert.deepEqual(resolveFenceposts(d(10, '25%', '25%')), { maxSurge: 3, maxUnavailable: 2 });
    assert.deepEqual(resolveFenceposts(d(3, '30%', '30%')), { maxSurge: 1, maxUnavailable: 0 });
    assert.deepEqual(resolveFenceposts(d(1, '0%', '0%')), { maxSurge: 0, maxUnavailable: 1 });
    assert.deepEqual(resolveFenceposts(d(5, 0, 0)), { maxSurge: 0, maxUnavailable: 1 });
    assert.deepEqual(resolveFenceposts(d(5, 2, '50%')), { maxSurge: 2, maxUnavailable: 2 });
    assert.deepEqual(resolveFenceposts({ spec: { replicas: 4, selector: {}, template: {} } }), {
      maxSurge: 1,
      maxUnavailable: 1,
    });
    assert.throws(() => resolveFenceposts(d(5, 'lots', 0)), /not a percentage/);
  });

  test('the pod-template-hash is stable, label-safe and ignores key order and the hash label', () => {
    const a = podTemplateHash({
      metadata: { labels: { a: '1', b: '2' } },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    const b = podTemplateHash({
      spec: { containers: [{ image: 'x', name: 'c' }] },
      metadata: { labels: { b: '2', a: '1', 'pod-template-hash': a } },
    });
    assert.equal(a, b);
    assert.match(a, /^[bcdfghjklmnpqrstvwxz2456789]+$/);
    assert.notEqual(
      a,
      podTemplateHash({
        metadata: { labels: { a: '1' } },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      }),
    );
    assert.notEqual(
      a,
      podTemplateHash(
        { metadata: { labels: { a: '1', b: '2' } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
        1,
      ),
    );
  });

  test('proportional scaling splits a new total by size', () => {
    const rs = (name: string, n: number): ReplicaSet => ({
      metadata: { name, creationTimestamp: `2026-01-0${n}T00:00:00Z` },
      spec: { replicas: n, selector: {}, template: {} },
    });
    const sizes = proportionalSizes([rs('a', 2), rs('b', 6)], 16).map(([r, n]) => [r.metadata!.name, n]);
    assert.deepEqual(sizes, [
      ['b', 12],
      ['a', 4],
    ]);
  });
});

describe('Deployment controller', () => {
  test("copies the Deployment's annotations (change-cause) to its new ReplicaSet, not its own bookkeeping", async () => {
    const { cluster, rollout } = await setup();
    const d = deployment('notes', 1);
    d.metadata!.annotations = {
      'kubernetes.io/change-cause': 'first',
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
    };
    await cluster.create(res.deployments, 'default', d);
    await rollout();
    const first = rsList(cluster)[0];
    assert.equal(first.metadata!.annotations!['kubernetes.io/change-cause'], 'first');
    assert.equal(first.metadata!.annotations!['kubectl.kubernetes.io/last-applied-configuration'], undefined);

    const next = await getD(cluster, 'notes');
    next.metadata!.annotations = { ...next.metadata!.annotations, 'kubernetes.io/change-cause': 'second' };
    next.spec!.template.spec!.containers[0].image = 'busybox:2';
    await cluster.update(res.deployments, next);
    await rollout();
    const byRevision = new Map(
      rsList(cluster).map((rs) => [
        rs.metadata!.annotations![REVISION_ANNOTATION],
        rs.metadata!.annotations!['kubernetes.io/change-cause'],
      ]),
    );
    // The old ReplicaSet keeps the cause of its own revision.
    assert.deepEqual(Object.fromEntries(byRevision), { '1': 'first', '2': 'second' });
  });

  test('creates a ReplicaSet named by the pod-template-hash, with revision 1, and reports status', async () => {
    const { cluster, informers, rollout } = await setup();
    const d = await cluster.create(res.deployments, 'default', deployment('web', 3));
    await rollout();
    const rss = rsList(cluster);
    assert.equal(rss.length, 1);
    const rs = rss[0];
    const hash = rs.metadata!.labels!['pod-template-hash'];
    assert.equal(hash, podTemplateHash(d.spec!.template));
    assert.equal(rs.metadata!.name, `web-${hash}`);
    assert.deepEqual(rs.spec!.selector.matchLabels, { app: 'web', 'pod-template-hash': hash });
    assert.equal(rs.spec!.template!.metadata!.labels!['pod-template-hash'], hash);
    assert.equal(rs.metadata!.annotations![REVISION_ANNOTATION], '1');
    assert.equal(rs.metadata!.ownerReferences![0].uid, d.metadata!.uid);
    assert.equal(rs.metadata!.ownerReferences![0].blockOwnerDeletion, true);
    const got = await getD(cluster, 'web');
    assert.equal(got.metadata!.annotations![REVISION_ANNOTATION], '1');
    const st = got.status!;
    assert.deepEqual(
      [
        st.replicas,
        st.updatedReplicas,
        st.readyReplicas,
        st.availableReplicas,
        st.unavailableReplicas,
        st.observedGeneration,
      ],
      [3, 3, 3, 3, 0, 1],
    );
    const avail = st.conditions!.find((c) => c.type === 'Available')!;
    assert.equal(avail.status, 'True');
    assert.equal(avail.reason, 'MinimumReplicasAvailable');
    const prog = st.conditions!.find((c) => c.type === 'Progressing')!;
    assert.equal(prog.reason, 'NewReplicaSetAvailable');
    assert.equal(prog.message, `ReplicaSet "web-${hash}" has successfully progressed.`);
    informers.stop();
  });

  test('a rolling update stays within maxSurge and maxUnavailable', async () => {
    const { cluster, informers, rollout, events } = await setup();
    await cluster.create(
      res.deployments,
      'default',
      deployment('web', 4, {
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      }),
    );
    await rollout();
    await setImage(cluster, 'web', 'nginx:2');
    let maxPods = 0;
    await rollout(() => {
      const ps = livePods(cluster);
      maxPods = Math.max(maxPods, ps.length);
      const ready = ps.filter((p) => p.status?.phase === 'Running').length;
      assert.ok(ready >= 4, `only ${ready} ready pods during the rollout`);
      const total = rsList(cluster).reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
      assert.ok(total <= 5, `RS replicas sum to ${total} > replicas + maxSurge`);
    });
    assert.equal(maxPods, 5);
    const scaling = events.events.filter((e) => e.reason === 'ScalingReplicaSet').map((e) => e.message);
    assert.match(scaling[0], /^Scaled up replica set web-[a-z0-9]+ from 0 to 4$/);
    assert.ok(
      scaling.some((m) => /^Scaled down replica set web-[a-z0-9]+ from 4 to 3$/.test(m)),
      scaling.join('; '),
    );
    const ps = livePods(cluster);
    assert.equal(ps.length, 4);
    assert.ok(ps.every((p) => p.spec!.containers[0].image === 'nginx:2'));
    const rss = rsList(cluster).sort(
      (a, b) =>
        Number(a.metadata!.annotations![REVISION_ANNOTATION]) -
        Number(b.metadata!.annotations![REVISION_ANNOTATION]),
    );
    assert.deepEqual(
      rss.map((rs) => [rs.metadata!.annotations![REVISION_ANNOTATION], rs.spec!.replicas]),
      [
        ['1', 0],
        ['2', 4],
      ],
    );
    const got = await getD(cluster, 'web');
    assert.equal(got.metadata!.annotations![REVISION_ANNOTATION], '2');
    assert.equal(got.status!.updatedReplicas, 4);
    assert.equal(got.status!.observedGeneration, 2);
    informers.stop();
  });

  test('maxUnavailable lets it replace pods without surging', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(
      res.deployments,
      'default',
      deployment('web', 4, {
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 2 } },
      }),
    );
    await rollout();
    await setImage(cluster, 'web', 'nginx:2');
    await rollout(() => {
      const total = rsList(cluster).reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
      assert.ok(total <= 4, `RS replicas sum to ${total} > 4 with maxSurge 0`);
    });
    assert.ok(livePods(cluster).every((p) => p.spec!.containers[0].image === 'nginx:2'));
    assert.equal(livePods(cluster).length, 4);
    informers.stop();
  });

  test('an old ReplicaSet whose status still counts the pods it is deleting is not scaled below the floor', async () => {
    // Only the Deployment controller runs, so the ReplicaSets' statuses are
    // exactly what this test writes: a ReplicaSet just scaled from 4 to 3
    // whose status still says 4 available, as its controller writes it.
    const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
    const now = () => clock.now;
    const cluster = new FakeCluster({ now });
    const informers = newFactory(cluster);
    const dc = new DeploymentController(cluster, informers, { now, events: new RecordingEvents() });
    await startInformers(informers);
    const setAvailable = async (rs: ReplicaSet, available: number) => {
      const status = { replicas: available, readyReplicas: available, availableReplicas: available };
      await cluster.update(res.replicasets, { ...structuredClone(rs), status }, 'status');
      await settle([dc]);
    };
    await cluster.create(
      res.deployments,
      'default',
      deployment('web', 4, {
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 1 } },
      }),
    );
    await settle([dc]);
    const [first] = rsList(cluster);
    await setAvailable(first, 4);
    await setImage(cluster, 'web', 'nginx:2');
    await settle([dc]);
    const byRevision = (rev: string) =>
      rsList(cluster).find((rs) => rs.metadata?.annotations?.[REVISION_ANNOTATION] === rev)!;
    // Surged one new pod, took one old one away, surged again; nothing is available yet.
    assert.deepEqual([byRevision('1').spec?.replicas, byRevision('2').spec?.replicas], [3, 2]);
    assert.equal(byRevision('1').status?.availableReplicas, 4);
    // One new pod becomes available: 3 old + 1 new really are. One old may go, not two.
    await setAvailable(byRevision('2'), 1);
    assert.equal(byRevision('1').spec?.replicas, 2);
    informers.stop();
  });

  test('Recreate removes every old pod before creating new ones', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(
      res.deployments,
      'default',
      deployment('web', 3, { strategy: { type: 'Recreate' } }),
    );
    await rollout();
    await setImage(cluster, 'web', 'nginx:2');
    await rollout(() => {
      const images = new Set(livePods(cluster).map((p) => p.spec!.containers[0].image));
      assert.ok(images.size <= 1, `old and new pods at once: ${[...images]}`);
    });
    const ps = livePods(cluster);
    assert.equal(ps.length, 3);
    assert.ok(ps.every((p) => p.spec!.containers[0].image === 'nginx:2'));
    informers.stop();
  });

  test('rollback reuses the old ReplicaSet and gives it the next revision', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    await rollout();
    const first = rsList(cluster)[0];
    await setImage(cluster, 'web', 'nginx:2');
    await rollout();
    const d = await getD(cluster, 'web');
    d.spec!.template = rollbackTemplate(d, rsList(cluster));
    await cluster.update(res.deployments, d);
    await rollout();
    const rss = rsList(cluster);
    assert.equal(rss.length, 2);
    const back = rss.find((rs) => rs.metadata!.uid === first.metadata!.uid)!;
    assert.equal(back.spec!.replicas, 2);
    assert.equal(back.metadata!.annotations![REVISION_ANNOTATION], '3');
    assert.equal(back.metadata!.annotations![REVISION_HISTORY_ANNOTATION], '1');
    assert.equal((await getD(cluster, 'web')).metadata!.annotations![REVISION_ANNOTATION], '3');
    assert.ok(livePods(cluster).every((p) => p.spec!.containers[0].image === 'nginx:1'));
    assert.throws(() => rollbackTemplate(d, rsList(cluster), 9), /unable to find specified revision 9/);
    informers.stop();
  });

  test('revisionHistoryLimit deletes the oldest idle ReplicaSets', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 1, { revisionHistoryLimit: 1 }));
    await rollout();
    for (const image of ['nginx:2', 'nginx:3', 'nginx:4']) {
      await setImage(cluster, 'web', image);
      await rollout();
    }
    const revs = rsList(cluster)
      .map((rs) => rs.metadata!.annotations![REVISION_ANNOTATION])
      .sort();
    assert.deepEqual(revs, ['3', '4']);
    informers.stop();
  });

  test('a paused Deployment scales but does not roll out until resumed', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    await rollout();
    let d = await getD(cluster, 'web');
    d.spec!.paused = true;
    d.spec!.template.spec!.containers[0].image = 'nginx:2';
    d.spec!.replicas = 3;
    await cluster.update(res.deployments, d);
    await rollout();
    assert.equal(rsList(cluster).length, 1);
    assert.equal(livePods(cluster).length, 3);
    d = await getD(cluster, 'web');
    const paused = d.status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.deepEqual(
      [paused.status, paused.reason, paused.message],
      ['Unknown', 'DeploymentPaused', 'Deployment is paused'],
    );
    d.spec!.paused = false;
    await cluster.update(res.deployments, d);
    await rollout();
    assert.equal(rsList(cluster).length, 2);
    assert.ok(livePods(cluster).every((p) => p.spec!.containers[0].image === 'nginx:2'));
    assert.equal(livePods(cluster).length, 3);
    informers.stop();
  });

  test('no progress within progressDeadlineSeconds sets ProgressDeadlineExceeded', async () => {
    const { clock, cluster, informers, run, dc } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 2, { progressDeadlineSeconds: 10 }));
    await run(); // pods never become ready
    let prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.equal(prog.status, 'True');
    assert.ok(['NewReplicaSetCreated', 'ReplicaSetUpdated'].includes(prog.reason!));
    clock.now += 11_000;
    await dc.reconcile('default/web');
    await run();
    const d = await getD(cluster, 'web');
    prog = d.status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.equal(prog.status, 'False');
    assert.equal(prog.reason, 'ProgressDeadlineExceeded');
    assert.match(prog.message!, /^ReplicaSet "web-[a-z0-9]+" has timed out progressing\.$/);
    assert.equal(d.status!.conditions!.find((c) => c.type === 'Available')!.status, 'False');
    assert.equal(d.status!.unavailableReplicas, 2);
    informers.stop();
  });

  test('a restartedAt annotation on the template rolls out new pods', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    await rollout();
    const before = new Set(livePods(cluster).map((p) => p.metadata!.uid));
    const d = await getD(cluster, 'web');
    d.spec!.template.metadata!.annotations = { [RESTARTED_AT_ANNOTATION]: '2026-01-01T00:00:00Z' };
    await cluster.update(res.deployments, d);
    await rollout();
    const after = livePods(cluster);
    assert.equal(after.length, 2);
    assert.ok(after.every((p) => !before.has(p.metadata!.uid)));
    assert.equal(rsList(cluster).length, 2);
    informers.stop();
  });

  test('an existing ReplicaSet with the template is adopted as the new one (FoundNewReplicaSet)', async () => {
    const { cluster, informers, dc } = await setup();
    const tmpl = template({ app: 'web' });
    const hash = podTemplateHash(tmpl);
    const labels = { app: 'web', 'pod-template-hash': hash };
    await cluster.create(res.replicasets, 'default', {
      metadata: { name: `web-${hash}`, namespace: 'default', labels },
      spec: {
        replicas: 0,
        selector: { matchLabels: labels },
        template: { ...tmpl, metadata: { labels } },
      },
    });
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    // Only the Deployment controller: no pods appear, so nothing progresses past the find.
    await settle([dc]);
    const rss = rsList(cluster);
    assert.equal(rss.length, 1, 'no second ReplicaSet is created');
    assert.equal(rss[0].metadata!.ownerReferences![0].kind, 'Deployment');
    assert.equal(rss[0].metadata!.annotations![REVISION_ANNOTATION], '1');
    assert.equal(rss[0].spec!.replicas, 2);
    const prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.deepEqual(
      [prog.status, prog.reason, prog.message],
      ['True', 'FoundNewReplicaSet', `Found new replica set "web-${hash}"`],
    );
    informers.stop();
  });

  test('a rollout that makes progress says ReplicaSetUpdated, then NewReplicaSetAvailable', async () => {
    const { cluster, informers, run, rsc, dc } = await setup();
    // The apiserver defaults progressDeadlineSeconds to 600; without it no Progressing condition is kept.
    await cluster.create(res.deployments, 'default', deployment('web', 2, { progressDeadlineSeconds: 600 }));
    await settle([dc]);
    let prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.equal(prog.reason, 'NewReplicaSetCreated');
    await run(); // the ReplicaSet's pods appear: that is progress too
    prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.equal(prog.reason, 'ReplicaSetUpdated');
    // One pod becomes ready: progress, but not complete.
    const [first] = livePods(cluster);
    await runPod(cluster, first);
    await settle([dc, rsc]);
    prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.deepEqual([prog.status, prog.reason], ['True', 'ReplicaSetUpdated']);
    assert.match(prog.message!, /^ReplicaSet "web-[a-z0-9]+" is progressing\.$/);
    // maxUnavailable 25 % of 2 rounds down to 0: one ready pod is not enough.
    let avail = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Available')!;
    assert.deepEqual([avail.status, avail.reason], ['False', 'MinimumReplicasUnavailable']);
    await runAllPods(cluster);
    await run();
    prog = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Progressing')!;
    assert.deepEqual([prog.status, prog.reason], ['True', 'NewReplicaSetAvailable']);
    avail = (await getD(cluster, 'web')).status!.conditions!.find((c) => c.type === 'Available')!;
    assert.deepEqual([avail.status, avail.reason], ['True', 'MinimumReplicasAvailable']);
    informers.stop();
  });

  test('a Deployment created paused gets no ReplicaSet until it is resumed', async () => {
    const { cluster, informers, dc } = await setup();
    await cluster.create(
      res.deployments,
      'default',
      deployment('web', 1, { paused: true, progressDeadlineSeconds: 600 }),
    );
    await settle([dc]);
    let got = await getD(cluster, 'web');
    assert.equal(got.status!.conditions!.find((c) => c.type === 'Progressing')!.reason, 'DeploymentPaused');
    assert.equal(rsList(cluster).length, 0);
    got.spec!.paused = false;
    await cluster.update(res.deployments, got);
    await settle([dc]);
    got = await getD(cluster, 'web');
    assert.equal(rsList(cluster).length, 1);
    assert.equal(
      got.status!.conditions!.find((c) => c.type === 'Progressing')!.reason,
      'NewReplicaSetCreated',
    );
    informers.stop();
  });

  test('scaling a settled Deployment resizes its ReplicaSet', async () => {
    const { cluster, informers, rollout } = await setup();
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    await rollout();
    const d = await getD(cluster, 'web');
    d.spec!.replicas = 5;
    await cluster.update(res.deployments, d);
    await rollout();
    assert.equal(rsList(cluster).length, 1);
    assert.equal(rsList(cluster)[0].spec!.replicas, 5);
    assert.equal(livePods(cluster).length, 5);
    assert.equal((await getD(cluster, 'web')).status!.availableReplicas, 5);
    informers.stop();
  });
});

describe('Deployment failures', () => {
  test('a ReplicaSet that cannot create pods shows as ReplicaFailure on the Deployment', async () => {
    const { cluster, informers, run, rsc, dc } = await setup();
    const { forbiddenWithMessage } = await import('@kubit/api');
    const quota = () => forbiddenWithMessage({ group: '', resource: 'pods' }, 'web-x', 'exceeded quota');
    for (let i = 0; i < 50; i++) cluster.failNext.push({ verb: 'create', resource: 'pods', error: quota() });
    await cluster.create(res.deployments, 'default', deployment('web', 2));
    await run();
    let d = await getD(cluster, 'web');
    const failure = d.status!.conditions!.find((c) => c.type === 'ReplicaFailure');
    assert.equal(failure?.status, 'True');
    assert.equal(failure?.reason, 'FailedCreate');
    assert.match(failure!.message!, /exceeded quota/);
    cluster.failNext.length = 0;
    const rs = rsList(cluster)[0];
    await rsc.reconcile(`default/${rs.metadata!.name}`);
    await run();
    await dc.reconcile('default/web');
    d = await getD(cluster, 'web');
    assert.equal(
      d.status!.conditions!.find((c) => c.type === 'ReplicaFailure'),
      undefined,
    );
    informers.stop();
  });
});
