import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultCronJob,
  defaultJob,
  generateJobSelector,
  MAX_INT32,
  parseCronSchedule,
  validateObject,
  validateUpdate,
} from '@kubit/api';

type Obj = Record<string, unknown>;
const UID = '0b3e8f2a-1111-4c2d-9a7e-123456789abc';

const podTemplate = (restartPolicy = 'Never') => ({
  spec: { restartPolicy, containers: [{ name: 'c', image: 'busybox:1.36' }] },
});

/** A Job as the apiserver makes it: uid, generated selector, then defaults. */
function job(spec: Obj = {}, name = 'pi'): Obj {
  const j: Obj = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: 'default', uid: UID },
    spec: { template: podTemplate(), ...spec },
  };
  generateJobSelector(j);
  return defaultJob(j);
}

function cronJob(spec: Obj = {}, name = 'tick'): Obj {
  return defaultCronJob({
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, namespace: 'default' },
    spec: { schedule: '*/1 * * * *', jobTemplate: { spec: { template: podTemplate() } }, ...spec },
  });
}

const errors = (errs: { field: string; detail?: string }[]) =>
  errs.map((e) => `${e.field}: ${e.detail ?? ''}`).join('\n');
const created = (o: unknown) => errors(validateObject(o));
const specOf = (o: Obj) => o.spec as Obj;

test('Job defaults: one completion at parallelism 1, 6 retries, NonIndexed, not suspended', () => {
  const spec = specOf(job());
  assert.equal(spec.completions, 1);
  assert.equal(spec.parallelism, 1);
  assert.equal(spec.backoffLimit, 6);
  assert.equal(spec.completionMode, 'NonIndexed');
  assert.equal(spec.suspend, false);
  assert.equal(spec.manualSelector, false);
  assert.equal(spec.podReplacementPolicy, 'TerminatingOrFailed');
  assert.equal(created(job()), '');
  // Only parallelism set: completions stay unset (a work queue).
  const queue = specOf(job({ parallelism: 3 }));
  assert.equal(queue.completions, undefined);
  assert.equal(queue.parallelism, 3);
  // A per-index limit makes the global one unlimited; a failure policy replaces only failed pods.
  const indexed = specOf(job({ completionMode: 'Indexed', completions: 3, backoffLimitPerIndex: 1 }));
  assert.equal(indexed.backoffLimit, MAX_INT32);
  const withPolicy = job({
    podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [42] } }] },
  });
  assert.equal(specOf(withPolicy).podReplacementPolicy, 'Failed');
  assert.equal(created(withPolicy), '');
});

test('the generated selector picks the uid; the template carries uid and name in both spellings', () => {
  const j = job();
  const spec = specOf(j);
  assert.deepEqual(spec.selector, { matchLabels: { 'batch.kubernetes.io/controller-uid': UID } });
  const labels = ((spec.template as Obj).metadata as Obj).labels;
  assert.deepEqual(labels, {
    'batch.kubernetes.io/controller-uid': UID,
    'batch.kubernetes.io/job-name': 'pi',
    'controller-uid': UID,
    'job-name': 'pi',
  });
  // The Job's own labels come from its template when it has none.
  assert.deepEqual((j.metadata as Obj).labels, labels);
  // manualSelector: the selector is the user's and must match the template.
  const manual = defaultJob({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'm', namespace: 'default', uid: UID },
    spec: {
      manualSelector: true,
      selector: { matchLabels: { app: 'x' } },
      template: { metadata: { labels: { app: 'y' } }, ...podTemplate() },
    },
  });
  generateJobSelector(manual);
  assert.deepEqual(specOf(manual).selector, { matchLabels: { app: 'x' } });
  assert.match(created(manual), /spec.template.metadata.labels: `selector` does not match template `labels`/);
});

test('a selector or labels that are not the generated ones are refused', () => {
  const wrongUid = job({ selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': 'other' } } });
  const out = created(wrongUid);
  assert.match(out, /spec.selector: `selector` not auto-generated/);
  const wrongName = job({
    template: { metadata: { labels: { 'job-name': 'someone-else' } }, ...podTemplate() },
  });
  assert.match(created(wrongName), /spec.template.metadata.labels\[job-name\]: must be 'pi'/);
  const noUid = job();
  delete (noUid.metadata as Obj).uid;
  assert.match(created(noUid), /metadata.uid: /);
});

test('Job validation: counts, completion mode, restart policy and failure policy, with field paths', () => {
  const cases: [Obj, RegExp][] = [
    [{ parallelism: -1 }, /spec.parallelism: must be greater than or equal to 0/],
    [{ completions: -1 }, /spec.completions: must be greater than or equal to 0/],
    [{ backoffLimit: -1 }, /spec.backoffLimit: must be greater than or equal to 0/],
    [{ activeDeadlineSeconds: -5 }, /spec.activeDeadlineSeconds: must be greater than or equal to 0/],
    [{ ttlSecondsAfterFinished: -1 }, /spec.ttlSecondsAfterFinished: must be greater than or equal to 0/],
    [{ completionMode: 'Sometimes' }, /spec.completionMode: supported values: "NonIndexed", "Indexed"/],
    [{ completionMode: 'Indexed', parallelism: 2 }, /spec.completions: when completion mode is Indexed/],
    [{ backoffLimitPerIndex: 1 }, /spec.backoffLimitPerIndex: requires indexed completion mode/],
    [
      { completionMode: 'Indexed', completions: 2, maxFailedIndexes: 1 },
      /spec.backoffLimitPerIndex: when maxFailedIndexes is specified/,
    ],
    [
      { template: podTemplate('Always') },
      /spec.template.spec.restartPolicy: valid values: "OnFailure", "Never"/,
    ],
    [
      { podReplacementPolicy: 'Sometimes' },
      /spec.podReplacementPolicy: supported values: "Failed", "TerminatingOrFailed"/,
    ],
    [
      {
        template: podTemplate('OnFailure'),
        podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [1] } }] },
      },
      /spec.template.spec.restartPolicy: only "Never" is supported when podFailurePolicy is specified/,
    ],
    [
      {
        podFailurePolicy: {
          rules: [{ action: 'Explode', onExitCodes: { operator: 'In', values: [2, 1, 0] } }],
        },
      },
      /spec.podFailurePolicy.rules\[0\].action: supported values/,
    ],
    [
      { podFailurePolicy: { rules: [{ action: 'Count', onExitCodes: { operator: 'In', values: [2, 1] } }] } },
      /spec.podFailurePolicy.rules\[0\].onExitCodes.values: must be ordered/,
    ],
    [
      { podFailurePolicy: { rules: [{ action: 'Ignore' }] } },
      /spec.podFailurePolicy.rules\[0\]: specifying one of OnExitCodes and OnPodConditions is required/,
    ],
  ];
  for (const [spec, want] of cases) assert.match(created(job(spec)), want, JSON.stringify(spec));
  // An Indexed Job's last pod hostname must be a DNS label.
  const long = job({ completionMode: 'Indexed', completions: 10 }, 'x'.repeat(62));
  assert.match(created(long), /metadata.name: will not able to create pod with invalid DNS label: x{62}-9/);
});

test('Job status: counts not negative, uncounted pods once each', () => {
  const j = job();
  j.status = { active: -1, uncountedTerminatedPods: { succeeded: ['a', ''], failed: ['a'] } };
  const out = created(j);
  assert.match(out, /status.active: must be greater than or equal to 0/);
  assert.match(out, /status.uncountedTerminatedPods.succeeded\[1\]: must not be empty/);
  assert.match(out, /status.uncountedTerminatedPods.failed\[0\]: /);
  j.status = { active: 1, succeeded: 2, uncountedTerminatedPods: { succeeded: ['a'], failed: ['b'] } };
  assert.equal(created(j), '');
});

test('Job updates: selector, completions, completion mode and (unless suspended and new) template are immutable', () => {
  const old = job();
  (old.metadata as Obj).resourceVersion = '5';
  const change = (f: (spec: Obj) => void, base: Obj = old) => {
    const n = structuredClone(base);
    f(specOf(n));
    return errors(validateUpdate(n, base));
  };
  assert.match(
    change((s) => (s.completions = 2)),
    /spec.completions: field is immutable/,
  );
  assert.match(
    change((s) => (s.completionMode = 'Indexed')),
    /spec.completionMode: field is immutable/,
  );
  assert.match(
    change((s) => (s.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': 'x' } })),
    /spec.selector: field is immutable/,
  );
  const image = (s: Obj) => {
    (((s.template as Obj).spec as Obj).containers as Obj[])[0].image = 'busybox:1.37';
  };
  assert.match(change(image), /spec.template: field is immutable/);
  // Parallelism, suspend and the deadline may change.
  assert.equal(
    change((s) => {
      s.parallelism = 4;
      s.suspend = true;
      s.activeDeadlineSeconds = 60;
    }),
    '',
  );
  // Suspended and never started: scheduling directives may change, the image still not.
  const suspended = job({ suspend: true });
  const nodeSelector = (s: Obj) => {
    ((s.template as Obj).spec as Obj).nodeSelector = { zone: 'a' };
  };
  assert.equal(change(nodeSelector, suspended), '');
  assert.match(change(image, suspended), /spec.template: field is immutable/);
  const started = structuredClone(suspended);
  started.status = { startTime: '2026-01-01T00:00:00Z' };
  assert.match(change(nodeSelector, started), /spec.template: field is immutable/);
  // An Indexed Job scales completions in tandem with parallelism.
  const indexed = job({ completionMode: 'Indexed', completions: 2, parallelism: 2 });
  assert.equal(
    change((s) => {
      s.completions = 3;
      s.parallelism = 3;
    }, indexed),
    '',
  );
  assert.match(
    change((s) => (s.completions = 3), indexed),
    /spec.completions: can only be modified in tandem with spec.parallelism/,
  );
});

test('CronJob defaults: Allow, not suspended, history of 3 succeeded and 1 failed', () => {
  const spec = specOf(cronJob());
  assert.equal(spec.concurrencyPolicy, 'Allow');
  assert.equal(spec.suspend, false);
  assert.equal(spec.successfulJobsHistoryLimit, 3);
  assert.equal(spec.failedJobsHistoryLimit, 1);
  // The jobTemplate's Job fields are left for the Jobs made from it; its pod template is defaulted.
  const jobSpec = (spec.jobTemplate as Obj).spec as Obj;
  assert.equal(jobSpec.backoffLimit, undefined);
  assert.equal(((jobSpec.template as Obj).spec as Obj).dnsPolicy, 'ClusterFirst');
  assert.equal(created(cronJob()), '');
});

test('CronJob schedules: five fields and the macros; TZ in the schedule and bad fields are refused', () => {
  for (const schedule of [
    '*/1 * * * *',
    '0 3 * * MON-FRI',
    '@yearly',
    '@annually',
    '@monthly',
    '@weekly',
    '@daily',
    '@midnight',
    '@hourly',
  ]) {
    assert.equal(created(cronJob({ schedule })), '', schedule);
  }
  assert.match(
    created(cronJob({ schedule: '0 0 * * * *' })),
    /spec.schedule: expected exactly 5 fields, found 6/,
  );
  assert.match(created(cronJob({ schedule: '61 * * * *' })), /spec.schedule: /);
  assert.match(
    created(cronJob({ schedule: '@fortnightly' })),
    /spec.schedule: unrecognized descriptor: @fortnightly/,
  );
  assert.match(created(cronJob({ schedule: '0 0 L * *' })), /spec.schedule: /);
  assert.match(
    created(cronJob({ schedule: 'TZ=UTC 0 0 * * *' })),
    /spec.schedule: cannot use TZ or CRON_TZ in schedule, use timeZone field instead/,
  );
  assert.match(
    created(cronJob({ schedule: 'CRON_TZ=UTC 0 0 * * *' })),
    /spec.schedule: cannot use TZ or CRON_TZ in schedule, use timeZone field instead/,
  );
  assert.match(created(cronJob({ schedule: undefined })), /spec.schedule: /);
});

test('CronJob validation: time zone, policy, limits, jobTemplate and the 52-character name', () => {
  assert.equal(created(cronJob({ timeZone: 'Europe/Berlin' })), '');
  assert.match(
    created(cronJob({ timeZone: 'Mars/Olympus' })),
    /spec.timeZone: unknown time zone Mars\/Olympus/,
  );
  assert.match(created(cronJob({ timeZone: '' })), /spec.timeZone: timeZone must be nil or non-empty string/);
  assert.match(
    created(cronJob({ timeZone: 'Local' })),
    /spec.timeZone: timeZone must be an explicit time zone/,
  );
  assert.match(created(cronJob({ timeZone: '../etc' })), /spec.timeZone: unknown time zone/);
  assert.match(
    created(cronJob({ concurrencyPolicy: 'Sometimes' })),
    /spec.concurrencyPolicy: supported values: "Allow", "Forbid", "Replace"/,
  );
  assert.match(
    created(cronJob({ startingDeadlineSeconds: -1 })),
    /spec.startingDeadlineSeconds: must be greater than or equal to 0/,
  );
  assert.match(
    created(cronJob({ successfulJobsHistoryLimit: -1 })),
    /spec.successfulJobsHistoryLimit: must be greater than or equal to 0/,
  );
  assert.match(
    created(cronJob({ jobTemplate: { spec: { template: podTemplate('Always') } } })),
    /spec.jobTemplate.spec.template.spec.restartPolicy: valid values/,
  );
  assert.match(
    created(
      cronJob({ jobTemplate: { spec: { selector: { matchLabels: { a: 'b' } }, template: podTemplate() } } }),
    ),
    /spec.jobTemplate.spec.selector: `selector` will be auto-generated/,
  );
  assert.match(
    created(cronJob({ jobTemplate: { spec: { manualSelector: true, template: podTemplate() } } })),
    /spec.jobTemplate.spec.manualSelector: supported values: "nil", "false"/,
  );
  assert.equal(created(cronJob({}, 'a'.repeat(52))), '');
  assert.match(created(cronJob({}, 'a'.repeat(53))), /metadata.name: must be no more than 52 characters/);
  // An update skips the name rule and keeps a TZ the old schedule had.
  const old = cronJob({}, 'a'.repeat(53));
  old.spec = { ...specOf(old), schedule: 'TZ=UTC 0 0 * * *' };
  (old.metadata as Obj).resourceVersion = '3';
  const next = structuredClone(old);
  specOf(next).suspend = true;
  assert.equal(errors(validateUpdate(next, old)), '');
  specOf(next).timeZone = 'UTC';
  assert.match(
    errors(validateUpdate(next, old)),
    /spec.schedule: cannot use both timeZone field and TZ or CRON_TZ in schedule/,
  );
});

test('a parsed schedule fires in its time zone', () => {
  const daily = parseCronSchedule('0 9 * * *', 'Europe/Berlin');
  assert.equal(daily.next(new Date('2026-01-15T12:00:00Z'))?.toISOString(), '2026-01-16T08:00:00.000Z');
  assert.equal(
    parseCronSchedule('@hourly').next(new Date('2026-01-15T12:00:00Z'))?.toISOString(),
    '2026-01-15T13:00:00.000Z',
  );
});
