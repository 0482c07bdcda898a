// batch/v1 Jobs and CronJobs, as Kubernetes' pkg/apis/batch/validation: counts that may
// not be negative, completion modes, pod failure and replacement policies, a template
// that never restarts Always, the generated selector, what an update may change, and a
// CronJob's schedule, time zone and name length.

import { parseCronSchedule } from '../cron-schedule.js';
import {
  JOB_CONTROLLER_UID_LABEL,
  JOB_NAME_LABEL,
  LEGACY_JOB_CONTROLLER_UID_LABEL,
  LEGACY_JOB_NAME_LABEL,
} from '../defaults.js';
import { type FieldError, fieldErrors } from '../field-errors.js';
import { type LabelSelector, labelSelectorAsSelector } from '../labels.js';
import { immutable, validateAnnotations, validateLabels } from './meta.js';
import { isDNS1123Label, isQualifiedName } from './names.js';
import { RESTART_POLICIES, validatePodSpec } from './pod.js';
import { validateLabelSelector } from './policy.js';
import {
  arrAt,
  intAt,
  isObj,
  jsonEqual,
  nameErrors,
  nonNegative,
  type Obj,
  objAt,
  own,
  strAt,
} from './util.js';

/** The most pods an Indexed Job may run at once (it caps the length of status.completedIndexes). */
const MAX_PARALLELISM_INDEXED = 100_000;
const MAX_FAILED_INDEXES = 100_000;
const COMPLETIONS_SOFT_LIMIT = 100_000;
const PARALLELISM_LIMIT_HIGH_COMPLETIONS = 10_000;
const MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000;
const MAX_POD_FAILURE_POLICY_RULES = 20;
const MAX_ON_EXIT_CODES_VALUES = 255;
const MAX_ON_POD_CONDITIONS = 20;

export const COMPLETION_MODES = ['NonIndexed', 'Indexed'];
export const CONCURRENCY_POLICIES = ['Allow', 'Forbid', 'Replace'];
export const POD_REPLACEMENT_POLICIES = ['Failed', 'TerminatingOrFailed'];
const POD_FAILURE_ACTIONS = ['Count', 'FailIndex', 'FailJob', 'Ignore'];
const ON_EXIT_CODES_OPERATORS = ['In', 'NotIn'];
const CONDITION_STATUSES = ['False', 'True', 'Unknown'];

const specOf = (o: Obj): Obj => (isObj(own(o, 'spec')) ? (own(o, 'spec') as Obj) : {});
const nameOf = (o: Obj): string => {
  const meta = own(o, 'metadata');
  const name = isObj(meta) ? own(meta, 'name') : undefined;
  return typeof name === 'string' ? name : '';
};

function nonNegativeInt(spec: Obj, field: string, p: string, errs: FieldError[]): number | undefined {
  const v = intAt(own(spec, field), `${p}.${field}`, errs);
  nonNegative(v, `${p}.${field}`, errs);
  return v;
}

/** Kubernetes' validateJobSpec: everything but the selector, shared with CronJobs' jobTemplate. */
function validateJobSpecFields(spec: Obj, p: string, errs: FieldError[]): void {
  const parallelism = nonNegativeInt(spec, 'parallelism', p, errs);
  const completions = nonNegativeInt(spec, 'completions', p, errs);
  nonNegativeInt(spec, 'activeDeadlineSeconds', p, errs);
  nonNegativeInt(spec, 'backoffLimit', p, errs);
  nonNegativeInt(spec, 'ttlSecondsAfterFinished', p, errs);
  const perIndex = nonNegativeInt(spec, 'backoffLimitPerIndex', p, errs);
  const maxFailed = nonNegativeInt(spec, 'maxFailedIndexes', p, errs);
  if (maxFailed !== undefined && perIndex === undefined) {
    errs.push(fieldErrors.required(`${p}.backoffLimitPerIndex`, 'when maxFailedIndexes is specified'));
  }
  const mode = strAt(own(spec, 'completionMode'), `${p}.completionMode`, errs);
  if (mode !== undefined && !COMPLETION_MODES.includes(mode)) {
    errs.push(fieldErrors.notSupported(`${p}.completionMode`, mode, COMPLETION_MODES));
  }
  if (mode === 'Indexed') {
    if (own(spec, 'completions') == null) {
      errs.push(fieldErrors.required(`${p}.completions`, 'when completion mode is Indexed'));
    }
    if (parallelism !== undefined && parallelism > MAX_PARALLELISM_INDEXED) {
      errs.push(
        fieldErrors.invalid(
          `${p}.parallelism`,
          parallelism,
          `must be less than or equal to ${MAX_PARALLELISM_INDEXED} when completion mode is Indexed`,
        ),
      );
    }
    if (completions !== undefined && maxFailed !== undefined && maxFailed > completions) {
      errs.push(
        fieldErrors.invalid(`${p}.maxFailedIndexes`, maxFailed, 'must be less than or equal to completions'),
      );
    }
    if (maxFailed !== undefined && maxFailed > MAX_FAILED_INDEXES) {
      errs.push(
        fieldErrors.invalid(
          `${p}.maxFailedIndexes`,
          maxFailed,
          `must be less than or equal to ${MAX_FAILED_INDEXES}`,
        ),
      );
    }
    if (completions !== undefined && completions > COMPLETIONS_SOFT_LIMIT && perIndex !== undefined) {
      const high = `when completions are above ${COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index`;
      if (maxFailed === undefined) {
        errs.push(
          fieldErrors.required(
            `${p}.maxFailedIndexes`,
            `must be specified when completions is above ${COMPLETIONS_SOFT_LIMIT}`,
          ),
        );
      }
      if (parallelism !== undefined && parallelism > PARALLELISM_LIMIT_HIGH_COMPLETIONS) {
        errs.push(
          fieldErrors.invalid(
            `${p}.parallelism`,
            parallelism,
            `must be less than or equal to ${PARALLELISM_LIMIT_HIGH_COMPLETIONS} ${high}`,
          ),
        );
      }
      if (maxFailed !== undefined && maxFailed > MAX_FAILED_INDEXES_HIGH_COMPLETIONS) {
        errs.push(
          fieldErrors.invalid(
            `${p}.maxFailedIndexes`,
            maxFailed,
            `must be less than or equal to ${MAX_FAILED_INDEXES_HIGH_COMPLETIONS} ${high}`,
          ),
        );
      }
    }
  } else {
    if (perIndex !== undefined) {
      errs.push(
        fieldErrors.invalid(`${p}.backoffLimitPerIndex`, perIndex, 'requires indexed completion mode'),
      );
    }
    if (maxFailed !== undefined) {
      errs.push(fieldErrors.invalid(`${p}.maxFailedIndexes`, maxFailed, 'requires indexed completion mode'));
    }
  }
  const failurePolicy = objAt(own(spec, 'podFailurePolicy'), `${p}.podFailurePolicy`, errs);
  if (failurePolicy) validatePodFailurePolicy(failurePolicy, spec, `${p}.podFailurePolicy`, errs);
  validatePodReplacementPolicy(spec, failurePolicy !== undefined, `${p}.podReplacementPolicy`, errs);

  const template = objAt(own(spec, 'template'), `${p}.template`, errs);
  const tmeta = template ? objAt(own(template, 'metadata'), `${p}.template.metadata`, errs) : undefined;
  if (tmeta) {
    validateLabels(own(tmeta, 'labels'), `${p}.template.metadata.labels`, errs);
    validateAnnotations(own(tmeta, 'annotations'), `${p}.template.metadata.annotations`, errs);
  }
  const podSpecV = template ? own(template, 'spec') : undefined;
  // Any restart policy passes the pod spec's own check; the Job's rule below is stricter.
  validatePodSpec(podSpecV, `${p}.template.spec`, errs, { allowedRestartPolicies: RESTART_POLICIES });
  const podSpec = isObj(podSpecV) ? podSpecV : {};
  const restart = own(podSpec, 'restartPolicy');
  const restartPath = `${p}.template.spec.restartPolicy`;
  // Unset or empty is the pod spec's own "Required"; Always (the pod default) is the Job's.
  if (restart === 'Always') {
    errs.push(fieldErrors.required(restartPath, 'valid values: "OnFailure", "Never"'));
  } else if (restart == null || restart === '') {
    // reported by validatePodSpec
  } else if (restart !== 'OnFailure' && restart !== 'Never') {
    if (typeof restart === 'string')
      errs.push(fieldErrors.notSupported(restartPath, restart, ['OnFailure', 'Never']));
  } else if (failurePolicy && restart !== 'Never') {
    errs.push(
      fieldErrors.invalid(
        restartPath,
        restart,
        'only "Never" is supported when podFailurePolicy is specified',
      ),
    );
  }
}

function validatePodReplacementPolicy(
  spec: Obj,
  hasFailurePolicy: boolean,
  path: string,
  errs: FieldError[],
): void {
  const v = strAt(own(spec, 'podReplacementPolicy'), path, errs);
  if (v === undefined) return;
  if (hasFailurePolicy) {
    if (v !== 'Failed') errs.push(fieldErrors.notSupported(path, v, ['Failed']));
  } else if (!POD_REPLACEMENT_POLICIES.includes(v)) {
    errs.push(fieldErrors.notSupported(path, v, POD_REPLACEMENT_POLICIES));
  }
}

function containerNames(spec: Obj): Set<string> {
  const template = own(spec, 'template');
  const podSpec = isObj(template) && isObj(own(template, 'spec')) ? (own(template, 'spec') as Obj) : {};
  const names = new Set<string>();
  for (const field of ['containers', 'initContainers']) {
    const list = own(podSpec, field);
    for (const c of Array.isArray(list) ? list : []) {
      if (isObj(c) && typeof own(c, 'name') === 'string') names.add(own(c, 'name') as string);
    }
  }
  return names;
}

function validatePodFailurePolicy(policy: Obj, spec: Obj, p: string, errs: FieldError[]): void {
  const rules = arrAt(own(policy, 'rules'), `${p}.rules`, errs);
  if (rules.length > MAX_POD_FAILURE_POLICY_RULES) {
    errs.push(fieldErrors.tooMany(`${p}.rules`, rules.length, MAX_POD_FAILURE_POLICY_RULES));
  }
  const names = containerNames(spec);
  for (const [i, r] of rules.entries()) {
    const rp = `${p}.rules[${i}]`;
    const rule = objAt(r, rp, errs);
    if (!rule) continue;
    const action = strAt(own(rule, 'action'), `${rp}.action`, errs);
    if (!action) {
      errs.push(fieldErrors.required(`${rp}.action`, `valid values: ${JSON.stringify(POD_FAILURE_ACTIONS)}`));
    } else if (action === 'FailIndex') {
      if (own(spec, 'backoffLimitPerIndex') == null) {
        errs.push(fieldErrors.invalid(`${rp}.action`, action, 'requires the backoffLimitPerIndex to be set'));
      }
    } else if (!POD_FAILURE_ACTIONS.includes(action)) {
      errs.push(fieldErrors.notSupported(`${rp}.action`, action, POD_FAILURE_ACTIONS));
    }
    const onExit = objAt(own(rule, 'onExitCodes'), `${rp}.onExitCodes`, errs);
    const onConditions = arrAt(own(rule, 'onPodConditions'), `${rp}.onPodConditions`, errs);
    if (onExit) validateOnExitCodes(onExit, names, `${rp}.onExitCodes`, errs);
    if (onConditions.length > 0) validateOnPodConditions(onConditions, `${rp}.onPodConditions`, errs);
    if (onExit && onConditions.length > 0) {
      errs.push(
        fieldErrors.invalid(rp, null, 'specifying both OnExitCodes and OnPodConditions is not supported'),
      );
    }
    if (!onExit && onConditions.length === 0) {
      errs.push(
        fieldErrors.invalid(rp, null, 'specifying one of OnExitCodes and OnPodConditions is required'),
      );
    }
  }
}

function validateOnExitCodes(req: Obj, names: Set<string>, p: string, errs: FieldError[]): void {
  const op = strAt(own(req, 'operator'), `${p}.operator`, errs);
  if (!op) {
    errs.push(
      fieldErrors.required(`${p}.operator`, `valid values: ${JSON.stringify(ON_EXIT_CODES_OPERATORS)}`),
    );
  } else if (!ON_EXIT_CODES_OPERATORS.includes(op)) {
    errs.push(fieldErrors.notSupported(`${p}.operator`, op, ON_EXIT_CODES_OPERATORS));
  }
  const container = strAt(own(req, 'containerName'), `${p}.containerName`, errs);
  if (container !== undefined && !names.has(container)) {
    errs.push(
      fieldErrors.invalid(
        `${p}.containerName`,
        container,
        'must be one of the container or initContainer names in the pod template',
      ),
    );
  }
  const values = arrAt(own(req, 'values'), `${p}.values`, errs);
  if (values.length === 0) {
    errs.push(fieldErrors.invalid(`${p}.values`, values, 'at least one value is required'));
  } else if (values.length > MAX_ON_EXIT_CODES_VALUES) {
    errs.push(fieldErrors.tooMany(`${p}.values`, values.length, MAX_ON_EXIT_CODES_VALUES));
  }
  const seen = new Set<number>();
  let ordered = true;
  let prev: number | undefined;
  for (const [j, v] of values.entries()) {
    const code = intAt(v, `${p}.values[${j}]`, errs);
    if (code === undefined) continue;
    if (op === 'In' && code === 0) {
      errs.push(fieldErrors.invalid(`${p}.values[${j}]`, code, 'must not be 0 for the In operator'));
    }
    if (seen.has(code)) errs.push(fieldErrors.duplicate(`${p}.values[${j}]`, code));
    else seen.add(code);
    if (prev !== undefined && prev > code) ordered = false;
    prev = code;
  }
  if (!ordered) errs.push(fieldErrors.invalid(`${p}.values`, values, 'must be ordered'));
}

function validateOnPodConditions(patterns: unknown[], p: string, errs: FieldError[]): void {
  if (patterns.length > MAX_ON_POD_CONDITIONS) {
    errs.push(fieldErrors.tooMany(p, patterns.length, MAX_ON_POD_CONDITIONS));
  }
  for (const [j, v] of patterns.entries()) {
    const pp = `${p}[${j}]`;
    const pattern = objAt(v, pp, errs);
    if (!pattern) continue;
    const type = strAt(own(pattern, 'type'), `${pp}.type`, errs) ?? '';
    nameErrors(type, isQualifiedName(type), `${pp}.type`, errs);
    const status = strAt(own(pattern, 'status'), `${pp}.status`, errs);
    if (!status) {
      errs.push(fieldErrors.required(`${pp}.status`, `valid values: ${JSON.stringify(CONDITION_STATUSES)}`));
    } else if (!CONDITION_STATUSES.includes(status)) {
      errs.push(fieldErrors.notSupported(`${pp}.status`, status, CONDITION_STATUSES));
    }
  }
}

/** Kubernetes' ValidateJobSpec: the fields, a selector, and a template the selector picks. */
function validateJobSpec(spec: Obj, errs: FieldError[]): void {
  validateJobSpecFields(spec, 'spec', errs);
  const selectorV = own(spec, 'selector');
  if (selectorV == null) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  const before = errs.length;
  validateLabelSelector(selectorV, 'spec.selector', errs);
  if (errs.length > before || !isObj(selectorV)) return;
  const labels = templateLabels(spec);
  let matches = true;
  try {
    matches = labelSelectorAsSelector(selectorV as LabelSelector).matches(labels);
  } catch {
    return;
  }
  if (!matches) {
    errs.push(
      fieldErrors.invalid(
        'spec.template.metadata.labels',
        labels,
        '`selector` does not match template `labels`',
      ),
    );
  }
}

function templateLabels(spec: Obj): Record<string, string> {
  const template = own(spec, 'template');
  const tmeta = isObj(template) ? own(template, 'metadata') : undefined;
  const labels = isObj(tmeta) ? own(tmeta, 'labels') : undefined;
  return isObj(labels) ? (labels as Record<string, string>) : {};
}

export function validateJob(job: Obj, errs: FieldError[]): void {
  const status = objAt(own(job, 'status'), 'status', errs);
  if (status) validateJobStatus(status, errs);
  const spec = objAt(own(job, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  validateJobSpec(spec, errs);
}

/** Kubernetes' validateJobStatus: counts not negative, each uncounted pod uid once and not empty. */
function validateJobStatus(status: Obj, errs: FieldError[]): void {
  for (const f of ['active', 'succeeded', 'failed', 'ready', 'terminating'])
    nonNegativeInt(status, f, 'status', errs);
  const uncounted = objAt(own(status, 'uncountedTerminatedPods'), 'status.uncountedTerminatedPods', errs);
  if (!uncounted) return;
  const seen = new Set<string>();
  for (const f of ['succeeded', 'failed']) {
    const p = `status.uncountedTerminatedPods.${f}`;
    for (const [i, v] of arrAt(own(uncounted, f), p, errs).entries()) {
      const uid = strAt(v, `${p}[${i}]`, errs);
      if (uid === undefined) continue;
      if (uid === '') errs.push(fieldErrors.invalid(`${p}[${i}]`, uid, 'must not be empty'));
      else if (seen.has(uid)) errs.push(fieldErrors.duplicate(`${p}[${i}]`, uid));
      else seen.add(uid);
    }
  }
}

/**
 * What only a new Job must pass: the generated selector and labels (Kubernetes'
 * validateGeneratedSelector) and, for an Indexed Job, a name its last pod's hostname
 * (`<name>-<completions-1>`) can be made from.
 */
export function validateJobCreate(job: Obj, errs: FieldError[]): void {
  const spec = specOf(job);
  const name = nameOf(job);
  validateGeneratedSelector(job, spec, name, errs);
  const completions = own(spec, 'completions');
  if (own(spec, 'completionMode') === 'Indexed' && typeof completions === 'number' && completions > 0) {
    const hostname = `${name}-${completions - 1}`;
    if (isDNS1123Label(hostname).length > 0) {
      errs.push(
        fieldErrors.invalid(
          'metadata.name',
          name,
          `will not able to create pod with invalid DNS label: ${hostname}`,
        ),
      );
    }
  }
}

function validateGeneratedSelector(job: Obj, spec: Obj, name: string, errs: FieldError[]): void {
  if (own(spec, 'manualSelector') === true) return;
  const selectorV = own(spec, 'selector');
  if (!isObj(selectorV)) return;
  const meta = own(job, 'metadata');
  const uidV = isObj(meta) ? own(meta, 'uid') : undefined;
  const uid = typeof uidV === 'string' ? uidV : '';
  if (!uid) errs.push(fieldErrors.required('metadata.uid'));
  const labels = templateLabels(spec);
  const expected: Record<string, string> = {
    [LEGACY_JOB_CONTROLLER_UID_LABEL]: uid,
    [LEGACY_JOB_NAME_LABEL]: name,
    [JOB_CONTROLLER_UID_LABEL]: uid,
    [JOB_NAME_LABEL]: name,
  };
  for (const [key, value] of Object.entries(expected)) {
    const path = `spec.template.metadata.labels[${key}]`;
    if (!Object.hasOwn(labels, key)) errs.push(fieldErrors.required(path, value));
    else if (labels[key] !== value) errs.push(fieldErrors.invalid(path, labels, `must be '${value}'`));
  }
  try {
    if (!labelSelectorAsSelector(selectorV as LabelSelector).matches(expected)) {
      errs.push(fieldErrors.invalid('spec.selector', selectorV, '`selector` not auto-generated'));
    }
  } catch {
    // An unparsable selector is reported by validateJob.
  }
}

/**
 * Kubernetes' ValidateJobSpecUpdate: selector, completion mode, pod failure policy and
 * per-index limit never change; completions only for an Indexed Job scaled in tandem
 * with parallelism; the template only while the Job is suspended and has not started
 * (then its scheduling directives: node affinity, node selector, tolerations, labels,
 * annotations, scheduling gates).
 */
export function validateJobUpdate(n: Obj, o: Obj, errs: FieldError[]): void {
  const ns = specOf(n);
  const os = specOf(o);
  validateCompletionsUpdate(ns, os, errs);
  immutable(own(ns, 'selector'), own(os, 'selector'), 'spec.selector', errs);
  validateTemplateUpdate(ns, os, mutableSchedulingDirectives(n, o), errs);
  immutable(own(ns, 'completionMode'), own(os, 'completionMode'), 'spec.completionMode', errs);
  immutable(own(ns, 'podFailurePolicy'), own(os, 'podFailurePolicy'), 'spec.podFailurePolicy', errs);
  immutable(
    own(ns, 'backoffLimitPerIndex'),
    own(os, 'backoffLimitPerIndex'),
    'spec.backoffLimitPerIndex',
    errs,
  );
}

function validateCompletionsUpdate(ns: Obj, os: Obj, errs: FieldError[]): void {
  const c = own(ns, 'completions');
  if (own(ns, 'completionMode') !== 'Indexed') {
    immutable(c, own(os, 'completions'), 'spec.completions', errs);
    return;
  }
  if (jsonEqual(c ?? null, own(os, 'completions') ?? null) || c == null) return;
  if (c !== own(ns, 'parallelism')) {
    errs.push(
      fieldErrors.invalid('spec.completions', c, 'can only be modified in tandem with spec.parallelism'),
    );
  }
}

/**
 * Kubernetes' Job strategy allows the scheduling directives of the template to change
 * while the Job is suspended and was never started (status.startTime unset), so a queue
 * can place it before letting it run.
 */
function mutableSchedulingDirectives(n: Obj, o: Obj): boolean {
  const status = isObj(own(o, 'status')) ? (own(o, 'status') as Obj) : {};
  return own(specOf(n), 'suspend') === true && own(status, 'startTime') == null;
}

function validateTemplateUpdate(ns: Obj, os: Obj, schedulingMutable: boolean, errs: FieldError[]): void {
  const template = own(ns, 'template');
  const oldTemplate = own(os, 'template');
  if (!schedulingMutable || !isObj(template) || !isObj(oldTemplate)) {
    immutable(template, oldTemplate, 'spec.template', errs);
    return;
  }
  // Compare with the directives taken over from the new template.
  const old = structuredClone(oldTemplate);
  const nmeta = isObj(own(template, 'metadata')) ? (own(template, 'metadata') as Obj) : {};
  const ometa = isObj(own(old, 'metadata')) ? (own(old, 'metadata') as Obj) : {};
  ometa.labels = own(nmeta, 'labels');
  ometa.annotations = own(nmeta, 'annotations');
  old.metadata = ometa;
  const nspec = isObj(own(template, 'spec')) ? (own(template, 'spec') as Obj) : {};
  const ospec = isObj(own(old, 'spec')) ? (own(old, 'spec') as Obj) : {};
  for (const f of ['nodeSelector', 'tolerations', 'schedulingGates']) ospec[f] = own(nspec, f);
  const affinity = own(nspec, 'affinity');
  const oldAffinity = own(ospec, 'affinity');
  if (isObj(affinity) || isObj(oldAffinity)) {
    const merged: Obj = { ...(isObj(oldAffinity) ? oldAffinity : {}) };
    if (isObj(affinity) && own(affinity, 'nodeAffinity') !== undefined)
      merged.nodeAffinity = own(affinity, 'nodeAffinity');
    else delete merged.nodeAffinity;
    ospec.affinity = Object.keys(merged).length > 0 || isObj(affinity) ? merged : undefined;
  }
  old.spec = ospec;
  immutable(stripUndefined(template), stripUndefined(old), 'spec.template', errs);
}

const stripUndefined = (v: unknown): unknown => JSON.parse(JSON.stringify(v ?? null));

// ---- CronJob ----------------------------------------------------------------------

/** Kubernetes' valid characters of one component of a time zone name. */
const TIME_ZONE_PART = /^[A-Za-z.\-_0-9+]{1,14}$/;

function validateTimeZone(v: unknown, path: string, errs: FieldError[]): void {
  const zone = strAt(v, path, errs);
  if (zone === undefined) return;
  if (zone === '') {
    errs.push(fieldErrors.invalid(path, zone, 'timeZone must be nil or non-empty string'));
    return;
  }
  for (const part of zone.split('/')) {
    if (part === '.' || part === '..' || part.startsWith('-') || !TIME_ZONE_PART.test(part)) {
      errs.push(fieldErrors.invalid(path, zone, `unknown time zone ${zone}`));
      return;
    }
  }
  if (zone.toLowerCase() === 'local') {
    errs.push(
      fieldErrors.invalid(
        path,
        zone,
        'timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones',
      ),
    );
    return;
  }
  try {
    parseCronSchedule('* * * * *', zone);
  } catch (e) {
    errs.push(fieldErrors.invalid(path, zone, (e as Error).message));
  }
}

function validateSchedule(
  schedule: string,
  allowTZ: boolean,
  hasTimeZone: boolean,
  errs: FieldError[],
): void {
  try {
    // The zone is checked on its own field; the schedule's fields are what is read here.
    parseCronSchedule(schedule);
  } catch (e) {
    errs.push(fieldErrors.invalid('spec.schedule', schedule, (e as Error).message));
  }
  const hasTZ = schedule.includes('TZ');
  if (allowTZ && hasTZ && hasTimeZone) {
    errs.push(
      fieldErrors.invalid(
        'spec.schedule',
        schedule,
        'cannot use both timeZone field and TZ or CRON_TZ in schedule',
      ),
    );
  } else if (!allowTZ && hasTZ) {
    errs.push(
      fieldErrors.invalid(
        'spec.schedule',
        schedule,
        'cannot use TZ or CRON_TZ in schedule, use timeZone field instead',
      ),
    );
  }
}

function validateCronJobSpec(spec: Obj, oldSpec: Obj | undefined, errs: FieldError[]): void {
  const schedule = strAt(own(spec, 'schedule'), 'spec.schedule', errs);
  const oldSchedule = oldSpec ? own(oldSpec, 'schedule') : undefined;
  if (!schedule) {
    if (schedule !== undefined || own(spec, 'schedule') == null)
      errs.push(fieldErrors.required('spec.schedule'));
  } else {
    const allowTZ = typeof oldSchedule === 'string' && oldSchedule.includes('TZ');
    validateSchedule(schedule, allowTZ, own(spec, 'timeZone') != null, errs);
  }
  nonNegativeInt(spec, 'startingDeadlineSeconds', 'spec', errs);
  if (!oldSpec || !jsonEqual(own(oldSpec, 'timeZone') ?? null, own(spec, 'timeZone') ?? null)) {
    validateTimeZone(own(spec, 'timeZone'), 'spec.timeZone', errs);
  }
  const policy = strAt(own(spec, 'concurrencyPolicy'), 'spec.concurrencyPolicy', errs);
  if (!policy) {
    if (own(spec, 'concurrencyPolicy') == null || policy === '')
      errs.push(fieldErrors.required('spec.concurrencyPolicy'));
  } else if (!CONCURRENCY_POLICIES.includes(policy)) {
    errs.push(fieldErrors.notSupported('spec.concurrencyPolicy', policy, CONCURRENCY_POLICIES));
  }
  validateJobTemplate(own(spec, 'jobTemplate'), errs);
  nonNegativeInt(spec, 'successfulJobsHistoryLimit', 'spec', errs);
  nonNegativeInt(spec, 'failedJobsHistoryLimit', 'spec', errs);
}

/** Kubernetes' ValidateJobTemplateSpec: a Job spec whose selector the Job will get generated. */
function validateJobTemplate(v: unknown, errs: FieldError[]): void {
  const p = 'spec.jobTemplate';
  const template = objAt(v, p, errs) ?? {};
  const meta = objAt(own(template, 'metadata'), `${p}.metadata`, errs);
  if (meta) {
    validateLabels(own(meta, 'labels'), `${p}.metadata.labels`, errs);
    validateAnnotations(own(meta, 'annotations'), `${p}.metadata.annotations`, errs);
  }
  const spec = objAt(own(template, 'spec'), `${p}.spec`, errs) ?? {};
  validateJobSpecFields(spec, `${p}.spec`, errs);
  const selector = own(spec, 'selector');
  if (selector != null) {
    errs.push(fieldErrors.invalid(`${p}.spec.selector`, selector, '`selector` will be auto-generated'));
  }
  if (own(spec, 'manualSelector') === true) {
    errs.push(fieldErrors.notSupported(`${p}.spec.manualSelector`, true, ['nil', 'false']));
  }
}

export function validateCronJob(cj: Obj, errs: FieldError[]): void {
  validateCronJobSpec(specOf(cj), undefined, errs);
}

/** The Job names the controller makes append `-<minutes>` (11 characters) to a 63-character limit. */
export const MAX_CRONJOB_NAME_LENGTH = 52;

/** A new CronJob: its spec, and a name short enough for the Jobs made from it. */
export function validateCronJobCreate(cj: Obj, errs: FieldError[]): void {
  validateCronJob(cj, errs);
  const name = nameOf(cj);
  if (name.length > MAX_CRONJOB_NAME_LENGTH) {
    errs.push(
      fieldErrors.invalid(
        'metadata.name',
        name,
        `must be no more than ${MAX_CRONJOB_NAME_LENGTH} characters`,
      ),
    );
  }
}

/** An update is validated as the new spec, except that a TZ the old schedule had may stay. */
export function validateCronJobUpdate(n: Obj, o: Obj, errs: FieldError[]): void {
  validateCronJobSpec(specOf(n), specOf(o), errs);
}
