// Property: for any replicas, maxSurge and maxUnavailable, and any order in which
// new pods become ready, a rolling update never exceeds replicas + maxSurge
// pods, never drops below replicas - maxUnavailable available pods, and ends
// with exactly `replicas` pods of the new template.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resources as res } from '@kubit/client';
import fc from 'fast-check';
import { DeploymentController } from '../src/deployment/controller.js';
import { resolveFenceposts } from '../src/deployment/util.js';
import { FakeCluster } from '../src/fake-cluster.js';
import { ReplicaSetController } from '../src/replicaset.js';
import type { Deployment, Pod } from '../src/types.js';
import { newFactory, runPod, settle, startInformers, template } from './helpers.js';

const intOrPercent = fc.oneof(
  fc.integer({ min: 0, max: 3 }),
  fc.constantFrom('0%', '10%', '25%', '50%', '100%'),
);

test('rolling updates respect maxSurge and maxUnavailable', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 6 }),
      intOrPercent,
      intOrPercent,
      fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 40, maxLength: 40 }),
      async (replicas, maxSurge, maxUnavailable, readyOrder) => {
        const cluster = new FakeCluster();
        const informers = newFactory(cluster);
        const rsc = new ReplicaSetController(cluster, informers);
        const dc = new DeploymentController(cluster, informers);
        await startInformers(informers);
        const run = () => settle([dc, rsc]);
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
        const live = () => cluster.all<Pod>(res.pods).filter((p) => !p.metadata?.deletionTimestamp);
        const ready = () => live().filter((p) => p.status?.phase === 'Running').length;
        try {
          await cluster.create(res.deployments, 'default', d);
          for (let i = 0; i < 20 && ready() < replicas; i++) {
            await run();
            for (const p of live()) if (p.status?.phase !== 'Running') await runPod(cluster, p);
            await run();
          }
          assert.equal(ready(), replicas);
          const cur = await cluster.get<Deployment>(res.deployments, 'default', 'web');
          cur.spec!.template.spec!.containers[0].image = 'nginx:2';
          await cluster.update(res.deployments, cur);
          const check = () => {
            const total = live().length;
            assert.ok(
              total <= replicas + fence.maxSurge,
              `${total} pods > ${replicas} + surge ${fence.maxSurge}`,
            );
            const minAvailable = replicas - Math.min(fence.maxUnavailable, replicas);
            assert.ok(ready() >= minAvailable, `${ready()} available < ${minAvailable}`);
          };
          // The kubelet makes one not-yet-ready pod ready at a time, in an arbitrary order.
          for (const pick of readyOrder) {
            await run();
            check();
            const waiting = live().filter((p) => p.status?.phase !== 'Running');
            if (waiting.length === 0) {
              const done = live().every((p) => p.spec!.containers[0].image === 'nginx:2');
              if (done && live().length === replicas) break;
              continue;
            }
            await runPod(cluster, waiting[pick % waiting.length]);
          }
          await run();
          const final = live();
          assert.equal(final.length, replicas);
          assert.ok(final.every((p) => p.spec!.containers[0].image === 'nginx:2'));
          const st = (await cluster.get<Deployment>(res.deployments, 'default', 'web')).status!;
          assert.equal(st.updatedReplicas, replicas);
          assert.equal(st.availableReplicas, replicas);
        } finally {
          informers.stop();
        }
      },
    ),
    { numRuns: 40 },
  );
});
