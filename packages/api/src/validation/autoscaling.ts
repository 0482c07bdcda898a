// HorizontalPodAutoscalers (autoscaling/v2 and v1): Kubernetes' rules
// (pkg/apis/autoscaling/validation) with its field paths and messages: minReplicas at
// least 1, maxReplicas positive and not below minReplicas, a scale target with a kind and
// a name, each metric of one source type with a valid target, behavior's windows, select
// policies and scaling policies in range. Run after defaulting, as Kubernetes does.
import { type FieldError, fieldErrors } from '../field-errors.js';
import { tryParseQuantity } from '../quantity.js';
import { nameIsPathSegment } from './meta.js';
import { isDNS1123Label } from './names.js';
import { isObj, type Obj, own } from './util.js';

export const MAX_PERIOD_SECONDS = 1800;
export const MAX_STABILIZATION_WINDOW_SECONDS = 3600;
const METRIC_SOURCE_TYPES = ['ContainerResource', 'External', 'Object', 'Pods', 'Resource'];
const SOURCE_FIELDS: Record<string, string> = {
  Object: 'object',
  Pods: 'pods',
  Resource: 'resource',
  External: 'external',
  ContainerResource: 'containerResource',
};

const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function validateReference(ref: unknown, path: string, errs: FieldError[]): void {
  const r = isObj(ref) ? ref : {};
  for (const field of ['kind', 'name']) {
    const v = str(own(r, field));
    if (!v) errs.push(fieldErrors.required(`${path}.${field}`));
    else
      for (const msg of nameIsPathSegment(v, false))
        errs.push(fieldErrors.invalid(`${path}.${field}`, v, msg));
  }
}

function positiveQuantity(v: unknown, path: string, errs: FieldError[]): void {
  if (v === undefined) return;
  const q = tryParseQuantity(String(v));
  if (!q || (q.value() <= 0 && q.milliValue() <= 0))
    errs.push(fieldErrors.invalid(path, v, 'must be positive'));
}

function validateTarget(t: unknown, path: string, errs: FieldError[]): Obj {
  const target = isObj(t) ? t : {};
  const type = str(own(target, 'type'));
  if (!type) errs.push(fieldErrors.required(`${path}.type`, 'must specify a metric target type'));
  if (!['Utilization', 'Value', 'AverageValue'].includes(type))
    errs.push(
      fieldErrors.invalid(`${path}.type`, type, 'must be either Utilization, Value, or AverageValue'),
    );
  positiveQuantity(own(target, 'value'), `${path}.value`, errs);
  positiveQuantity(own(target, 'averageValue'), `${path}.averageValue`, errs);
  const util = num(own(target, 'averageUtilization'));
  if (util !== undefined && util < 1)
    errs.push(fieldErrors.invalid(`${path}.averageUtilization`, util, 'must be greater than 0'));
  return target;
}

function validateMetricIdentifier(m: unknown, path: string, errs: FieldError[]): void {
  const name = str(own(isObj(m) ? m : {}, 'name'));
  if (!name) errs.push(fieldErrors.required(`${path}.name`, 'must specify a metric name'));
  else
    for (const msg of nameIsPathSegment(name, false))
      errs.push(fieldErrors.invalid(`${path}.name`, name, msg));
}

function validateSource(type: string, src: Obj, path: string, errs: FieldError[]): void {
  const target = validateTarget(own(src, 'target'), `${path}.target`, errs);
  const has = (f: string) => own(target, f) !== undefined;
  switch (type) {
    case 'Resource':
    case 'ContainerResource': {
      if (!str(own(src, 'name')))
        errs.push(fieldErrors.required(`${path}.name`, 'must specify a resource name'));
      if (type === 'ContainerResource') {
        const c = str(own(src, 'container'));
        if (!c) errs.push(fieldErrors.required(`${path}.container`, 'must specify a container'));
        else for (const msg of isDNS1123Label(c)) errs.push(fieldErrors.invalid(`${path}.container`, c, msg));
      }
      if (!has('averageUtilization') && !has('averageValue'))
        errs.push(
          fieldErrors.required(
            `${path}.target.averageUtilization`,
            'must set either a target raw value or a target utilization',
          ),
        );
      if (has('averageUtilization') && has('averageValue'))
        errs.push(
          fieldErrors.forbidden(
            `${path}.target.averageValue`,
            'may not set both a target raw value and a target utilization',
          ),
        );
      break;
    }
    case 'Pods':
      validateMetricIdentifier(own(src, 'metric'), `${path}.metric`, errs);
      if (!has('averageValue'))
        errs.push(
          fieldErrors.required(`${path}.target.averageValue`, 'must specify a positive target averageValue'),
        );
      break;
    case 'Object':
      validateReference(own(src, 'describedObject'), `${path}.describedObject`, errs);
      validateMetricIdentifier(own(src, 'metric'), `${path}.metric`, errs);
      if (!has('value') && !has('averageValue'))
        errs.push(
          fieldErrors.required(
            `${path}.target.averageValue`,
            'must set either a target value or averageValue',
          ),
        );
      break;
    case 'External':
      validateMetricIdentifier(own(src, 'metric'), `${path}.metric`, errs);
      if (!has('value') && !has('averageValue'))
        errs.push(
          fieldErrors.required(
            `${path}.target.averageValue`,
            'must set either a target value for metric or a per-pod target',
          ),
        );
      if (has('value') && has('averageValue'))
        errs.push(
          fieldErrors.forbidden(
            `${path}.target.value`,
            'may not set both a target value for metric and a per-pod target',
          ),
        );
      break;
  }
}

function validateMetric(m: unknown, path: string, errs: FieldError[]): void {
  const spec = isObj(m) ? m : {};
  const type = str(own(spec, 'type'));
  if (!type) errs.push(fieldErrors.required(`${path}.type`, 'must specify a metric source type'));
  if (!METRIC_SOURCE_TYPES.includes(type))
    errs.push(fieldErrors.notSupported(`${path}.type`, type, METRIC_SOURCE_TYPES));
  const present = Object.values(SOURCE_FIELDS).filter((f) => own(spec, f) !== undefined);
  if (present.length === 1 && isObj(own(spec, present[0]))) {
    const srcType = Object.keys(SOURCE_FIELDS).find((k) => SOURCE_FIELDS[k] === present[0]) ?? '';
    validateSource(srcType, own(spec, present[0]) as Obj, `${path}.${present[0]}`, errs);
  }
  const expected = SOURCE_FIELDS[type];
  if (expected && own(spec, expected) === undefined)
    errs.push(
      fieldErrors.required(`${path}.${expected}`, 'must populate information for the given metric source'),
    );
  if (present.length !== 1)
    for (const f of present)
      if (f !== expected)
        errs.push(fieldErrors.forbidden(`${path}.${f}`, 'must populate the given metric source only'));
}

function validateRules(r: unknown, path: string, errs: FieldError[]): void {
  if (r === undefined || r === null) return;
  const rules = isObj(r) ? r : {};
  const window = num(own(rules, 'stabilizationWindowSeconds'));
  if (window !== undefined && window < 0)
    errs.push(
      fieldErrors.invalid(
        `${path}.stabilizationWindowSeconds`,
        window,
        'must be greater than or equal to zero',
      ),
    );
  if (window !== undefined && window > MAX_STABILIZATION_WINDOW_SECONDS)
    errs.push(
      fieldErrors.invalid(
        `${path}.stabilizationWindowSeconds`,
        window,
        `must be less than or equal to ${MAX_STABILIZATION_WINDOW_SECONDS}`,
      ),
    );
  const select = own(rules, 'selectPolicy');
  if (select !== undefined && !['Disabled', 'Max', 'Min'].includes(str(select)))
    errs.push(fieldErrors.notSupported(`${path}.selectPolicy`, select, ['Disabled', 'Max', 'Min']));
  const policies = own(rules, 'policies');
  const list = Array.isArray(policies) ? policies : [];
  if (list.length === 0)
    errs.push(fieldErrors.required(`${path}.policies`, 'must specify at least one Policy'));
  for (const [i, p] of list.entries()) {
    const pp = `${path}.policies[${i}]`;
    const policy = isObj(p) ? p : {};
    const type = str(own(policy, 'type'));
    if (type !== 'Pods' && type !== 'Percent')
      errs.push(fieldErrors.notSupported(`${pp}.type`, type, ['Percent', 'Pods']));
    const value = num(own(policy, 'value')) ?? 0;
    if (value <= 0) errs.push(fieldErrors.invalid(`${pp}.value`, value, 'must be greater than zero'));
    const period = num(own(policy, 'periodSeconds')) ?? 0;
    if (period <= 0)
      errs.push(fieldErrors.invalid(`${pp}.periodSeconds`, period, 'must be greater than zero'));
    if (period > MAX_PERIOD_SECONDS)
      errs.push(
        fieldErrors.invalid(
          `${pp}.periodSeconds`,
          period,
          `must be less than or equal to ${MAX_PERIOD_SECONDS}`,
        ),
      );
  }
}

function validateReplicas(spec: Obj, errs: FieldError[]): void {
  const min = num(own(spec, 'minReplicas'));
  const max = num(own(spec, 'maxReplicas')) ?? 0;
  if (min !== undefined && min < 1)
    errs.push(fieldErrors.invalid('spec.minReplicas', min, 'must be greater than or equal to 1'));
  if (max < 1) errs.push(fieldErrors.invalid('spec.maxReplicas', max, 'must be greater than 0'));
  if (min !== undefined && max < min)
    errs.push(fieldErrors.invalid('spec.maxReplicas', max, 'must be greater than or equal to `minReplicas`'));
  validateReference(own(spec, 'scaleTargetRef'), 'spec.scaleTargetRef', errs);
}

export function validateHorizontalPodAutoscaler(o: Obj, errs: FieldError[]): void {
  const spec = isObj(o.spec) ? o.spec : {};
  validateReplicas(spec, errs);
  if (o.apiVersion === 'autoscaling/v1') {
    const cpu = num(own(spec, 'targetCPUUtilizationPercentage'));
    if (cpu !== undefined && cpu < 1)
      errs.push(
        fieldErrors.invalid('spec.targetCPUUtilizationPercentage', cpu, 'must be greater than or equal to 1'),
      );
    return;
  }
  const metrics = own(spec, 'metrics');
  for (const [i, m] of (Array.isArray(metrics) ? metrics : []).entries())
    validateMetric(m, `spec.metrics[${i}]`, errs);
  const behavior = own(spec, 'behavior');
  if (isObj(behavior)) {
    validateRules(own(behavior, 'scaleUp'), 'spec.behavior.scaleUp', errs);
    validateRules(own(behavior, 'scaleDown'), 'spec.behavior.scaleDown', errs);
  }
}

export function validateHorizontalPodAutoscalerStatus(o: Obj, errs: FieldError[]): void {
  const status = isObj(o.status) ? o.status : {};
  for (const f of ['currentReplicas', 'desiredReplicas']) {
    const v = num(own(status, f));
    if (v !== undefined && v < 0)
      errs.push(fieldErrors.invalid(`status.${f}`, v, 'must be greater than or equal to 0'));
  }
}
