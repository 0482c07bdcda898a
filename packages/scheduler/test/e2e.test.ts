// kubit-scheduler as a real process against a real kubit-apiserver (and etcd):
// pods created through the API get bound through pods/binding, the 4th
// anti-affine replica gets the Unschedulable condition and event, taints keep
// pods off a node unless tolerated, pod affinity co-locates, requests beyond
// every node are reported per reason, and with two
// leader-elected replicas a pod is never bound twice across a failover.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { KubeClient, resources } from '@kubit/client';
import {
  type ControlPlane,
  freePort,
  startControlPlane,
  startDaemon,
  type TestProcess,
  waitFor,
} from '@kubit/testkit';
import type { Node, Pod } from '../src/types.js';
import { antiAffinityByHostname, node, pod } from './fixtures.js';

type Obj = { metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string } };

async function createNode(client: KubeClient, n: Node): Promise<void> {
  const created = await client.create<Node & Obj>(resources.nodes, n as Node & Obj);
  // Status may be dropped on create (as for most kinds): set it through the status subresource too.
  await client.updateStatus(resources.nodes, { ...created, status: n.status } as Node & Obj);
}

/** Runs kubit-scheduler as system:kube-scheduler, so the test also proves its RBAC role suffices. */
function startScheduler(
  cp: ControlPlane,
  kubeconfig: string,
  port: number,
  extra: string[],
  name: string,
): TestProcess {
  return startDaemon({
    name,
    pkg: 'scheduler',
    args: [`--kubeconfig=${kubeconfig}`, `--secure-port=${port}`, '--bind-address=127.0.0.1', ...extra],
    logDir: cp.logDir,
  });
}

/** On failure, the last lines of each scheduler's log say what it was doing. */
function dumpLogs(cp: ControlPlane, names: string[]): void {
  for (const n of names) {
    try {
      const lines = readFileSync(`${cp.logDir}/${n}.log`, 'utf8').trim().split('\n').slice(-15);
      process.stderr.write(`--- ${n}.log ---\n${lines.join('\n')}\n`);
    } catch {
      process.stderr.write(`--- ${n}.log: none ---\n`);
    }
  }
}

/** GET over HTTPS from the scheduler's secure port (its certificate is self-signed). */
function httpsGetInsecure(url: string): Promise<{ status: number; body: string }> {
  return new Promise((res, rej) => {
    get(url, { rejectUnauthorized: false }, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => {
        body += c;
      });
      r.on('end', () => res({ status: r.statusCode ?? 0, body }));
    }).on('error', rej);
  });
}

async function getPod(client: KubeClient, name: string): Promise<Pod> {
  return (await client.get<Pod & Obj>(resources.pods, name, { namespace: 'default' })) as Pod;
}

describe('kubit-scheduler against the apiserver', { timeout: 150_000 }, () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let schedulerKubeconfig: string;
  // The leader-elected pair serves its own profile ("ha-scheduler", through --config), so it
  // starts right away, alongside the first test, without competing for that test's pods.
  let pair: TestProcess[] = [];
  before(async () => {
    cp = await startControlPlane();
    schedulerKubeconfig = await cp.kubeconfigFor('scheduler', cp.pki.scheduler);
    client = KubeClient.fromKubeconfig({ kubeconfig: cp.kubeconfigPath });
    for (const name of ['n1', 'n2', 'n3']) await createNode(client, node(name));
    const config = `${cp.dir}/ha-scheduler.yaml`;
    writeFileSync(
      config,
      'apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: ha-scheduler\n',
    );
    const flags = [
      `--config=${config}`,
      '--leader-elect=true',
      '--leader-elect-lease-duration=4s',
      '--leader-elect-renew-deadline=3s',
      '--leader-elect-retry-period=500ms',
    ];
    pair = [
      startScheduler(cp, schedulerKubeconfig, await freePort(), flags, 'scheduler-a'),
      startScheduler(cp, schedulerKubeconfig, await freePort(), flags, 'scheduler-b'),
    ];
  });
  after(async () => {
    await Promise.all(pair.map((p) => p.stop()));
    client?.close();
    await cp?.stop();
  });

  it('binds pods, reports the one that fits nowhere, serves health and metrics', async () => {
    const port = await freePort();
    const sched = startScheduler(cp, schedulerKubeconfig, port, ['--leader-elect=false'], 'scheduler-single');
    try {
      for (let i = 0; i < 4; i++) {
        await client.create(
          resources.pods,
          pod(`web-${i}`, { affinity: antiAffinityByHostname('web') }, { labels: { app: 'web' } }) as Pod &
            Obj,
        );
      }
      const bound = await waitFor(
        '3 replicas bound',
        async () => {
          const pods = await Promise.all([0, 1, 2].map((i) => getPod(client, `web-${i}`)));
          const nodes = pods.map((p) => p.spec?.nodeName ?? '');
          return nodes.every((n) => n !== '') ? nodes : undefined;
        },
        60_000,
      );
      assert.deepEqual([...new Set(bound)].sort(), ['n1', 'n2', 'n3']);
      // With every pod at priority 0, preemption finds no victims, and says so as Kubernetes does.
      const msg =
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";
      const cond = await waitFor('the 4th replica to be marked unschedulable', async () => {
        const p = await getPod(client, 'web-3');
        return p.status?.conditions?.find((c) => c.type === 'PodScheduled');
      });
      assert.equal((await getPod(client, 'web-3')).spec?.nodeName ?? '', '');
      assert.deepEqual(
        { status: cond.status, reason: cond.reason, message: cond.message },
        { status: 'False', reason: 'Unschedulable', message: msg },
      );
      const events = await waitFor('events', async () => {
        const list = await client.list<
          Obj & { reason?: string; message?: string; involvedObject?: { name?: string } }
        >(resources.events, {
          namespace: 'default',
        });
        const mine = list.items.filter((e) => e.involvedObject?.name?.startsWith('web-'));
        return mine.some((e) => e.reason === 'FailedScheduling') &&
          mine.filter((e) => e.reason === 'Scheduled').length === 3
          ? mine
          : undefined;
      });
      const scheduled = events.find((e) => e.involvedObject?.name === 'web-0' && e.reason === 'Scheduled');
      assert.equal(scheduled?.message, `Successfully assigned default/web-0 to ${bound[0]}`);
      assert.equal(events.find((e) => e.reason === 'FailedScheduling')?.message, msg);

      // A node added later makes the pending replica schedulable.
      await createNode(client, node('n4'));
      await waitFor(
        'the 4th replica to land on the new node',
        async () => (await getPod(client, 'web-3')).spec?.nodeName === 'n4',
      );

      const health = await httpsGetInsecure(`https://127.0.0.1:${port}/healthz`);
      assert.deepEqual(health, { status: 200, body: 'ok' });
      const metrics = (await httpsGetInsecure(`https://127.0.0.1:${port}/metrics`)).body;
      assert.match(
        metrics,
        /scheduler_schedule_attempts_total\{result="scheduled",profile="default-scheduler"\} 4/,
      );
      assert.match(metrics, /scheduler_pending_pods\{queue="unschedulable"\} 0/);
    } catch (err) {
      dumpLogs(cp, ['scheduler-single']);
      throw err;
    } finally {
      await sched.stop();
    }
  });

  it('places by taints and tolerations, pod affinity and resources, with the reasons users read', async () => {
    const port = await freePort();
    const sched = startScheduler(
      cp,
      schedulerKubeconfig,
      port,
      ['--leader-elect=false'],
      'scheduler-placement',
    );
    const condition = async (name: string) =>
      waitFor(`${name} to be marked unschedulable`, async () => {
        const c = (await getPod(client, name)).status?.conditions?.find((x) => x.type === 'PodScheduled');
        return c?.status === 'False' ? c : undefined;
      });
    const boundTo = (name: string) =>
      waitFor(`${name} to be bound`, async () => (await getPod(client, name)).spec?.nodeName || undefined);
    try {
      const nodes = (await client.list(resources.nodes)).items.length;
      // A tainted node that only a tolerating pod may use; every other node lacks its label.
      await createNode(
        client,
        node('gpu-1', {
          labels: { pool: 'gpu' },
          taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
        }),
      );
      const all = nodes + 1;
      await client.create(resources.pods, pod('trainer', { nodeSelector: { pool: 'gpu' } }) as Pod & Obj);
      const untolerated = await condition('trainer');
      assert.equal(
        untolerated.message,
        `0/${all} nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, ${all - 1} node(s) didn't match Pod's node affinity/selector. preemption: 0/${all} nodes are available: ${all} Preemption is not helpful for scheduling.`,
      );
      assert.equal(untolerated.reason, 'Unschedulable');
      const tolerating = pod('trainer-2', {
        nodeSelector: { pool: 'gpu' },
        tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }],
      });
      await client.create(resources.pods, tolerating as Pod & Obj);
      assert.equal(await boundTo('trainer-2'), 'gpu-1');

      // Required pod affinity puts the pod where its peer runs, over any topology key (here: the host).
      await client.create(resources.pods, pod('cache', {}, { labels: { app: 'cache' } }) as Pod & Obj);
      const cacheNode = await boundTo('cache');
      for (let i = 0; i < 3; i++) {
        const near = pod(`near-cache-${i}`, {
          affinity: {
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'cache' } }, topologyKey: 'kubernetes.io/hostname' },
              ],
            },
          },
        });
        await client.create(resources.pods, near as Pod & Obj);
        assert.equal(await boundTo(`near-cache-${i}`), cacheNode, `near-cache-${i} sits with the cache`);
      }

      // Requests beyond every node's allocatable: counted per reason, over all nodes.
      await client.create(resources.pods, pod('huge', { cpu: '64', memory: '1Ti' }) as Pod & Obj);
      const huge = await condition('huge');
      assert.equal(
        huge.message,
        `0/${all} nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, ${all - 1} Insufficient cpu, ${all - 1} Insufficient memory. preemption: 0/${all} nodes are available: 1 Preemption is not helpful for scheduling, ${all - 1} No preemption victims found for incoming pod.`,
      );
      assert.equal((await getPod(client, 'huge')).spec?.nodeName ?? '', '');
    } catch (err) {
      dumpLogs(cp, ['scheduler-placement']);
      throw err;
    } finally {
      await sched.stop();
    }
  });

  it('fails over to the other replica through the Lease, never binding a pod twice', async () => {
    const [a, b] = pair;
    try {
      const lease = await waitFor(
        'a leader',
        async () => {
          try {
            const l = await client.get<Obj & { spec?: { holderIdentity?: string } }>(
              resources.leases,
              'kube-scheduler',
              { namespace: 'kube-system' },
            );
            return l.spec?.holderIdentity ? l : undefined;
          } catch {
            return undefined;
          }
        },
        60_000,
      );
      // Every nodeName each pod ever had, as seen by a watch over the whole test.
      const seen = new Map<string, string[]>();
      const watchErrors: string[] = [];
      const watched = new Set<string>();
      const list = await client.list(resources.pods, { namespace: 'default' });
      const watch = client.watch<Pod & Obj>(resources.pods, {
        namespace: 'default',
        resourceVersion: list.metadata?.resourceVersion,
        onClose: (err) => {
          if (err) watchErrors.push(err.message);
        },
        onEvent: (ev) => {
          const p = ev.object as Pod;
          const n = p.spec?.nodeName;
          const name = p.metadata?.name ?? '';
          watched.add(name);
          if (!n) return;
          const nodes = seen.get(name) ?? [];
          if (nodes.at(-1) !== n) nodes.push(n);
          seen.set(name, nodes);
        },
      });
      // Make sure the watch is live before anything is bound: it must see a pod created now.
      await client.create(resources.pods, pod('watch-probe', { schedulerName: 'nobody' }) as Pod & Obj);
      await waitFor('the watch to be live', () => watched.has('watch-probe'));
      // Identities are <hostname>_<pid>_<random>.
      const holder = lease.spec?.holderIdentity ?? '';
      const [leader, follower] = holder.includes(`_${a.pid}_`) ? [a, b] : [b, a];
      assert.ok(holder.includes(`_${leader.pid}_`), `lease holder ${holder} is one of ours`);
      for (let i = 0; i < 5; i++)
        await client.create(
          resources.pods,
          pod(`before-${i}`, { schedulerName: 'ha-scheduler' }) as Pod & Obj,
        );
      await waitFor('pods bound by the first leader', async () => {
        const pods = await Promise.all([0, 1, 2, 3, 4].map((i) => getPod(client, `before-${i}`)));
        return pods.every((p) => p.spec?.nodeName);
      });
      await leader.kill(); // a crash: no chance to release the lease
      for (let i = 0; i < 5; i++)
        await client.create(
          resources.pods,
          pod(`after-${i}`, { schedulerName: 'ha-scheduler' }) as Pod & Obj,
        );
      await waitFor(
        'the other replica to take over and bind the new pods',
        async () => {
          const pods = await Promise.all([0, 1, 2, 3, 4].map((i) => getPod(client, `after-${i}`)));
          return pods.every((p) => p.spec?.nodeName);
        },
        30_000,
      );
      assert.equal(follower.running, true);
      const names = [
        ...[0, 1, 2, 3, 4].map((i) => `before-${i}`),
        ...[0, 1, 2, 3, 4].map((i) => `after-${i}`),
      ];
      // The GETs above can see a binding before the watch delivers it: let the watch catch up.
      await waitFor('the watch to see every binding', () => names.every((n) => seen.has(n)), 30_000);
      watch.stop();
      for (const name of names)
        assert.equal(
          seen.get(name)?.length,
          1,
          `${name} was bound once: ${seen.get(name)} (watch errors: ${watchErrors.join('; ')})`,
        );
      // Scheduled events are best effort (the killed leader may not have written its last ones), but never doubled.
      const events = await client.list<
        Obj & { reason?: string; count?: number; involvedObject?: { name?: string } }
      >(resources.events, {
        namespace: 'default',
      });
      for (const name of names) {
        const scheduled = events.items.filter(
          (e) => e.involvedObject?.name === name && e.reason === 'Scheduled',
        );
        assert.ok(
          scheduled.reduce((n, e) => n + (e.count ?? 1), 0) <= 1,
          `${name} has at most one Scheduled event`,
        );
      }
    } catch (err) {
      dumpLogs(cp, ['scheduler-a', 'scheduler-b']);
      throw err;
    }
  });
});
