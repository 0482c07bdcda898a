// batch/v1 Jobs and CronJobs: status kept apart from spec, a Job's generated selector
// (made from its uid, which the create assigns before this kind's hooks run), and the
// columns of `kubectl get jobs` / `kubectl get cronjobs`. Defaulting and validation
// come from @kubit/api.
import { defaultCronJob, defaultJob, generateJobSelector, humanDuration } from '@kubit/api';
import { schemas } from '../model/schema.js';
import { selectorText } from '../model/selectors.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type Column, type KindDef, obj, str } from './types.js';

const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 };

const WIDE_COLUMNS: Column[] = [
  {
    name: 'Containers',
    type: 'string',
    description: 'Names of each container in the template.',
    priority: 1,
  },
  {
    name: 'Images',
    type: 'string',
    description: 'Images referenced by each container in the template.',
    priority: 1,
  },
  { name: 'Selector', type: 'string', description: 'A label query over pods.', priority: 1 },
];

/** The wide cells of a Job spec: its template's containers and images, and its selector. */
function wideCells(jobSpec: Record<string, unknown>): string[] {
  const containers = arr(obj(obj(obj(jobSpec).template).spec).containers).map(obj);
  return [
    containers.map((c) => str(c.name)).join(','),
    containers.map((c) => str(c.image)).join(','),
    selectorText({ spec: jobSpec }) || '<none>',
  ];
}

const int = (v: unknown): number => (typeof v === 'number' ? v : 0);

const hasCondition = (job: KObject, type: string): boolean =>
  arr(obj(job.status).conditions)
    .map(obj)
    .some((c) => c.type === type && c.status === 'True');

/** kubectl's STATUS of a Job: the first of its finished, terminating or waiting states. */
function jobStatusText(job: KObject): string {
  if (hasCondition(job, 'Complete')) return 'Complete';
  if (hasCondition(job, 'Failed')) return 'Failed';
  if (job.metadata?.deletionTimestamp) return 'Terminating';
  if (hasCondition(job, 'Suspended')) return 'Suspended';
  if (hasCondition(job, 'FailureTarget')) return 'FailureTarget';
  if (hasCondition(job, 'SuccessCriteriaMet')) return 'SuccessCriteriaMet';
  return 'Running';
}

/** COMPLETIONS: succeeded of wanted; a work-queue Job (no completions) wants one, maybe of many at once. */
function completionsText(job: KObject): string {
  const spec = obj(job.spec);
  const succeeded = int(obj(job.status).succeeded);
  if (typeof spec.completions === 'number') return `${succeeded}/${spec.completions}`;
  const parallelism = int(spec.parallelism);
  return parallelism > 1 ? `${succeeded}/1 of ${parallelism}` : `${succeeded}/1`;
}

/** DURATION: from start to completion, or to now while running; empty before it starts. */
function durationText(job: KObject, now: number): string {
  const status = obj(job.status);
  const start = typeof status.startTime === 'string' ? Date.parse(status.startTime) : Number.NaN;
  if (Number.isNaN(start)) return '';
  const end = typeof status.completionTime === 'string' ? Date.parse(status.completionTime) : now;
  return humanDuration(end - start);
}

/** What Jobs and CronJobs share: status kept apart from spec, generation. */
const batchKind = {
  group: 'batch',
  version: 'v1',
  namespaced: true,
  categories: ['all'],
  nameRule: 'subdomain' as const,
  subresources: [statusSubresource],
  generation: true,
  prepareForUpdate(o: KObject, old: KObject) {
    o.status = old.status;
  },
  prepareForStatusUpdate(o: KObject, old: KObject) {
    o.spec = old.spec;
  },
};

/** A pod template a Job accepts: one busybox container that never restarts. */
const jobTemplateExample = {
  spec: {
    restartPolicy: 'Never',
    containers: [{ name: 'c', image: 'busybox:1.36', command: ['true'] }],
  },
};

export const jobs: KindDef = {
  ...batchKind,
  kind: 'Job',
  resource: 'jobs',
  singular: 'job',
  schema: schemas.job,
  example: { spec: { template: jobTemplateExample } },
  prepareForCreate(job) {
    job.status = {};
    generateJobSelector(job);
  },
  defaults: (job) => void defaultJob(job),
  table: {
    columns: [
      { name: 'Status', type: 'string', description: 'Status of the job.', priority: 0 },
      {
        name: 'Completions',
        type: 'string',
        description: 'The number of pods which reached phase Succeeded.',
        priority: 0,
      },
      { name: 'Duration', type: 'string', description: 'Time required to complete the job.', priority: 0 },
      AGE,
      ...WIDE_COLUMNS,
    ],
    cells: (job, now) => [
      jobStatusText(job),
      completionsText(job),
      durationText(job, now),
      age(job, now),
      ...wideCells(obj(job.spec)),
    ],
  },
};

export const cronjobs: KindDef = {
  ...batchKind,
  kind: 'CronJob',
  resource: 'cronjobs',
  singular: 'cronjob',
  shortNames: ['cj'],
  schema: schemas.cronJob,
  example: { spec: { schedule: '*/1 * * * *', jobTemplate: { spec: { template: jobTemplateExample } } } },
  prepareForCreate(cj) {
    cj.status = {};
  },
  defaults: (cj) => void defaultCronJob(cj),
  table: {
    columns: [
      { name: 'Schedule', type: 'string', description: 'The schedule in Cron format.', priority: 0 },
      {
        name: 'Timezone',
        type: 'string',
        description: 'The time zone name for the given schedule.',
        priority: 0,
      },
      {
        name: 'Suspend',
        type: 'boolean',
        description: 'Whether later executions are suspended.',
        priority: 0,
      },
      {
        name: 'Active',
        type: 'integer',
        description: 'A list of pointers to currently running jobs.',
        priority: 0,
      },
      {
        name: 'Last Schedule',
        type: 'string',
        description: 'Information when was the last time the job was successfully scheduled.',
        priority: 0,
      },
      AGE,
      ...WIDE_COLUMNS,
    ],
    cells(cj, now) {
      const spec = obj(cj.spec);
      const status = obj(cj.status);
      const last =
        typeof status.lastScheduleTime === 'string' ? Date.parse(status.lastScheduleTime) : Number.NaN;
      return [
        str(spec.schedule),
        typeof spec.timeZone === 'string' ? spec.timeZone : '<none>',
        typeof spec.suspend === 'boolean' ? (spec.suspend ? 'True' : 'False') : '<unset>',
        arr(status.active).length,
        Number.isNaN(last) ? '<none>' : humanDuration(now - last),
        age(cj, now),
        ...wideCells(obj(obj(spec.jobTemplate).spec)),
      ];
    },
  },
};
