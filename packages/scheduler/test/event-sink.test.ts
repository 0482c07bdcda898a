// The EventSink: bounded, concurrent, drops (and counts) on overflow, never throws.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CoreEvent } from '@kubit/client';
import { EventSink } from '../src/event-sink.js';
import type { Pod } from '../src/types.js';

function pod(name: string): Pod {
  return {
    metadata: { name, namespace: 'ns1', uid: `uid-${name}`, resourceVersion: '7' },
    spec: { containers: [] },
  };
}

/** A write function whose calls stay pending until released. */
function gatedWriter() {
  const calls: { namespace: string; event: CoreEvent; release: (err?: Error) => void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const write = (namespace: string, event: CoreEvent) =>
    new Promise<void>((res, rej) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      calls.push({
        namespace,
        event,
        release: (err) => {
          inFlight--;
          if (err) rej(err);
          else res();
        },
      });
    });
  return { calls, write, maxInFlight: () => maxInFlight };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('EventSink', () => {
  it('writes a Scheduled event shaped as kube-scheduler writes it', async () => {
    const w = gatedWriter();
    const sink = new EventSink({
      write: w.write,
      component: 'default-scheduler',
      host: 'h1',
      now: () => new Date('2026-01-02T03:04:05.678Z'),
    });
    sink.record(pod('a'), 'Normal', 'Scheduled', 'Successfully assigned ns1/a to n1');
    assert.equal(w.calls.length, 1);
    const { namespace, event } = w.calls[0];
    assert.equal(namespace, 'ns1');
    assert.equal(event.kind, 'Event');
    assert.equal(event.metadata?.namespace, 'ns1');
    assert.match(event.metadata?.name ?? '', /^a\.[0-9a-f]+$/);
    assert.deepEqual(event.involvedObject, {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'a',
      namespace: 'ns1',
      uid: 'uid-a',
      resourceVersion: '7',
    });
    assert.equal(event.reason, 'Scheduled');
    assert.equal(event.message, 'Successfully assigned ns1/a to n1');
    assert.equal(event.type, 'Normal');
    assert.deepEqual(event.source, { component: 'default-scheduler', host: 'h1' });
    assert.equal(event.count, 1);
    assert.equal(event.firstTimestamp, '2026-01-02T03:04:05Z');
    assert.equal(event.lastTimestamp, '2026-01-02T03:04:05Z');
    w.calls[0].release();
    await sink.flush();
    assert.equal(sink.written, 1);
  });

  it('keeps at most `concurrency` writes in flight and writes every queued event in order', async () => {
    const w = gatedWriter();
    const sink = new EventSink({ write: w.write, component: 'c', concurrency: 3, maxQueued: 100 });
    for (let i = 0; i < 10; i++) sink.record(pod(`p${i}`), 'Normal', 'Scheduled', `m${i}`);
    assert.equal(w.calls.length, 3);
    assert.equal(sink.pending, 10);
    for (let done = 0; done < 10; done++) {
      w.calls[done].release();
      await tick();
    }
    await sink.flush();
    assert.equal(w.maxInFlight(), 3);
    assert.deepEqual(
      w.calls.map((c) => c.event.message),
      Array.from({ length: 10 }, (_, i) => `m${i}`),
    );
    assert.equal(sink.written, 10);
    assert.equal(sink.pending, 0);
  });

  it('drops and counts events beyond the queue bound; a failed write is counted, not thrown', async () => {
    const w = gatedWriter();
    let drops = 0;
    const errors: unknown[] = [];
    const sink = new EventSink({
      write: w.write,
      component: 'c',
      concurrency: 1,
      maxQueued: 2,
      onDrop: () => drops++,
      onError: (e) => errors.push(e),
    });
    // One goes straight to the writer, two wait, the rest are dropped.
    for (let i = 0; i < 6; i++) sink.record(pod(`p${i}`), 'Normal', 'Scheduled', `m${i}`);
    assert.equal(drops, 3);
    assert.equal(sink.dropped, 3);
    w.calls[0].release(new Error('apiserver said no'));
    await tick();
    w.calls[1].release();
    await tick();
    w.calls[2].release();
    await sink.flush();
    assert.equal(sink.failed, 1);
    assert.equal(sink.written, 2);
    assert.equal(errors.length, 1);
    assert.deepEqual(
      w.calls.map((c) => c.event.message),
      ['m0', 'm1', 'm2'],
    );
  });

  it('flush gives up after its timeout when a write never returns', async () => {
    const w = gatedWriter();
    const sink = new EventSink({ write: w.write, component: 'c' });
    sink.record(pod('stuck'), 'Normal', 'Scheduled', 'm');
    await sink.flush(20);
    assert.equal(sink.pending, 1);
    w.calls[0].release();
    await sink.flush();
    assert.equal(sink.pending, 0);
  });
});
