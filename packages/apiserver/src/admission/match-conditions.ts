// A webhook's matchConditions, as Kubernetes' admission/plugin/webhook/matchconditions
// decides them: CEL expressions over object, oldObject and request; all true calls
// the webhook, any false skips it (whatever errors the others had), and otherwise
// an error is left to the webhook's failurePolicy.
import type { Authorizer } from '../authz.js';
import type { KindDef } from '../kinds/types.js';
import { compileCel, countValues, MAX_EVALUATION_STEPS, runCel, toCel } from './cel.js';
import { celAuthorizer, celRequestVariables } from './cel-request.js';
import type { AdmissionAttributes } from './webhooks.js';

export interface MatchCondition {
  name: string;
  expression: string;
}

export type ConditionsResult = { matched: boolean } | { error: string };

export function evaluateMatchConditions(
  conditions: MatchCondition[] | undefined,
  a: AdmissionAttributes,
  matched: KindDef,
  authz?: Authorizer,
): ConditionsResult {
  if (!conditions || conditions.length === 0) return { matched: true };
  const base = celRequestVariables(a, matched);
  const values =
    countValues(base.object, MAX_EVALUATION_STEPS) + countValues(base.oldObject, MAX_EVALUATION_STEPS);
  const vars = {
    object: toCel(base.object, matched.schema),
    oldObject: toCel(base.oldObject, matched.schema),
    request: toCel(base.request),
    ...(authz ? { authorizer: celAuthorizer(authz, a) } : {}),
  };
  let error: string | undefined;
  for (const c of conditions) {
    const compiled = compileCel(c.expression, 'matchCondition', 'bool');
    if (typeof compiled === 'string') {
      error ??= `matchCondition '${c.name}': compilation failed: ${compiled}`;
      continue;
    }
    const r = runCel(compiled, vars, values);
    if (!r.ok) error ??= r.error;
    else if (r.value !== true) return { matched: false };
  }
  return error ? { error } : { matched: true };
}
