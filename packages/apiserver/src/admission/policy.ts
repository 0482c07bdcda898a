// ValidatingAdmissionPolicy: the CEL validations of the policies in the watch
// cache, for each binding that selects the request, as Kubernetes'
// admission/plugin/policy/validating dispatches them. It runs among the
// validating plugins, before the validating webhooks. Per binding: its params
// (paramKind + paramRef), the policy's matchConditions (any false skips it, an
// error is the failurePolicy's), its variables, then each validation; a failed one
// is acted on as the binding's validationActions say (Deny refuses the request,
// Warn adds a Warning header, Audit logs it). Expressions were compiled when the
// policy was written; compileCel's cache keyed by text hands the programs back.
import { labelSelectorAsSelector, type StatusCause, StatusError } from '@kubit/api';
import { Counter, Histogram, type Logger, type Registry } from '@kubit/daemon';
import type { Authorizer } from '../authz.js';
import type { KindRegistry } from '../kinds/index.js';
import { arr, groupVersion, type KindDef, obj, str } from '../kinds/types.js';
import type { KObject, Store } from '../storage.js';
import type { WatchCache } from '../watchcache.js';
import {
  type CelOutcome,
  type CompiledExpression,
  celString,
  compileCel,
  countValues,
  estimatedCost,
  MAX_EVALUATION_STEPS,
  MAX_POLICY_STEPS,
  runCel,
  toCel,
} from './cel.js';
import { celAuthorizer, celRequestVariables, nameOf } from './cel-request.js';
import { type MatchResources, matchedBy } from './policy-match.js';
import type { AdmissionAttributes } from './webhooks.js';

/** Kubernetes never applies policies to its admission configuration: a bad policy could not be removed. */
const EXEMPT = new Set([
  'validatingwebhookconfigurations',
  'mutatingwebhookconfigurations',
  'validatingadmissionpolicies',
  'validatingadmissionpolicybindings',
]);

const REASON_CODES: Record<string, number> = {
  Unauthorized: 401,
  Forbidden: 403,
  Invalid: 422,
  RequestEntityTooLarge: 413,
};

interface Denial {
  policy: string;
  binding: string;
  message: string;
  reason: string;
}

/** What one binding's evaluation decided: a refusal per failed validation under Deny. */
interface Outcome {
  message: string;
  /** Empty for an evaluation error or a configuration error (they refuse as Invalid). */
  reason: string;
}

/** A configuration problem of a policy or binding: denies under failurePolicy Fail. */
class ConfigError extends Error {}

/** The evaluation spent its budget: no further expression runs. */
class OutOfBudget extends Error {}
const OUT_OF_BUDGET =
  'validation failed due to running out of cost budget, no further validation rules will be run';

type Run = (expression: unknown, want?: 'bool' | 'string') => CelOutcome;

export class PolicyAdmission {
  constructor(
    private readonly kinds: KindRegistry,
    private readonly caches: Map<string, WatchCache>,
    private readonly log: Logger,
    /** Read only for a namespace the watch cache has not seen yet. */
    private readonly store?: Store,
    registry?: Registry,
    /** What `authorizer` in expressions asks. */
    private readonly authz?: Authorizer,
  ) {
    const labelNames = ['policy', 'policy_binding', 'error_type', 'enforcement_action'] as const;
    const registers = registry ? [registry] : [];
    this.checks = new Counter({
      name: 'apiserver_validating_admission_policy_check_total',
      help: 'Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.',
      labelNames,
      registers,
    });
    this.duration = new Histogram({
      name: 'apiserver_validating_admission_policy_check_duration_seconds',
      help: 'Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.',
      labelNames,
      buckets: [0.0000005, 0.001, 0.01, 0.1, 1.0],
      registers,
    });
  }

  private readonly checks: Counter<'policy' | 'policy_binding' | 'error_type' | 'enforcement_action'>;
  private readonly duration: Histogram<'policy' | 'policy_binding' | 'error_type' | 'enforcement_action'>;

  async validate(a: AdmissionAttributes): Promise<void> {
    if (a.def.group === 'admissionregistration.k8s.io' && EXEMPT.has(a.def.resource)) return;
    const bindings = this.caches.get('validatingadmissionpolicybindings')?.list(() => true) ?? [];
    if (bindings.length === 0) return;
    const policies = this.caches.get('validatingadmissionpolicies')?.list(() => true) ?? [];
    if (policies.length === 0) return;
    const byPolicy = new Map<string, KObject[]>();
    for (const b of bindings) {
      const p = str(obj(b.spec).policyName);
      byPolicy.set(p, [...(byPolicy.get(p) ?? []), b]);
    }
    policies.sort((x, y) => nameOf(x).localeCompare(nameOf(y)));
    const namespace = a.def.namespaced ? await this.namespace(a.namespace) : undefined;
    const nsLabels = namespace ? ((namespace.metadata?.labels as Record<string, string>) ?? {}) : undefined;
    const denials: Denial[] = [];
    for (const policy of policies) {
      const bound = byPolicy.get(nameOf(policy));
      if (!bound) continue;
      const spec = obj(policy.spec);
      const matched = matchedBy(this.kinds, obj(spec.matchConstraints) as MatchResources, a, nsLabels);
      if (!matched) continue;
      const ignore = spec.failurePolicy === 'Ignore';
      bound.sort((x, y) => nameOf(x).localeCompare(nameOf(y)));
      for (const binding of bound) {
        const bspec = obj(binding.spec);
        if (
          bspec.matchResources !== undefined &&
          !matchedBy(this.kinds, obj(bspec.matchResources) as MatchResources, a, nsLabels)
        )
          continue;
        let outcomes: Outcome[];
        const start = process.hrtime.bigint();
        try {
          outcomes = this.evaluateBinding(policy, binding, a, matched, namespace, ignore);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          if (ignore) {
            this.log.warn(
              { policy: nameOf(policy), binding: nameOf(binding), err: err.message },
              'validating admission policy: configuration error ignored (failurePolicy Ignore)',
            );
            continue;
          }
          outcomes = [{ message: `failed to configure binding: ${err.message}`, reason: '' }];
        }
        this.act(policy, binding, outcomes, a, denials);
        this.observe(policy, binding, outcomes, Number(process.hrtime.bigint() - start) / 1e9);
      }
    }
    if (denials.length > 0) throw denied(a, denials[0]);
  }

  /** Kubernetes' policy check metrics: one check per binding evaluated. */
  private observe(policy: KObject, binding: KObject, outcomes: Outcome[], seconds: number): void {
    const actions = arr(obj(binding.spec).validationActions).map((x) => str(x).toLowerCase());
    const base = {
      policy: nameOf(policy),
      policy_binding: nameOf(binding),
      // An outcome without a reason is an evaluation or configuration error.
      error_type: outcomes.some((o) => o.reason === '') ? 'invalid_error' : 'no_error',
    };
    // One count per action taken, as Kubernetes observes each (allow: nothing failed).
    for (const action of outcomes.length === 0 ? ['allow'] : actions) {
      const labels = { ...base, enforcement_action: action };
      this.checks.inc(labels);
      this.duration.observe(labels, seconds);
    }
  }

  /** Deny, Warn and Audit, as the binding's validationActions say. */
  private act(policy: KObject, binding: KObject, outcomes: Outcome[], a: AdmissionAttributes, out: Denial[]) {
    const actions = arr(obj(binding.spec).validationActions).map(str);
    for (const o of outcomes) {
      for (const action of actions) {
        if (action === 'Deny')
          out.push({
            policy: nameOf(policy),
            binding: nameOf(binding),
            message: o.message,
            reason: o.reason,
          });
        else if (action === 'Warn')
          a.warnings.push(
            `Validation failed for ValidatingAdmissionPolicy '${nameOf(policy)}' with binding '${nameOf(binding)}': ${o.message}`,
          );
        else if (action === 'Audit')
          this.log.info(
            {
              'validation.policy.admission.k8s.io/validation_failure': [
                {
                  message: o.message,
                  policy: nameOf(policy),
                  binding: nameOf(binding),
                  validationActions: actions,
                },
              ],
              resource: a.def.resource,
              name: a.name,
              namespace: a.namespace,
              user: a.user.name,
            },
            'validating admission policy: validation failed (Audit)',
          );
      }
    }
  }

  /** The refusals one binding makes of the request, for each of its params. */
  private evaluateBinding(
    policy: KObject,
    binding: KObject,
    a: AdmissionAttributes,
    matched: KindDef,
    namespace: KObject | undefined,
    ignore: boolean,
  ): Outcome[] {
    const params = this.params(policy, binding, a);
    if (params.length === 0) return [];
    const base = celRequestVariables(a, matched);
    const ns = namespace ? { ...namespace, apiVersion: 'v1', kind: 'Namespace' } : null;
    const size =
      countValues(base.object, MAX_EVALUATION_STEPS) +
      countValues(base.oldObject, MAX_EVALUATION_STEPS) +
      countValues(ns, MAX_EVALUATION_STEPS);
    const vars = {
      object: toCel(base.object, matched.schema),
      oldObject: toCel(base.oldObject, matched.schema),
      request: toCel(base.request),
      namespaceObject: toCel(ns),
      ...(this.authz ? { authorizer: celAuthorizer(this.authz, a) } : {}),
    };
    const out: Outcome[] = [];
    for (const param of params) {
      const values = size + countValues(param, MAX_EVALUATION_STEPS);
      out.push(...this.evaluate(policy, { ...vars, params: toCel(param) }, values, ignore));
    }
    return out;
  }

  /** One evaluation of the policy: matchConditions, variables, validations. */
  private evaluate(
    policy: KObject,
    vars: Record<string, unknown>,
    values: number,
    ignore: boolean,
  ): Outcome[] {
    const spec = obj(policy.spec);
    const errorOutcome = (message: string): Outcome[] => (ignore ? [] : [{ message, reason: '' }]);
    const compiled = (expression: unknown, want?: 'bool' | 'string'): CompiledExpression => {
      const c = compileCel(str(expression), 'policy', want);
      // Validation compiled it when the policy was written; a policy stored otherwise is a configuration error.
      if (typeof c === 'string') throw new ConfigError(`compilation failed: ${c}`);
      return c;
    };
    // Variables first: validations and conditions may name them as variables.NAME.
    const variables: Record<string, unknown> = {};
    const variableErrors = new Map<string, string>();
    const ctx = { ...vars, variables };
    let budget = MAX_POLICY_STEPS;
    for (const v of arr(spec.variables).map(obj)) {
      const c = compiled(v.expression);
      budget -= Math.min(estimatedCost(c, values), MAX_EVALUATION_STEPS);
      if (budget < 0) return errorOutcome(OUT_OF_BUDGET);
      const r = runCel(c, ctx, values);
      if (r.ok) variables[str(v.name)] = r.value;
      else variableErrors.set(str(v.name), r.error);
    }
    // An expression naming a variable that failed fails with that variable's error.
    const failedVariable = (expression: string): string | undefined => {
      for (const [name, error] of variableErrors)
        if (new RegExp(`\\bvariables\\.${name}\\b`).test(expression)) return error;
      return undefined;
    };
    // The whole evaluation's budget (variables included): past it, no further expression runs.
    const run = (expression: unknown, want?: 'bool' | 'string') => {
      const text = str(expression);
      const viaVariable = failedVariable(text);
      if (viaVariable) return { ok: false as const, error: viaVariable };
      const c = compiled(text, want);
      budget -= Math.min(estimatedCost(c, values), MAX_EVALUATION_STEPS);
      if (budget < 0) throw new OutOfBudget();
      return runCel(c, ctx, values);
    };
    try {
      return this.conditionsAndValidations(nameOf(policy), spec, run, errorOutcome);
    } catch (err) {
      if (err instanceof OutOfBudget) return errorOutcome(OUT_OF_BUDGET);
      throw err;
    }
  }

  /** matchConditions (any false: nothing to decide), then each validation. */
  private conditionsAndValidations(
    policyName: string,
    spec: Record<string, unknown>,
    run: Run,
    errorOutcome: (message: string) => Outcome[],
  ): Outcome[] {
    // matchConditions: any false skips the policy, whatever errors others had.
    let conditionError: string | undefined;
    for (const c of arr(spec.matchConditions).map(obj)) {
      const r = run(c.expression, 'bool');
      if (!r.ok) conditionError ??= r.error;
      else if (r.value !== true) return [];
    }
    if (conditionError) return errorOutcome(conditionError);
    const out: Outcome[] = [];
    for (const v of arr(spec.validations).map(obj)) {
      const r = run(v.expression, 'bool');
      if (!r.ok) {
        out.push(...errorOutcome(r.error));
        continue;
      }
      if (typeof r.value !== 'boolean') {
        out.push(
          ...errorOutcome(
            `expression '${str(v.expression)}' resulted in error: no such overload: expected a bool result`,
          ),
        );
        continue;
      }
      if (r.value) continue;
      out.push({ message: this.message(v, run), reason: str(v.reason) || 'Invalid' });
    }
    out.push(...this.auditAnnotations(policyName, spec, run, errorOutcome));
    return out;
  }

  /**
   * auditAnnotations: Kubernetes adds `<policy>/<key>` to the request's audit event;
   * kubit-apiserver has no audit log, so they are logged. A null value is no annotation;
   * an error is the failurePolicy's.
   */
  private auditAnnotations(
    policyName: string,
    spec: Record<string, unknown>,
    run: Run,
    errorOutcome: (message: string) => Outcome[],
  ): Outcome[] {
    const out: Outcome[] = [];
    for (const an of arr(spec.auditAnnotations).map(obj)) {
      const r = run(an.valueExpression);
      if (!r.ok) out.push(...errorOutcome(r.error));
      else if (r.value !== null && r.value !== undefined)
        this.log.info(
          { auditAnnotation: `${policyName}/${str(an.key)}`, value: celString(r.value).slice(0, 10 * 1024) },
          'validating admission policy: audit annotation',
        );
    }
    return out;
  }

  /** A failed validation's message: its messageExpression, else its message, else the expression. */
  private message(v: Record<string, unknown>, run: Run): string {
    const fallback = str(v.message) || `failed expression: ${str(v.expression).trim()}`;
    if (v.messageExpression === undefined) return fallback;
    const r = run(v.messageExpression, 'string');
    // As Kubernetes: an error, a non-string, an empty or multi-line result leaves the static message.
    if (!r.ok || typeof r.value !== 'string' || !r.value.trim() || /[\r\n]/.test(r.value)) {
      if (!r.ok) this.log.warn({ err: r.error }, 'validating admission policy: messageExpression failed');
      return fallback;
    }
    return r.value;
  }

  /**
   * The params a binding evaluates with: [null] for a policy without paramKind; the
   * objects paramRef names or selects otherwise (none: nothing to evaluate, unless the
   * binding says Deny).
   */
  private params(policy: KObject, binding: KObject, a: AdmissionAttributes): (KObject | null)[] {
    const pk = obj(policy.spec).paramKind;
    const ref = obj(binding.spec).paramRef;
    if (pk === undefined) return [null];
    if (ref === undefined) throw new ConfigError('paramKind is specified but the binding has no paramRef');
    const apiVersion = str(obj(pk).apiVersion);
    const kind = str(obj(pk).kind);
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    const def = this.kinds.all.find((d) => d.group === group && d.version === version && d.kind === kind);
    const cache = def && this.caches.get(this.kinds.storageResource(def));
    if (!def || !cache)
      throw new ConfigError(`failed to find resource referenced by paramKind: '${apiVersion}, Kind=${kind}'`);
    const r = obj(ref);
    let ns = '';
    if (def.namespaced) {
      ns = str(r.namespace) || (a.def.namespaced ? a.namespace : '');
      if (!ns)
        throw new ConfigError(
          'cannot use a namespaced paramKind for a cluster-scoped request without paramRef.namespace',
        );
    }
    const prefix = `/registry/${this.kinds.storageResource(def)}/${ns ? `${ns}/` : ''}`;
    let found: KObject[];
    if (str(r.name)) {
      const o = cache.objects.get(`${prefix}${str(r.name)}`);
      found = o ? [o] : [];
    } else {
      const selector = r.selector === undefined ? undefined : obj(r.selector);
      found = cache.list(
        (o) =>
          (!def.namespaced || str(o.metadata?.namespace) === ns) &&
          matchesSelector(selector, (o.metadata?.labels as Record<string, string>) ?? {}),
      );
    }
    if (found.length === 0) {
      if (str(r.parameterNotFoundAction) === 'Deny')
        throw new ConfigError('no params found for policy binding with `Deny` parameterNotFoundAction');
      return [];
    }
    return found.map((o) => {
      const x = def.fromStorage ? def.fromStorage(structuredClone(o)) : structuredClone(o);
      x.apiVersion = groupVersion(def);
      x.kind = def.kind;
      return x;
    });
  }

  /** The request's Namespace: from the watch cache, or the store when the cache has not seen it yet. */
  private async namespace(ns: string): Promise<KObject | undefined> {
    const key = `/registry/namespaces/${ns}`;
    return this.caches.get('namespaces')?.objects.get(key) ?? (await this.store?.get(key))?.obj ?? undefined;
  }
}

function matchesSelector(
  selector: Record<string, unknown> | undefined,
  labels: Record<string, string>,
): boolean {
  if (selector === undefined) return true;
  try {
    return labelSelectorAsSelector(selector).matches(labels);
  } catch {
    return false;
  }
}

/**
 * The refusal, as Kubernetes' admission.NewForbidden words it, with the reason and
 * code of the validation (Invalid, 422, unless it names another).
 */
function denied(a: AdmissionAttributes, d: Denial): StatusError {
  const message = `ValidatingAdmissionPolicy '${d.policy}' with binding '${d.binding}' denied request: ${d.message}`;
  const reason = d.reason || 'Invalid';
  const resource = a.def.group ? `${a.def.resource}.${a.def.group}` : a.def.resource;
  const what = a.name ? `${resource} "${a.name}"` : resource;
  const causes: StatusCause[] = [{ message }];
  return new StatusError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `${what} is forbidden: ${message}`,
    reason,
    details: { name: a.name, group: a.def.group, kind: a.def.resource, causes },
    code: REASON_CODES[reason] ?? 422,
  } as StatusError['status']);
}
