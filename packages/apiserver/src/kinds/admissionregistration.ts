// admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
// MutatingWebhookConfiguration: cluster-scoped lists of webhooks the apiserver
// calls during admission (admission/webhooks.ts). Defaults and validation follow
// Kubernetes' pkg/apis/admissionregistration (v1 defaults, ValidateValidatingWebhookConfiguration).
import { type FieldError, fieldErrors } from '@kubit/api';
import { matchConditionErrors } from '../admission/cel.js';
import { objectMeta, S, type Schema } from '../model/schema.js';
import type { KObject } from '../storage.js';
import { age } from '../table.js';
import { arr, type KindDef, obj, str } from './types.js';

const strList = S.list(S.str);
const labelSelector = S.obj({
  matchLabels: S.map(S.str),
  matchExpressions: S.list(S.obj({ key: S.str, operator: S.str, values: strList })),
});
const rule = S.obj({
  operations: strList,
  apiGroups: strList,
  apiVersions: strList,
  resources: strList,
  scope: S.str,
});
const clientConfig = S.obj({
  url: S.str,
  service: S.obj({ namespace: S.str, name: S.str, path: S.str, port: S.int }),
  caBundle: S.str,
});
const webhookFields: Record<string, Schema> = {
  name: S.str,
  clientConfig,
  rules: S.list(rule),
  failurePolicy: S.str,
  matchPolicy: S.str,
  namespaceSelector: labelSelector,
  objectSelector: labelSelector,
  sideEffects: S.str,
  timeoutSeconds: S.int,
  admissionReviewVersions: strList,
  matchConditions: S.list(S.obj({ name: S.str, expression: S.str })),
};
const typeMeta = { apiVersion: S.str, kind: S.str, metadata: objectMeta };

const OPERATIONS = ['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Exact', 'Equivalent'];
const SIDE_EFFECTS_V1 = ['None', 'NoneOnDryRun'];
const REINVOCATION = ['Never', 'IfNeeded'];
const REVIEW_VERSIONS = ['v1', 'v1beta1'];
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** v1's defaults of one webhook (SetDefaults_ValidatingWebhook / _MutatingWebhook). */
function defaultWebhook(w: Record<string, unknown>, mutating: boolean): void {
  w.failurePolicy ??= 'Fail';
  w.matchPolicy ??= 'Equivalent';
  w.namespaceSelector ??= {};
  w.objectSelector ??= {};
  w.timeoutSeconds ??= 10;
  if (mutating) w.reinvocationPolicy ??= 'Never';
  for (const r of arr(w.rules)) {
    const rr = obj(r);
    rr.scope ??= '*';
  }
  const svc = obj(obj(w.clientConfig).service);
  if (obj(w.clientConfig).service !== undefined) svc.port ??= 443;
}

function validateRule(r: Record<string, unknown>, path: string, errs: FieldError[]): void {
  const need = (field: string) => {
    if (arr(r[field]).length === 0) errs.push(fieldErrors.required(`${path}.${field}`));
  };
  need('operations');
  need('apiGroups');
  need('apiVersions');
  need('resources');
  const ops = arr(r.operations).map(str);
  ops.forEach((op, i) => {
    if (!OPERATIONS.includes(op))
      errs.push(fieldErrors.notSupported(`${path}.operations[${i}]`, op, OPERATIONS));
  });
  if (ops.length > 1 && ops.includes('*')) {
    errs.push(
      fieldErrors.invalid(`${path}.operations`, ops, "if '*' is present, must not specify other operations"),
    );
  }
  const groups = arr(r.apiGroups).map(str);
  if (groups.length > 1 && groups.includes('*')) {
    errs.push(
      fieldErrors.invalid(
        `${path}.apiGroups`,
        groups,
        "if '*' is present, must not specify other API groups",
      ),
    );
  }
  const versions = arr(r.apiVersions).map(str);
  versions.forEach((v, i) => {
    if (v === '') errs.push(fieldErrors.required(`${path}.apiVersions[${i}]`));
  });
  if (versions.length > 1 && versions.includes('*')) {
    errs.push(
      fieldErrors.invalid(
        `${path}.apiVersions`,
        versions,
        "if '*' is present, must not specify other API versions",
      ),
    );
  }
  const resources = arr(r.resources).map(str);
  const subs = new Set<string>();
  resources.forEach((res, i) => {
    if (res === '') {
      errs.push(fieldErrors.required(`${path}.resources[${i}]`));
      return;
    }
    const parts = res.split('/');
    if (parts.length > 2 || parts.some((p) => p === '')) {
      errs.push(
        fieldErrors.invalid(
          `${path}.resources[${i}]`,
          res,
          'must be of the form "resource" or "resource/subresource"',
        ),
      );
    }
    if (parts.length === 2) subs.add(parts[1]);
  });
  if (
    resources.includes('*') &&
    resources.length > 1 &&
    !resources.every((x) => x === '*' || x.startsWith('*/'))
  ) {
    errs.push(
      fieldErrors.invalid(
        `${path}.resources`,
        resources,
        "if '*' is present, must not specify other resources without subresources",
      ),
    );
  }
  if (r.scope !== undefined && !SCOPES.includes(str(r.scope))) {
    errs.push(fieldErrors.notSupported(`${path}.scope`, r.scope, SCOPES));
  }
}

function validateClientConfig(cc: Record<string, unknown>, path: string, errs: FieldError[]): void {
  const hasUrl = cc.url !== undefined;
  const hasService = cc.service !== undefined;
  if (hasUrl === hasService) {
    errs.push(fieldErrors.required(path, 'exactly one of url or service is required'));
    return;
  }
  if (hasUrl) {
    const text = str(cc.url);
    let u: URL | undefined;
    try {
      u = new URL(text);
    } catch {
      errs.push(fieldErrors.invalid(`${path}.url`, text, 'host must be specified'));
      return;
    }
    if (u.protocol !== 'https:')
      errs.push(fieldErrors.invalid(`${path}.url`, text, "'https' is the only allowed URL scheme"));
    if (!u.hostname) errs.push(fieldErrors.invalid(`${path}.url`, text, 'host must be specified'));
    if (u.username || u.password)
      errs.push(fieldErrors.invalid(`${path}.url`, text, 'user information is not permitted in the URL'));
    if (u.hash) errs.push(fieldErrors.invalid(`${path}.url`, text, 'fragments are not permitted in the URL'));
    if (u.search)
      errs.push(fieldErrors.invalid(`${path}.url`, text, 'query parameters are not permitted in the URL'));
    return;
  }
  const svc = obj(cc.service);
  if (!str(svc.name)) errs.push(fieldErrors.required(`${path}.service.name`, 'service name is required'));
  if (!str(svc.namespace))
    errs.push(fieldErrors.required(`${path}.service.namespace`, 'service namespace is required'));
  const port = svc.port;
  if (typeof port === 'number' && (port < 1 || port > 65535)) {
    errs.push(
      fieldErrors.invalid(
        `${path}.service.port`,
        port,
        'port is not valid: must be between 1 and 65535, inclusive',
      ),
    );
  }
  if (svc.path !== undefined && !str(svc.path).startsWith('/')) {
    errs.push(fieldErrors.invalid(`${path}.service.path`, svc.path, "must start with a '/'"));
  }
  if (cc.caBundle !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(str(cc.caBundle))) {
    errs.push(fieldErrors.invalid(`${path}.caBundle`, '<bytes>', 'must be base64'));
  }
}

function validateWebhook(
  w: Record<string, unknown>,
  path: string,
  mutating: boolean,
  errs: FieldError[],
): void {
  const name = str(w.name);
  if (!name) errs.push(fieldErrors.required(`${path}.name`));
  else {
    const labels = name.split('.');
    if (labels.length < 3) {
      errs.push(
        fieldErrors.invalid(
          `${path}.name`,
          name,
          'should be a domain with at least three segments separated by dots',
        ),
      );
    } else if (name.length > 253 || labels.some((l) => !DNS1123_LABEL.test(l))) {
      errs.push(
        fieldErrors.invalid(
          `${path}.name`,
          name,
          "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ),
      );
    }
  }
  arr(w.rules).forEach((r, i) => {
    validateRule(obj(r), `${path}.rules[${i}]`, errs);
  });
  if (!FAILURE_POLICIES.includes(str(w.failurePolicy))) {
    errs.push(fieldErrors.notSupported(`${path}.failurePolicy`, w.failurePolicy, FAILURE_POLICIES));
  }
  if (!MATCH_POLICIES.includes(str(w.matchPolicy))) {
    errs.push(fieldErrors.notSupported(`${path}.matchPolicy`, w.matchPolicy, MATCH_POLICIES));
  }
  if (w.sideEffects === undefined)
    errs.push(fieldErrors.required(`${path}.sideEffects`, 'must specify one of None, NoneOnDryRun'));
  else if (!SIDE_EFFECTS_V1.includes(str(w.sideEffects))) {
    errs.push(fieldErrors.notSupported(`${path}.sideEffects`, w.sideEffects, SIDE_EFFECTS_V1));
  }
  const t = w.timeoutSeconds;
  if (typeof t === 'number' && (t < 1 || t > 30)) {
    errs.push(
      fieldErrors.invalid(`${path}.timeoutSeconds`, t, 'the timeout value must be between 1 and 30 seconds'),
    );
  }
  const versions = arr(w.admissionReviewVersions).map(str);
  if (versions.length === 0) {
    errs.push(fieldErrors.required(`${path}.admissionReviewVersions`, 'must specify one of v1, v1beta1'));
  } else {
    const seen = new Set<string>();
    versions.forEach((v, i) => {
      if (seen.has(v))
        errs.push(fieldErrors.invalid(`${path}.admissionReviewVersions[${i}]`, v, 'duplicate version'));
      seen.add(v);
    });
    if (!versions.some((v) => REVIEW_VERSIONS.includes(v))) {
      errs.push(
        fieldErrors.invalid(
          `${path}.admissionReviewVersions`,
          versions,
          'must include at least one of v1, v1beta1',
        ),
      );
    }
  }
  if (mutating && !REINVOCATION.includes(str(w.reinvocationPolicy))) {
    errs.push(fieldErrors.notSupported(`${path}.reinvocationPolicy`, w.reinvocationPolicy, REINVOCATION));
  }
  validateClientConfig(obj(w.clientConfig), `${path}.clientConfig`, errs);
  matchConditionErrors(w.matchConditions, `${path}.matchConditions`, 'matchCondition', errs);
}

function validateConfiguration(o: KObject, mutating: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  arr(o.webhooks).forEach((w, i) => {
    const ww = obj(w);
    validateWebhook(ww, `webhooks[${i}]`, mutating, errs);
    const name = str(ww.name);
    if (name && names.has(name)) errs.push(fieldErrors.duplicate(`webhooks[${i}].name`, name));
    names.add(name);
  });
  return errs;
}

function configurationKind(mutating: boolean): KindDef {
  const kind = mutating ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration';
  const fields = mutating ? { ...webhookFields, reinvocationPolicy: S.str } : webhookFields;
  return {
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind,
    resource: `${kind.toLowerCase()}s`,
    singular: kind.toLowerCase(),
    namespaced: false,
    schema: S.obj({ ...typeMeta, webhooks: S.list(S.obj(fields)) }),
    nameRule: 'subdomain',
    subresources: [],
    generation: true,
    example: {
      webhooks: [
        {
          name: 'example.kubit.dev',
          clientConfig: { url: 'https://127.0.0.1:1/example' },
          // Matches nothing a test writes, so the example never stands in the way of other writes.
          rules: [
            {
              operations: ['CREATE'],
              apiGroups: ['example.kubit.dev'],
              apiVersions: ['v1'],
              resources: ['examples'],
            },
          ],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
    defaults(o) {
      for (const w of arr(o.webhooks)) defaultWebhook(obj(w), mutating);
    },
    validate: (o) => validateConfiguration(o, mutating),
    table: {
      columns: [
        { name: 'Webhooks', type: 'integer', description: 'The number of webhooks.', priority: 0 },
        { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
      ],
      cells: (o, now) => [arr(o.webhooks).length, age(o, now)],
    },
  };
}

export const validatingwebhookconfigurations = configurationKind(false);
export const mutatingwebhookconfigurations = configurationKind(true);
