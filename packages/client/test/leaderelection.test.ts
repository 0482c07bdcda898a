import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient } from '../src/client.js';
import { LeaderElector, type Lease } from '../src/leaderelection.js';
import { FakeApi } from './fake-api.js';

const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases';
const timing = { leaseDurationMs: 300, renewDeadlineMs: 200, retryPeriodMs: 40 };

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('LeaderElector', () => {
  it('one of two candidates leads; on release the other takes over without waiting', async () => {
    const api = new FakeApi();
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const log: string[] = [];
    const mk = (id: string) =>
      new LeaderElector(client, {
        lockName: 'sched',
        lockNamespace: 'kube-system',
        identity: id,
        ...timing,
        onStartedLeading: () => {
          log.push(`start ${id}`);
        },
        onStoppedLeading: () => log.push(`stop ${id}`),
      });
    const a = mk('a');
    const b = mk('b');
    const ca = new AbortController();
    const cb = new AbortController();
    const ra = a.run(ca.signal);
    await until(() => a.isLeader(), 'a leads');
    const rb = b.run(cb.signal);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(b.isLeader(), false);
    assert.equal(b.leader, 'a');
    ca.abort();
    await ra;
    const lease = api.objects.get(LEASES)?.get('sched') as unknown as Lease;
    assert.equal(lease.spec?.holderIdentity, '', 'released');
    await until(() => b.isLeader(), 'b leads');
    const after = api.objects.get(LEASES)?.get('sched') as unknown as Lease;
    assert.equal(after.spec?.leaseTransitions, 1);
    cb.abort();
    await rb;
    assert.deepEqual(log, ['start a', 'stop a', 'start b', 'stop b']);
  });

  it('takes over an expired lease of a dead holder and steps down when it cannot renew', async () => {
    const api = new FakeApi();
    api.put(LEASES, {
      metadata: { name: 'cm', namespace: 'kube-system' },
      spec: { holderIdentity: 'dead', leaseDurationSeconds: 1, renewTime: '2020-01-01T00:00:00.000000Z' },
    } as never);
    const client = new KubeClient(
      { server: 'https://fake', namespace: 'default' },
      { transport: api, retry: { maxRetries: 0 } },
    );
    let lost = false;
    let leadingSignal: AbortSignal | undefined;
    const e = new LeaderElector(client, {
      lockName: 'cm',
      lockNamespace: 'kube-system',
      identity: 'me',
      leaseDurationMs: 1500,
      renewDeadlineMs: 200,
      retryPeriodMs: 40,
      onStartedLeading: (s) => {
        leadingSignal = s;
      },
      onStoppedLeading: () => {
        lost = true;
      },
    });
    const c = new AbortController();
    const run = e.run(c.signal);
    // The holder is "dead": we must wait a lease duration as observed locally, then take it.
    await until(() => e.isLeader(), 'takeover');
    // Now every request fails: leadership must be given up after renewDeadline.
    api.failNext = { count: 1_000_000, code: 503 };
    await run;
    assert.equal(lost, true);
    assert.equal(leadingSignal?.aborted, true);
    assert.equal(e.isLeader(), false);
  });
});
