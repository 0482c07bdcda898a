import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeClient } from '../src/client.js';
import { type CoreEvent, EventRecorder } from '../src/events.js';
import { FakeApi } from './fake-api.js';

describe('EventRecorder', () => {
  it('creates events and aggregates repeats into a count', async () => {
    const api = new FakeApi();
    const client = new KubeClient({ server: 'https://fake', namespace: 'default' }, { transport: api });
    const rec = new EventRecorder(client, { component: 'kubit-scheduler', host: 'h1' });
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'ns1', uid: 'u1' } };
    rec.event(pod, 'Warning', 'FailedScheduling', '0/1 nodes are available');
    rec.event(pod, 'Warning', 'FailedScheduling', '0/1 nodes are available');
    rec.event(pod, 'Normal', 'Scheduled', 'Successfully assigned ns1/web to n1');
    await rec.flush();
    const events = [
      ...(api.objects.get('/api/v1/namespaces/ns1/events')?.values() ?? []),
    ] as unknown as CoreEvent[];
    assert.equal(events.length, 2);
    const failed = events.find((e) => e.reason === 'FailedScheduling')!;
    assert.equal(failed.count, 2);
    assert.equal(failed.involvedObject.name, 'web');
    assert.equal(failed.involvedObject.uid, 'u1');
    assert.deepEqual(failed.source, { component: 'kubit-scheduler', host: 'h1' });
    assert.equal(failed.type, 'Warning');
    assert.ok(failed.firstTimestamp && failed.lastTimestamp);
  });
});
