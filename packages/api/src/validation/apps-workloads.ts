// apps/v1 DaemonSets, StatefulSets and ControllerRevisions, as Kubernetes'
// pkg/apis/apps/validation: selector vs template, update strategies, what a
// StatefulSet update may change, a revision's immutable data.

import { type FieldError, fieldErrors } from '../field-errors.js';
import { validateIntOrPercent, validateSelectorAndTemplate } from './kinds.js';
import { immutable } from './meta.js';
import { isDNS1123Label } from './names.js';
import {
  intAt,
  isObj,
  jsonEqual,
  nameErrors,
  nonNegative,
  type Obj,
  objAt,
  oneOf,
  own,
  strAt,
} from './util.js';

/** Minimum, revisionHistoryLimit and the activeDeadlineSeconds rule both kinds share. */
function validateWorkloadCommon(spec: Obj, kind: 'DaemonSet' | 'StatefulSet', errs: FieldError[]): void {
  nonNegative(
    intAt(own(spec, 'minReadySeconds'), 'spec.minReadySeconds', errs),
    'spec.minReadySeconds',
    errs,
  );
  nonNegative(
    intAt(own(spec, 'revisionHistoryLimit'), 'spec.revisionHistoryLimit', errs),
    'spec.revisionHistoryLimit',
    errs,
  );
  // A StatefulSet's pods also get a volume per claim template, which their containers mount.
  const claimNames = Array.isArray(own(spec, 'volumeClaimTemplates'))
    ? (own(spec, 'volumeClaimTemplates') as unknown[])
        .map((t) =>
          isObj(t) && isObj(own(t, 'metadata')) ? own(own(t, 'metadata') as Obj, 'name') : undefined,
        )
        .filter((n): n is string => typeof n === 'string')
    : [];
  validateSelectorAndTemplate(spec, errs, kind.toLowerCase(), claimNames);
  const template = own(spec, 'template');
  const podSpec = isObj(template) ? own(template, 'spec') : undefined;
  const deadline = isObj(podSpec) ? own(podSpec, 'activeDeadlineSeconds') : undefined;
  if (deadline !== undefined && deadline !== null) {
    errs.push(
      fieldErrors.invalid(
        'spec.template.spec.activeDeadlineSeconds',
        deadline,
        `activeDeadlineSeconds in ${kind} is not Supported`,
      ),
    );
  }
}

const intOrPercentValue = (r: { value: number } | undefined): number => r?.value ?? 0;

function notOver100(
  v: unknown,
  r: { value: number; percent: boolean } | undefined,
  path: string,
  errs: FieldError[],
) {
  if (r?.percent && r.value > 100) errs.push(fieldErrors.invalid(path, v, 'must not be greater than 100%'));
}

export function validateDaemonSet(ds: Obj, errs: FieldError[]): void {
  const spec = objAt(own(ds, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  validateWorkloadCommon(spec, 'DaemonSet', errs);
  const strategy = objAt(own(spec, 'updateStrategy'), 'spec.updateStrategy', errs);
  if (!strategy) return;
  const p = 'spec.updateStrategy';
  const type = strAt(own(strategy, 'type'), `${p}.type`, errs);
  if (!type) {
    errs.push(fieldErrors.required(`${p}.type`));
    return;
  }
  oneOf(type, ['OnDelete', 'RollingUpdate'], `${p}.type`, errs);
  if (type !== 'RollingUpdate') return;
  const rolling = objAt(own(strategy, 'rollingUpdate'), `${p}.rollingUpdate`, errs);
  if (!rolling) {
    errs.push(fieldErrors.required(`${p}.rollingUpdate`));
    return;
  }
  const rp = `${p}.rollingUpdate`;
  const unavailableV = own(rolling, 'maxUnavailable');
  const surgeV = own(rolling, 'maxSurge');
  const unavailable = validateIntOrPercent(unavailableV, `${rp}.maxUnavailable`, errs);
  const surge = validateIntOrPercent(surgeV, `${rp}.maxSurge`, errs);
  notOver100(unavailableV, unavailable, `${rp}.maxUnavailable`, errs);
  notOver100(surgeV, surge, `${rp}.maxSurge`, errs);
  // Exactly one of the two may be non-zero (Kubernetes' ValidateRollingUpdateDaemonSet).
  const hasUnavailable = intOrPercentValue(unavailable) !== 0;
  const hasSurge = intOrPercentValue(surge) !== 0;
  if (hasUnavailable && hasSurge) {
    errs.push(
      fieldErrors.invalid(`${rp}.maxSurge`, surgeV, 'may not be set when maxUnavailable is non-zero'),
    );
  } else if (!hasUnavailable && !hasSurge) {
    errs.push(fieldErrors.required(`${rp}.maxUnavailable`, 'cannot be 0 when maxSurge is 0'));
  }
}

export function validateDaemonSetUpdate(n: Obj, o: Obj, errs: FieldError[]): void {
  immutable(specOf(n).selector, specOf(o).selector, 'spec.selector', errs);
}

const specOf = (o: Obj): Obj => (isObj(own(o, 'spec')) ? (own(o, 'spec') as Obj) : {});

export const POD_MANAGEMENT_POLICIES = ['OrderedReady', 'Parallel'];
export const PVC_RETENTION_POLICIES = ['Retain', 'Delete'];

export function validateStatefulSet(sts: Obj, errs: FieldError[]): void {
  const spec = objAt(own(sts, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  nonNegative(intAt(own(spec, 'replicas'), 'spec.replicas', errs), 'spec.replicas', errs);
  validateWorkloadCommon(spec, 'StatefulSet', errs);
  const serviceName = strAt(own(spec, 'serviceName'), 'spec.serviceName', errs);
  if (serviceName) nameErrors(serviceName, isDNS1123Label(serviceName), 'spec.serviceName', errs);
  const policy = own(spec, 'podManagementPolicy');
  if (policy !== undefined && !POD_MANAGEMENT_POLICIES.includes(policy as string)) {
    errs.push(
      fieldErrors.invalid('spec.podManagementPolicy', policy, "must be 'OrderedReady' or 'Parallel'"),
    );
  }
  const ordinals = objAt(own(spec, 'ordinals'), 'spec.ordinals', errs);
  if (ordinals) {
    nonNegative(intAt(own(ordinals, 'start'), 'spec.ordinals.start', errs), 'spec.ordinals.start', errs);
  }
  const retention = objAt(
    own(spec, 'persistentVolumeClaimRetentionPolicy'),
    'spec.persistentVolumeClaimRetentionPolicy',
    errs,
  );
  for (const f of ['whenDeleted', 'whenScaled']) {
    const v = retention ? own(retention, f) : undefined;
    if (v !== undefined) {
      oneOf(v as string, PVC_RETENTION_POLICIES, `spec.persistentVolumeClaimRetentionPolicy.${f}`, errs);
    }
  }
  validateClaimTemplates(own(spec, 'volumeClaimTemplates'), errs);
  validateStatefulSetStrategy(spec, errs);
}

function validateStatefulSetStrategy(spec: Obj, errs: FieldError[]): void {
  const p = 'spec.updateStrategy';
  const strategy = objAt(own(spec, 'updateStrategy'), p, errs);
  if (!strategy) return;
  const type = strAt(own(strategy, 'type'), `${p}.type`, errs);
  const rolling = objAt(own(strategy, 'rollingUpdate'), `${p}.rollingUpdate`, errs);
  if (!type) {
    errs.push(fieldErrors.required(p));
  } else if (type === 'OnDelete') {
    if (rolling) {
      errs.push(
        fieldErrors.invalid(`${p}.rollingUpdate`, rolling, "only allowed for updateStrategy 'RollingUpdate'"),
      );
    }
  } else if (type === 'RollingUpdate') {
    if (!rolling) return;
    nonNegative(
      intAt(own(rolling, 'partition'), `${p}.rollingUpdate.partition`, errs),
      `${p}.rollingUpdate.partition`,
      errs,
    );
    const mu = own(rolling, 'maxUnavailable');
    const r = validateIntOrPercent(mu, `${p}.rollingUpdate.maxUnavailable`, errs);
    notOver100(mu, r, `${p}.rollingUpdate.maxUnavailable`, errs);
    if (r && r.value === 0) {
      errs.push(fieldErrors.invalid(`${p}.rollingUpdate.maxUnavailable`, mu, 'must be greater than 0'));
    }
  } else {
    errs.push(fieldErrors.invalid(p, type, "must be 'RollingUpdate' or 'OnDelete'"));
  }
}

export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'];

/** Each template is a claim: a name, access modes and a storage request. */
function validateClaimTemplates(v: unknown, errs: FieldError[]): void {
  if (v === undefined || v === null) return;
  if (!Array.isArray(v)) {
    errs.push(fieldErrors.typeInvalid('spec.volumeClaimTemplates', v, 'must be an array'));
    return;
  }
  v.forEach((t, i) => {
    const p = `spec.volumeClaimTemplates[${i}]`;
    const tmpl = objAt(t, p, errs);
    if (!tmpl) return;
    const meta = objAt(own(tmpl, 'metadata'), `${p}.metadata`, errs);
    const name = meta ? own(meta, 'name') : undefined;
    if (typeof name !== 'string' || name === '')
      errs.push(fieldErrors.required(`${p}.metadata.name`, 'name or generateName is required'));
    const cspec = objAt(own(tmpl, 'spec'), `${p}.spec`, errs) ?? {};
    const modes = own(cspec, 'accessModes');
    if (!Array.isArray(modes) || modes.length === 0) {
      errs.push(fieldErrors.required(`${p}.spec.accessModes`, 'at least 1 access mode is required'));
    } else {
      for (const m of modes) oneOf(m as string, ACCESS_MODES, `${p}.spec.accessModes`, errs);
    }
    const resources = isObj(own(cspec, 'resources')) ? (own(cspec, 'resources') as Obj) : {};
    const requests = isObj(own(resources, 'requests')) ? (own(resources, 'requests') as Obj) : {};
    if (own(requests, 'storage') === undefined) {
      errs.push(fieldErrors.required(`${p}.spec.resources[storage]`, ''));
    }
  });
}

const STS_UPDATABLE = [
  'replicas',
  'ordinals',
  'template',
  'updateStrategy',
  'persistentVolumeClaimRetentionPolicy',
  'minReadySeconds',
];

/** Only replicas, ordinals, template, updateStrategy, the retention policy and minReadySeconds change. */
export function validateStatefulSetUpdate(n: Obj, o: Obj, errs: FieldError[]): void {
  const ns = { ...specOf(n) };
  const os = { ...specOf(o) };
  for (const f of STS_UPDATABLE) {
    delete ns[f];
    delete os[f];
  }
  if (!jsonEqual(ns, os)) {
    errs.push(
      fieldErrors.forbidden(
        'spec',
        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
      ),
    );
  }
}

export function validateControllerRevision(cr: Obj, errs: FieldError[]): void {
  const data = own(cr, 'data');
  if (data === undefined || data === null) errs.push(fieldErrors.required('data', 'data is mandatory'));
  nonNegative(intAt(own(cr, 'revision'), 'revision', errs), 'revision', errs);
}

export function validateControllerRevisionUpdate(n: Obj, o: Obj, errs: FieldError[]): void {
  immutable(own(n, 'data'), own(o, 'data'), 'data', errs);
}
