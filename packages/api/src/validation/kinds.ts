// Kind-specific validation beyond ObjectMeta and PodSpec: nodes, namespaces, config
// maps, secrets, leases, RBAC, apps and events. Each function appends field errors.

import { isIP } from 'node:net';
import { type FieldError, fieldErrors } from '../field-errors.js';
import { type LabelSelector, LabelSelectorParseError, labelSelectorAsSelector } from '../labels.js';
import { parseQuantity, QuantityParseError } from '../quantity.js';
import { immutable, validateLabels } from './meta.js';
import { isConfigMapKey, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from './names.js';
import { TAINT_EFFECTS, validatePodSpec } from './pod.js';
import {
  arrAt,
  boolAt,
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
  stringMapAt,
} from './util.js';

/** ConfigMaps and Secrets may hold at most 1 MiB of data. */
export const MAX_DATA_SIZE = 1024 * 1024;
const IMMUTABLE_WHEN_SET = 'field is immutable when `immutable` is set';

// ---- Node -----------------------------------------------------------------------------

function isCIDR(v: string): boolean {
  const slash = v.indexOf('/');
  if (slash < 0) return false;
  const ip = v.slice(0, slash);
  const bits = v.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(bits)) return false;
  const family = isIP(ip);
  const n = Number(bits);
  return (family === 4 && n <= 32) || (family === 6 && n <= 128);
}

function validateTaints(v: unknown, path: string, errs: FieldError[]): void {
  const seen = new Set<string>();
  for (const [i, item] of arrAt(v, path, errs).entries()) {
    const p = `${path}[${i}]`;
    const t = objAt(item, p, errs);
    if (!t) continue;
    const key = strAt(own(t, 'key'), `${p}.key`, errs) ?? '';
    if (!key) errs.push(fieldErrors.required(`${p}.key`));
    else nameErrors(key, isQualifiedName(key), `${p}.key`, errs);
    const value = strAt(own(t, 'value'), `${p}.value`, errs) ?? '';
    nameErrors(value, isValidLabelValue(value), `${p}.value`, errs);
    const effect = strAt(own(t, 'effect'), `${p}.effect`, errs) ?? '';
    if (!effect) errs.push(fieldErrors.required(`${p}.effect`));
    else oneOf(effect, TAINT_EFFECTS, `${p}.effect`, errs);
    const id = `${key}:${effect}`;
    if (seen.has(id)) errs.push(fieldErrors.duplicate(p, t));
    seen.add(id);
  }
}

function validateResourceList(v: unknown, path: string, errs: FieldError[]): void {
  const m = objAt(v, path, errs);
  if (!m) return;
  for (const k of Object.keys(m)) {
    const val = m[k];
    if (typeof val !== 'string' && typeof val !== 'number') {
      errs.push(fieldErrors.typeInvalid(`${path}[${k}]`, val, 'must be a quantity'));
      continue;
    }
    try {
      if (parseQuantity(String(val)).sign() < 0) {
        errs.push(fieldErrors.invalid(`${path}[${k}]`, String(val), 'must be greater than or equal to 0'));
      }
    } catch (e) {
      errs.push(
        fieldErrors.invalid(`${path}[${k}]`, val, e instanceof QuantityParseError ? e.reason : String(e)),
      );
    }
  }
}

export function validateNode(node: Obj, errs: FieldError[]): void {
  const spec = objAt(own(node, 'spec'), 'spec', errs);
  if (spec) {
    const podCIDR = strAt(own(spec, 'podCIDR'), 'spec.podCIDR', errs);
    if (podCIDR && !isCIDR(podCIDR)) {
      errs.push(
        fieldErrors.invalid(
          'spec.podCIDR',
          podCIDR,
          'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
        ),
      );
    }
    const cidrs = arrAt(own(spec, 'podCIDRs'), 'spec.podCIDRs', errs);
    cidrs.forEach((c, i) => {
      const s = strAt(c, `spec.podCIDRs[${i}]`, errs);
      if (s !== undefined && !isCIDR(s)) {
        errs.push(
          fieldErrors.invalid(
            `spec.podCIDRs[${i}]`,
            s,
            'must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
          ),
        );
      }
    });
    if (cidrs.length > 2)
      errs.push(
        fieldErrors.invalid('spec.podCIDRs', cidrs, 'may specify no more than one CIDR for each IP family'),
      );
    if (podCIDR && cidrs.length > 0 && cidrs[0] !== podCIDR) {
      errs.push(fieldErrors.invalid('spec.podCIDRs', cidrs, 'must match spec.podCIDR as its first element'));
    }
    validateTaints(own(spec, 'taints'), 'spec.taints', errs);
    boolAt(own(spec, 'unschedulable'), 'spec.unschedulable', errs);
  }
  const status = objAt(own(node, 'status'), 'status', errs);
  if (status) {
    validateResourceList(own(status, 'capacity'), 'status.capacity', errs);
    validateResourceList(own(status, 'allocatable'), 'status.allocatable', errs);
  }
}

export function validateNodeUpdate(newNode: Obj, oldNode: Obj, errs: FieldError[]): void {
  const ns = isObj(own(newNode, 'spec')) ? (own(newNode, 'spec') as Obj) : {};
  const os = isObj(own(oldNode, 'spec')) ? (own(oldNode, 'spec') as Obj) : {};
  const cidrMessage = 'node updates may not change podCIDR except from "" to valid';
  const oldCIDRs = Array.isArray(own(os, 'podCIDRs')) ? (own(os, 'podCIDRs') as unknown[]) : [];
  if (oldCIDRs.length > 0 && !jsonEqual(own(ns, 'podCIDRs'), oldCIDRs)) {
    errs.push(fieldErrors.forbidden('spec.podCIDRs', cidrMessage));
  }
  const oldCIDR = own(os, 'podCIDR');
  if (typeof oldCIDR === 'string' && oldCIDR !== '' && own(ns, 'podCIDR') !== oldCIDR) {
    errs.push(fieldErrors.forbidden('spec.podCIDR', cidrMessage));
  }
  const oldProvider = own(os, 'providerID');
  if (typeof oldProvider === 'string' && oldProvider !== '' && own(ns, 'providerID') !== oldProvider) {
    errs.push(
      fieldErrors.forbidden(
        'spec.providerID',
        'node updates may not change providerID except from "" to valid',
      ),
    );
  }
}

// ---- Namespace, ServiceAccount, Lease ---------------------------------------------------

export function validateNamespace(ns: Obj, errs: FieldError[]): void {
  const spec = objAt(own(ns, 'spec'), 'spec', errs);
  if (!spec) return;
  for (const [i, f] of arrAt(own(spec, 'finalizers'), 'spec.finalizers', errs).entries()) {
    const s = strAt(f, `spec.finalizers[${i}]`, errs);
    if (s !== undefined) nameErrors(s, isQualifiedName(s), `spec.finalizers[${i}]`, errs);
  }
}

export function validateServiceAccount(sa: Obj, errs: FieldError[]): void {
  for (const field of ['secrets', 'imagePullSecrets']) {
    for (const [i, s] of arrAt(own(sa, field), field, errs).entries()) objAt(s, `${field}[${i}]`, errs);
  }
  boolAt(own(sa, 'automountServiceAccountToken'), 'automountServiceAccountToken', errs);
}

export function validateLease(lease: Obj, errs: FieldError[]): void {
  const spec = objAt(own(lease, 'spec'), 'spec', errs);
  if (!spec) return;
  const duration = intAt(own(spec, 'leaseDurationSeconds'), 'spec.leaseDurationSeconds', errs);
  if (duration !== undefined && duration <= 0) {
    errs.push(fieldErrors.invalid('spec.leaseDurationSeconds', duration, 'must be greater than 0'));
  }
  nonNegative(
    intAt(own(spec, 'leaseTransitions'), 'spec.leaseTransitions', errs),
    'spec.leaseTransitions',
    errs,
  );
  strAt(own(spec, 'holderIdentity'), 'spec.holderIdentity', errs);
  strAt(own(spec, 'acquireTime'), 'spec.acquireTime', errs);
  strAt(own(spec, 'renewTime'), 'spec.renewTime', errs);
}

// ---- ConfigMap and Secret ---------------------------------------------------------------

function validateDataKeys(o: Obj, fields: readonly string[], errs: FieldError[]): number {
  let total = 0;
  const seen = new Map<string, string>();
  for (const field of fields) {
    for (const [k, v] of stringMapAt(own(o, field), field, errs)) {
      nameErrors(k, isConfigMapKey(k), `${field}[${k}]`, errs);
      const other = seen.get(k);
      if (other !== undefined) {
        errs.push(fieldErrors.invalid(`${field}[${k}]`, k, `duplicate of key present in ${other}`));
      }
      seen.set(k, field);
      total += Buffer.byteLength(v);
    }
  }
  return total;
}

export function validateConfigMap(cm: Obj, errs: FieldError[]): void {
  const total = validateDataKeys(cm, ['data', 'binaryData'], errs);
  if (total > MAX_DATA_SIZE) errs.push(fieldErrors.tooLong('', '', MAX_DATA_SIZE));
  boolAt(own(cm, 'immutable'), 'immutable', errs);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Data keys a Secret type requires. */
const SECRET_REQUIRED_KEYS: Record<string, string[]> = {
  'kubernetes.io/dockercfg': ['.dockercfg'],
  'kubernetes.io/dockerconfigjson': ['.dockerconfigjson'],
  'kubernetes.io/ssh-auth': ['ssh-privatekey'],
  'kubernetes.io/tls': ['tls.crt', 'tls.key'],
};

export function validateSecret(secret: Obj, errs: FieldError[]): void {
  for (const [k, v] of stringMapAt(own(secret, 'data'), 'data', errs)) {
    // Secret contents never go into an error message.
    if (!BASE64.test(v))
      errs.push(fieldErrors.invalid(`data[${k}]`, '<secret contents redacted>', 'must be base64 encoded'));
  }
  const dataSize = validateDataKeys(secret, ['data'], errs);
  // Base64 text is 4/3 of the bytes it holds.
  const decoded = Math.floor((dataSize * 3) / 4);
  let stringSize = 0;
  for (const [k, v] of stringMapAt(own(secret, 'stringData'), 'stringData', errs)) {
    nameErrors(k, isConfigMapKey(k), `stringData[${k}]`, errs);
    stringSize += Buffer.byteLength(v);
  }
  if (decoded + stringSize > MAX_DATA_SIZE) errs.push(fieldErrors.tooLong('data', '', MAX_DATA_SIZE));
  const type = strAt(own(secret, 'type'), 'type', errs) ?? 'Opaque';
  const keys = new Set([
    ...Object.keys(isObj(own(secret, 'data')) ? (own(secret, 'data') as Obj) : {}),
    ...Object.keys(isObj(own(secret, 'stringData')) ? (own(secret, 'stringData') as Obj) : {}),
  ]);
  for (const key of Object.hasOwn(SECRET_REQUIRED_KEYS, type) ? SECRET_REQUIRED_KEYS[type] : []) {
    if (!keys.has(key)) errs.push(fieldErrors.required(`data[${key}]`));
  }
  if (type === 'kubernetes.io/service-account-token') {
    const meta = isObj(own(secret, 'metadata')) ? (own(secret, 'metadata') as Obj) : {};
    const ann = isObj(own(meta, 'annotations')) ? (own(meta, 'annotations') as Obj) : {};
    if (!own(ann, 'kubernetes.io/service-account.name')) {
      errs.push(fieldErrors.required('metadata.annotations[kubernetes.io/service-account.name]'));
    }
  }
  if (type === 'kubernetes.io/basic-auth' && !keys.has('username') && !keys.has('password')) {
    errs.push(fieldErrors.required('data[username]'));
  }
  boolAt(own(secret, 'immutable'), 'immutable', errs);
}

/** Once `immutable: true`, data and the flag itself are frozen (and a Secret's type always is). */
export function validateDataUpdate(
  newObj: Obj,
  oldObj: Obj,
  fields: readonly string[],
  errs: FieldError[],
): void {
  if (own(oldObj, 'immutable') !== true) return;
  if (own(newObj, 'immutable') !== true) errs.push(fieldErrors.forbidden('immutable', IMMUTABLE_WHEN_SET));
  for (const f of fields) {
    if (!jsonEqual(own(newObj, f), own(oldObj, f))) errs.push(fieldErrors.forbidden(f, IMMUTABLE_WHEN_SET));
  }
}

export function validateSecretUpdate(newObj: Obj, oldObj: Obj, errs: FieldError[]): void {
  immutable(own(newObj, 'type') ?? 'Opaque', own(oldObj, 'type') ?? 'Opaque', 'type', errs);
  validateDataUpdate(newObj, oldObj, ['data'], errs);
}

// ---- RBAC -----------------------------------------------------------------------------

const RBAC_GROUP = 'rbac.authorization.k8s.io';

export function validateRules(obj: Obj, namespaced: boolean, errs: FieldError[]): void {
  for (const [i, item] of arrAt(own(obj, 'rules'), 'rules', errs).entries()) {
    const p = `rules[${i}]`;
    const rule = objAt(item, p, errs);
    if (!rule) continue;
    const list = (f: string) => arrAt(own(rule, f), `${p}.${f}`, errs);
    const verbs = list('verbs');
    const apiGroups = list('apiGroups');
    const resources = list('resources');
    const resourceNames = list('resourceNames');
    const urls = list('nonResourceURLs');
    if (verbs.length === 0)
      errs.push(fieldErrors.required(`${p}.verbs`, 'verbs must contain at least one value'));
    if (urls.length > 0) {
      if (namespaced) {
        errs.push(
          fieldErrors.invalid(
            `${p}.nonResourceURLs`,
            urls,
            'namespaced rules cannot apply to non-resource URLs',
          ),
        );
      }
      if (apiGroups.length > 0 || resources.length > 0 || resourceNames.length > 0) {
        errs.push(
          fieldErrors.invalid(
            `${p}.nonResourceURLs`,
            urls,
            'rules cannot apply to both regular resources and non-resource URLs',
          ),
        );
      }
      continue;
    }
    if (apiGroups.length === 0) {
      errs.push(fieldErrors.required(`${p}.apiGroups`, 'resource rules must supply at least one api group'));
    }
    if (resources.length === 0) {
      errs.push(fieldErrors.required(`${p}.resources`, 'resource rules must supply at least one resource'));
    }
  }
}

export function validateBinding(obj: Obj, clusterBinding: boolean, errs: FieldError[]): void {
  const roleRef = objAt(own(obj, 'roleRef'), 'roleRef', errs);
  if (!roleRef) {
    errs.push(fieldErrors.required('roleRef'));
  } else {
    const group = strAt(own(roleRef, 'apiGroup'), 'roleRef.apiGroup', errs) ?? '';
    if (group !== RBAC_GROUP) errs.push(fieldErrors.notSupported('roleRef.apiGroup', group, [RBAC_GROUP]));
    const kind = strAt(own(roleRef, 'kind'), 'roleRef.kind', errs) ?? '';
    const kinds = clusterBinding ? ['ClusterRole'] : ['Role', 'ClusterRole'];
    if (!kinds.includes(kind)) errs.push(fieldErrors.notSupported('roleRef.kind', kind, kinds));
    const name = strAt(own(roleRef, 'name'), 'roleRef.name', errs) ?? '';
    if (!name) errs.push(fieldErrors.required('roleRef.name'));
    else if (name.includes('/') || name.includes('%') || name === '.' || name === '..') {
      errs.push(fieldErrors.invalid('roleRef.name', name, 'must be a valid path segment name'));
    }
  }
  for (const [i, item] of arrAt(own(obj, 'subjects'), 'subjects', errs).entries()) {
    const p = `subjects[${i}]`;
    const s = objAt(item, p, errs);
    if (!s) continue;
    const name = strAt(own(s, 'name'), `${p}.name`, errs) ?? '';
    if (!name) errs.push(fieldErrors.required(`${p}.name`));
    const kind = strAt(own(s, 'kind'), `${p}.kind`, errs) ?? '';
    const apiGroup = strAt(own(s, 'apiGroup'), `${p}.apiGroup`, errs) ?? '';
    switch (kind) {
      case 'ServiceAccount': {
        if (apiGroup !== '') errs.push(fieldErrors.notSupported(`${p}.apiGroup`, apiGroup, ['']));
        if (name) nameErrors(name, isDNS1123Subdomain(name), `${p}.name`, errs);
        const ns = strAt(own(s, 'namespace'), `${p}.namespace`, errs) ?? '';
        if (clusterBinding && !ns) errs.push(fieldErrors.required(`${p}.namespace`));
        break;
      }
      case 'User':
      case 'Group':
        if (apiGroup !== RBAC_GROUP)
          errs.push(fieldErrors.notSupported(`${p}.apiGroup`, apiGroup, [RBAC_GROUP]));
        break;
      default:
        errs.push(fieldErrors.notSupported(`${p}.kind`, kind, ['ServiceAccount', 'User', 'Group']));
    }
  }
}

export function validateBindingUpdate(newObj: Obj, oldObj: Obj, errs: FieldError[]): void {
  if (!jsonEqual(own(newObj, 'roleRef'), own(oldObj, 'roleRef'))) {
    errs.push(fieldErrors.invalid('roleRef', own(newObj, 'roleRef') ?? null, 'cannot change roleRef'));
  }
}

// ---- apps/v1 --------------------------------------------------------------------------

const PERCENT = /^[0-9]+%$/;

/** An IntOrString count or percentage; returns the percent (or count) for cross-checks. */
export function validateIntOrPercent(
  v: unknown,
  path: string,
  errs: FieldError[],
): { value: number; percent: boolean } | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'number' && Number.isSafeInteger(v)) {
    nonNegative(v, path, errs);
    return { value: v, percent: false };
  }
  if (typeof v === 'string') {
    if (!PERCENT.test(v)) {
      errs.push(
        fieldErrors.invalid(
          path,
          v,
          "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
      );
      return undefined;
    }
    return { value: Number.parseInt(v, 10), percent: true };
  }
  errs.push(fieldErrors.typeInvalid(path, v, 'must be an integer or a percentage'));
  return undefined;
}

export function validateSelectorAndTemplate(
  spec: Obj,
  errs: FieldError[],
  kind = 'deployment',
  extraVolumes: readonly string[] = [],
): void {
  const selectorV = own(spec, 'selector');
  let selector: ReturnType<typeof labelSelectorAsSelector> | undefined;
  if (selectorV === undefined || selectorV === null) {
    errs.push(fieldErrors.required('spec.selector'));
  } else if (!isObj(selectorV)) {
    errs.push(fieldErrors.typeInvalid('spec.selector', selectorV, 'must be an object'));
  } else {
    try {
      selector = labelSelectorAsSelector(selectorV as LabelSelector);
      if (selector.empty()) {
        errs.push(fieldErrors.invalid('spec.selector', selectorV, `empty selector is invalid for ${kind}`));
        selector = undefined;
      }
    } catch (e) {
      errs.push(
        fieldErrors.invalid(
          'spec.selector',
          selectorV,
          e instanceof LabelSelectorParseError ? e.message : String(e),
        ),
      );
    }
  }
  const template = objAt(own(spec, 'template'), 'spec.template', errs);
  if (!template) {
    errs.push(fieldErrors.required('spec.template'));
    return;
  }
  const tmeta = objAt(own(template, 'metadata'), 'spec.template.metadata', errs);
  const labels = tmeta ? own(tmeta, 'labels') : undefined;
  validateLabels(labels, 'spec.template.metadata.labels', errs);
  if (selector && !selector.matches(isObj(labels) ? (labels as Record<string, string>) : {})) {
    errs.push(
      fieldErrors.invalid(
        'spec.template.metadata.labels',
        labels ?? null,
        '`selector` does not match template `labels`',
      ),
    );
  }
  validatePodSpec(own(template, 'spec'), 'spec.template.spec', errs, {
    allowedRestartPolicies: ['Always'],
    extraVolumes,
  });
}

export function validateReplicaSet(rs: Obj, errs: FieldError[]): void {
  const spec = objAt(own(rs, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  nonNegative(intAt(own(spec, 'replicas'), 'spec.replicas', errs), 'spec.replicas', errs);
  nonNegative(
    intAt(own(spec, 'minReadySeconds'), 'spec.minReadySeconds', errs),
    'spec.minReadySeconds',
    errs,
  );
  validateSelectorAndTemplate(spec, errs);
}

/**
 * core/v1 ReplicationController, as Kubernetes' ValidateReplicationControllerSpec: a
 * non-empty map selector (defaulting copies the template's labels into an empty one)
 * that the template's labels match, and a template that restarts Always.
 */
export function validateReplicationController(rc: Obj, errs: FieldError[]): void {
  const spec = objAt(own(rc, 'spec'), 'spec', errs) ?? {};
  nonNegative(
    intAt(own(spec, 'minReadySeconds'), 'spec.minReadySeconds', errs),
    'spec.minReadySeconds',
    errs,
  );
  const selectorV = own(spec, 'selector');
  const selector = new Map(stringMapAt(selectorV, 'spec.selector', errs));
  if (selector.size === 0) errs.push(fieldErrors.required('spec.selector'));
  else validateLabels(selectorV, 'spec.selector', errs);
  nonNegative(intAt(own(spec, 'replicas'), 'spec.replicas', errs), 'spec.replicas', errs);
  const templateV = own(spec, 'template');
  const template = objAt(templateV, 'spec.template', errs);
  if (!template) {
    if (templateV === undefined || templateV === null) errs.push(fieldErrors.required('spec.template'));
    return;
  }
  const tmeta = objAt(own(template, 'metadata'), 'spec.template.metadata', errs);
  const labels = tmeta ? own(tmeta, 'labels') : undefined;
  validateLabels(labels, 'spec.template.metadata.labels', errs);
  const has = isObj(labels) ? (labels as Record<string, unknown>) : {};
  if (selector.size > 0 && [...selector].some(([k, v]) => has[k] !== v)) {
    errs.push(
      fieldErrors.invalid(
        'spec.template.metadata.labels',
        labels ?? null,
        '`selector` does not match template `labels`',
      ),
    );
  }
  const podSpec = own(template, 'spec');
  validatePodSpec(podSpec, 'spec.template.spec', errs, { allowedRestartPolicies: ['Always'] });
  const deadline = isObj(podSpec) ? own(podSpec, 'activeDeadlineSeconds') : undefined;
  if (deadline !== undefined && deadline !== null) {
    errs.push(
      fieldErrors.invalid(
        'spec.template.spec.activeDeadlineSeconds',
        deadline,
        'activeDeadlineSeconds in ReplicationController is not Supported',
      ),
    );
  }
}

export function validateDeployment(d: Obj, errs: FieldError[]): void {
  const spec = objAt(own(d, 'spec'), 'spec', errs);
  if (!spec) {
    errs.push(fieldErrors.required('spec.selector'));
    return;
  }
  nonNegative(intAt(own(spec, 'replicas'), 'spec.replicas', errs), 'spec.replicas', errs);
  const minReady = intAt(own(spec, 'minReadySeconds'), 'spec.minReadySeconds', errs);
  nonNegative(minReady, 'spec.minReadySeconds', errs);
  nonNegative(
    intAt(own(spec, 'revisionHistoryLimit'), 'spec.revisionHistoryLimit', errs),
    'spec.revisionHistoryLimit',
    errs,
  );
  const deadline = intAt(own(spec, 'progressDeadlineSeconds'), 'spec.progressDeadlineSeconds', errs);
  nonNegative(deadline, 'spec.progressDeadlineSeconds', errs);
  if (deadline !== undefined && deadline <= (minReady ?? 0)) {
    errs.push(
      fieldErrors.invalid('spec.progressDeadlineSeconds', deadline, 'must be greater than minReadySeconds'),
    );
  }
  boolAt(own(spec, 'paused'), 'spec.paused', errs);
  validateSelectorAndTemplate(spec, errs);

  const strategy = objAt(own(spec, 'strategy'), 'spec.strategy', errs);
  if (!strategy) return;
  const type = strAt(own(strategy, 'type'), 'spec.strategy.type', errs);
  const rolling = objAt(own(strategy, 'rollingUpdate'), 'spec.strategy.rollingUpdate', errs);
  if (!type) errs.push(fieldErrors.required('spec.strategy.type'));
  else oneOf(type, ['Recreate', 'RollingUpdate'], 'spec.strategy.type', errs);
  if (type === 'Recreate' && rolling) {
    errs.push(
      fieldErrors.forbidden(
        'spec.strategy.rollingUpdate',
        "may not be specified when strategy `type` is 'Recreate'",
      ),
    );
  }
  if (type === 'RollingUpdate' && rolling) {
    const p = 'spec.strategy.rollingUpdate';
    const unavailable = validateIntOrPercent(own(rolling, 'maxUnavailable'), `${p}.maxUnavailable`, errs);
    const surge = validateIntOrPercent(own(rolling, 'maxSurge'), `${p}.maxSurge`, errs);
    if (unavailable?.percent && unavailable.value > 100) {
      errs.push(
        fieldErrors.invalid(
          `${p}.maxUnavailable`,
          own(rolling, 'maxUnavailable'),
          'must not be greater than 100%',
        ),
      );
    }
    if (unavailable && surge && unavailable.value === 0 && surge.value === 0) {
      errs.push(
        fieldErrors.invalid(
          `${p}.maxUnavailable`,
          own(rolling, 'maxUnavailable'),
          'may not be 0 when `maxSurge` is 0',
        ),
      );
    }
  }
}

/** apps/v1 selectors never change after creation. */
export function validateSelectorUpdate(newObj: Obj, oldObj: Obj, errs: FieldError[]): void {
  const ns = isObj(own(newObj, 'spec')) ? (own(newObj, 'spec') as Obj) : {};
  const os = isObj(own(oldObj, 'spec')) ? (own(oldObj, 'spec') as Obj) : {};
  immutable(own(ns, 'selector'), own(os, 'selector'), 'spec.selector', errs);
}

// ---- events ---------------------------------------------------------------------------

export const EVENT_TYPES = ['Normal', 'Warning'];

/** core/v1 Event: the involved object lives in the event's namespace. */
export function validateCoreEvent(ev: Obj, errs: FieldError[]): void {
  const meta = isObj(own(ev, 'metadata')) ? (own(ev, 'metadata') as Obj) : {};
  const namespace = own(meta, 'namespace');
  const involved = objAt(own(ev, 'involvedObject'), 'involvedObject', errs);
  const involvedNs = involved
    ? strAt(own(involved, 'namespace'), 'involvedObject.namespace', errs)
    : undefined;
  if (involvedNs && namespace && involvedNs !== namespace) {
    errs.push(fieldErrors.invalid('involvedObject.namespace', involvedNs, 'does not match event.namespace'));
  }
  const type = strAt(own(ev, 'type'), 'type', errs);
  if (type) oneOf(type, EVENT_TYPES, 'type', errs);
  nonNegative(intAt(own(ev, 'count'), 'count', errs), 'count', errs);
  // Events written the new way (with eventTime) must say who reported them and why.
  if (own(ev, 'eventTime')) {
    for (const f of ['reportingComponent', 'reportingInstance', 'action', 'reason']) {
      if (!strAt(own(ev, f), f, errs)) errs.push(fieldErrors.required(f));
    }
  }
}

/** events.k8s.io/v1 Event. */
export function validateEventsV1Event(ev: Obj, errs: FieldError[]): void {
  if (!own(ev, 'eventTime')) errs.push(fieldErrors.required('eventTime'));
  for (const f of ['reportingController', 'reportingInstance', 'action', 'reason']) {
    if (!strAt(own(ev, f), f, errs)) errs.push(fieldErrors.required(f));
  }
  const type = strAt(own(ev, 'type'), 'type', errs);
  if (!type) errs.push(fieldErrors.required('type'));
  else oneOf(type, EVENT_TYPES, 'type', errs);
  const note = strAt(own(ev, 'note'), 'note', errs);
  if (note && Buffer.byteLength(note) > 1024) errs.push(fieldErrors.tooLong('note', '', 1024));
  const meta = isObj(own(ev, 'metadata')) ? (own(ev, 'metadata') as Obj) : {};
  const regarding = objAt(own(ev, 'regarding'), 'regarding', errs);
  const regNs = regarding ? strAt(own(regarding, 'namespace'), 'regarding.namespace', errs) : undefined;
  if (regNs && own(meta, 'namespace') && regNs !== own(meta, 'namespace')) {
    errs.push(fieldErrors.invalid('regarding.namespace', regNs, 'does not match event.namespace'));
  }
}
