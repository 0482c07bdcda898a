// Which status writes a pod start makes, and which pod updates make the worker
// sync again: on the in-memory runtime, so the counts do not depend on timing.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { tempDir } from '@kubit/testkit';
import type { Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import { PodManager } from '../src/pods/manager.js';
import { MemoryObjectSource, RecordingSink } from '../src/pods/sinks.js';
import { FakeRuntime } from '../src/runtime/fake.js';
import { containerState, FAST_BACKOFF, makePod, waitStatus, waitUntil } from './helpers.js';

/** A sink that keeps every status it was given, in order. */
class HistorySink extends RecordingSink {
  readonly history: PodStatus[] = [];
  override setStatus(pod: Pod, status: PodStatus): void {
    this.history.push(structuredClone(status));
    super.setStatus(pod, status);
  }
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const runtime = new FakeRuntime();
  let sandboxLists = 0;
  const listPodSandbox = runtime.listPodSandbox.bind(runtime);
  runtime.listPodSandbox = (filter) => {
    // Each worker sync that looks at the runtime starts with one (the relists select on a label).
    if (filter?.labelSelector && Object.keys(filter.labelSelector).some((k) => k.endsWith('pod.uid')))
      sandboxLists++;
    return listPodSandbox(filter);
  };
  const sink = new HistorySink();
  const dir = await tempDir('kubit-kubelet-status-writes-');
  const manager = new PodManager({
    runtime,
    objects: new MemoryObjectSource(),
    statusSink: sink,
    events: sink,
    hostIP: '127.0.0.1',
    rootDir: dir.path,
    // No relist or resync during a test: only pod updates make workers sync.
    relistIntervalMs: 600_000,
    resyncIntervalMs: 600_000,
    retryMs: 100,
    crashBackoff: FAST_BACKOFF,
    imageBackoff: FAST_BACKOFF,
  });
  await manager.start([]);
  cleanups.push(() => dir.cleanup());
  cleanups.push(() => manager.stop());
  cleanups.push(() => runtime.close());
  return { runtime, sink, manager, syncs: () => sandboxLists };
}

const running = (s: PodStatus) => s.phase === 'Running' && !!containerState(s, 'c')?.state?.running;

test('a pod whose image is present reports Running as its first status, with no ContainerCreating before', async () => {
  const { runtime, sink, manager } = await setup();
  runtime.addImage('busybox:1');
  const pod = makePod('present', { containers: [{ name: 'c', image: 'busybox:1' }] });
  manager.upsert(pod);
  const s = await waitStatus(sink, pod, 'Running', running);
  assert.match(s.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
  assert.equal(sink.history[0]?.phase, 'Running', JSON.stringify(sink.history.map((h) => h.phase)));
});

test('a pod that must pull reports ContainerCreating with its IP before the pull, then Running', async () => {
  const { sink, manager } = await setup();
  const pod = makePod('pulls', { containers: [{ name: 'c', image: 'busybox:2' }] });
  manager.upsert(pod);
  await waitStatus(sink, pod, 'Running', running);
  const first = sink.history[0];
  assert.equal(first?.phase, 'Pending');
  assert.equal(containerState(first ?? {}, 'c')?.state?.waiting?.reason, 'ContainerCreating');
  assert.match(first?.podIP ?? '', /^\d+\.\d+\.\d+\.\d+$/);
  assert.deepEqual(sink.reasons('default/pulls'), ['Pulling', 'Pulled', 'Created', 'Started']);
});

test("the apiserver echoing the kubelet's own status makes no sync; a spec or metadata change does", async () => {
  const { runtime, sink, manager, syncs } = await setup();
  runtime.addImage('busybox:1');
  const pod = makePod('echo', { containers: [{ name: 'c', image: 'busybox:1' }] });
  manager.upsert(pod);
  const status = await waitStatus(sink, pod, 'Running', running);
  const worker = manager.worker(pod.metadata?.uid ?? '');
  await waitUntil('the first sync to end', () => worker?.isBusy === false);
  const before = syncs();
  // What the watch hands back after the status write: the same pod, its status and a new resourceVersion.
  const echo: Pod = { ...pod, metadata: { ...pod.metadata, resourceVersion: '7' }, status };
  manager.upsert(echo);
  // A label change is a real change; it must make exactly one sync (the echo made none).
  const relabeled: Pod = {
    ...echo,
    metadata: { ...echo.metadata, resourceVersion: '8', labels: { a: 'b' } },
  };
  manager.upsert(relabeled);
  await waitUntil('a sync for the label change', () => syncs() > before);
  // Both updates arrived before that sync could end: had the echo made a sync, the label change
  // would have asked for a second one behind it.
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(syncs() - before, 1);
  // A phase nobody here wrote (the pod failed, says the apiserver) is not an echo either.
  const failed: Pod = {
    ...relabeled,
    metadata: { ...relabeled.metadata, resourceVersion: '9' },
    status: { ...status, phase: 'Failed' },
  };
  manager.upsert(failed);
  await waitUntil('a sync for the phase change', () => syncs() > before + 1);
});
