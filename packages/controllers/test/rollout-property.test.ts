// Property: for any replicas, maxSurge and maxUnavailable, and any order in which
// new pods become ready, a rolling update never exceeds replicas + maxSurge,
// never drops below replicas - maxUnavailable available pods, and ends with
// exactly `replicas` pods of the new template. Checked twice: with each
// controller's work run to completion between pod changes, and with the two
// controllers' work interleaved one key at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resources as res } from '@kubit/client';
import fc from 'fast-check';
import { processOne } from '../src/controller.js';
import { DeploymentController } from '../src/deployment/controller.js';
import { resolveFenceposts } from '../src/deployment/util.js';
import { ReplicaSetController } from '../src/replicaset.js';
import { FakeCluster } from '../src/testing.js';
import type { Deployment, Pod, ReplicaSet } from '../src/types.js';
import { newFactory, runAllPods, runPod, settle, startInformers, template, tick } from './helpers.js';

const intOrPercent = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom('0%', '10%', '25%', '50%', '100%'),
);
const fenceposts = [fc.integer({ min: 1, max: 6 }), intOrPercent, intOrPercent] as const;
// The failing assertion in the report, not only as the error's cause (which the test runner omits).
const reportErrors = { includeErrorInReport: true };

/** A Deployment of nginx:1 pods rolled out and ready, its controllers, and what the checks need. */
async function rolledOutDeployment(
  replicas: number,
  maxSurge: number | string,
  maxUnavailable: number | string,
) {
  const cluster = new FakeCluster();
  const informers = newFactory(cluster);
  const rsc = new ReplicaSetController(cluster, informers);
  const dc = new DeploymentController(cluster, informers);
  await startInformers(informers);
  const d: Deployment = {
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: template({ app: 'web' }),
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge, maxUnavailable } },
    },
  };
  const fence = resolveFenceposts(d);
  const minAvailable = replicas - Math.min(fence.maxUnavailable, replicas);
  const live = () => cluster.all<Pod>(res.pods).filter((p) => !p.metadata?.deletionTimestamp);
  const ready = () => live().filter((p) => p.status?.phase === 'Running').length;
  const waiting = () => live().filter((p) => p.status?.phase !== 'Running');
  const run = () => settle([dc, rsc]);
  let image = 'nginx:1';
  const updatedAndReady = () =>
    live().length === replicas &&
    live().every((p) => p.spec!.containers[0].image === image && p.status?.phase === 'Running');
  /** Settles and readies pods until the rollout is complete (whatever happened before). */
  const finish = async (done: () => boolean) => {
    for (let i = 0; i < 40 && !done(); i++) {
      await run();
      await runAllPods(cluster);
    }
    await run();
  };
  /** Starts a rolling update to another image (nginx:2 unless told). */
  const update = async (to = 'nginx:2') => {
    image = to;
    const cur = await cluster.get<Deployment>(res.deployments, 'default', 'web');
    cur.spec!.template.spec!.containers[0].image = to;
    await cluster.update(res.deployments, cur);
  };
  await cluster.create(res.deployments, 'default', d);
  await finish(() => ready() === replicas);
  assert.equal(ready(), replicas);
  return {
    cluster,
    informers,
    rsc,
    dc,
    fence,
    minAvailable,
    live,
    ready,
    waiting,
    run,
    update,
    finish,
    updatedAndReady,
  };
}

test('rolling updates respect maxSurge and maxUnavailable', async () => {
  await fc.assert(
    fc.asyncProperty(
      ...fenceposts,
      fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 40, maxLength: 40 }),
      async (replicas, maxSurge, maxUnavailable, readyOrder) => {
        const r = await rolledOutDeployment(replicas, maxSurge, maxUnavailable);
        try {
          await r.update();
          // With each controller's work done, the pods themselves stay within both bounds.
          const check = () => {
            const total = r.live().length;
            assert.ok(
              total <= replicas + r.fence.maxSurge,
              `${total} pods > ${replicas} + surge ${r.fence.maxSurge}`,
            );
            assert.ok(r.ready() >= r.minAvailable, `${r.ready()} available < ${r.minAvailable}`);
          };
          // The kubelet makes one not-yet-ready pod ready at a time, in an arbitrary order.
          for (const pick of readyOrder) {
            await r.run();
            check();
            const waiting = r.waiting();
            if (waiting.length === 0) {
              if (r.updatedAndReady()) break;
              continue;
            }
            await runPod(r.cluster, waiting[pick % waiting.length]);
          }
          await r.run();
          assert.ok(r.updatedAndReady(), `not rolled out: ${r.live().length} live pods`);
          const st = (await r.cluster.get<Deployment>(res.deployments, 'default', 'web')).status!;
          assert.equal(st.updatedReplicas, replicas);
          assert.equal(st.availableReplicas, replicas);
        } finally {
          r.informers.stop();
        }
      },
    ),
    { numRuns: 40, ...reportErrors },
  );
});

// One key of one controller at a time, watch events held back for a while,
// pods made ready and new rollouts started (or rolled back) in between. Caches
// then lag: a ReplicaSet's status its spec, a controller's informer its own
// writes. That is what a real controller manager sees on a busy machine.
test('rolling updates respect maxSurge and maxUnavailable however the controllers interleave', async () => {
  const step = fc.record({
    act: fc.oneof(
      { arbitrary: fc.constantFrom('deployment', 'replicaset', 'deliver', 'ready'), weight: 30 },
      // Watch events held back from here until the next 'deliver': caches go stale.
      { arbitrary: fc.constant('lag'), weight: 3 },
      // Now and then a new rollout starts before the last one finished, or goes back.
      { arbitrary: fc.constant('retemplate'), weight: 1 },
    ),
    pick: fc.nat(),
  });
  await fc.assert(
    fc.asyncProperty(
      ...fenceposts,
      fc.array(step, { minLength: 50, maxLength: 300 }),
      async (replicas, maxSurge, maxUnavailable, steps) => {
        const r = await rolledOutDeployment(replicas, maxSurge, maxUnavailable);
        const runOneKey = async (c: DeploymentController | ReplicaSetController) => {
          if (c.queue.len() === 0) return;
          const k = await c.queue.get();
          if (k !== undefined) await processOne(c, k);
        };
        try {
          await r.update();
          for (const { act, pick } of steps) {
            if (act === 'deployment') await runOneKey(r.dc);
            else if (act === 'replicaset') await runOneKey(r.rsc);
            else if (act === 'lag') r.cluster.holdWatches();
            else if (act === 'deliver') {
              r.cluster.releaseWatches();
              await tick();
            } else if (act === 'retemplate') await r.update(`nginx:${1 + (pick % 3)}`);
            else {
              const w = r.waiting();
              if (w.length > 0) await runPod(r.cluster, w[pick % w.length]);
            }
            // The surge ceiling holds on what the ReplicaSets ask for, as in
            // Kubernetes: an old ReplicaSet's pods may outlive its scale-down
            // by a moment, until its controller gets to them.
            const asked = r.cluster
              .all<ReplicaSet>(res.replicasets)
              .reduce((n, rs) => n + (rs.spec?.replicas ?? 0), 0);
            const ceiling = replicas + r.fence.maxSurge;
            assert.ok(asked <= ceiling, `${asked} replicas asked for > ${ceiling} after ${act}`);
            assert.ok(r.ready() >= r.minAvailable, `${r.ready()} available < ${r.minAvailable} after ${act}`);
          }
          // Whatever the order so far, the rollout completes.
          r.cluster.releaseWatches();
          await r.finish(r.updatedAndReady);
          assert.ok(r.updatedAndReady(), `not rolled out: ${r.live().length} live pods`);
        } finally {
          r.informers.stop();
        }
      },
    ),
    { numRuns: 100, ...reportErrors },
  );
});
