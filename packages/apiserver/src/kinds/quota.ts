// core/v1 ResourceQuota (status.hard/used kept by the controller manager's
// resourcequota controller; enforced by admission/quota.ts) and LimitRange
// (applied to pods by admission/limitranger.ts). Defaults and validation after
// Kubernetes' SetDefaults_LimitRangeItem and ValidateResourceQuota/ValidateLimitRange.
import { type FieldError, fieldErrors, tryParseQuantity } from '@kubit/api';
import { objectMeta, S } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type KindDef, obj } from './types.js';

const typeMeta = { apiVersion: S.str, kind: S.str, metadata: objectMeta };
const resourceList = S.map(S.quantity);
const RESOURCE_NAME = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LIMIT_TYPES = ['Container', 'Pod', 'PersistentVolumeClaim'];

function validateResourceList(list: unknown, path: string, errs: FieldError[]): void {
  for (const [k, v] of Object.entries(obj(list))) {
    if (!RESOURCE_NAME.test(k))
      errs.push(fieldErrors.invalid(`${path}[${k}]`, k, 'must be a standard resource name'));
    const q = tryParseQuantity(String(v));
    if (!q) {
      errs.push(
        fieldErrors.invalid(
          `${path}[${k}]`,
          v,
          "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
      );
    } else if (q.sign() < 0)
      errs.push(fieldErrors.invalid(`${path}[${k}]`, v, 'must be greater than or equal to 0'));
  }
}

export const resourcequotas: KindDef = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  resource: 'resourcequotas',
  singular: 'resourcequota',
  namespaced: true,
  shortNames: ['quota'],
  schema: S.obj({
    ...typeMeta,
    spec: S.obj({ hard: resourceList, scopes: S.list(S.str), scopeSelector: S.any }),
    status: S.obj({ hard: resourceList, used: resourceList }),
  }),
  nameRule: 'subdomain',
  subresources: [statusSubresource],
  // A count no test writes toward, so the example never stands in the way of other writes.
  example: { spec: { hard: { 'count/examples.example.kubit.dev': '10' } } },
  prepareForCreate(q: KObject) {
    delete q.status;
  },
  prepareForUpdate(q: KObject, old: KObject) {
    q.status = old.status;
  },
  prepareForStatusUpdate(q: KObject, old: KObject) {
    q.spec = old.spec;
  },
  validate(q) {
    const errs: FieldError[] = [];
    validateResourceList(obj(q.spec).hard, 'spec.hard', errs);
    validateResourceList(obj(q.status).hard, 'status.hard', errs);
    validateResourceList(obj(q.status).used, 'status.used', errs);
    return errs;
  },
  table: {
    columns: [
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
      {
        name: 'Request',
        type: 'string',
        description: 'Request represents a minimum amount of cpu/memory that a container may consume.',
        priority: 0,
      },
      {
        name: 'Limit',
        type: 'string',
        description:
          'Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.',
        priority: 0,
      },
    ],
    cells(q, now) {
      const hard = obj(obj(q.status).hard);
      const used = obj(obj(q.status).used);
      const part = (limits: boolean) =>
        Object.keys(hard)
          .filter((k) => k.startsWith('limits.') === limits)
          .sort()
          .map((k) => `${k}: ${String(used[k] ?? '0')}/${String(hard[k])}`)
          .join(', ');
      return [age(q, now), part(false), part(true)];
    },
  },
};

/** SetDefaults_LimitRangeItem: a Container's default limit is its max, its default request its default limit. */
function defaultLimitRange(lr: KObject): void {
  for (const item of arr(obj(lr.spec).limits).map(obj)) {
    if (item.type !== 'Container') continue;
    const max = obj(item.max);
    const def = { ...obj(item.default) };
    for (const [k, v] of Object.entries(max)) if (def[k] === undefined) def[k] = v;
    if (Object.keys(def).length > 0) item.default = def;
    const req = { ...obj(item.defaultRequest) };
    for (const [k, v] of Object.entries(def)) if (req[k] === undefined) req[k] = v;
    if (Object.keys(req).length > 0) item.defaultRequest = req;
  }
}

function validateLimitRange(lr: KObject): FieldError[] {
  const errs: FieldError[] = [];
  arr(obj(lr.spec).limits).forEach((raw, i) => {
    const item = obj(raw);
    const path = `spec.limits[${i}]`;
    if (!LIMIT_TYPES.includes(String(item.type))) {
      errs.push(fieldErrors.notSupported(`${path}.type`, item.type, LIMIT_TYPES));
    }
    for (const f of ['max', 'min', 'default', 'defaultRequest', 'maxLimitRequestRatio']) {
      validateResourceList(item[f], `${path}.${f}`, errs);
    }
    if (item.type === 'Pod' && (item.default !== undefined || item.defaultRequest !== undefined)) {
      errs.push(fieldErrors.forbidden(`${path}.default`, "may not be specified when `type` is 'Pod'"));
    }
    const q = (f: string, k: string) => tryParseQuantity(String(obj(item[f])[k] ?? ''));
    const keys = new Set(
      ['max', 'min', 'default', 'defaultRequest'].flatMap((f) => Object.keys(obj(item[f]))),
    );
    for (const k of keys) {
      const min = q('min', k);
      const max = q('max', k);
      const dflt = q('default', k);
      const dreq = q('defaultRequest', k);
      if (min && max && min.cmp(max) > 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.min[${k}]`,
            String(min),
            `min value ${min} is greater than max value ${max}`,
          ),
        );
      }
      if (dreq && max && dreq.cmp(max) > 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.defaultRequest[${k}]`,
            String(dreq),
            `default request value ${dreq} is greater than max value ${max}`,
          ),
        );
      }
      if (dreq && min && dreq.cmp(min) < 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.defaultRequest[${k}]`,
            String(dreq),
            `min value ${min} is greater than default request value ${dreq}`,
          ),
        );
      }
      if (dflt && max && dflt.cmp(max) > 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.default[${k}]`,
            String(dflt),
            `default value ${dflt} is greater than max value ${max}`,
          ),
        );
      }
      if (dflt && min && dflt.cmp(min) < 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.default[${k}]`,
            String(dflt),
            `min value ${min} is greater than default value ${dflt}`,
          ),
        );
      }
      if (dreq && dflt && dreq.cmp(dflt) > 0) {
        errs.push(
          fieldErrors.invalid(
            `${path}.defaultRequest[${k}]`,
            String(dreq),
            `default request value ${dreq} is greater than default limit value ${dflt}`,
          ),
        );
      }
    }
  });
  return errs;
}

const itemSchema = S.obj({
  type: S.str,
  max: resourceList,
  min: resourceList,
  default: resourceList,
  defaultRequest: resourceList,
  maxLimitRequestRatio: resourceList,
});

export const limitranges: KindDef = {
  group: '',
  version: 'v1',
  kind: 'LimitRange',
  resource: 'limitranges',
  singular: 'limitrange',
  namespaced: true,
  shortNames: ['limits'],
  schema: S.obj({ ...typeMeta, spec: S.obj({ limits: S.list(itemSchema) }) }),
  nameRule: 'subdomain',
  subresources: [],
  // Claims' limits only: the example never changes the pods other tests create.
  example: { spec: { limits: [{ type: 'PersistentVolumeClaim', max: { storage: '1Ei' } }] } },
  defaults: defaultLimitRange,
  validate: validateLimitRange,
  table: {
    columns: [{ name: 'Created At', type: 'date', description: 'CreationTimestamp', priority: 0 }],
    cells: (lr) => [String(lr.metadata?.creationTimestamp ?? '')],
  },
};
