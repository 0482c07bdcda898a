// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
// ValidatingAdmissionPolicyBinding: CEL rules the apiserver evaluates in
// admission (admission/policy.ts). Defaults and validation follow Kubernetes'
// pkg/apis/admissionregistration (v1 defaults, ValidateValidatingAdmissionPolicy,
// ValidateValidatingAdmissionPolicyBinding); every expression is compiled here, so
// a policy that is stored compiles.
import { type FieldError, fieldErrors, labelSelectorAsSelector } from '@kubit/api';
import { expressionErrors, matchConditionErrors } from '../admission/cel.js';
import { objectMeta, S, type Schema } from '../model/schema.js';
import { sameJson } from '../objects.js';
import type { KObject } from '../storage.js';
import { statusSubresource } from '../subresources/status.js';
import { age } from '../table.js';
import { arr, type KindDef, obj, str } from './types.js';

const strList = S.list(S.str);
const labelSelector = S.obj({
  matchLabels: S.map(S.str),
  matchExpressions: S.list(S.obj({ key: S.str, operator: S.str, values: strList })),
});
const namedRule = S.obj({
  operations: strList,
  apiGroups: strList,
  apiVersions: strList,
  resources: strList,
  resourceNames: strList,
  scope: S.str,
});
const matchResources = S.obj({
  namespaceSelector: labelSelector,
  objectSelector: labelSelector,
  resourceRules: S.list(namedRule),
  excludeResourceRules: S.list(namedRule),
  matchPolicy: S.str,
});
const typeMeta = { apiVersion: S.str, kind: S.str, metadata: objectMeta };
const expressionList = (extra: Record<string, Schema> = {}) =>
  S.list(S.obj({ name: S.str, expression: S.str, ...extra }));

const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Exact', 'Equivalent'];
const OPERATIONS = ['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
const REASONS = ['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge'];
const VALIDATION_ACTIONS = ['Deny', 'Warn', 'Audit'];
const PARAM_NOT_FOUND = ['Allow', 'Deny'];
const CEL_IDENTIFIER = /^[_a-zA-Z][_a-zA-Z0-9]*$/;

function defaultMatchResources(m: Record<string, unknown>): void {
  m.namespaceSelector ??= {};
  m.objectSelector ??= {};
  m.matchPolicy ??= 'Equivalent';
  for (const r of [...arr(m.resourceRules), ...arr(m.excludeResourceRules)]) obj(r).scope ??= '*';
}

function validateNamedRule(r: Record<string, unknown>, path: string, errs: FieldError[]): void {
  for (const f of ['operations', 'apiGroups', 'apiVersions', 'resources']) {
    if (arr(r[f]).length === 0) errs.push(fieldErrors.required(`${path}.${f}`));
  }
  arr(r.operations).forEach((op, i) => {
    if (!OPERATIONS.includes(str(op)))
      errs.push(fieldErrors.notSupported(`${path}.operations[${i}]`, op, OPERATIONS));
  });
  arr(r.resources).forEach((res, i) => {
    const parts = str(res).split('/');
    if (parts.length > 2 || parts.some((p) => p === ''))
      errs.push(
        fieldErrors.invalid(
          `${path}.resources[${i}]`,
          res,
          'must be of the form "resource" or "resource/subresource"',
        ),
      );
  });
  if (r.scope !== undefined && !SCOPES.includes(str(r.scope)))
    errs.push(fieldErrors.notSupported(`${path}.scope`, r.scope, SCOPES));
  const names = arr(r.resourceNames).map(str);
  const seen = new Set<string>();
  names.forEach((n, i) => {
    if (seen.has(n)) errs.push(fieldErrors.duplicate(`${path}.resourceNames[${i}]`, n));
    seen.add(n);
  });
}

function validateSelector(sel: unknown, path: string, errs: FieldError[]): void {
  if (sel === undefined) return;
  try {
    labelSelectorAsSelector(obj(sel));
  } catch (err) {
    errs.push(fieldErrors.invalid(path, sel, (err as Error).message));
  }
}

function validateMatchResources(
  m: Record<string, unknown>,
  path: string,
  requireRules: boolean,
  errs: FieldError[],
): void {
  if (requireRules && arr(m.resourceRules).length === 0)
    errs.push(fieldErrors.required(`${path}.resourceRules`));
  arr(m.resourceRules).forEach((r, i) => {
    validateNamedRule(obj(r), `${path}.resourceRules[${i}]`, errs);
  });
  arr(m.excludeResourceRules).forEach((r, i) => {
    validateNamedRule(obj(r), `${path}.excludeResourceRules[${i}]`, errs);
  });
  if (m.matchPolicy !== undefined && !MATCH_POLICIES.includes(str(m.matchPolicy)))
    errs.push(fieldErrors.notSupported(`${path}.matchPolicy`, m.matchPolicy, MATCH_POLICIES));
  validateSelector(m.namespaceSelector, `${path}.namespaceSelector`, errs);
  validateSelector(m.objectSelector, `${path}.objectSelector`, errs);
}

function validatePolicy(o: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o.spec);
  if (spec.failurePolicy !== undefined && !FAILURE_POLICIES.includes(str(spec.failurePolicy)))
    errs.push(fieldErrors.notSupported('spec.failurePolicy', spec.failurePolicy, FAILURE_POLICIES));
  if (spec.paramKind !== undefined) {
    const pk = obj(spec.paramKind);
    if (!str(pk.kind)) errs.push(fieldErrors.required('spec.paramKind.kind'));
    const av = str(pk.apiVersion);
    if (!av) errs.push(fieldErrors.required('spec.paramKind.apiVersion'));
    else if (av.split('/').length > 2 || av.split('/').some((p) => p === ''))
      errs.push(fieldErrors.invalid('spec.paramKind.apiVersion', av, 'must be of the form group/version'));
  }
  if (spec.matchConstraints === undefined) errs.push(fieldErrors.required('spec.matchConstraints'));
  else validateMatchResources(obj(spec.matchConstraints), 'spec.matchConstraints', true, errs);
  matchConditionErrors(spec.matchConditions, 'spec.matchConditions', 'policy', errs);
  const varNames = new Set<string>();
  arr(spec.variables).forEach((v, i) => {
    const vv = obj(v);
    const name = str(vv.name);
    const at = `spec.variables[${i}]`;
    if (!name) errs.push(fieldErrors.required(`${at}.name`));
    else if (!CEL_IDENTIFIER.test(name))
      errs.push(fieldErrors.invalid(`${at}.name`, name, 'name is not a valid CEL identifier'));
    else if (varNames.has(name)) errs.push(fieldErrors.duplicate(`${at}.name`, name));
    varNames.add(name);
    expressionErrors(vv.expression, `${at}.expression`, 'policy', undefined, errs);
  });
  const validations = arr(spec.validations);
  if (validations.length === 0 && arr(spec.auditAnnotations).length === 0)
    errs.push(
      fieldErrors.required(
        'spec.validations',
        'validations or auditAnnotations must contain at least one item',
      ),
    );
  validations.forEach((v, i) => {
    const vv = obj(v);
    const at = `spec.validations[${i}]`;
    expressionErrors(vv.expression, `${at}.expression`, 'policy', 'bool', errs);
    const message = str(vv.message);
    if (/[\r\n]/.test(message))
      errs.push(fieldErrors.invalid(`${at}.message`, message, 'message must not contain line breaks'));
    else if (vv.message !== undefined && !message.trim())
      errs.push(fieldErrors.required(`${at}.message`, 'message must be non-empty if specified'));
    if (vv.messageExpression !== undefined)
      expressionErrors(vv.messageExpression, `${at}.messageExpression`, 'policy', 'string', errs);
    if (vv.reason !== undefined && !REASONS.includes(str(vv.reason)))
      errs.push(fieldErrors.notSupported(`${at}.reason`, vv.reason, REASONS));
  });
  arr(spec.auditAnnotations).forEach((v, i) => {
    const vv = obj(v);
    const at = `spec.auditAnnotations[${i}]`;
    if (!str(vv.key)) errs.push(fieldErrors.required(`${at}.key`));
    expressionErrors(vv.valueExpression, `${at}.valueExpression`, 'policy', undefined, errs);
  });
  return errs;
}

function validateBinding(o: KObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = obj(o.spec);
  if (!str(spec.policyName)) errs.push(fieldErrors.required('spec.policyName'));
  const actions = arr(spec.validationActions).map(str);
  if (actions.length === 0) errs.push(fieldErrors.required('spec.validationActions'));
  const seen = new Set<string>();
  actions.forEach((a, i) => {
    if (!VALIDATION_ACTIONS.includes(a))
      errs.push(fieldErrors.notSupported(`spec.validationActions[${i}]`, a, VALIDATION_ACTIONS));
    else if (seen.has(a)) errs.push(fieldErrors.duplicate(`spec.validationActions[${i}]`, a));
    seen.add(a);
  });
  if (seen.has('Deny') && seen.has('Warn'))
    errs.push(
      fieldErrors.invalid(
        'spec.validationActions',
        actions,
        'validationActions must not contain both "Deny" and "Warn"',
      ),
    );
  if (spec.paramRef !== undefined) {
    const pr = obj(spec.paramRef);
    const hasName = str(pr.name) !== '';
    const hasSelector = pr.selector !== undefined;
    if (hasName === hasSelector)
      errs.push(fieldErrors.invalid('spec.paramRef', pr, 'one of name or selector must be set'));
    if (hasSelector) validateSelector(pr.selector, 'spec.paramRef.selector', errs);
    if (pr.parameterNotFoundAction === undefined)
      errs.push(fieldErrors.required('spec.paramRef.parameterNotFoundAction'));
    else if (!PARAM_NOT_FOUND.includes(str(pr.parameterNotFoundAction)))
      errs.push(
        fieldErrors.notSupported(
          'spec.paramRef.parameterNotFoundAction',
          pr.parameterNotFoundAction,
          PARAM_NOT_FOUND,
        ),
      );
  }
  if (spec.matchResources !== undefined)
    validateMatchResources(obj(spec.matchResources), 'spec.matchResources', false, errs);
  return errs;
}

function defaultPolicy(o: KObject): void {
  if (o.spec === undefined) return;
  const spec = obj(o.spec);
  spec.failurePolicy ??= 'Fail';
  if (spec.matchConstraints !== undefined) defaultMatchResources(obj(spec.matchConstraints));
}

export const validatingadmissionpolicies: KindDef = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingAdmissionPolicy',
  resource: 'validatingadmissionpolicies',
  singular: 'validatingadmissionpolicy',
  namespaced: false,
  categories: ['api-extensions'],
  schema: S.obj({
    ...typeMeta,
    spec: S.obj({
      paramKind: S.obj({ apiVersion: S.str, kind: S.str }),
      matchConstraints: matchResources,
      validations: S.list(
        S.obj({ expression: S.str, message: S.str, reason: S.str, messageExpression: S.str }),
      ),
      failurePolicy: S.str,
      auditAnnotations: S.list(S.obj({ key: S.str, valueExpression: S.str })),
      matchConditions: expressionList(),
      variables: expressionList(),
    }),
    status: S.obj({
      observedGeneration: S.int,
      typeChecking: S.obj({
        expressionWarnings: S.list(S.obj({ fieldRef: S.str, warning: S.str })),
      }),
      conditions: S.list(S.any),
    }),
  }),
  nameRule: 'subdomain',
  subresources: [statusSubresource],
  generation: true,
  example: {
    spec: {
      // Matches nothing a test writes, so the example never stands in the way of other writes.
      matchConstraints: {
        resourceRules: [
          {
            operations: ['CREATE'],
            apiGroups: ['example.kubit.dev'],
            apiVersions: ['v1'],
            resources: ['examples'],
          },
        ],
      },
      validations: [{ expression: 'true' }],
    },
  },
  defaults: defaultPolicy,
  validate: validatePolicy,
  // Every expression is type-checked as the policy is written (validatePolicy), so the
  // generation being written is the one observed: the status says so in the same write,
  // where Kubernetes' type-checking controller writes it a moment later. (A write of its
  // own would race every client updating the policy it just created.)
  prepareForCreate(o) {
    o.status = { observedGeneration: 1, typeChecking: {} };
  },
  prepareForUpdate(o, old) {
    // The generation REST gives this write: one more when the (defaulted) spec changes.
    const probe = { spec: structuredClone(o.spec) } as KObject;
    defaultPolicy(probe);
    const generation = Number(old.metadata?.generation ?? 0);
    const observed = sameJson(probe.spec, old.spec) ? generation : generation + 1;
    o.status = { ...obj(old.status), observedGeneration: observed, typeChecking: {} };
  },
  table: {
    columns: [
      {
        name: 'Validations',
        type: 'integer',
        description: 'The number of validations.',
        priority: 0,
      },
      { name: 'ParamKind', type: 'string', description: 'The kind of the parameters.', priority: 0 },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
    ],
    cells: (o, now) => {
      const spec = obj(o.spec);
      const pk = spec.paramKind === undefined ? undefined : obj(spec.paramKind);
      return [
        arr(spec.validations).length,
        pk ? `${str(pk.apiVersion)}/${str(pk.kind)}` : '<unset>',
        age(o, now),
      ];
    },
  },
};

export const validatingadmissionpolicybindings: KindDef = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  resource: 'validatingadmissionpolicybindings',
  singular: 'validatingadmissionpolicybinding',
  namespaced: false,
  categories: ['api-extensions'],
  schema: S.obj({
    ...typeMeta,
    spec: S.obj({
      policyName: S.str,
      paramRef: S.obj({
        name: S.str,
        namespace: S.str,
        selector: labelSelector,
        parameterNotFoundAction: S.str,
      }),
      matchResources,
      validationActions: strList,
    }),
  }),
  nameRule: 'subdomain',
  subresources: [],
  generation: true,
  example: { spec: { policyName: 'example-policy', validationActions: ['Deny'] } },
  defaults(o) {
    const spec = obj(o.spec);
    if (o.spec === undefined) return;
    if (spec.matchResources !== undefined) defaultMatchResources(obj(spec.matchResources));
  },
  validate: validateBinding,
  table: {
    columns: [
      { name: 'PolicyName', type: 'string', description: 'The policy bound.', priority: 0 },
      { name: 'ParamRef', type: 'string', description: 'The parameters bound.', priority: 0 },
      { name: 'Age', type: 'string', description: 'CreationTimestamp', priority: 0 },
    ],
    cells: (o, now) => {
      const spec = obj(o.spec);
      let ref = '<unset>';
      if (spec.paramRef !== undefined) {
        const pr = obj(spec.paramRef);
        const ns = str(pr.namespace);
        const name = str(pr.name) || '*';
        ref = ns ? `${ns}/${name}` : name;
      }
      return [str(spec.policyName), ref, age(o, now)];
    },
  },
};
