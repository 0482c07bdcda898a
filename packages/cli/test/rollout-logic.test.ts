// The pure parts of rollout, edit and live progress: kubectl's rollout
// messages for every state, history layout, undo planning, comment stripping,
// and the two progress modes (terminal redraw, plain lines).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stripComments } from '../src/commands/edit.js';
import { rfc3339Local } from '../src/commands/rollout.js';
import { progressText } from '../src/commands/wait.js';
import type { IO } from '../src/io.js';
import { LiveProgress } from '../src/progress.js';
import {
  type DeploymentShape,
  history,
  historyTable,
  planUndo,
  type ReplicaSetShape,
  rolloutStatus,
} from '../src/rollout/deployment.js';
import { describeTemplate } from '../src/rollout/template.js';

const dep = (status: DeploymentShape['status'], generation = 2, replicas = 3): DeploymentShape => ({
  kind: 'Deployment',
  metadata: { name: 'web', uid: 'u1', generation, annotations: { 'deployment.kubernetes.io/revision': '2' } },
  spec: {
    replicas,
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ image: 'v2' }] } },
  },
  status,
});

const rs = (revision: number, image: string, cause?: string): ReplicaSetShape => ({
  kind: 'ReplicaSet',
  metadata: {
    name: `web-${revision}`,
    annotations: {
      'deployment.kubernetes.io/revision': String(revision),
      ...(cause ? { 'kubernetes.io/change-cause': cause } : {}),
    },
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: 'u1', controller: true },
    ],
  },
  spec: {
    template: {
      metadata: { labels: { app: 'web', 'pod-template-hash': `h${revision}` } },
      spec: { containers: [{ image }] },
    },
  },
});

describe('rollout status messages', () => {
  it('says what the rollout waits for, in order', () => {
    assert.equal(
      rolloutStatus(dep({ observedGeneration: 1 })).message,
      'Waiting for deployment spec update to be observed...',
    );
    assert.equal(
      rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 1, replicas: 3 })).message,
      'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...',
    );
    assert.equal(
      rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 4 })).message,
      'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...',
    );
    assert.equal(
      rolloutStatus(dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 1 }))
        .message,
      'Waiting for deployment "web" rollout to finish: 1 of 3 updated replicas are available...',
    );
    const done = rolloutStatus(
      dep({ observedGeneration: 2, updatedReplicas: 3, replicas: 3, availableReplicas: 3 }),
    );
    assert.deepEqual([done.message, done.done], ['deployment "web" successfully rolled out', true]);
  });

  it('fails on a passed progress deadline and on another revision', () => {
    assert.throws(
      () =>
        rolloutStatus(
          dep({
            observedGeneration: 2,
            conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }],
          }),
        ),
      /deployment "web" exceeded its progress deadline/,
    );
    assert.throws(
      () => rolloutStatus(dep({ observedGeneration: 2 }), 5),
      /desired revision \(5\) is different from the running revision \(2\)/,
    );
  });
});

describe('rollout history and undo', () => {
  it('lists revisions oldest first with <none> for a missing cause', () => {
    const entries = history([rs(2, 'v2', 'second'), rs(1, 'v1'), rs(10, 'v10', 'tenth')]);
    assert.equal(
      historyTable(entries),
      'REVISION  CHANGE-CAUSE\n1         <none>\n2         second\n10        tenth\n',
    );
  });

  it('undo goes to the previous revision, without the hash label, restoring its cause', () => {
    const plan = planUndo(dep({}), [rs(1, 'v1', 'first'), rs(2, 'v2', 'second')]);
    assert.equal(plan.kind, 'rollback');
    if (plan.kind !== 'rollback') return;
    assert.equal(plan.revision, 1);
    assert.deepEqual(plan.template, {
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ image: 'v1' }] },
    });
    assert.equal(plan.annotations['kubernetes.io/change-cause'], 'first');
    assert.equal(plan.annotations['deployment.kubernetes.io/revision'], '2', 'bookkeeping is not copied');
    assert.deepEqual(planUndo(dep({}), [rs(1, 'v1'), rs(2, 'v2')], 2), { kind: 'skip', revision: 2 });
    assert.throws(() => planUndo(dep({}), [rs(2, 'v2')]), /no rollout history found for deployment "web"/);
    assert.throws(
      () => planUndo(dep({}), [rs(2, 'v2')], 7),
      /unable to find specified revision 7 in history/,
    );
    const paused = dep({});
    paused.spec = { ...paused.spec, paused: true };
    assert.throws(
      () => planUndo(paused, [rs(1, 'v1'), rs(2, 'v2')]),
      /you cannot rollback a paused deployment/,
    );
  });

  it('restartedAt is RFC 3339 with a zone', () => {
    assert.match(rfc3339Local(new Date()), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(Z|[+-]\d\d:\d\d)$/);
  });
});

describe('edit and progress', () => {
  it('drops comment lines from the edited file', () => {
    assert.equal(stripComments('# a\nkind: X\n  # b\ndata: 1\n'), 'kind: X\ndata: 1\n');
  });

  it("describes a pod's phase, ready count and reason", () => {
    assert.equal(
      progressText({
        kind: 'Pod',
        spec: { containers: [{}, {}] },
        status: {
          phase: 'Pending',
          containerStatuses: [
            { ready: true },
            { ready: false, state: { waiting: { reason: 'ContainerCreating' } } },
          ],
        },
      } as never),
      'Pending, 1/2 ready, ContainerCreating',
    );
    assert.equal(
      progressText({
        kind: 'Pod',
        status: {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
        },
      } as never),
      'Pending, Unschedulable',
    );
  });

  const capture = (isTTY: boolean) => {
    let err = '';
    const io: IO = {
      out: { write: () => true },
      err: {
        write: (s: string) => {
          err += s;
          return true;
        },
      },
      readStdin: async () => '',
      isTTY,
      env: {},
    };
    return { io, text: () => err };
  };

  it('redraws a block in place on a terminal', () => {
    const c = capture(true);
    const p = new LiveProgress(c.io);
    p.update(['a: 1', '  b: x']);
    p.update(['a: 2']);
    p.clear();
    assert.equal(
      c.text(),
      '\r\u001b[2Ka: 1\n\u001b[2K  b: x\n\u001b[2A\r\u001b[2Ka: 2\n\u001b[J\u001b[1A\r\u001b[J',
    );
  });

  it('prints each changed line once otherwise', () => {
    const c = capture(false);
    const p = new LiveProgress(c.io);
    p.update(['a: 1', '  b: x']);
    p.update(['a: 1', '  b: y']);
    p.clear();
    assert.equal(c.text(), 'a: 1\n  b: x\n  b: y\n');
  });
});

describe('rollout history --revision', () => {
  it("lays a container's command and args out one part a line, as describe does", () => {
    const text = describeTemplate({
      metadata: { labels: { app: 'web' } },
      spec: { containers: [{ name: 'web', image: 'nginx', command: ['sh', '-c'], args: ['sleep 1'] }] },
    } as never);
    const lines = text.split('\n');
    const at = lines.findIndex((l) => l.trim() === 'Command:');
    assert.ok(at > 0, text);
    assert.deepEqual(
      lines.slice(at, at + 5).map((l) => l.trim()),
      ['Command:', 'sh', '-c', 'Args:', 'sleep 1'],
    );
    assert.match(lines[at + 1], /^ {8}sh$/, 'parts one level deeper than the heading');
  });
});
