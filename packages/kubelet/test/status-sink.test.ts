// The apiserver-backed status sink on its own, against a recording stand-in
// for the client: what each PATCH of pods/status carries, and which answers
// drop a status (the pod is gone or was replaced) rather than retry it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflict, fieldErrors, invalid, notFound } from '@kubit/api';
import type { KubeClient } from '@kubit/client';
import { createLogger } from '@kubit/daemon';
import type { Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import { ApiPodStatusSink, isUidMismatch } from '../src/node/apiserver-sinks.js';
import { makePod } from './helpers.js';

const PODS = { group: '', resource: 'pods' };

/** Answers each patch with the next of `answers` (undefined: success), recording the bodies. */
function recordingClient(answers: (Error | undefined)[]): { client: KubeClient; bodies: unknown[] } {
  const bodies: unknown[] = [];
  const client = {
    async patch(_res: unknown, _name: string, body: unknown) {
      bodies.push(structuredClone(body));
      const answer = answers.shift();
      if (answer) throw answer;
      return {};
    },
  } as unknown as KubeClient;
  return { client, bodies };
}

function sink(client: KubeClient): ApiPodStatusSink {
  return new ApiPodStatusSink(client, createLogger({ name: 'test', level: 'silent' }), undefined, {
    baseDelayMs: 1,
    maxDelayMs: 5,
  });
}

const uidPrecondition = (name: string) =>
  conflict(PODS, name, 'Precondition failed: UID in precondition: old-uid, UID in object meta: new-uid');

function pod(name: string, uid: string): Pod {
  const p = makePod(name, { containers: [{ name: 'c', image: 'busybox' }] });
  p.metadata = { ...p.metadata, uid };
  return p;
}

const running: PodStatus = { phase: 'Running', podIP: '10.0.0.9' };

test('a status PATCH carries the pod uid as a precondition next to the status', async () => {
  const { client, bodies } = recordingClient([]);
  const s = sink(client);
  s.setStatus(pod('web', 'uid-1'), running);
  await s.settled();
  assert.deepEqual(bodies, [{ metadata: { uid: 'uid-1' }, status: running }]);
});

test('a uid mismatch (the pod was replaced) or a 404 drops the status; a write race is retried', async () => {
  assert.equal(isUidMismatch(uidPrecondition('web')), true);
  assert.equal(isUidMismatch(conflict(PODS, 'web')), false, 'an optimistic-lock conflict is no uid mismatch');
  assert.equal(isUidMismatch(notFound(PODS, 'web')), false);
  const immutableUid = invalid({ group: '', kind: 'Pod' }, 'web', [
    fieldErrors.invalid('metadata.uid', 'old-uid', 'field is immutable'),
  ]);
  assert.equal(isUidMismatch(immutableUid), true, 'a 422 for metadata.uid also says the pod is another');

  const replaced = recordingClient([uidPrecondition('web')]);
  const a = sink(replaced.client);
  a.setStatus(pod('web', 'old-uid'), running);
  await a.settled();
  assert.equal(replaced.bodies.length, 1, 'the old pod status is not sent again');

  const gone = recordingClient([notFound(PODS, 'web')]);
  const b = sink(gone.client);
  b.setStatus(pod('web', 'uid-2'), running);
  await b.settled();
  assert.equal(gone.bodies.length, 1);

  const raced = recordingClient([conflict(PODS, 'web'), undefined]);
  const c = sink(raced.client);
  c.setStatus(pod('web', 'uid-3'), running);
  await c.settled();
  assert.equal(raced.bodies.length, 2, 'retried after a write race, and then written');
});
