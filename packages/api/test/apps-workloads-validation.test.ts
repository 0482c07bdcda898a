import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultDaemonSet, defaultStatefulSet, validateObject, validateUpdate } from '@kubit/api';

const template = {
  metadata: { labels: { app: 'a' } },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
};

function ds(spec: Record<string, unknown> = {}) {
  return defaultDaemonSet({
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'd', namespace: 'default' },
    spec: { selector: { matchLabels: { app: 'a' } }, template: structuredClone(template), ...spec },
  });
}

function sts(spec: Record<string, unknown> = {}) {
  return defaultStatefulSet({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      selector: { matchLabels: { app: 'a' } },
      template: structuredClone(template),
      serviceName: 'web',
      ...spec,
    },
  });
}

const errors = (o: unknown) => validateObject(o).map((e) => `${e.field}: ${e.detail ?? ''}`);

test('DaemonSet defaults: RollingUpdate 1 unavailable, 0 surge, 10 revisions', () => {
  const spec = ds().spec as Record<string, unknown>;
  assert.deepEqual(spec.updateStrategy, {
    type: 'RollingUpdate',
    rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
  });
  assert.equal(spec.revisionHistoryLimit, 10);
  assert.deepEqual(validateObject(ds()), []);
});

test('DaemonSet validation: selector, strategy and restartPolicy with field paths', () => {
  assert.match(
    errors(ds({ selector: { matchLabels: { app: 'b' } } })).join('\n'),
    /spec.template.metadata.labels: `selector` does not match template `labels`/,
  );
  assert.match(errors(ds({ selector: undefined })).join('\n'), /spec.selector/);
  const both = ds({
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
  });
  assert.match(
    errors(both).join('\n'),
    /spec.updateStrategy.rollingUpdate.maxSurge: may not be set when maxUnavailable is non-zero/,
  );
  const none = ds({
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 0 } },
  });
  assert.match(
    errors(none).join('\n'),
    /spec.updateStrategy.rollingUpdate.maxUnavailable: cannot be 0 when maxSurge is 0/,
  );
  const over = ds({
    updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '150%', maxSurge: 0 } },
  });
  assert.match(errors(over).join('\n'), /maxUnavailable: must not be greater than 100%/);
  const never = ds();
  (never.spec as { template: { spec: Record<string, unknown> } }).template.spec.restartPolicy = 'Never';
  assert.match(errors(never).join('\n'), /spec.template.spec.restartPolicy/);
  const changed = ds({ selector: { matchLabels: { app: 'a', x: 'y' } } });
  (
    changed.spec as { template: { metadata: { labels: Record<string, string> } } }
  ).template.metadata.labels.x = 'y';
  assert.match(
    validateUpdate(changed, ds())
      .map((e) => `${e.field}: ${e.detail}`)
      .join('\n'),
    /spec.selector: field is immutable/,
  );
});

test('StatefulSet defaults and validation', () => {
  const spec = sts().spec as Record<string, unknown>;
  assert.equal(spec.podManagementPolicy, 'OrderedReady');
  assert.deepEqual(spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { partition: 0 } });
  assert.deepEqual(spec.persistentVolumeClaimRetentionPolicy, {
    whenDeleted: 'Retain',
    whenScaled: 'Retain',
  });
  assert.equal(spec.replicas, 1);
  assert.deepEqual(validateObject(sts()), []);
  assert.match(
    errors(sts({ podManagementPolicy: 'Fast' })).join('\n'),
    /spec.podManagementPolicy: must be 'OrderedReady' or 'Parallel'/,
  );
  assert.match(errors(sts({ replicas: -1 })).join('\n'), /spec.replicas/);
  const claims = sts({ volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {} }] });
  assert.match(errors(claims).join('\n'), /spec.volumeClaimTemplates\[0\].spec.accessModes/);
  const renamed = sts({ serviceName: 'other' });
  assert.match(
    validateUpdate(renamed, sts())
      .map((e) => `${e.field}: ${e.detail}`)
      .join('\n'),
    /spec: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden/,
  );
  assert.deepEqual(validateUpdate(sts({ replicas: 5 }), sts()), []);
});

test('ControllerRevision: data is mandatory and immutable', () => {
  const cr = (data: unknown) => ({
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: { name: 'r', namespace: 'default' },
    data,
    revision: 1,
  });
  assert.match(errors(cr(undefined)).join('\n'), /data: data is mandatory/);
  assert.match(
    validateUpdate(cr({ a: 2 }), cr({ a: 1 }))
      .map((e) => `${e.field}: ${e.detail}`)
      .join('\n'),
    /data: field is immutable/,
  );
});

test('StatefulSet: containers mount the volumes of its claim templates; an unknown mount is still Not found', () => {
  const withMount = (mount: string) => {
    const t = structuredClone(template) as { spec: { containers: Record<string, unknown>[] } };
    t.spec.containers[0].volumeMounts = [{ name: mount, mountPath: '/data' }];
    return sts({
      template: t,
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
        },
      ],
    });
  };
  assert.deepEqual(errors(withMount('data')), []);
  assert.deepEqual(errors(withMount('other')), ['spec.template.spec.containers[0].volumeMounts[0].name: ']);
});
